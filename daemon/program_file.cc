// See program_file.h.
#include "daemon/program_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ard {
namespace {

constexpr const char* kWaiting = "; waiting for it before the next proposal";

ProgramFile problem(ProgramFile::Problem p, std::string message) {
  ProgramFile out;
  out.problem = p;
  out.message = std::move(message);
  return out;
}

}  // namespace

ProgramFile read_program_file(const std::filesystem::path& path, int64_t max_bytes) {
  using P = ProgramFile::Problem;
  // O_NONBLOCK: opening a FIFO planted under the name must not hang the daemon.
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return problem(P::missing, path.string() + " is missing" + kWaiting);
    return problem(P::unreadable, path.string() + ": cannot read: " + strerror(errno) + kWaiting);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return problem(P::unreadable, path.string() + " is not a regular file" + kWaiting);
  }
  auto too_large = [&](int64_t size) {
    return path.filename().string() + " is " + std::to_string(size) + " bytes, over max_program_bytes = " +
           std::to_string(max_bytes) + ": shorten it or raise max_program_bytes";
  };
  if (st.st_size > max_bytes) {
    close(fd);
    return problem(P::too_large, too_large(st.st_size));
  }
  // At most one byte past the limit: the file may grow after the fstat.
  std::string content(static_cast<size_t>(max_bytes) + 1, '\0');
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = read(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return problem(P::unreadable, path.string() + ": cannot read: " + strerror(err) + kWaiting);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (done > static_cast<size_t>(max_bytes))
    return problem(P::too_large, too_large(static_cast<int64_t>(done)) + " (it grew while being read)");
  content.resize(done);
  if (content.find_first_not_of(" \t\r\n") == std::string::npos)
    return problem(P::empty, path.string() + " is empty" + kWaiting);
  ProgramFile out;
  out.content = std::move(content);
  return out;
}

}  // namespace ard
