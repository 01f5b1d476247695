// See edit_apply.h.
#include "llm_client/edit_apply.h"
#include "proposers/text_lines.h"

#include <algorithm>
#include <map>

#include "llm_client/unified_diff.h"

namespace llm {

using ard::split_lines;
using ard::trim;

namespace {

/// The line with indentation dropped and every run of blanks made one space.
std::string squash(const std::string& line) {
  std::string out;
  bool blank = false;
  for (char c : line) {
    if (c == ' ' || c == '\t' || c == '\r') {
      blank = true;
      continue;
    }
    if (blank && !out.empty()) out += ' ';
    blank = false;
    out += c;
  }
  return out;
}

std::string indent_of(const std::string& line) { return line.substr(0, line.find_first_not_of(" \t")); }

std::string line_list(const std::vector<size_t>& line_numbers) {
  std::string out;
  for (size_t i = 0; i < line_numbers.size() && i < 5; ++i) out += (i ? ", " : "") + std::to_string(line_numbers[i]);
  if (line_numbers.size() > 5) out += ", ...";
  return out;
}

std::string ambiguous(size_t n, const std::vector<size_t>& at, const char* how) {
  return "SEARCH text matches " + std::to_string(n) + " places" + how + " (lines " + line_list(at) +
         "); include more surrounding lines so that it matches one";
}

/// Why nothing matched: the first SEARCH line the file does not have.
std::string no_match(const std::vector<std::string>& file, const std::vector<std::string>& search) {
  for (const auto& s : search) {
    std::string q = squash(s);
    if (q.empty()) continue;
    bool found = false;
    for (const auto& f : file)
      if (squash(f) == q) found = true;
    if (!found) {
      std::string shown = q.size() > 100 ? q.substr(0, 100) + "..." : q;
      return "SEARCH text matches nowhere, not even ignoring whitespace; this line is not in the file: '" + shown + "'";
    }
  }
  return "SEARCH text matches nowhere: each of its lines is in the file, but not together in this order";
}

}  // namespace

std::string apply_search_replace(std::string& content, const std::string& search, const std::string& replace) {
  if (search.find_first_not_of(" \t\r\n") == std::string::npos)
    return "the SEARCH part is empty; copy the current lines to replace into it";
  // Work on whole lines: make the last line end with '\n' while matching.
  bool had_newline = content.empty() || content.back() == '\n';
  std::string text = had_newline ? content : content + "\n";
  std::string repl = replace;
  if (!repl.empty() && repl.back() != '\n') repl += '\n';
  auto done = [&](std::string result) {
    if (!had_newline && !result.empty() && result.back() == '\n') result.pop_back();
    content = std::move(result);
    return std::string();
  };

  // 1. Exact, at line starts.
  std::vector<size_t> exact_at, exact_lines;
  for (size_t at = text.find(search); at != std::string::npos; at = text.find(search, at + 1)) {
    if (at != 0 && text[at - 1] != '\n') continue;
    exact_at.push_back(at);
    exact_lines.push_back(1 + std::count(text.begin(), text.begin() + at, '\n'));
  }
  if (exact_at.size() == 1) return done(text.substr(0, exact_at[0]) + repl + text.substr(exact_at[0] + search.size()));
  if (exact_at.size() > 1) return ambiguous(exact_at.size(), exact_lines, "");

  // 2. The same non-blank lines, ignoring indentation, runs of blanks and
  //    blank lines (models often drop or add an empty line).
  std::vector<std::string> file = split_lines(text), want;
  for (const std::string& line : split_lines(search))
    if (!squash(line).empty()) want.push_back(line);
  std::vector<size_t> filled;  // indices of the file's non-blank lines
  for (size_t i = 0; i < file.size(); ++i)
    if (!squash(file[i]).empty()) filled.push_back(i);
  std::vector<size_t> starts;  // into filled
  for (size_t i = 0; i + want.size() <= filled.size(); ++i) {
    bool same = true;
    for (size_t k = 0; k < want.size() && same; ++k) same = squash(file[filled[i + k]]) == squash(want[k]);
    if (same) starts.push_back(i);
  }
  if (starts.empty()) return no_match(file, want);
  if (starts.size() > 1) {
    std::vector<size_t> at;
    for (size_t s : starts) at.push_back(filled[s] + 1);
    return ambiguous(starts.size(), at, " ignoring whitespace");
  }
  size_t first = filled[starts[0]], last = filled[starts[0] + want.size() - 1];
  // Re-indent the replacement by the difference between SEARCH and the file.
  std::string from = indent_of(want.front()), to = indent_of(file[first]);
  std::string out;
  for (size_t i = 0; i < first; ++i) out += file[i] + "\n";
  for (const std::string& line : split_lines(repl)) {
    if (squash(line).empty()) out += "\n";
    else if (line.rfind(from, 0) == 0) out += to + line.substr(from.size()) + "\n";
    else out += line + "\n";
  }
  for (size_t i = last + 1; i < file.size(); ++i) out += file[i] + "\n";
  return done(out);
}

ApplyResult apply_edits(const std::vector<Edit>& edits, const std::vector<ard::EditableFile>& files,
                        const PathPolicy& policy) {
  std::map<std::string, std::string> current;
  for (const auto& f : files) current[f.path] = f.content;
  std::string known;
  for (const auto& f : files) known += (known.empty() ? "" : ", ") + f.path;

  ApplyResult result;
  auto fail = [&](const Edit& e, const std::string& why) {
    if (!result.error.empty()) result.error += "\n";
    result.error += "edit " + std::to_string(e.number) + " (" + e.kind() + ", " + e.path() + "): " + why;
  };
  for (const Edit& e : edits) {
    std::string refused = policy ? policy(e.path()) : "";
    if (!refused.empty()) {
      fail(e, "refused: " + refused);
      continue;
    }
    auto it = current.find(e.path());
    if (it == current.end()) {
      fail(e, "refused: " + e.path() + " does not exist; the editable files are: " + known);
      continue;
    }
    std::string why;
    if (auto* sr = std::get_if<SearchReplace>(&e.op)) why = apply_search_replace(it->second, sr->search, sr->replace);
    else if (auto* d = std::get_if<UnifiedDiff>(&e.op)) why = apply_unified_diff(it->second, d->path, d->text);
    else it->second = std::get<WholeFile>(e.op).content;
    if (!why.empty()) fail(e, why);
  }
  if (!result.error.empty()) return result;
  for (const auto& f : files)
    if (current[f.path] != f.content) result.writes.push_back({f.path, current[f.path]});
  if (result.writes.empty()) result.error = "the edits leave every file as it was";
  return result;
}

}  // namespace llm
