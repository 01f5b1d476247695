// See log.h.
#include "daemon/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <ctime>

#include "daemon/store/state_dir.h"

namespace ard {

Log::Log(const std::filesystem::path& path, bool echo) : echo_(echo) {
  if (!path.empty()) {
    // Owner-only, close-on-exec: children never inherit it.
    int fd = open_owner_only(path, O_WRONLY | O_APPEND);
    if (fd >= 0 && !(file_ = fdopen(fd, "a"))) close(fd);
  }
  if (!file_) echo_ = true;  // a log that cannot be opened still reaches stderr
}

Log::~Log() {
  if (file_) std::fclose(file_);
}

std::string format_time(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

void Log::operator()(const std::string& line) { write(line, echo_); }

void Log::file_only(const std::string& line) { write(line, !file_); }

void Log::write(const std::string& line, bool to_stderr) {
  std::string text = format_time(static_cast<double>(std::time(nullptr))) + " " + line + "\n";
  if (file_) {
    std::fputs(text.c_str(), file_);
    std::fflush(file_);
  }
  if (to_stderr) {
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
  }
}

}  // namespace ard
