// See capped_log.h.
#include "daemon/exec/capped_log.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

namespace ard {

CappedLog::CappedLog(const std::filesystem::path& path, size_t cap_bytes)
    : head_cap_(cap_bytes / 2), tail_cap_(cap_bytes - cap_bytes / 2), path_(path.string()) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) error_ = path_ + ": cannot open: " + strerror(errno);
}

CappedLog::~CappedLog() { close(); }

void CappedLog::write_fd(const char* data, size_t size) {
  while (size > 0 && fd_ >= 0 && error_.empty()) {
    ssize_t n = ::write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error_ = path_ + ": cannot write: " + strerror(errno);
      return;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void CappedLog::write(const char* data, size_t size) {
  if (head_written_ < head_cap_) {
    size_t n = std::min(size, head_cap_ - head_written_);
    write_fd(data, n);
    head_written_ += n;
    data += n;
    size -= n;
  }
  if (size == 0 || tail_cap_ == 0) {
    dropped_ += tail_cap_ == 0 ? size : 0;
    return;
  }
  // The ring: while it is not full, append; then overwrite the oldest bytes.
  for (size_t i = 0; i < size; ++i) {
    if (tail_.size() < tail_cap_) {
      tail_.push_back(data[i]);
    } else {
      tail_[tail_start_] = data[i];
      tail_start_ = (tail_start_ + 1) % tail_cap_;
      ++dropped_;
    }
  }
}

void CappedLog::close() {
  if (fd_ < 0) return;
  if (dropped_ > 0) {
    std::string marker = "\n[autoresearchd: " + std::to_string(dropped_) +
                         " bytes of output dropped here: the log keeps its first and last " +
                         std::to_string(head_cap_) + " bytes]\n";
    write_fd(marker.data(), marker.size());
  }
  write_fd(tail_.data() + tail_start_, tail_.size() - tail_start_);
  write_fd(tail_.data(), tail_start_);
  tail_.clear();
  tail_start_ = 0;
  if (::close(fd_) != 0 && error_.empty()) error_ = path_ + ": cannot close: " + strerror(errno);
  fd_ = -1;
}

}  // namespace ard
