// See edit_format.h. The parser walks the answer line by line; whatever is
// not part of an edit (prose, fences, explanations) is skipped.
#include "llm_client/edit_format.h"
#include "proposers/text_lines.h"

#include <regex>

namespace llm {

using ard::split_lines;
using ard::trim;

namespace {

constexpr size_t kMaxDescription = 200;  // a commit subject, not a paragraph

bool is_fence(const std::string& line) { return trim(line).rfind("```", 0) == 0; }

const std::regex kDescription(R"(^\s*[*#_ ]*description[*_]*\s*:\s*[*_]*\s*(.*)$)", std::regex::icase);
const std::regex kFileStart(R"(^\s*===\s*FILE:\s*(\S+)\s*===\s*$)");
const std::regex kFileEnd(R"(^\s*===\s*END FILE\s*===\s*$)");
const std::regex kSearch(R"(^\s*<{5,9}\s*SEARCH\s*$)");
const std::regex kDivider(R"(^\s*={5,9}\s*$)");
const std::regex kRead(R"(^\s*[*_`]*READ[*_`]*\s*:\s*`?([^\s`]+)`?(?:\s+(?:lines\s+)?(\d+)\s*-\s*(\d+))?\s*$)");
const std::regex kReplace(R"(^\s*>{5,9}\s*REPLACE\s*$)");

/// "./x" -> "x": the same file, said the way the editable globs say it.
std::string plain_path(std::string p) {
  while (p.rfind("./", 0) == 0) p = p.substr(2);
  return p;
}

/// A line that names a file ("trainer/train.cu", "`x.cu`", "**File:** x.cu"), or "".
std::string path_from_line(const std::string& line) {
  std::string s = trim(line);
  for (const char* prefix : {"#", "*", "File:", "file:", "Path:", "path:", "*", " "})
    while (s.rfind(prefix, 0) == 0) s = trim(s.substr(std::string(prefix).size()));
  auto strip = [&](char c) {
    while (!s.empty() && s.front() == c) s.erase(0, 1);
    while (!s.empty() && s.back() == c) s.pop_back();
  };
  strip('*');
  strip('`');
  if (!s.empty() && s.back() == ':') s.pop_back();
  if (s.empty() || s.find_first_of(" \t") != std::string::npos) return "";
  if (s.find('/') == std::string::npos && s.find('.') == std::string::npos) return "";
  return plain_path(s);
}

/// "a/x" -> "x" for the usual diff prefixes.
std::string diff_path(std::string p) {
  size_t tab = p.find('\t');  // "+++ b/x\t2024-01-01 ..." timestamps
  if (tab != std::string::npos) p = p.substr(0, tab);
  p = trim(p);
  if (p.rfind("a/", 0) == 0 || p.rfind("b/", 0) == 0) p = p.substr(2);
  return plain_path(p);
}

std::string join(const std::vector<std::string>& lines, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) out += lines[i] + "\n";
  return out;
}

bool is_hunk_line(const std::string& l) {
  return l.empty() || l[0] == ' ' || l[0] == '+' || l[0] == '-' || l[0] == '\\' || l.rfind("@@", 0) == 0;
}

}  // namespace

const std::string& Edit::path() const {
  return std::visit([](const auto& o) -> const std::string& { return o.path; }, op);
}

const char* Edit::kind() const {
  switch (op.index()) {
    case 0: return "SEARCH/REPLACE";
    case 1: return "diff";
    default: return "whole file";
  }
}

ParsedAnswer parse_answer(const std::string& answer) {
  ParsedAnswer out;
  std::vector<std::string> lines = split_lines(answer);
  std::string last_path;  // a SEARCH block without a path line edits the previous block's file
  size_t previous_end = 0;  // first line after the previous edit
  auto fail = [&](const std::string& why) {
    out.error = why;
    return out;
  };
  auto label = [&](const char* kind, const std::string& path) {
    return "edit " + std::to_string(out.edits.size() + 1) + " (" + kind + (path.empty() ? "" : ", " + path) + ")";
  };

  std::smatch m;
  std::vector<ReadRequest> reads;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (std::regex_match(line, m, kRead)) {
      ReadRequest r{plain_path(m[1].str())};
      if (m[2].matched) r.first_line = std::stol(m[2].str()), r.last_line = std::stol(m[3].str());
      reads.push_back(r);
      continue;
    }
    if (out.description.empty() && std::regex_match(line, m, kDescription)) {
      out.description = trim(m[1].str());
      while (!out.description.empty() && (out.description.back() == '*' || out.description.back() == '_'))
        out.description.pop_back();
      if (out.description.size() > kMaxDescription) out.description = out.description.substr(0, kMaxDescription - 3) + "...";
      continue;
    }
    if (std::regex_match(line, m, kFileStart)) {
      std::string path = plain_path(m[1].str());
      size_t end = i + 1;
      while (end < lines.size() && !std::regex_match(lines[end], kFileEnd)) ++end;
      if (end == lines.size())
        return fail(label("whole file", path) + ": no '=== END FILE ===' line; the answer may be cut off");
      size_t from = i + 1, to = end;
      if (to > from && is_fence(lines[from]) && is_fence(lines[to - 1])) ++from, --to;
      out.edits.push_back({static_cast<int>(out.edits.size() + 1), WholeFile{path, join(lines, from, to)}});
      i = end;
      previous_end = end + 1;
      continue;
    }
    if (std::regex_match(line, kSearch)) {
      std::string path;
      for (size_t j = i; j-- > previous_end;) {
        if (trim(lines[j]).empty() || is_fence(lines[j])) continue;
        path = path_from_line(lines[j]);
        break;
      }
      if (path.empty()) path = last_path;
      if (path.empty()) return fail(label("SEARCH/REPLACE", "") + ": no file path on the line before <<<<<<< SEARCH");
      size_t div = i + 1;
      while (div < lines.size() && !std::regex_match(lines[div], kDivider)) {
        if (std::regex_match(lines[div], kSearch) || std::regex_match(lines[div], kReplace)) break;
        ++div;
      }
      if (div == lines.size() || !std::regex_match(lines[div], kDivider))
        return fail(label("SEARCH/REPLACE", path) + ": SEARCH section has no ======= line after it");
      size_t end = div + 1;
      while (end < lines.size() && !std::regex_match(lines[end], kReplace)) {
        if (std::regex_match(lines[end], kSearch)) break;
        ++end;
      }
      if (end == lines.size() || !std::regex_match(lines[end], kReplace))
        return fail(label("SEARCH/REPLACE", path) + ": no >>>>>>> REPLACE line; the answer may be cut off");
      out.edits.push_back(
          {static_cast<int>(out.edits.size() + 1), SearchReplace{path, join(lines, i + 1, div), join(lines, div + 1, end)}});
      last_path = path;
      i = end;
      previous_end = end + 1;
      continue;
    }
    if (line.rfind("--- ", 0) == 0 && i + 1 < lines.size() && lines[i + 1].rfind("+++ ", 0) == 0) {
      std::string old_path = diff_path(line.substr(4)), new_path = diff_path(lines[i + 1].substr(4));
      std::string path = new_path == "/dev/null" ? old_path : new_path;
      size_t end = i + 2;
      while (end < lines.size() && is_hunk_line(lines[end]) &&
             !(lines[end].rfind("--- ", 0) == 0 && end + 1 < lines.size() && lines[end + 1].rfind("+++ ", 0) == 0))
        ++end;
      size_t last = end;
      while (last > i + 2 && trim(lines[last - 1]).empty()) --last;  // blank lines after the diff
      if (last == i + 2) return fail(label("diff", path) + ": the diff has no @@ hunk");
      std::string text = "--- " + (old_path == "/dev/null" ? old_path : "a/" + old_path) + "\n+++ " +
                         (new_path == "/dev/null" ? new_path : "b/" + new_path) + "\n" + join(lines, i + 2, last);
      out.edits.push_back({static_cast<int>(out.edits.size() + 1), UnifiedDiff{path, text}});
      i = end - 1;
      previous_end = end;
      continue;
    }
  }
  if (out.edits.empty() && !reads.empty()) {
    out.reads = std::move(reads);
    return out;
  }
  if (out.edits.empty())
    return fail("the answer holds no edit: no SEARCH/REPLACE block, no unified diff and no === FILE: block");
  if (out.description.empty()) return fail("the answer has no 'DESCRIPTION: <one line>' line");
  return out;
}

std::string edit_format_instructions(int read_rounds, long read_bytes) {
  std::string read;
  if (read_rounds > 0)
    read = R"(
## Reading files first

The prompt shows some files whole and lists the others in a map (path, size, what it is). To see
files before you edit, answer with only READ lines and no edit, one file per line, optionally with a
line range:

READ: trainer/model/attention.cuh
READ: trainer/model/attention.cu 1-200

You get the text and can answer again (with an edit, or more READ lines). You have )" +
           std::to_string(read_rounds) + " such round" + (read_rounds == 1 ? "" : "s") + " of at most " +
           std::to_string(read_bytes) + R"( bytes each; ask for line ranges
of large files.
)";
  return R"(## How to answer

Answer with exactly one experiment: a single idea, small enough to judge by its val_bpb.

Start with one line that describes it; it becomes the commit message:
DESCRIPTION: <what you changed and why, one line>

Then give the edit in one or more of these forms. Paths are relative to the repository root and
must name editable files: the prompt shows them in full or lists them in its map (read a listed
file before you edit it).

1. SEARCH/REPLACE blocks (best for small changes). The line before each block is the file path.
   The SEARCH part must copy the current lines exactly, with enough context to match ONE place.

trainer/train.cu
<<<<<<< SEARCH
constexpr int DEPTH = 8;  // number of transformer blocks
=======
constexpr int DEPTH = 10;  // number of transformer blocks
>>>>>>> REPLACE

2. A unified diff of one or more files, in a ```diff fence, with --- a/<path> and +++ b/<path>
   headers and @@ hunks with three lines of context.

3. A whole file (for rewrites), replacing the file's entire content:
=== FILE: trainer/model/example.cuh ===
<the complete new content>
=== END FILE ===

Do not touch any file that is not listed as editable, do not create or delete files, and keep the
program printing its summary block. If an edit fails to apply you will get the exact error and can
answer again.
)" + read;
}

}  // namespace llm
