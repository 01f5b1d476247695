// See regions.h.
#include "daemon/decide/regions.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace ard {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// The path of a `--- a/x` or `+++ b/x` line; "" for /dev/null. A tab ends it
/// (some tools append a time stamp).
std::string header_path(const std::string& line) {
  std::string p = line.substr(4);
  if (size_t tab = p.find('\t'); tab != std::string::npos) p = p.substr(0, tab);
  while (!p.empty() && (p.back() == '\r' || p.back() == ' ')) p.pop_back();
  if (p == "/dev/null") return "";
  if (starts_with(p, "a/") || starts_with(p, "b/")) p = p.substr(2);
  return p;
}

/// `@@ -a,b +c,d @@ section`: the counts and the section; false when malformed.
bool parse_hunk(const std::string& line, int& old_count, int& new_start, int& new_count, std::string& section) {
  long a = 0, b = 1, c = 0, d = 1;
  size_t plus = line.find(" +", 3);
  if (plus == std::string::npos) return false;
  const std::string old_part = line.substr(4, plus - 4), new_part = line.substr(plus + 2);
  if (std::sscanf(old_part.c_str(), "%ld,%ld", &a, &b) < 1) return false;
  if (old_part.find(',') == std::string::npos) b = 1;
  if (std::sscanf(new_part.c_str(), "%ld,%ld", &c, &d) < 1) return false;
  if (new_part.substr(0, new_part.find(' ')).find(',') == std::string::npos) d = 1;
  size_t close = line.find("@@", plus);
  if (close == std::string::npos) return false;
  section = close + 2 < line.size() ? line.substr(close + 2) : "";
  while (!section.empty() && section.front() == ' ') section.erase(section.begin());
  old_count = static_cast<int>(b);
  new_start = static_cast<int>(c);
  new_count = static_cast<int>(d);
  return a >= 0 && b >= 0 && c >= 0 && d >= 0;
}

std::string block_of(int line) {
  const int first = (std::max(line, 1) - 1) / kRegionBlockLines * kRegionBlockLines + 1;
  return "lines " + std::to_string(first) + "-" + std::to_string(first + kRegionBlockLines - 1);
}

/// One file of the diff as it is read.
struct FileState {
  std::string old_path, new_path, rename_to;
  bool is_new = false, is_deleted = false, any_hunk = false;
  std::string path() const {
    if (!new_path.empty()) return new_path;
    if (!rename_to.empty()) return rename_to;
    return old_path;
  }
};

/// One hunk as it is read: its region, and what its key will be.
struct HunkState {
  DiffRegion region;
  std::string section_name;  // from the @@ header
  std::string inner_name;    // the last definition seen in the hunk before its first change
  bool closed = false;       // a `}` at column 0 before the first change
  bool changed = false;      // a +/- line seen
  int first_change = 0;      // the new-side line of the first change
  int new_line = 0;          // the next new-side line number
  int old_left = 0, new_left = 0;
};

}  // namespace

std::string definition_name(const std::string& line) {
  if (line.empty() || !(std::isalpha(static_cast<unsigned char>(line[0])) || line[0] == '_')) return "";
  std::string text = line;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::istringstream words(text);
  std::string first, second;
  words >> first >> second;
  for (const char* kind : {"struct", "class", "union", "enum", "namespace"})
    if (first == kind) {
      if (second == "class" || second == "struct") {  // enum class X
        std::string third;
        words >> third;
        second = third;
      }
      size_t end = 0;
      while (end < second.size() && (ident_char(second[end]) || second[end] == ':')) ++end;
      second = second.substr(0, end);
      if (text.back() == ';' && text.find('{') == std::string::npos) return "";  // a declaration
      return second.empty() ? std::string(kind) : std::string(kind) + " " + second;
    }
  if (text.back() == ';') return "";
  std::string name;
  for (size_t paren = text.find('('); paren != std::string::npos; paren = text.find('(', paren + 1)) {
    if (text.find('=') < paren) return "";  // x = f(...)
    size_t end = paren;
    while (end > 0 && text[end - 1] == ' ') --end;
    size_t begin = end;
    while (begin > 0 && (ident_char(text[begin - 1]) || text[begin - 1] == ':' || text[begin - 1] == '~')) --begin;
    name = text.substr(begin, end - begin);
    // An attribute before the name (__launch_bounds__(256), alignas(16)): past its parentheses.
    const bool attribute = (name.size() > 4 && name.rfind("__", 0) == 0 && name.compare(name.size() - 2, 2, "__") == 0) ||
                           name == "alignas" || name == "__declspec";
    if (!attribute) break;
    int depth = 0;
    for (; paren < text.size(); ++paren) {
      if (text[paren] == '(') ++depth;
      else if (text[paren] == ')' && --depth == 0) break;
    }
    name.clear();
    if (paren >= text.size()) return "";
  }
  while (!name.empty() && name.front() == ':') name.erase(name.begin());
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return "";
  for (const char* word : {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case"})
    if (name == word) return "";
  return name;
}

std::vector<DiffRegion> diff_regions(const std::string& diff) {
  std::vector<DiffRegion> out;
  FileState file;
  bool in_file = false;
  HunkState hunk;
  bool in_hunk = false;

  auto finish_hunk = [&] {
    if (!in_hunk) return;
    in_hunk = false;
    DiffRegion r = hunk.region;
    r.path = file.path();
    if (file.is_new) r.key = r.path + " (new file)";
    else if (file.is_deleted) r.key = r.path + " (deleted)";
    else if (!hunk.inner_name.empty()) r.key = r.path + ": " + hunk.inner_name;
    else if (!hunk.closed && !hunk.section_name.empty()) r.key = r.path + ": " + hunk.section_name;
    else r.key = r.path + ": " + block_of(hunk.changed ? hunk.first_change : r.first);
    if (file.is_deleted) r.first = r.last = 0;
    out.push_back(std::move(r));
  };
  auto finish_file = [&] {
    finish_hunk();
    if (in_file && !file.any_hunk && !file.path().empty()) {
      DiffRegion r;
      r.path = file.path();
      r.key = file.is_new ? r.path + " (new file)" : file.is_deleted ? r.path + " (deleted)" : r.path;
      out.push_back(std::move(r));
    }
    in_file = false;
    file = FileState{};
  };

  std::istringstream lines(diff);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (in_hunk && (hunk.old_left > 0 || hunk.new_left > 0)) {
      const char sign = line.empty() ? ' ' : line[0];
      const std::string text = line.empty() ? "" : line.substr(1);
      if (sign == '\\') continue;  // "\ No newline at end of file"
      if (sign == '+' || sign == '-') {
        if (!hunk.changed) {
          hunk.changed = true;
          hunk.first_change = std::max(hunk.new_line, 1);
          if (std::string name = definition_name(text); !name.empty()) hunk.inner_name = name, hunk.closed = false;
        }
        if (sign == '+') --hunk.new_left, ++hunk.new_line;
        else --hunk.old_left;
      } else {
        if (!hunk.changed) {
          if (std::string name = definition_name(text); !name.empty()) hunk.inner_name = name, hunk.closed = false;
          else if (!text.empty() && text[0] == '}') hunk.inner_name.clear(), hunk.closed = true;
        }
        --hunk.old_left, --hunk.new_left, ++hunk.new_line;
      }
      continue;
    }
    if (starts_with(line, "diff --git ")) {
      finish_file();
      in_file = true;
      // "diff --git a/x b/y": the new path, until a +++ line says otherwise.
      if (size_t b = line.rfind(" b/"); b != std::string::npos) file.new_path = line.substr(b + 3);
      continue;
    }
    if (starts_with(line, "@@ ")) {
      finish_hunk();
      int old_count = 0, new_start = 0, new_count = 0;
      std::string section;
      if (!parse_hunk(line, old_count, new_start, new_count, section)) continue;
      in_file = true;
      file.any_hunk = true;
      hunk = HunkState{};
      hunk.region.first = new_count == 0 ? std::max(new_start, 1) : new_start;
      hunk.region.last = new_count == 0 ? hunk.region.first : new_start + new_count - 1;
      hunk.section_name = definition_name(section);
      hunk.new_line = new_start;
      hunk.old_left = old_count;
      hunk.new_left = new_count;
      in_hunk = true;
      continue;
    }
    if (starts_with(line, "--- ")) {
      if (in_hunk || (in_file && file.any_hunk)) finish_file();  // a plain diff's next file
      in_file = true;
      file.old_path = header_path(line);
      if (file.old_path.empty()) file.is_new = true;
      continue;
    }
    if (starts_with(line, "+++ ")) {
      in_file = true;
      const std::string p = header_path(line);
      if (p.empty()) file.is_deleted = true, file.new_path.clear();
      else file.new_path = p;
      continue;
    }
    if (starts_with(line, "new file mode")) file.is_new = true;
    else if (starts_with(line, "deleted file mode")) file.is_deleted = true;
    else if (starts_with(line, "rename to ") || starts_with(line, "copy to ")) file.rename_to = line.substr(line.find(" to ") + 4);
    else if (starts_with(line, "rename from ") || starts_with(line, "copy from ")) file.old_path = line.substr(line.find(" from ") + 6);
  }
  finish_file();
  return out;
}

std::string region_text(const DiffRegion& r) {
  if (r.first <= 0) return r.path;
  if (r.last <= r.first) return r.path + ":" + std::to_string(r.first);
  return r.path + ":" + std::to_string(r.first) + "-" + std::to_string(r.last);
}

std::vector<std::string> region_keys(const std::vector<DiffRegion>& regions) {
  std::vector<std::string> keys;
  for (const auto& r : regions)
    if (std::find(keys.begin(), keys.end(), r.key) == keys.end()) keys.push_back(r.key);
  return keys;
}

}  // namespace ard
