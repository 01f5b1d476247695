// The daemon's state directory, <repo>/.autoresearchd/: where each file lives,
// and the lock on daemon.pid that lets one daemon run per repo.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace ard {

struct StateDir {
  explicit StateDir(const std::filesystem::path& repo) : root(repo / ".autoresearchd") {}
  std::filesystem::path root;
  std::filesystem::path db() const { return root / "results.db"; }
  std::filesystem::path pid_file() const { return root / "daemon.pid"; }
  std::filesystem::path log_file() const { return root / "daemon.log"; }
  std::filesystem::path logs() const { return root / "logs"; }
  std::filesystem::path worktree(const std::string& tag) const { return root / "worktrees" / tag; }
  /// Creates root and logs/, both 0700 (an existing, wider directory is narrowed):
  /// the database and the logs hold prompts, outputs and results of the user's only.
  void create() const;
};

/// When dir lies inside some repo's state directory (<repo>/.autoresearchd/,
/// e.g. a tag's worktree <repo>/.autoresearchd/worktrees/<tag>), that repo;
/// else nullopt. A daemon started there would nest a second state directory
/// inside the first, with the default config.
std::optional<std::filesystem::path> state_dir_owner(const std::filesystem::path& dir);

/// An exclusive flock on daemon.pid, holding this process's pid, released
/// when destroyed or when the process dies (however it dies).
class DaemonLock {
 public:
  /// Takes the lock, or returns nullopt when another daemon holds it.
  static std::optional<DaemonLock> acquire(const std::filesystem::path& pid_file);
  DaemonLock(DaemonLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DaemonLock(const DaemonLock&) = delete;
  ~DaemonLock();

 private:
  explicit DaemonLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

/// Opens path with flags | O_CREAT | O_CLOEXEC as a file only its owner can read
/// or write (0600; an existing file is narrowed to 0600). The fd, or -1 with errno.
int open_owner_only(const std::filesystem::path& path, int flags);

/// The pid of the daemon holding the lock, or nullopt when none runs.
std::optional<pid_t> running_daemon(const std::filesystem::path& pid_file);

}  // namespace ard
