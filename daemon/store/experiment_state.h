// An experiment's state, as the `experiments.state` column holds it: one enum
// for the whole daemon, its words written and read here only.
//
//   proposing -> applied -> committed -> building -> built -> running -> evaluated
//   -> one final status
//
// In flight, a row may also go back: built -> committed (re-applied onto a newer
// best), evaluated -> built or committed (a confirmation run), any -> committed
// (run again after a fault of the machine). The final statuses are the ends;
// nothing leaves them. results.db.schema's comment lists the same words
// (store_test.cc checks that it does).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace ard {

enum class ExperimentState {
  // In flight.
  kProposing,   ///< a proposal is being asked for
  kApplied,     ///< the proposal's edit is applied, not yet committed
  kCommitted,   ///< its commit exists; waiting for a build slot
  kBuilding,    ///< the build runs
  kBuilt,       ///< built; waiting for a GPU
  kRunning,     ///< a stage (or its Slurm job) runs
  kEvaluated,   ///< measured; its decision is pending
  // Final.
  kKept,
  kDiscarded,
  kCrash,
  kTimeout,
  kBuildFail,
  kTampered,
  kPatchRejected,
  kProposerError,
  kInterrupted,
  /// A winner against an older best whose change does not re-apply onto the best of the moment.
  kConflict,
  /// The machine failed the experiment (a full disk, an I/O error): a trial that
  /// ran again once the fault cleared, or an experiment that could not be.
  kEnvironmentError,
  /// The change repeats an earlier candidate's (decide/duplicates.h): never built or run.
  kDuplicate,
};

/// The column's word: "proposing", ..., "kept", "build_fail", "environment_error".
constexpr const char* to_string(ExperimentState state) {
  switch (state) {
    case ExperimentState::kProposing: return "proposing";
    case ExperimentState::kApplied: return "applied";
    case ExperimentState::kCommitted: return "committed";
    case ExperimentState::kBuilding: return "building";
    case ExperimentState::kBuilt: return "built";
    case ExperimentState::kRunning: return "running";
    case ExperimentState::kEvaluated: return "evaluated";
    case ExperimentState::kKept: return "kept";
    case ExperimentState::kDiscarded: return "discarded";
    case ExperimentState::kCrash: return "crash";
    case ExperimentState::kTimeout: return "timeout";
    case ExperimentState::kBuildFail: return "build_fail";
    case ExperimentState::kTampered: return "tampered";
    case ExperimentState::kPatchRejected: return "patch_rejected";
    case ExperimentState::kProposerError: return "proposer_error";
    case ExperimentState::kInterrupted: return "interrupted";
    case ExperimentState::kConflict: return "conflict";
    case ExperimentState::kEnvironmentError: return "environment_error";
    case ExperimentState::kDuplicate: return "duplicate";
  }
  return "?";
}

/// Every state, in the order above.
const std::vector<ExperimentState>& all_experiment_states();

/// The state a word names; nullopt for any other word.
std::optional<ExperimentState> parse_experiment_state(std::string_view word);

/// True for the states an experiment ends in.
constexpr bool is_final(ExperimentState state) { return state >= ExperimentState::kKept; }

/// True when the word names a final state.
bool is_final_state(std::string_view word);

}  // namespace ard
