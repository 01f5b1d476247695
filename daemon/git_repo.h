// Git operations on the research repo and the engine's worktree slots, over
// libgit2: commits of edits made in the object database (no checkout), cherry-
// picks onto a newer best, refs (the branch autoresearch/<tag>, each
// candidate's refs/autoresearch/<tag>/exp/<id>), detached worktree slots
// checked out exactly at a commit, patches for `show`, and the check that a
// slot still equals its commit.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "proposers/editable.h"
#include "proposers/proposer.h"

struct git_repository;

namespace ard {

class GitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Initialises libgit2 for the life of the process.
class GitLibrary {
 public:
  GitLibrary();
  ~GitLibrary();
};

/// The git blob id of content: program.md versions are stored by it.
std::string blob_hash(const std::string& content);

/// The working-tree root of the repo that contains start.
std::filesystem::path discover_repo(const std::filesystem::path& start);

/// One repository: the user's checkout or the daemon's worktree.
class GitRepo {
 public:
  explicit GitRepo(const std::filesystem::path& path);
  ~GitRepo();
  GitRepo(const GitRepo&) = delete;
  GitRepo& operator=(const GitRepo&) = delete;

  std::filesystem::path workdir() const;
  /// The paths in the index ('/'-separated, relative to the workdir).
  std::vector<std::string> tracked_files() const;
  /// Full id of HEAD's commit.
  std::string head() const;
  bool has_commit(const std::string& id) const;
  /// Adds a line to .git/info/exclude (shared by every worktree) unless present.
  void exclude(const std::string& pattern);

  /// Opens (creating when needed) the worktree `name` at path with a detached
  /// HEAD at commit, its files, index and untracked files exactly the commit's
  /// (ignored files, such as a build directory, stay). The engine's slots: no
  /// branch is checked out in them, so a branch moves by a ref update alone.
  std::unique_ptr<GitRepo> open_detached_worktree(const std::string& name, const std::filesystem::path& path,
                                                  const std::string& commit);

  /// Detaches HEAD at commit and makes the files, the index and the untracked
  /// (not ignored) files match it exactly: whatever a child left is removed.
  void checkout_detached(const std::string& commit);

  /// A commit whose parent is `parent` and whose tree is the parent's with
  /// writes applied (files added or replaced; a path that names a directory,
  /// or holds a NUL or control character, is a GitError). Made in the object
  /// database alone: no worktree is touched. ref, when not empty, is pointed
  /// at it. Returns "" when the writes change nothing.
  std::string commit_writes(const std::string& parent, const std::vector<FileWrite>& writes,
                            const std::string& message, const std::string& ref);

  /// commit's change against its first parent, re-applied onto `onto`.
  struct CherryPick {
    std::string commit;                  ///< the new commit (parent: onto), or "" on a conflict
    std::vector<std::string> conflicts;  ///< paths that conflict
  };
  CherryPick cherry_pick(const std::string& commit, const std::string& onto, const std::string& ref);

  /// Points the reference name (e.g. refs/heads/autoresearch/x) at commit.
  void set_ref(const std::string& name, const std::string& commit, const std::string& log_message);
  /// The commit a reference points at, or nothing when it does not exist.
  std::optional<std::string> ref_target(const std::string& name) const;
  /// Every reference whose name starts with prefix, with its target.
  std::map<std::string, std::string> refs_with_prefix(const std::string& prefix) const;

  /// The editable files of a commit, from its tree.
  std::vector<EditableFile> editable_files(const std::string& commit, const EditablePaths& editable) const;

  /// The patch from parent to commit.
  std::string diff(const std::string& parent, const std::string& commit) const;

  /// Paths whose index or working-tree content differs from base, untracked
  /// files included, ignored files not.
  std::vector<std::string> changed_since(const std::string& base) const;

 private:
  git_repository* repo_ = nullptr;
};

}  // namespace ard
