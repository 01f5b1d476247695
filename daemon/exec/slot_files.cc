// See slot_files.h. One walker both compares and repairs: every directory is
// opened with openat(O_DIRECTORY | O_NOFOLLOW) from its parent's descriptor,
// every entry is looked at with fstatat(AT_SYMLINK_NOFOLLOW), files are read
// with O_NOFOLLOW | O_NONBLOCK (a FIFO cannot block the daemon) and written
// only as new files (O_CREAT | O_EXCL | O_NOFOLLOW) after the old entry is
// unlinked. The children that could race it are dead when it runs.
#include "daemon/exec/slot_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "daemon/git_repo.h"

namespace ard {
namespace {

/// Deeper than this, a directory tree is not walked: a child that nests
/// directories a million deep gets its slot deleted, not the daemon's descriptors.
constexpr int kMaxDepth = 128;

struct Node {
  enum class Type { kDir, kFile, kExecutable, kSymlink, kSubmodule } type = Type::kDir;
  std::string id;
  std::map<std::string, Node> children;
};

Node build_tree(const std::vector<SlotEntry>& entries) {
  Node root;
  for (const SlotEntry& e : entries) {
    Node* at = &root;
    size_t start = 0;
    while (true) {
      size_t slash = e.path.find('/', start);
      std::string part = e.path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      Node& child = at->children[part];
      if (slash == std::string::npos) {
        switch (e.kind) {
          case SlotEntry::Kind::kFile: child.type = Node::Type::kFile; break;
          case SlotEntry::Kind::kExecutable: child.type = Node::Type::kExecutable; break;
          case SlotEntry::Kind::kSymlink: child.type = Node::Type::kSymlink; break;
          case SlotEntry::Kind::kSubmodule: child.type = Node::Type::kSubmodule; break;
        }
        child.id = e.id;
        break;
      }
      at = &child;
      start = slash + 1;
    }
  }
  return root;
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

std::string errno_text(int err) { return std::strerror(err); }

/// The names in an open directory, "." and ".." aside; nullopt-like empty
/// error string on success.
std::string list_names(int dirfd, std::vector<std::string>& names) {
  int dup = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return errno_text(errno);
  DIR* d = ::fdopendir(dup);
  if (!d) {
    int err = errno;
    ::close(dup);
    return errno_text(err);
  }
  ::rewinddir(d);
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  int err = errno;
  ::closedir(d);
  return err ? errno_text(err) : "";
}

bool read_fd(int fd, std::string& out) {
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

std::string remove_at(int dirfd, const std::string& name, const std::string& rel, int depth);

std::string remove_children(int fd, const std::string& rel, int depth) {
  if (depth > kMaxDepth) return rel + ": nested deeper than " + std::to_string(kMaxDepth) + " directories";
  std::vector<std::string> names;
  if (std::string e = list_names(fd, names); !e.empty()) return rel + ": " + e;
  for (const auto& n : names)
    if (std::string e = remove_at(fd, n, rel + "/" + n, depth + 1); !e.empty()) return e;
  return "";
}

std::string remove_at(int dirfd, const std::string& name, const std::string& rel, int depth) {
  struct stat st;
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? "" : rel + ": " + errno_text(errno);
  if (S_ISDIR(st.st_mode)) {
    // A directory a child made unreadable or unwritable is made deletable first.
    if ((st.st_mode & 0700) != 0700 && ::fchmodat(dirfd, name.c_str(), 0700, 0) != 0)
      return rel + ": " + errno_text(errno);
    Fd sub(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.ok()) return rel + ": " + errno_text(errno);
    if (std::string e = remove_children(sub.get(), rel, depth); !e.empty()) return e;
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0) return rel + ": " + errno_text(errno);
    return "";
  }
  if (::unlinkat(dirfd, name.c_str(), 0) != 0) return rel + ": " + errno_text(errno);
  return "";
}

class Walker {
 public:
  Walker(const SlotKeep& keep, const BlobReader* read_blob) : keep_(keep), read_blob_(read_blob) {}

  /// Compares (and, with a reader, repairs) the directory open at fd with want.
  void directory(int fd, const std::string& prefix, const Node& want, int depth) {
    if (!error_.empty()) return;
    if (depth > kMaxDepth) return fail(prefix, "nested deeper than " + std::to_string(kMaxDepth) + " directories");
    std::vector<std::string> names;
    if (std::string e = list_names(fd, names); !e.empty()) return fail(prefix.empty() ? "." : prefix, e);
    std::set<std::string> present(names.begin(), names.end());
    for (const std::string& name : names) {
      if (!error_.empty()) return;
      const std::string rel = prefix + name;
      struct stat st;
      if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        differ(rel);
        if (repairing()) fail(rel, errno_text(errno));
        continue;
      }
      if (prefix.empty() && name == ".git") {
        // A worktree's .git file or a repository's directory: the sandbox keeps
        // it read-only; anything else is past repair here.
        if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) continue;
        differ(rel);
        if (repairing()) fail(rel, "not a file or a directory");
        continue;
      }
      auto it = want.children.find(name);
      if (it == want.children.end()) {
        const auto& kept = keep_.directories;
        if (prefix.empty() && S_ISDIR(st.st_mode) && std::find(kept.begin(), kept.end(), name) != kept.end()) continue;
        differ(rel);
        if (repairing())
          if (std::string e = remove_at(fd, name, rel, depth); !e.empty()) fail(e);
        continue;
      }
      entry(fd, name, rel, st, it->second, depth);
    }
    for (const auto& [name, node] : want.children) {
      if (!error_.empty()) return;
      if (present.count(name)) continue;
      differ(prefix + name);
      if (repairing()) create(fd, name, prefix + name, node, depth);
    }
  }

  bool repairing() const { return read_blob_ != nullptr; }
  const std::string& error() const { return error_; }
  std::vector<std::string> differences() {
    std::sort(diffs_.begin(), diffs_.end());
    diffs_.erase(std::unique(diffs_.begin(), diffs_.end()), diffs_.end());
    return diffs_;
  }
  void differ(const std::string& rel) { diffs_.push_back(rel); }
  void fail(const std::string& rel, const std::string& what) { fail(rel + ": " + what); }
  void fail(const std::string& line) {
    if (error_.empty()) error_ = line;
  }

 private:
  void entry(int fd, const std::string& name, const std::string& rel, const struct stat& st, const Node& want,
             int depth) {
    bool same = false;
    switch (want.type) {
      case Node::Type::kDir:
      case Node::Type::kSubmodule:
        if (S_ISDIR(st.st_mode)) {
          if (repairing() && (st.st_mode & 0700) != 0700 && ::fchmodat(fd, name.c_str(), 0755, 0) != 0)
            return fail(rel, errno_text(errno));
          Fd sub(::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
          if (sub.ok()) return directory(sub.get(), rel + "/", want, depth + 1);
        }
        break;
      case Node::Type::kFile:
      case Node::Type::kExecutable: {
        const bool exec = (st.st_mode & S_IXUSR) != 0;
        if (!S_ISREG(st.st_mode) || exec != (want.type == Node::Type::kExecutable)) break;
        Fd f(::openat(fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
        struct stat fst;
        std::string content;
        same = f.ok() && ::fstat(f.get(), &fst) == 0 && S_ISREG(fst.st_mode) && read_fd(f.get(), content) &&
               blob_hash(content) == want.id;
        break;
      }
      case Node::Type::kSymlink: {
        if (!S_ISLNK(st.st_mode)) break;
        std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
        ssize_t n = ::readlinkat(fd, name.c_str(), target.data(), target.size());
        same = n >= 0 && static_cast<size_t>(n) < target.size() && blob_hash(target.substr(0, n)) == want.id;
        break;
      }
    }
    if (same) return;
    differ(rel);
    if (!repairing()) return;
    if (std::string e = remove_at(fd, name, rel, depth); !e.empty()) return fail(e);
    create(fd, name, rel, want, depth);
  }

  void create(int fd, const std::string& name, const std::string& rel, const Node& want, int depth) {
    switch (want.type) {
      case Node::Type::kDir:
      case Node::Type::kSubmodule: {
        if (::mkdirat(fd, name.c_str(), 0755) != 0) return fail(rel, errno_text(errno));
        Fd sub(::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!sub.ok()) return fail(rel, errno_text(errno));
        for (const auto& [child, node] : want.children) create(sub.get(), child, rel + "/" + child, node, depth + 1);
        return;
      }
      case Node::Type::kFile:
      case Node::Type::kExecutable: {
        std::string content;
        if (!read_blob(want, rel, content)) return;
        const mode_t mode = want.type == Node::Type::kExecutable ? 0755 : 0644;
        Fd f(::openat(fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
        if (!f.ok()) return fail(rel, errno_text(errno));
        for (size_t done = 0; done < content.size();) {
          ssize_t n = ::write(f.get(), content.data() + done, content.size() - done);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) return fail(rel, errno_text(n < 0 ? errno : EIO));
          done += static_cast<size_t>(n);
        }
        if (::fchmod(f.get(), mode) != 0) return fail(rel, errno_text(errno));
        return;
      }
      case Node::Type::kSymlink: {
        std::string target;
        if (!read_blob(want, rel, target)) return;
        if (::symlinkat(target.c_str(), fd, name.c_str()) != 0) return fail(rel, errno_text(errno));
        return;
      }
    }
  }

  bool read_blob(const Node& want, const std::string& rel, std::string& out) {
    try {
      out = (*read_blob_)(want.id);
      return true;
    } catch (const std::exception& e) {
      fail(rel, e.what());
      return false;
    }
  }

  const SlotKeep& keep_;
  const BlobReader* read_blob_;
  std::vector<std::string> diffs_;
  std::string error_;
};

Fd open_root(const std::filesystem::path& root) {
  return Fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

}  // namespace

std::vector<std::string> slot_differences(const std::filesystem::path& root, const std::vector<SlotEntry>& entries,
                                          const SlotKeep& keep) {
  Fd fd = open_root(root);
  if (!fd.ok()) return {"."};
  Walker w(keep, nullptr);
  w.directory(fd.get(), "", build_tree(entries), 0);
  if (!w.error().empty()) w.differ(w.error());
  return w.differences();
}

std::string make_slot_equal(const std::filesystem::path& root, const std::vector<SlotEntry>& entries,
                            const SlotKeep& keep, const BlobReader& read_blob) {
  {
    Fd fd = open_root(root);
    if (!fd.ok()) return root.string() + ": " + errno_text(errno);
    Walker w(keep, &read_blob);
    w.directory(fd.get(), "", build_tree(entries), 0);
    if (!w.error().empty()) return w.error();
  }
  std::vector<std::string> left = slot_differences(root, entries, keep);
  if (left.empty()) return "";
  std::string line = "still differs after the reset:";
  for (size_t i = 0; i < left.size() && i < 5; ++i) line += " " + left[i];
  return line;
}

namespace {

bool list_stats(int fd, const std::string& prefix, int depth, std::string& out) {
  if (depth > kMaxDepth) return false;
  std::vector<std::string> names;
  if (!list_names(fd, names).empty()) return false;
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    struct stat st;
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
    const std::string rel = prefix + name;
    out += rel + '\0' + std::to_string(st.st_mode) + ' ' + std::to_string(st.st_size) + ' ' +
           std::to_string(st.st_mtim.tv_sec) + '.' + std::to_string(st.st_mtim.tv_nsec) + ' ' +
           std::to_string(st.st_ctim.tv_sec) + '.' + std::to_string(st.st_ctim.tv_nsec) + ' ' +
           std::to_string(st.st_ino) + '\n';
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t n = ::readlinkat(fd, name.c_str(), target, sizeof target);
      if (n < 0) return false;
      out.append(target, static_cast<size_t>(n)).push_back('\n');
    } else if (S_ISDIR(st.st_mode)) {
      Fd sub(::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub.ok() || !list_stats(sub.get(), rel + "/", depth + 1, out)) return false;
    }
  }
  return true;
}

}  // namespace

std::string stat_listing(const std::filesystem::path& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.ok()) return errno == ENOENT ? "" : dir.string() + ": " + errno_text(errno);
  std::string out = "dir\n";
  if (!list_stats(fd.get(), "", 0, out)) return dir.string() + ": cannot be listed";
  return out;
}

std::string remove_tree_nofollow(const std::filesystem::path& path) {
  const std::filesystem::path parent = path.parent_path().empty() ? "." : path.parent_path();
  Fd fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.ok()) return errno == ENOENT ? "" : parent.string() + ": " + errno_text(errno);
  return remove_at(fd.get(), path.filename().string(), path.string(), 0);
}

}  // namespace ard
