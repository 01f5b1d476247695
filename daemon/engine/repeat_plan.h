// The repeat runs of the best, as values: where the incumbent's re-runs go
// after a keep, and what a finished noise round says (its stored row, the
// round that must follow at once, its log line).
//
// RepeatRuns holds the rounds' state (NoiseRounds, decide/noise_rounds.h)
// and hands the engine each repeat run as a candidate to schedule; when they
// train, and what their ends do to the best, is the engine's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/decide/noise_rounds.h"
#include "daemon/engine/candidate.h"
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

/// The best of the moment, whose runs the repeats are.
struct BestRun {
  int64_t id = 0;  ///< its experiment; 0: none yet
  std::string commit;
  std::optional<double> value;  ///< the mean of its runs; nullopt until measured
};

/// The repeat runs of the best: a noise round's (the best on every GPU) and
/// the incumbent's re-runs after a keep, as candidates numbered 1, 2, ...
class RepeatRuns {
 public:
  /// gpus: the workers' GPU ids (one "" for a worker that sets no device).
  RepeatRuns(const Config& config, std::vector<std::string> gpus);

  NoiseRounds& rounds() { return rounds_; }
  const NoiseRounds& rounds() const { return rounds_; }

  /// A round begins (hold: candidates wait until it ends): the best on every
  /// GPU that a baseline run of the round among in_flight does not cover.
  std::vector<Candidate> begin_round(bool hold, const std::string& reason, const BestRun& best,
                                     const std::map<int64_t, Candidate>& in_flight);
  /// Why a round starts now (round_due), "" when none does: rounds are off,
  /// one runs, or there is no best yet.
  std::string due(const BestRun& best, double now) const;
  /// c's run ended (steps: its steps, nullopt when it failed): a round's run
  /// counts toward its end (NoiseRounds::run_done), once.
  void run_done(Candidate& c, std::optional<long> steps);
  /// One more experiment decided since the last round.
  void decided() { ++since_round_; }
  /// The round's end once its runs are all done (end_round); nullopt before.
  /// The count of experiments since a round restarts unless another follows at once.
  std::optional<RoundEnd> end_if_complete(const std::vector<TrialRow>& trials, double now);

  /// The incumbent's re-runs due now (incumbent_rerun_gpus): none with rounds off.
  std::vector<Candidate> incumbent_runs(const std::vector<TrialRow>& trials, const BestRun& best,
                                        const std::map<int64_t, Candidate>& in_flight);
  /// Whether a re-run of best is among in_flight.
  static bool incumbent_pending(const std::map<int64_t, Candidate>& in_flight, const std::string& best);

  /// σ as decisions use it (noise_status): measured since the boards' calibration, else the prior.
  std::optional<NoiseEstimate> decision_noise(const std::vector<TrialRow>& trials) const;

 private:
  Candidate run_of_best(const std::string& purpose, const std::string& gpu, bool in_round, const BestRun& best);

  const Config& config_;
  std::vector<std::string> gpus_;
  NoiseRounds rounds_;
  int since_round_ = 0;  ///< experiments decided since the last round
  int next_repeat_ = 0;  ///< the last repeat number given
};

}  // namespace ard
