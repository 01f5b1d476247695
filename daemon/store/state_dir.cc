// See state_dir.h.
#include "daemon/store/state_dir.h"

#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>

namespace ard {

void StateDir::create() const {
  std::filesystem::create_directories(logs());
  for (const auto& dir : {root, logs()}) std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
}

int open_owner_only(const std::filesystem::path& path, int flags) {
  int fd = open(path.c_str(), flags | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (fchmod(fd, 0600) != 0) {
    int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

std::optional<std::filesystem::path> state_dir_owner(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(dir), ec);
  if (ec) p = std::filesystem::absolute(dir).lexically_normal();
  // The outermost .autoresearchd wins: a nested one is itself the mistake.
  std::filesystem::path prefix;
  for (const auto& part : p) {
    if (part == ".autoresearchd" && !prefix.empty()) return prefix.has_filename() ? prefix : prefix.parent_path();
    prefix /= part;
  }
  return std::nullopt;
}

std::optional<DaemonLock> DaemonLock::acquire(const std::filesystem::path& pid_file) {
  int fd = open_owner_only(pid_file, O_RDWR);
  if (fd < 0) throw std::runtime_error("cannot open " + pid_file.string() + ": " + strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    close(fd);
    if (err == EWOULDBLOCK) return std::nullopt;
    throw std::runtime_error("cannot lock " + pid_file.string() + ": " + strerror(err));
  }
  std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    close(fd);
    throw std::runtime_error("cannot write " + pid_file.string() + ": " + strerror(errno));
  }
  return DaemonLock(fd);
}

DaemonLock::~DaemonLock() {
  if (fd_ >= 0) close(fd_);  // closing the only descriptor releases the flock
}

std::optional<pid_t> running_daemon(const std::filesystem::path& pid_file) {
  int fd = open(pid_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  if (!held) return std::nullopt;
  std::ifstream in(pid_file);
  long pid = 0;
  // The holder may not have written its pid yet; it is running all the same.
  if (!(in >> pid) || pid <= 0) return pid_t{0};
  return static_cast<pid_t>(pid);
}

}  // namespace ard
