// See log.h.
#include "daemon/log.h"

#include <ctime>

namespace ard {

Log::Log(const std::filesystem::path& path, bool echo) : echo_(echo) {
  if (!path.empty()) file_ = std::fopen(path.c_str(), "ae");  // close-on-exec: children never inherit it
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

void Log::operator()(const std::string& line) {
  std::string text = format_time(static_cast<double>(std::time(nullptr))) + " " + line + "\n";
  if (file_) {
    std::fputs(text.c_str(), file_);
    std::fflush(file_);
  }
  if (echo_) {
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
  }
}

}  // namespace ard
