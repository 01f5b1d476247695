// See editable.h.
#include "proposers/editable.h"

#include <string_view>

namespace ard {
namespace {

bool match_from(std::string_view g, std::string_view p) {
  while (!g.empty()) {
    if (g.starts_with("**")) {
      // "**/" matches zero or more whole segments; a trailing "**" matches the rest.
      std::string_view rest = g.substr(2);
      if (rest.starts_with("/")) rest.remove_prefix(1);
      else if (!rest.empty()) return false;  // "a**b" is not a glob we accept
      if (rest.empty()) return true;
      for (size_t i = 0; i <= p.size(); ++i) {
        if ((i == 0 || p[i - 1] == '/') && match_from(rest, p.substr(i))) return true;
      }
      return false;
    }
    char c = g.front();
    if (c == '*') {
      std::string_view rest = g.substr(1);
      for (size_t i = 0; i <= p.size(); ++i) {
        if (match_from(rest, p.substr(i))) return true;
        if (i < p.size() && p[i] == '/') break;
      }
      return false;
    }
    if (p.empty()) return false;
    if (c == '?' ? p.front() == '/' : c != p.front()) return false;
    g.remove_prefix(1);
    p.remove_prefix(1);
  }
  return p.empty();
}

}  // namespace

bool glob_match(const std::string& glob, const std::string& path) { return match_from(glob, path); }

bool EditablePaths::contains(const std::string& path) const {
  for (const auto& g : globs_)
    if (glob_match(g, path)) return true;
  return false;
}

std::string EditablePaths::check_write(const std::string& path) const {
  if (path.empty()) return "edit has an empty path";
  if (path.front() == '/' || path.find('\\') != std::string::npos)
    return "edit path '" + path + "' is not a relative '/' path";
  std::string_view rest = path;
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    std::string_view seg = rest.substr(0, slash);
    if (seg.empty() || seg == "." || seg == ".." || seg == ".git")
      return "edit path '" + path + "' is not a plain path inside the repo";
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (!contains(path)) return "edit touches " + path + ", which is not editable";
  return {};
}

}  // namespace ard
