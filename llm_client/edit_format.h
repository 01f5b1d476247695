// The answer format we ask the LLM for, and its parser.
//
// An answer holds one DESCRIPTION line and one or more edits, each in one of
// three forms (edit_format_instructions() is the text that tells the model):
//   SEARCH/REPLACE   a path line, then <<<<<<< SEARCH / ======= / >>>>>>> REPLACE
//   unified diff     --- a/path, +++ b/path, @@ hunks (usually in a ```diff fence)
//   whole file       === FILE: path === ... === END FILE ===
// An answer may instead ask to read files first: READ lines and no edit.
// Parsing only splits the answer into edits; edit_apply.h checks and applies them.
#pragma once

#include <string>
#include <variant>
#include <vector>

namespace llm {

struct SearchReplace {
  std::string path;
  std::string search;   ///< lines to find, each ending in '\n'
  std::string replace;  ///< lines to put in their place
};

struct UnifiedDiff {
  std::string path;  ///< from the +++ line, without its b/ prefix
  std::string text;  ///< the file's patch: ---/+++ header and its hunks
};

struct WholeFile {
  std::string path;
  std::string content;
};

struct Edit {
  int number = 0;  ///< 1-based, in the order of the answer
  std::variant<SearchReplace, UnifiedDiff, WholeFile> op;
  const std::string& path() const;
  const char* kind() const;  ///< "SEARCH/REPLACE", "diff", "whole file"
};

/// "READ: path" or "READ: path 120-260" (lines, 1-based, inclusive): the
/// model asks to see a file before it edits.
struct ReadRequest {
  std::string path;
  long first_line = 0;  ///< 0: the whole file
  long last_line = 0;
};

struct ParsedAnswer {
  std::string description;  ///< one line
  std::vector<Edit> edits;
  std::vector<ReadRequest> reads;  ///< set only for an answer with READ lines and no edit
  std::string error;        ///< non-empty when the answer cannot be used; says why
};

/// Splits an answer into its description and edits.
ParsedAnswer parse_answer(const std::string& answer);

/// The instructions, added to every prompt, that define this format;
/// read_rounds > 0 adds the READ round and its bounds.
std::string edit_format_instructions(int read_rounds = 0, long read_bytes = 0);

}  // namespace llm
