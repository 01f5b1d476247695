// One run of an experiment, as the engine hands it to an executor: a value
// that says everything the executor needs (the commands, where, with what
// environment, for how long) and nothing of the engine's state.
//
// A run is either a candidate's build (in the slot it was checked out in,
// ahead of a free GPU) or its stages (on a GPU, after the build passed):
// the engine's build-ahead pipeline starts the two as separate runs. (A
// Slurm job that builds on its node has the build as its first stage.) The
// commands are final: placeholders substituted, the sandbox's wrapper
// computed for the slot.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "daemon/engine/run_end.h"

namespace ard {

/// One child process of a run: the build, or one stage.
struct RunStep {
  std::string name;       ///< "build", or the stage's name ("train")
  std::string command;    ///< run as /bin/sh -c command; placeholders substituted
  /// argv in front of /bin/sh: the sandbox (bwrap ... --), empty when the sandbox is off.
  std::vector<std::string> wrapper;
  double timeout_s = 0;   ///< seconds; the step is stopped and the run timed out past it
  double expected_s = 0;  ///< seconds the step usually takes (status's expected end)
  std::filesystem::path log;  ///< stdout and stderr of the step, truncated first
};

struct Run {
  /// The experiment row the run belongs to (> 0): a repeat run of the best, or
  /// a noise round's run, names the best's row.
  int64_t experiment = 0;
  int64_t trial = 0;       ///< the trial row of a stages run; 0 for a build
  std::string commit;      ///< full hash of the commit checked out in the slot
  int slot = -1;           ///< the worktree slot's index
  std::filesystem::path worktree;  ///< the slot's path: the working directory of every step
  std::string gpu;         ///< CUDA device id; "" for a build or a worker that sets no device
  std::string purpose;     ///< the trial's purpose (run_evidence.h); "build" for a build
  /// Set: the run is this build alone; its end is kOk without a summary when it passed.
  std::optional<RunStep> build;
  /// The stages in order (empty for a build run); the run's end is the last one's.
  std::vector<RunStep> stages;
  std::vector<std::string> env;  ///< NAME=value: each step's whole environment (a Slurm job's is its client's: empty)
  /// Where the daemon's logs are: with the worktree, what the fault probe (child_fault) writes to.
  std::filesystem::path logs_dir;
  /// The run's name where an executor gives it one (a Slurm job's, unique per trial):
  /// "ard-<tag>-<experiment>-t<trial>" (a repeat run of the best names the best's row).
  std::string name;
  std::string title;       ///< one line for a job script's comment: the experiment, trial and commit
  std::string last_stage;  ///< the config's last stage's name: the summary's source in an end's detail
  EndSettings end_settings;  ///< what classify_end reads from the config
};

}  // namespace ard
