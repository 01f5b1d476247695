// Child processes: every build, stage and prepare command runs through a
// ProcessRunner. The POSIX runner starts `/bin/sh -c command` in its own
// process group, with a scrubbed environment and its output in a log file,
// reports the group id before the command runs (so the daemon can record it),
// and kills the whole group on timeout, on stop, and when the command ends.
#pragma once

#include <sys/types.h>

#include <atomic>
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
};

struct ProcessResult {
  enum class End { kExited, kSignaled, kTimedOut, kStopped, kSpawnFailed };
  End end = End::kSpawnFailed;
  int code = 0;  ///< exit code, or the signal for kSignaled
  double seconds = 0;
  std::string error;  ///< for kSpawnFailed
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

class PosixProcessRunner : public ProcessRunner {
 public:
  /// stop, when set, ends a running child as kStopped. kill_grace_s is how long
  /// a group gets between SIGTERM and SIGKILL.
  explicit PosixProcessRunner(const std::atomic<bool>* stop = nullptr, double kill_grace_s = 2)
      : stop_(stop), kill_grace_s_(kill_grace_s) {}
  ProcessResult run(const ProcessSpec& spec, const OnStart& on_start) override;

 private:
  const std::atomic<bool>* stop_;
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
