// One child process on the daemon's event loop: every build, stage and
// prepare command. It runs `/bin/sh -c command` (behind an optional wrapper
// such as the sandbox) through Boost.Process v2, in a process group of its
// own, with a scrubbed environment. Its output comes back through a pipe and
// goes to a log file capped at a size (the head and the tail are kept).
//
// The group id is handed to on_start before the command runs: the shell waits
// on a gate (fd 3) that is opened only after on_start returned, so a daemon
// killed at any moment has recorded every group it started. The exit arrives
// through async_wait (no polling). A timeout, or stop(), sends SIGTERM to the
// whole group and SIGKILL after a grace period; when the command ends, what
// is left of its group is killed too.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/exec/process_runner.h"

namespace ard {

struct ChildSpec {
  std::string command;               ///< run as /bin/sh -c command
  std::vector<std::string> wrapper;  ///< argv run in front of /bin/sh (the sandbox), empty: none
  std::filesystem::path cwd;
  std::vector<std::string> env;      ///< NAME=value: the child's whole environment
  std::filesystem::path log;         ///< stdout and stderr, truncated first
  double timeout_s = 0;              ///< <= 0: no timeout
  double kill_grace_s = 2;           ///< between SIGTERM and SIGKILL
  size_t log_cap_bytes = 64u << 20;  ///< past this the log keeps its head and tail halves
};

class ChildProcess : public std::enable_shared_from_this<ChildProcess> {
 public:
  /// Called with the group id before the command runs; may throw, which
  /// kills the child before its command starts (the result is kSpawnFailed).
  using OnStart = std::function<void(pid_t pgid)>;
  using OnExit = std::function<void(const ProcessResult&)>;

  /// Starts the child; on_exit is called exactly once, on the io_context's
  /// thread, never from inside start(). Must be called on that thread.
  static std::shared_ptr<ChildProcess> start(boost::asio::io_context& io, const ChildSpec& spec,
                                             const OnStart& on_start, OnExit on_exit);
  ~ChildProcess();

  /// Ends the child as kStopped: SIGTERM to its group, SIGKILL after the grace.
  void stop();
  pid_t pgid() const { return pgid_; }
  bool running() const { return !done_; }

 private:
  struct Impl;
  explicit ChildProcess(boost::asio::io_context& io);
  void finish(ProcessResult result);
  void terminate(ProcessResult::End why);

  boost::asio::io_context& io_;
  std::unique_ptr<Impl> impl_;
  pid_t pgid_ = 0;
  bool done_ = false;
};

}  // namespace ard
