// The judge: what happens to a measured candidate, as a pure function of the
// evidence (what the store and the engine know about it, as plain values) and
// the keep settings. The engine gathers the evidence, asks the judge, and
// applies the ruling (the store's decision line, the branch, the next run);
// nothing else in the engine decides. So every ruling can be checked by hand
// from its reason line, and tested without a store, a repo or a clock.
//
// The rows are tried in order; the first that holds rules:
//
//   evidence                                    action     reason (the store's decision line)
//   the baseline                                keep       "kept: the baseline, val_bpb 0.98"
//   the baseline is not measured yet            defer      "deferred: the baseline is not measured yet"
//   a noise round holds candidates back         defer      "deferred: a noise round holds ..."
//   current, and the best's re-runs are         defer      "deferred: the best's re-runs are on their way ..."
//     on their way (kMinIncumbentRuns)
//   no run of it under the boards' current      remeasure  "was measured under an older board calibration;
//     calibration                                           it runs again"
//   stale, Δ ≤ 0 against the older best         discard    "discarded: mean M (n=N) on the older best P,
//                                                           whose mean is I (n=K): Δ = D ≤ 0"
//   stale, Δ > 0, re-applied kMaxReapplies      discard    "discarded: ... Δ = D > 0, but its change was
//     times already                                         re-applied 3 times already (at most 3): given up"
//   stale, Δ > 0                                reapply    "re-applied: ... Δ = D > 0"
//   current: the keep rule (keep_rule.h)        keep,      the keep rule's reason; a confirm runs on
//                                               discard,   confirmation_gpu: the GPU it ran on least
//                                               confirm
//
// where Δ is the improvement under `summary.goal` (KeepSettings::goal, as the
// keep rule's: positive is better, lower or higher), "current" means made
// against the best of now (parent == best) and
// "stale" made against an older best; the runs are the candidate's under the
// current calibration, and the incumbent's are its parent's under it, or the
// best's where the parent has none (a stale screen then compares with the
// best, though its line names the parent). A stale candidate is not deferred
// for the best's re-runs: its screen is against its own parent.
//
// `remeasure` is an action of its own, not a confirm: the candidate's runs
// all predate the boards' last calibration, so it has nothing to decide on;
// it runs again on any GPU, its purpose unchanged, and the run counts as no
// confirmation and records no decision.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/keep_rule.h"
#include "daemon/decide/noise.h"

namespace ard {

struct TrialRow;  // store.h

/// How often a candidate's change is re-applied onto a newer best at most;
/// a stale candidate that beats its older best once more is then discarded.
inline constexpr int kMaxReapplies = 3;

/// Everything a ruling rests on, as plain values the engine reads from its
/// state and the store.
struct Evidence {
  std::string metric = "val_bpb";  ///< the metric's name, for the baseline's line
  bool baseline = false;           ///< the unmodified trainer's first run
  double value = 0;                ///< the metric of the run just finished (the baseline's value)

  // Why a decision would wait.
  bool baseline_pending = false;   ///< the baseline has not been measured yet
  bool round_holds = false;        ///< a noise round holds new candidates back
  bool incumbent_pending = false;  ///< re-runs of the best (after a keep) not finished yet

  std::string parent;  ///< the commit it was made against (full id)
  std::string best;    ///< the best commit of now (full id); parent != best: stale

  /// Values of its finished runs under the boards' current calibration (runs_of).
  std::vector<double> runs;
  /// Of its parent's runs and of the best's, under the current calibration.
  std::vector<double> parent_runs;
  std::vector<double> best_runs;
  std::optional<NoiseEstimate> noise;  ///< noise_for_decisions(); nullopt: σ not yet known
  int lines_added = 0;                 ///< its diff against its parent
  int lines_removed = 0;
  int confirmations_done = 0;  ///< runs after its first on this commit
  int reapplies_done = 0;      ///< how often its change was re-applied onto a newer best

  std::vector<std::string> gpus;      ///< the workers' GPU ids, in order ("" : a worker that sets no device)
  std::vector<std::string> run_gpus;  ///< the GPUs of `runs`, in order
};

/// What the engine does with the candidate.
enum class Action {
  keep,       ///< it becomes the best
  discard,    ///< it ends, discarded
  confirm,    ///< it runs again on `gpu`: one confirmation more
  remeasure,  ///< it runs again on any GPU: no run of it is under the current calibration
  reapply,    ///< its change is cherry-picked onto the best and measured there
  defer,      ///< decided later (decide_deferred), when what it waits for is there
};

const char* to_string(Action action);

struct Ruling {
  Action action = Action::defer;
  std::string gpu;              ///< confirm: where it runs again (confirmation_gpu)
  std::optional<double> value;  ///< the value to record with the decision; nullopt: none (defer, remeasure)
  std::string reason;           ///< one line with every number the ruling used
};

/// Rules on a measured candidate by the table at the top of this file.
Ruling judge(const Evidence& evidence, const KeepSettings& settings);

/// The evidence the trials table and a diff hold on a candidate of commit,
/// made against parent, while best is the best: the runs of the three and
/// commit's GPUs under calibration (run_evidence.h), and diff's lines. The
/// rest (what it waits for, σ, its counts, the GPUs) is the caller's to add.
Evidence recorded_evidence(const std::vector<TrialRow>& trials, int64_t calibration, const std::string& commit,
                           const std::string& parent, const std::string& best, const std::string& diff);

}  // namespace ard
