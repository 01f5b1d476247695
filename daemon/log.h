// The daemon's log: timestamped lines appended to .autoresearchd/daemon.log
// and, in the foreground, echoed to stderr.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

namespace ard {

class Log {
 public:
  /// path empty: stderr only. echo: also write each line to stderr.
  Log(const std::filesystem::path& path, bool echo);
  ~Log();
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;
  void operator()(const std::string& line);
  /// A line that main prints to the terminal itself (the fatal error it exits
  /// with): into the file only, so the foreground shows it once. Without a
  /// file it goes to stderr like any line.
  void file_only(const std::string& line);

 private:
  void write(const std::string& line, bool to_stderr);
  FILE* file_ = nullptr;
  bool echo_;
};

/// Local time as "YYYY-MM-DD HH:MM:SS".
std::string format_time(double unix_seconds);

}  // namespace ard
