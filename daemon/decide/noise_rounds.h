// The noise rounds and the board calibration the engine runs them for: the
// incumbent re-run on every GPU at once, at start and then every `noise.every`
// experiments per GPU or when the estimate is `noise.max_age_s` old
// (noise_round_due). With two GPUs or more and calibration on, each round's
// step counts re-calibrate the boards (calibration.h): a board's budget scale
// changes only when it moves by more than kRecalibrateTolerance, and every
// change starts a new calibration number, under which the incumbent is
// measured again at once (a second round that holds new candidates back), so
// runs are only ever compared under one calibration.
//
// State only; the engine starts the runs and reports them back.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/calibration.h"
#include "daemon/decide/noise.h"
#include "daemon/store/store.h"

namespace ard {

/// A recalibration smaller than this (relative) keeps the scales: a step
/// count's jitter is not a board's speed, and each change costs a round.
inline constexpr double kRecalibrateTolerance = 0.002;

/// No candidate is decided until σ rests on settle_noise_df(gpus) degrees of
/// freedom: a round that held candidates back (the start round, a
/// recalibration) and left fewer is followed by another at once, at most
/// kMaxSettleRounds times. With several GPUs that is kSettleNoiseDf: with
/// df = 3 (one round of 4 GPUs) σ̂ is off by more than 40 % one time in ten,
/// and a σ too large early discards the gains whose re-runs would have
/// refined it; and the keep margin is Student's t on σ's df, so a start on
/// more df keeps more real gains in the night's first hours (4 boards,
/// scripts/bench_decisions.sh: 3σ gains kept 0.74 and 0.65 at 7, 0.77 and
/// 0.76 at 11, for b > 0 and b < 0; one more round of the best at start). With one GPU each round is one run, so the target is
/// kMinNoiseDf: the baseline runs 4 times at start (df 3; 20 minutes at
/// 300 s a run), and the keep rule's margin (Student's t on σ's df,
/// noise.h) pays for the rest of σ's roughness until the night's repeats
/// refine it.
inline constexpr int kSettleNoiseDf = 11;
inline constexpr int kMaxSettleRounds = 3;
inline constexpr int settle_noise_df(int gpus) { return gpus < 2 ? kMinNoiseDf : kSettleNoiseDf; }

class NoiseRounds {
 public:
  /// calibrate: the boards are calibrated (two GPUs or more, `noise.calibrate`
  /// and a stage command that passes {budget_scale}); else every scale is 1.
  NoiseRounds(std::vector<std::string> gpus, bool calibrate);

  /// Picks up where the last stored round left (scales, calibration, time).
  void restore(const std::optional<NoiseRow>& last);

  bool calibrates() const { return calibrate_; }
  double scale(const std::string& gpu) const;
  const std::map<std::string, double>& scales() const { return scales_; }
  int64_t calibration() const { return calibration_; }
  /// The lowest calibration whose runs feed σ: 1 once the boards are calibrated
  /// (runs at scale 1 on boards of different speed are not repeats), else 0.
  int64_t noise_from() const { return calibrate_ ? 1 : 0; }

  /// Whether a round should start now.
  NoiseDue due(int experiments_since_round, double now, int every, double max_age_s) const;

  /// A round starts: one run per GPU. hold: no new candidate trains until it ends.
  void begin(bool hold, std::string reason);
  bool active() const { return active_; }
  bool holds() const { return active_ && hold_; }
  const std::string& reason() const { return reason_; }
  /// One of the round's runs ended; steps: its num_steps (nullopt: it failed).
  void run_done(const std::string& gpu, double scale, std::optional<long> steps);
  bool complete() const { return active_ && left_ == 0; }

  /// Ends a complete round at `now`. With calibration: new scales when a board
  /// moved by more than the tolerance (then recalibrated() is true, the
  /// calibration number went up, and the caller starts another round); a
  /// calibration error is returned as a one-line message (scales kept).
  std::string finish(double now);
  bool recalibrated() const { return recalibrated_; }
  /// After finish(): whether another round should follow at once, holding
  /// candidates back, because the round held them and σ (measured: the pooled
  /// estimate now) rests on fewer than kSettleNoiseDf degrees of freedom.
  bool wants_settle_round(const std::optional<NoiseEstimate>& measured);
  int rounds_done() const { return rounds_; }
  std::optional<double> last_round_at() const { return last_at_; }

 private:
  std::vector<std::string> gpus_;
  bool calibrate_;
  std::map<std::string, double> scales_;
  int64_t calibration_ = 0;
  bool active_ = false, hold_ = false, recalibrated_ = false;
  int left_ = 0;
  int rounds_ = 0;
  int settle_rounds_ = 0;
  std::string reason_;
  std::vector<CalibrationRun> runs_;
  std::optional<double> last_at_;
};

}  // namespace ard
