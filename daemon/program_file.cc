// See program_file.h.
#include "daemon/program_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ard {

ProgramFile read_program_file(const std::filesystem::path& path, int64_t max_bytes) {
  ProgramFile out;
  const std::string name = path.filename().string();
  // O_NONBLOCK: opening a FIFO planted under the name must not hang the daemon.
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    out.missing = errno == ENOENT;
    out.error = "cannot read " + path.string() + ": " + strerror(errno);
    return out;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    out.error = path.string() + " is not a regular file";
    return out;
  }
  auto too_large = [&](int64_t size) {
    return name + " is " + std::to_string(size) + " bytes, over max_program_bytes = " + std::to_string(max_bytes) +
           ": shorten it or raise max_program_bytes";
  };
  if (st.st_size > max_bytes) {
    close(fd);
    out.error = too_large(st.st_size);
    return out;
  }
  // Read at most one byte past the limit: the file may grow after the fstat.
  std::string content(static_cast<size_t>(max_bytes) + 1, '\0');
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = read(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.error = "cannot read " + path.string() + ": " + strerror(errno);
      close(fd);
      return out;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (done > static_cast<size_t>(max_bytes)) {
    out.error = too_large(static_cast<int64_t>(done)) + " (it grew while being read)";
    return out;
  }
  content.resize(done);
  out.content = std::move(content);
  return out;
}

}  // namespace ard
