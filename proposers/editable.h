// The editable paths: globs from the config that say which files an edit may
// write. `*` and `?` stay within one path segment; `**` spans any number of
// segments (so "trainer/model/**" is everything under trainer/model/).
// Some paths are never editable whatever the globs say: the fixed harness, the
// build files, git's metadata and the daemon's state (is_protected_path).
#pragma once

#include <string>
#include <vector>

namespace ard {

/// True when the '/'-separated relative path matches the glob.
bool glob_match(const std::string& glob, const std::string& path);

/// True for a path no edit may write: anything under trainer/harness/, .git or
/// .autoresearchd/, and every build file (CMakeLists.txt, *.cmake) and git's
/// own files (.gitignore, .gitattributes, .gitmodules) anywhere.
bool is_protected_path(const std::string& path);

/// "" when no glob can reach a protected path; otherwise the first such glob,
/// named with its index and a path it would open, e.g.
///   editable[0]: "**" would let an edit change trainer/harness/eval.h
/// A glob reaches a path when it matches one of tracked (the repo's tracked
/// files) or of a fixed set of protected paths, or by its shape: its literal
/// directory lies in a protected directory, or a `**` below its literal directory
/// spans one.
std::string check_editable_globs(const std::vector<std::string>& globs, const std::vector<std::string>& tracked);

/// Why glob can never match a file by its shape ("it ends with '/'", an empty,
/// "." or ".." segment, a '**' inside a segment, a leading '/', a '\\'), or "".
/// A glob that matches no file yet is fine: an edit may add one.
std::string glob_never_matches(const std::string& glob);

class EditablePaths {
 public:
  explicit EditablePaths(std::vector<std::string> globs) : globs_(std::move(globs)) {}
  bool contains(const std::string& path) const;
  /// Empty when an edit may write path; otherwise the one-line reason it may not:
  /// a path that is not relative and plain ('.', '..', empty segments, a NUL or
  /// another control character), not matched by a glob, or protected.
  std::string check_write(const std::string& path) const;
  const std::vector<std::string>& globs() const { return globs_; }

 private:
  std::vector<std::string> globs_;
};

}  // namespace ard
