// The repeat runs of the best, as values: where the incumbent's re-runs go
// after a keep, and what a finished noise round says (its stored row, the
// round that must follow at once, its log line).
//
// The runs themselves (candidates with a repeat number) are the engine's; the
// rounds' state is NoiseRounds' (decide/noise_rounds.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/noise_rounds.h"
#include "daemon/store/store.h"

namespace ard {

/// The GPUs (of gpus) the best is re-run on now, in order:
/// incumbent_reruns_wanted(used.size()) of them, each the confirmation_gpu of
/// those used so far. used: the GPUs of its finished runs and of the re-runs
/// on their way.
std::vector<std::string> incumbent_rerun_gpus(const std::vector<std::string>& gpus, std::vector<std::string> used);

/// Why a noise round starts now (describe(NoiseDue, ...)), or "" when none is
/// due: rounds' due rule over the experiments decided since the last round and its age.
std::string round_due(const NoiseRounds& rounds, int experiments_since_round, double now, int every,
                      double max_age_s);

/// The best's value: the mean of its finished runs (runs_of) under
/// calibration; nullopt while it has none.
std::optional<double> best_mean(const std::vector<TrialRow>& trials, const std::string& best, int64_t calibration);

/// What a finished noise round says.
struct RoundEnd {
  NoiseRow row;            ///< the estimate to store (Store::add_noise_estimate)
  std::string warning;     ///< a calibration problem (logged "warning: ..."), or ""
  std::string log_line;    ///< "boards calibrated ...", "noise round done: ...", or "" (a settle round follows)
  std::string next_round;  ///< the reason of the round that starts at once, holding candidates back; "" for none
};

/// Ends rounds' complete round at now (NoiseRounds::finish), σ measured from
/// trials: new scales start a round under them ("recalibrated"); a round that
/// held candidates and left σ on too few degrees of freedom starts another.
RoundEnd end_round(NoiseRounds& rounds, const std::vector<TrialRow>& trials, double now);

}  // namespace ard
