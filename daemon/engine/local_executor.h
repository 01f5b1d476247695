// The local executor: a run's steps as child processes of the daemon
// (child_process.h), one after another, each behind the sandbox's wrapper
// and with its own timeout. How a child's exit reads as a run's end is
// decided here once (process_outcome, then classify_end), the machine-fault
// probe (child_fault over the logs and the slot) included, so the engine
// sees only RunEnds.
#pragma once

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>

#include "daemon/engine/executor.h"
#include "daemon/exec/child_process.h"

namespace ard {

class LocalExecutor : public Executor {
 public:
  explicit LocalExecutor(boost::asio::io_context& io) : io_(io) {}
  /// A build run runs Run::build; a stages run runs Run::stages in order,
  /// checking the slot before each (a changed slot ends it tampered, "before
  /// stage <name>: <why>") and after the last.
  void start(const Run& run, RunCallbacks callbacks) override;
  /// Stops every child in flight (SIGTERM to its group, SIGKILL after the
  /// grace); a stage that passed meanwhile ends its run as stopped instead of
  /// starting the next ("stopped after stage <name>").
  void stop_all() override;
  size_t active() const override { return runs_.size(); }

 private:
  struct InFlight {
    Run run;
    RunCallbacks callbacks;
    size_t stage = 0;             ///< the stage running now (a stages run)
    std::shared_ptr<ChildProcess> child;
    bool stop_requested = false;  ///< stop_all came while it ran
  };
  /// Starts the build, or the current stage after the slot's check.
  void start_step(uint64_t key);
  void on_exit(uint64_t key, const ProcessResult& r);
  /// Forgets the run, then reports its end.
  void finish(uint64_t key, const RunEnd& end);

  boost::asio::io_context& io_;
  std::map<uint64_t, InFlight> runs_;
  uint64_t next_key_ = 0;
};

}  // namespace ard
