// See environment_fault.h.
#include "daemon/exec/environment_fault.h"

#include <sqlite3.h>
#include <string.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace ard {
namespace {

std::string fault_line(const std::filesystem::path& path, std::optional<uint64_t> free,
                       const std::string& message) {
  std::string line = path.string() + ": " + message;
  line += free ? " (" + format_bytes(*free) + " free)" : " (free space unknown)";
  return line;
}

}  // namespace

EnvironmentFault::EnvironmentFault(std::filesystem::path path, std::optional<uint64_t> free,
                                   std::string message)
    : std::runtime_error(fault_line(path, free, message)),
      path_(std::move(path)),
      free_bytes_(free),
      message_(std::move(message)) {}

std::optional<uint64_t> free_bytes(const std::filesystem::path& path) {
  // A file that could not be created has no statvfs of its own: ask its directory.
  std::filesystem::path p = path.empty() ? std::filesystem::path(".") : path;
  for (;;) {
    struct statvfs st {};
    if (statvfs(p.c_str(), &st) == 0) return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    if (errno != ENOENT && errno != ENOTDIR) return std::nullopt;
    if (!p.has_parent_path() || p.parent_path() == p) return std::nullopt;
    p = p.parent_path();
  }
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

bool is_environment_errno(int err) {
  switch (err) {
    case ENOSPC: case EDQUOT: case EIO: case EROFS: case ENOMEM: case EMFILE: case ENFILE:
      return true;
    default:
      return false;
  }
}

std::optional<EnvironmentFault> classify_errno(int err, const std::filesystem::path& path) {
  if (!is_environment_errno(err)) return std::nullopt;
  return EnvironmentFault(path, free_bytes(path), strerror(err));
}

std::optional<EnvironmentFault> probe_write(const std::filesystem::path& dir) {
  std::string probe = (dir / ".autoresearchd-probe-XXXXXX").string();
  int fd = mkstemp(probe.data());
  if (fd < 0) return classify_errno(errno, dir);
  static const std::string zeros(kProbeBytes, '\0');
  int err = 0;
  for (size_t done = 0; done < zeros.size() && !err;) {
    ssize_t n = ::write(fd, zeros.data() + done, zeros.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    else done += static_cast<size_t>(n);
  }
  if (!err && fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  unlink(probe.c_str());
  return err ? classify_errno(err, dir) : std::nullopt;
}

bool is_environment_sqlite(int code) {
  switch (code & 0xff) {
    case SQLITE_FULL: case SQLITE_IOERR: case SQLITE_READONLY: case SQLITE_CANTOPEN:
    case SQLITE_NOMEM: case SQLITE_BUSY: case SQLITE_LOCKED:
      return true;
    default:
      return false;
  }
}

std::optional<EnvironmentFault> classify_sqlite(int code, const std::filesystem::path& path,
                                                const std::string& message) {
  if (!is_environment_sqlite(code)) return std::nullopt;
  return EnvironmentFault(path, free_bytes(path), message);
}

}  // namespace ard
