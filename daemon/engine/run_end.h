// How a run ended, decided once for every executor.
//
// A run is a candidate's (or a repeat's) build and stages. Each executor sees
// its end in its own terms: the local one as a child's exit, a Slurm job as
// its exit file and sacct's state, and a restart as the state of a job it
// adopted. Each turns that into a RunOutcome (what the processes did), and
// classify_end reads the log and the summary and says what the run was:
//
//   the processes                          the log, the summary, the slot        RunEnd::Kind
//   stopped by the daemon or someone else  -                                     stopped
//   a fault of the machine (child_fault)   -                                     machine_fault
//   the build failed or ran out of time    its compiler errors                   build_failed
//   a stage ran out of time                -                                     timed_out
//   a stage failed                         "FAIL: tampered: ..." (a harness probe) tampered
//   a stage failed                         anything else                         crashed
//   every stage passed                     the slot differs from the commit      tampered
//   every stage passed                     a summary that cannot be believed     tampered
//   every stage passed                     no summary, no finite metric          crashed
//   every stage passed                     the metric, finite                    ok (with the summary)
//   the build passed                       the slot differs from the commit      tampered
//   the build passed                       -                                     ok (no summary: the stages come next)
//
// The detail is the one line the store keeps as the experiment's error; it
// starts with the executor's own words for the end (`what`) and adds what the
// log said. The engine (live runs, local or Slurm) and Slurm recovery at
// restart (slurm_recovery.h) apply the same RunEnd, so a job is recorded the
// same way whether the daemon saw it end or found it ended.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/summary.h"
#include "daemon/exec/environment_fault.h"
#include "daemon/exec/process_runner.h"

namespace ard {

/// What the run's processes did, in the executor's terms.
struct RunOutcome {
  enum class Exit {
    kSucceeded,     ///< the build, or every stage, exited 0
    kFailed,        ///< exited non-zero, was killed, or could not start
    kTimedOut,      ///< ran past its timeout
    kStopped,       ///< stopped by the daemon, or cancelled outside it
    kMachineFault,  ///< the machine's fault (fault holds it)
  };
  Exit exit = Exit::kFailed;
  bool build = false;  ///< the build ended it (a local build, or the build step of a Slurm job)
  /// The executor's words for the end, one line: "stage train failed (exit code 1)",
  /// "build failed (exit code 2)", "stopped during stage train", a Slurm job's line.
  /// Unused for a run whose every stage passed.
  std::string what;
  std::string last_stage;  ///< the last stage's name: the summary's source in the detail
  std::string tampered;    ///< the slot's check after the run: "" when it equals the commit
  std::optional<EnvironmentFault> fault;  ///< set with kMachineFault
};

/// A local child's exit (the build's, or a stage's) as a RunOutcome. stage:
/// "build" or the stage's name; fault: child_fault's finding, when the end
/// was the machine's doing. A stage that passed is an end only when it is
/// the last one (the caller runs the next stage otherwise).
RunOutcome process_outcome(const ProcessResult& r, const std::string& stage, const std::string& last_stage,
                           std::optional<EnvironmentFault> fault);

/// What classify_end needs from the config.
struct EndSettings {
  std::string metric = "val_bpb";      ///< the summary key the keep rule reads
  std::vector<std::string> summary_keys;  ///< the keys parse_summary keeps
};

/// How the run ended: one of the rows of the table above.
struct RunEnd {
  enum class Kind { kOk, kBuildFailed, kCrashed, kTampered, kTimedOut, kStopped, kMachineFault };
  Kind kind = Kind::kCrashed;
  std::optional<Summary> summary;  ///< kOk after the stages: the summary, its metric finite
  double value = 0;                ///< kOk after the stages: the metric
  std::string detail;              ///< the experiment's error line; "" for kOk
  std::string log_tail;            ///< the log's last lines, for the store and the proposer
  /// For the proposer's "last failure": a build's compiler errors, else "" (detail and tail are used).
  std::string failure_detail;
  std::optional<EnvironmentFault> fault;  ///< kMachineFault
};

/// The compiler's error lines from a build log (or its last 30 lines when none say "error").
std::string compiler_errors(const std::string& log);

/// Reads log (the whole log of the run's last process, or of the job) and decides.
RunEnd classify_end(const RunOutcome& outcome, const std::filesystem::path& log, const EndSettings& settings);

/// The store's final status for an end: kept/discarded are the judge's, not an end's,
/// so kOk has none ("ok" is the trial's). kStopped and kMachineFault are `interrupted`.
const char* final_status(RunEnd::Kind kind);

const char* to_string(RunEnd::Kind kind);

}  // namespace ard
