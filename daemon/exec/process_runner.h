// Child processes outside the engine's loop: the ProcessRunner seam that the
// data step and `autoresearchd prepare` use, and its POSIX runner, a blocking
// call over one ChildProcess (child_process.h: own process group, scrubbed
// environment, log file, group id reported before the command runs, the whole
// group killed on timeout, on stop, and when the command ends). Also the
// process-group helpers the daemon's reconcile uses.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace ard {

struct ProcessSpec {
  std::string command;           ///< run as /bin/sh -c command
  std::filesystem::path cwd;
  std::vector<std::string> env;  ///< NAME=value: the child's whole environment
  std::filesystem::path log;     ///< stdout and stderr, truncated first
  double timeout_s = 0;          ///< <= 0: no timeout
  std::vector<std::string> wrapper;  ///< argv run in front of /bin/sh (the sandbox), empty: none
};

struct ProcessResult {
  enum class End { kExited, kSignaled, kTimedOut, kStopped, kSpawnFailed };
  End end = End::kSpawnFailed;
  int code = 0;  ///< exit code, or the signal for kSignaled
  double seconds = 0;
  std::string error;  ///< for kSpawnFailed
  std::string log_error;  ///< the log could not be written (a full disk, say): its output is incomplete
  bool ok() const { return end == End::kExited && code == 0; }
  /// One line: "exit code 1", "killed by signal 11 (Segmentation fault)", ...
  std::string describe() const;
};

class ProcessRunner {
 public:
  /// Called with the child's process group id before its command runs.
  using OnStart = std::function<void(pid_t pgid)>;
  virtual ~ProcessRunner() = default;
  virtual ProcessResult run(const ProcessSpec& spec, const OnStart& on_start) = 0;
};

/// A stop request an event loop can wait on without polling: request() writes
/// to a pipe (async-signal-safe, so a signal handler may call it) and the
/// pipe's read end becomes readable for good.
class StopFlag {
 public:
  StopFlag();
  ~StopFlag();
  StopFlag(const StopFlag&) = delete;
  StopFlag& operator=(const StopFlag&) = delete;
  void request();
  bool requested() const;
  int wait_fd() const { return fds_[0]; }

 private:
  int fds_[2] = {-1, -1};
};

class PosixProcessRunner : public ProcessRunner {
 public:
  /// stop, when requested, ends a running child as kStopped. kill_grace_s is
  /// how long a group gets between SIGTERM and SIGKILL.
  explicit PosixProcessRunner(const StopFlag* stop = nullptr, double kill_grace_s = 2)
      : stop_(stop), kill_grace_s_(kill_grace_s) {}
  ProcessResult run(const ProcessSpec& spec, const OnStart& on_start) override;

 private:
  const StopFlag* stop_;
  double kill_grace_s_;
};

/// NAME=value for each allowed variable set in this process's environment.
std::vector<std::string> scrubbed_env(const std::vector<std::string>& allowed);

/// The live (not zombie) processes of a process group, from /proc.
std::vector<pid_t> group_members(pid_t pgid);

/// Kills a group a dead daemon left behind, but only when one of its live
/// members runs in a directory under cwd_prefix (a recycled group id of
/// someone else's processes is left alone). Waits until the group is gone.
/// Returns true when it killed something.
bool kill_orphan_group(pid_t pgid, const std::filesystem::path& cwd_prefix);

/// The last lines of a file (at most max_lines lines and max_bytes bytes).
std::string file_tail(const std::filesystem::path& path, size_t max_lines = 40, size_t max_bytes = 8192);

}  // namespace ard
