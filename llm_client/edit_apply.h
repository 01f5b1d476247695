// Applies parsed edits to the editable files, all or nothing.
//
// Each edit is checked first: its path must pass the caller's path policy
// (the daemon's editable globs) and name a file that exists. Then:
//   SEARCH/REPLACE  exact match first; when there is none, a match of the same
//                   non-blank lines ignoring indentation, runs of spaces and
//                   blank lines, with the replacement re-indented to the file's
//                   indentation. No match or more than one is an error that
//                   says which edit and why.
//   diff            applied with libgit2 (unified_diff.h)
//   whole file      the new content as given
// Edits apply in order, each to the result of the ones before it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "llm_client/edit_format.h"
#include "proposers/proposer.h"

namespace llm {

/// Empty when an edit may write path; otherwise the one-line reason it may not.
using PathPolicy = std::function<std::string(const std::string& path)>;

struct ApplyResult {
  std::vector<ard::FileWrite> writes;  ///< the changed files' new content
  std::string error;                   ///< one line per failed edit; empty on success
  bool ok() const { return error.empty(); }
};

ApplyResult apply_edits(const std::vector<Edit>& edits, const std::vector<ard::EditableFile>& files,
                        const PathPolicy& policy);

/// Replaces the one place `search` occurs in content (exactly, else ignoring
/// whitespace). Returns the error, or "" with content updated.
std::string apply_search_replace(std::string& content, const std::string& search, const std::string& replace);

}  // namespace llm
