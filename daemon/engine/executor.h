// The seam between the engine and whatever runs its children: the engine
// hands an executor a Run and gets back exactly one RunEnd; in between, the
// executor reports what the engine must record before it goes on (a child's
// process group, a step's start) and asks the engine whether the slot is
// still the experiment's commit. The local executor runs the steps as child
// processes (local_executor.h), the Slurm one as one job (slurm_run_executor.h);
// tests script the ends (fake_executor.h).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>

#include "daemon/engine/run.h"
#include "daemon/engine/run_end.h"

namespace ard {

/// What an executor tells the engine about one run, on the io_context's thread.
struct RunCallbacks {
  /// A child's process group, before its command runs (the engine records it
  /// in the store first, so a daemon killed at any moment knows what to end).
  /// May throw: the child is then killed before its command starts.
  std::function<void(pid_t pgid)> group;
  /// A step is about to start: index into Run::stages (or 0 for the build)
  /// and the step. Called synchronously from start() for the first step.
  std::function<void(size_t index, const RunStep& step)> step_started;
  /// Before each stage and after the last step passed: "" when the slot
  /// equals the run's commit, else why not (the run is then tampered).
  std::function<std::string()> check_slot;
  /// Exactly once, never from inside start(), after active() no longer counts
  /// the run. A build that passed ends kOk without a summary; a run of stages
  /// ends as classify_end says (run_end.h).
  std::function<void(const RunEnd& end)> ended;
  /// A job's id as soon as its scheduler took it (node ""), then its node once
  /// known. Called by executors that submit jobs (Slurm) only.
  std::function<void(const std::string& job_id, const std::string& node)> job;
  /// The executor cannot go on (sbatch refused a job): called right after
  /// that run's end; the daemon stops.
  std::function<void(const std::string& why)> fatal;
};

class Executor {
 public:
  virtual ~Executor() = default;
  /// Starts the run; its end comes through callbacks.ended.
  virtual void start(const Run& run, RunCallbacks callbacks) = 0;
  /// Ends every run in flight as stopped (kStopped); a run between two steps
  /// ends before its next step starts. Runs started later are not affected.
  virtual void stop_all() = 0;
  /// Runs started whose end has not been reported yet.
  virtual size_t active() const = 0;
};

}  // namespace ard
