// A worktree slot's files compared with a commit's tree, and made equal to it,
// through file descriptors opened from the slot's root: no path is followed
// through a symlink, no file is written in place (a file that differs is
// unlinked and created anew), and content is compared by its git blob id, never
// by the index's stat cache. A child may have left anything in a slot (a
// symlink at a tracked path, a FIFO, a same-size rewrite with its old mtime, a
// directory it made unreadable); this is what the daemon trusts instead.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace ard {

/// One entry of a commit's tree, as the slot must hold it.
struct SlotEntry {
  enum class Kind { kFile, kExecutable, kSymlink, kSubmodule };
  std::string path;  ///< '/'-separated, relative to the slot's root
  Kind kind = Kind::kFile;
  std::string id;    ///< the blob id (a symlink's blob is its target); a submodule's commit
};

/// What the slot may hold besides the commit's entries.
struct SlotKeep {
  /// Top-level names left as they are when they are real directories (the
  /// build directory); as anything else (a symlink, a file) they differ.
  std::vector<std::string> directories;
};

/// Reads a blob's content by id (the object store).
using BlobReader = std::function<std::string(const std::string& id)>;

/// The paths under root that differ from entries: content (by blob id), type
/// (a symlink or FIFO where a file belongs), the executable bit, a symlink's
/// target, entries missing, and anything present that the commit does not have
/// (kept directories aside). The root's `.git` must be a regular file (a
/// worktree's) or a directory (a repository's); it is never looked into. An
/// entry that cannot be read differs. Sorted, each path once.
std::vector<std::string> slot_differences(const std::filesystem::path& root, const std::vector<SlotEntry>& entries,
                                          const SlotKeep& keep);

/// Makes root equal to entries: whatever differs is removed (a directory with
/// all it holds, its permissions restored first) and created anew from
/// read_blob, without following any link. Returns "" when root then equals
/// entries (checked again from scratch), else one line: the path and the error
/// (the caller deletes the slot and creates it again).
std::string make_slot_equal(const std::filesystem::path& root, const std::vector<SlotEntry>& entries,
                            const SlotKeep& keep, const BlobReader& read_blob);

/// A listing of every entry under dir (path, type, mode, size, mtime, ctime,
/// inode; a symlink's target), not following links: equal listings mean nothing
/// was written, created, removed or touched between them (a write sets the
/// ctime, which no unprivileged process can set back). "" for a dir that does
/// not exist; a line naming the error for one that cannot be read.
std::string stat_listing(const std::filesystem::path& dir);

/// Deletes path and everything below it without following a link, making
/// directories a child left unreadable or unwritable deletable first. Returns
/// "" or one line naming the path and the error. A path that does not exist is "".
std::string remove_tree_nofollow(const std::filesystem::path& path);

}  // namespace ard
