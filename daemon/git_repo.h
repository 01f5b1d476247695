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

#include "daemon/exec/slot_files.h"
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
  /// Makes a new repository in the existing directory `path` (branch `main`)
  /// whose first commit holds every file under it that .gitignore does not
  /// ignore, as `git init -b main && git add -A && git commit` would. Returns
  /// the commit's id; GitError when path already is a repository.
  static std::string init_with_files(const std::filesystem::path& path, const std::string& message);
  GitRepo(const GitRepo&) = delete;
  GitRepo& operator=(const GitRepo&) = delete;

  std::filesystem::path workdir() const;
  /// The paths in the index ('/'-separated, relative to the workdir).
  std::vector<std::string> tracked_files() const;
  /// Full id of HEAD's commit.
  std::string head() const;
  bool has_commit(const std::string& id) const;
  /// How many commits `to` has that `from` does not (git rev-list --count from..to).
  size_t commits_ahead(const std::string& from, const std::string& to) const;
  /// The commits from `from` (excluded) to `to` (included) along first parents,
  /// oldest first; nullopt when `from` is not on that path.
  std::optional<std::vector<std::string>> first_parent_path(const std::string& from, const std::string& to) const;
  /// The first line of a commit's message.
  std::string summary(const std::string& commit) const;
  /// Adds a line to .git/info/exclude (shared by every worktree) unless present.
  void exclude(const std::string& pattern);

  /// Opens (creating when needed) the worktree `name` at path with a detached
  /// HEAD at commit and its files exactly the commit's (checkout_detached); the
  /// kept directories (a build directory) stay. A worktree that cannot be made
  /// so is deleted and created again (recreate_worktree). The engine's slots: no
  /// branch is checked out in them, so a branch moves by a ref update alone.
  std::unique_ptr<GitRepo> open_detached_worktree(const std::string& name, const std::filesystem::path& path,
                                                  const std::string& commit, const SlotKeep& keep = {});

  /// Deletes the worktree `name` at path (its directory without following a
  /// link, its metadata in the repository) and creates it afresh from the
  /// object store, detached at commit.
  std::unique_ptr<GitRepo> recreate_worktree(const std::string& name, const std::filesystem::path& path,
                                             const std::string& commit);

  /// Makes this worktree's files equal to commit's tree by content, through
  /// make_slot_equal (no link followed, nothing written in place, the stat
  /// cache never trusted): edits, symlinks, FIFOs and untracked files a child
  /// left go, whatever the index says; the kept directories stay. Then detaches
  /// HEAD at commit and writes an index of the commit's tree. A GitError names
  /// the path that could not be fixed (the caller re-creates the worktree).
  void checkout_detached(const std::string& commit, const SlotKeep& keep = {});

  /// The commit's tree as the slot must hold it: every blob, symlink and
  /// submodule with its mode and id.
  std::vector<SlotEntry> tree_entries(const std::string& commit) const;
  /// A blob's content by id.
  std::string blob(const std::string& id) const;

  /// Paths of this worktree that differ from commit by content or type
  /// (slot_differences), untracked files included, the kept directories not.
  std::vector<std::string> differences(const std::string& commit, const SlotKeep& keep) const;

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
  /// A commit onto `onto` that undoes commit's change (against its first
  /// parent), with message; "" and the conflicting paths when it does not apply.
  CherryPick revert(const std::string& commit, const std::string& onto, const std::string& message);

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
  /// The paths the change from parent to commit touches, in order: each added,
  /// modified or deleted file (a rename names both its paths).
  std::vector<std::string> changed_paths(const std::string& parent, const std::string& commit) const;

  /// A revision (an id or a prefix of one, a branch, HEAD~1, ...) as a commit.
  struct Resolved {
    std::string commit;  ///< its full id
    std::string parent;  ///< its first parent's full id; "" for a root commit
  };
  /// nullopt when rev names no commit of this repository.
  std::optional<Resolved> resolve(const std::string& rev) const;

 private:
  git_repository* repo_ = nullptr;
};

}  // namespace ard
