// A child's log file with a size cap. The first half of the cap is written
// as it comes; past it, only the last half-cap bytes are kept (in memory) and
// written behind a marker line when the log is closed. A child that prints a
// gigabyte leaves a log of at most the cap, with its start and its end, which
// is where compiler errors and the summary block are.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace ard {

class CappedLog {
 public:
  /// Opens (truncates) path with mode 0600. An error is kept, not thrown:
  /// error() says why, and writes are dropped.
  CappedLog(const std::filesystem::path& path, size_t cap_bytes);
  ~CappedLog();
  CappedLog(const CappedLog&) = delete;
  CappedLog& operator=(const CappedLog&) = delete;

  void write(const char* data, size_t size);
  /// Writes the kept tail (behind a marker naming the dropped byte count) and
  /// closes the file. Idempotent.
  void close();
  const std::string& error() const { return error_; }
  size_t dropped() const { return dropped_; }

 private:
  void write_fd(const char* data, size_t size);
  int fd_ = -1;
  size_t head_cap_;
  size_t tail_cap_;
  size_t head_written_ = 0;
  std::string tail_;  ///< ring of the last tail_cap_ bytes, oldest at tail_start_
  size_t tail_start_ = 0;
  size_t dropped_ = 0;
  std::string path_;
  std::string error_;
};

}  // namespace ard
