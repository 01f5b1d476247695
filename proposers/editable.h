// The editable paths: globs from the config that say which files an edit may
// write. `*` and `?` stay within one path segment; `**` spans any number of
// segments (so "trainer/model/**" is everything under trainer/model/).
#pragma once

#include <string>
#include <vector>

namespace ard {

/// True when the '/'-separated relative path matches the glob.
bool glob_match(const std::string& glob, const std::string& path);

class EditablePaths {
 public:
  explicit EditablePaths(std::vector<std::string> globs) : globs_(std::move(globs)) {}
  bool contains(const std::string& path) const;
  /// Empty when an edit may write path; otherwise the one-line reason it may not.
  std::string check_write(const std::string& path) const;
  const std::vector<std::string>& globs() const { return globs_; }

 private:
  std::vector<std::string> globs_;
};

}  // namespace ard
