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

/// The directories whose every file is protected, with a file to name in messages.
constexpr std::pair<std::string_view, std::string_view> kProtectedDirs[] = {
    {"trainer/harness", "trainer/harness/eval.h"},
    {".git", ".git/config"},
    {".autoresearchd", ".autoresearchd/results.db"},
};

/// Protected paths every glob is tried against, whatever the repo tracks.
constexpr std::string_view kProtectedProbes[] = {
    "trainer/harness/eval.h", "trainer/harness/probe_model.h", "trainer/harness/CMakeLists.txt",
    "CMakeLists.txt",         "trainer/CMakeLists.txt",        "cmake/x.cmake",
    "trainer/x.cmake",        ".git/config",
    ".git/hooks/pre-commit",  ".autoresearchd/results.db",     ".autoresearchd/worktrees/main/trainer/train.cu",
    ".gitignore",             ".gitattributes",                ".gitmodules",
};

bool within(std::string_view path, std::string_view dir) {
  return path == dir || (path.starts_with(dir) && path.size() > dir.size() && path[dir.size()] == '/');
}

/// The glob's segments before the first one with a wildcard, joined by '/'.
std::string literal_dir(std::string_view glob) {
  std::string out;
  while (true) {
    size_t slash = glob.find('/');
    std::string_view seg = glob.substr(0, slash);
    if (slash == std::string_view::npos || seg.find_first_of("*?") != std::string_view::npos) return out;
    if (!out.empty()) out += '/';
    out += seg;
    glob.remove_prefix(slash + 1);
  }
}

}  // namespace

bool is_protected_path(const std::string& path) {
  for (const auto& [dir, example] : kProtectedDirs)
    if (within(path, dir)) return true;
  std::string_view name = path;
  if (size_t slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  // git's own files in the tree: what is ignored, filters and diff drivers that run commands, submodules.
  if (name == ".gitignore" || name == ".gitattributes" || name == ".gitmodules") return true;
  return name == "CMakeLists.txt" || name.ends_with(".cmake");
}

std::string glob_never_matches(const std::string& glob) {
  if (glob.empty()) return "it is empty";
  if (glob.front() == '/') return "it starts with '/' (globs are relative to the repo root)";
  if (glob.back() == '/') return "it ends with '/' (globs match files, not directories)";
  if (glob.find('\\') != std::string::npos) return "it holds a '\\' (paths are '/'-separated)";
  size_t start = 0;
  while (true) {
    const size_t slash = glob.find('/', start);
    const std::string_view seg = std::string_view(glob).substr(start, slash == std::string::npos ? std::string::npos
                                                                                                   : slash - start);
    if (seg.empty()) return "it has an empty segment ('//')";
    if (seg == "." || seg == "..") return "it has a '" + std::string(seg) + "' segment (paths are normalized)";
    if (seg.find("**") != std::string_view::npos && seg != "**")
      return "'**' must be a whole segment ('a/**/b'), not part of '" + std::string(seg) + "'";
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return "";
}

std::string check_editable_globs(const std::vector<std::string>& globs, const std::vector<std::string>& tracked) {
  for (size_t i = 0; i < globs.size(); ++i) {
    const std::string& g = globs[i];
    if (std::string why = glob_never_matches(g); !why.empty())
      return "editable[" + std::to_string(i) + "]: \"" + g + "\" can never match a file: " + why;
    auto refuse = [&](std::string_view path) {
      return "editable[" + std::to_string(i) + "]: \"" + g + "\" would let an edit change " + std::string(path);
    };
    for (std::string_view probe : kProtectedProbes)
      if (glob_match(g, std::string(probe))) return refuse(probe);
    for (const auto& path : tracked)
      if (is_protected_path(path) && glob_match(g, path)) return refuse(path);
    if (g.find_first_of("*?") == std::string::npos) {
      if (is_protected_path(g)) return refuse(g);
      continue;
    }
    const std::string dir = literal_dir(g);
    for (const auto& [protected_dir, example] : kProtectedDirs) {
      if (within(dir, protected_dir)) return refuse(std::string(protected_dir) + "/...");
      if (g.find("**") != std::string::npos && (dir.empty() || within(protected_dir, dir)))
        return refuse(std::string(protected_dir) + "/...");
    }
  }
  return "";
}

bool glob_match(const std::string& glob, const std::string& path) { return match_from(glob, path); }

bool EditablePaths::contains(const std::string& path) const {
  for (const auto& g : globs_)
    if (glob_match(g, path)) return true;
  return false;
}

std::string EditablePaths::check_write(const std::string& path) const {
  if (path.empty()) return "edit has an empty path";
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f) return "edit path has a NUL or control character: refused";
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
  if (is_protected_path(path))
    return "edit touches " + path + ", which is never editable (the harness, a build file, .git or the daemon's state)";
  return {};
}

}  // namespace ard
