// The evidence a keep decision rests on, read from the trials table: the runs
// of a commit under one board calibration, σ pooled over every commit's
// repeats, the diff's line counts, and the GPU time each kind of run cost.
// Runs, GPUs and σ count the experiment as configured (rung 0) only: a run at
// a larger promotion rung (trials.rung) is another model's.
//
// Pure functions over TrialRow, so the engine, `status` and the tests agree.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/noise.h"
#include "daemon/store/store.h"

namespace ard {

/// What a trial is for (trials.purpose).
namespace purpose {
inline constexpr const char* kBaseline = "baseline";    ///< the unmodified trainer, first run
inline constexpr const char* kCandidate = "candidate";  ///< a candidate's first run
inline constexpr const char* kReapplied = "reapplied";  ///< its change moved onto a newer best
inline constexpr const char* kConfirm = "confirm";      ///< a candidate run again (keep_rule.h)
inline constexpr const char* kIncumbent = "incumbent";  ///< a new best re-run to kMinIncumbentRuns
inline constexpr const char* kNoise = "noise";          ///< a noise round: the best on every GPU
inline constexpr const char* kPromote = "promote";      ///< a run at a promotion rung above 0 (promotion.h)
}  // namespace purpose

/// True for the runs that only repeat a measurement (confirm, incumbent, noise).
bool is_repeat(const std::string& trial_purpose);

/// val_bpb of every finished (status ok) run of `commit` under `calibration`.
std::vector<double> runs_of(const std::vector<TrialRow>& trials, const std::string& commit, int64_t calibration);
/// The GPUs of those runs, in order.
std::vector<std::string> gpus_of(const std::vector<TrialRow>& trials, const std::string& commit, int64_t calibration);

/// σ pooled over the groups of finished runs of one commit under one
/// calibration, for calibrations >= min_calibration (runs on boards not yet
/// calibrated against each other are left out once they are). Only runs no
/// decision selected count: the baseline, the noise rounds and the best's
/// re-runs (a kept candidate's own runs are low by the selection that kept it,
/// which would pass for noise).
std::optional<NoiseEstimate> measured_noise(const std::vector<TrialRow>& trials, int64_t min_calibration);

/// σ as the keep rule sees it now, for status, show, the API and the engine
/// alike: the measured estimate (measured_noise), the σ decisions use
/// (noise_for_decisions: the measured one on kMinNoiseDf or more, else
/// `noise.prior_sigma`; nullopt: not usable, so candidates are confirmed and
/// then "strictly better" decides), and the keep margin in σΔ (keep_margin).
/// What the screens need of `[noise]` to judge σ as the engine does.
struct NoiseSettings {
  double prior_sigma = 0;  ///< noise.prior_sigma
  double z = 2;            ///< noise.z
};

struct NoiseStatus {
  std::optional<NoiseEstimate> measured;
  std::optional<NoiseEstimate> used;
  double margin = 0;  ///< 0 when used is nullopt
  bool usable() const { return used.has_value(); }
};
NoiseStatus noise_status(const std::vector<TrialRow>& trials, int64_t min_calibration, double prior_sigma, double z);

/// One line: "σ = 0.001500 (measured, df 12): usable; kept at Δ ≥ 2.27·σΔ"
/// or why σ is not usable yet and what decides meanwhile.
std::string describe(const NoiseStatus& noise);

/// Which rule made a decision, from the reason line the keep rule wrote:
/// "baseline", "σ measured", "σ prior", "strictly lower" or "strictly higher"
/// (σ not usable; as `summary.goal` says),
/// "equal but simpler", "stale screen" (measured on an older best), or ""
/// (no decision yet, or a failure).
std::string decision_rule(const std::string& reason);

/// Lines a unified diff adds and removes (file headers not counted).
struct DiffLines {
  int added = 0;
  int removed = 0;
};
DiffLines count_diff_lines(const std::string& diff);

/// GPU time of the finished runs: the budget time they report
/// (training_seconds), else their wall time.
struct RunTime {
  double total_s = 0;
  double repeat_s = 0;                     ///< confirm, incumbent and noise runs
  double rung_s = 0;                       ///< runs at promotion rungs above 0
  std::map<std::string, double> by_purpose;
  double repeat_share() const { return total_s > 0 ? repeat_s / total_s : 0; }
  double promotion_share() const { return total_s > 0 ? rung_s / total_s : 0; }
};
RunTime run_time(const std::vector<TrialRow>& trials);

/// Mean, sample standard deviation (0 for one value) and count of the finite values.
struct Spread {
  double mean = 0;
  double spread = 0;
  int n = 0;
};
Spread spread_of(const std::vector<double>& values);

/// "0=1.0000,1=0.9694" and back; parse_scales skips malformed items.
std::string format_scales(const std::map<std::string, double>& scales);
std::map<std::string, double> parse_scales(const std::string& text);

}  // namespace ard
