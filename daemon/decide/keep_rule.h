// The keep rule: does a candidate's metric (val_bpb by default) beat the
// incumbent (the best commit) by more than the noise, should it run again, or
// is it discarded?
//
// A pure function of the runs, σ and the settings, so a user can check every
// decision by hand from the numbers its reason line prints (docs/daemon.md,
// "The keep rule"). It is a sequential test on Δ, the improvement of the
// candidate's mean over the incumbent's (improvement() of metric_goal.h: the
// incumbent's minus the candidate's under `summary.goal = "min"`, the
// candidate's minus the incumbent's under "max"; positive: the candidate is
// better), in units of
// σΔ = σ·√(1/n_incumbent + 1/n_candidate), made after every run of the candidate:
//
//   Δ ≥ k·σΔ and Δ ≥ min_improvement       keep
//   Δ < discard_below·σΔ                    discard
//   in between                              confirm (run again) while
//                                           confirmations are left, else discard
//
// where k is z (`noise.z`) when σ is exact or from noise.prior_sigma, and
// Student's t quantile at Φ(z) when σ is measured on df degrees of freedom
// (noise.h, keep_margin: 3.31 at df 3, 2.43 at df 7, 2.06 at df 40 for
// z = 2), so the error rate below holds from the first hour, when σ rests on
// a few runs, and not only once it rests on many.
//
// A candidate with no effect passes the first look with probability Φ̄(z)
// (2.3 % for z = 2); the confirmation looks add under 1 % (3.0 % in all with
// the defaults, σ exact and an incumbent of 4 runs: keep_rule_test.cc). A 3σ gain is kept about 9 times in 10 when the incumbent's
// mean rests on several runs, so the incumbent gets runs of its own: a kept
// candidate is re-run until it has kMinIncumbentRuns, because every later
// candidate is measured against its mean, and the runs that got it kept are
// biased low by that very selection. scripts/bench_decisions.sh measures the
// whole policy (the rates and the GPU time the repeats cost).
//
// Equal but simpler: |Δ| ≤ σ and a diff that removes more lines than it adds
// is kept. σ not yet known (noise.h: fewer than kMinNoiseDf degrees of
// freedom and no prior): confirm while confirmations are left, then the old
// rule (strictly better, lower or higher as the goal says, by min_improvement),
// said so in the reason.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/noise.h"
#include "proposers/metric_goal.h"

namespace ard {

struct Config;

struct KeepSettings {
  double z = 2;                   ///< `noise.z`: the keep margin in σΔ
  double discard_below = 1.5;     ///< Δ under this many σΔ is discarded at once
  double min_improvement = 0;     ///< floor on Δ, whatever σ says
  bool equal_but_simpler = true;  ///< `keep.equal_but_simpler`
  int max_confirmations = 2;      ///< `keep.confirmations`: runs after the first
  MetricGoal goal = MetricGoal::kMin;  ///< `summary.goal`: the sign of Δ
};

/// The settings that the config names (the goal included); discard_below
/// stays at its default.
KeepSettings keep_settings(const Config& config);

struct KeepInput {
  std::vector<double> incumbent;  ///< the metric of every finished run of the best commit
  std::vector<double> candidate;  ///< the metric of every finished run of the candidate
  std::optional<NoiseEstimate> noise;  ///< noise_for_decisions(); nullopt: σ not yet known
  int lines_added = 0;            ///< the candidate's diff against the incumbent
  int lines_removed = 0;
  int confirmations_done = 0;     ///< runs of the candidate after its first
};

enum class Verdict { keep, discard, confirm };

struct KeepDecision {
  Verdict verdict = Verdict::discard;
  std::string reason;  ///< one line with every number the decision used
};

/// Decides on a candidate. No incumbent runs: kept (nothing to beat). No
/// finite candidate run: discarded. Non-finite values are ignored.
KeepDecision decide_keep(const KeepInput& input, const KeepSettings& settings);

const char* to_string(Verdict verdict);

/// Δ in units of σ, read back from a stored decision line (decide_keep's
/// reason): the line's Δ (the improvement under the goal it was decided
/// with) / σ, positive when the candidate was better under either goal.
/// nullopt where the line holds no comparison with σ (nothing to beat, σ not
/// yet known, no finite run) or is not one of the keep rule's. Read at display time, so it needs no column of its own.
std::optional<double> delta_sigma(const std::string& decision);

/// The runs the incumbent needs before later candidates are measured against
/// its mean (see the top of this file).
inline constexpr int kMinIncumbentRuns = 3;

/// How many more runs of the incumbent to make now: after a keep, the new
/// incumbent is re-run (on the boards it has run on least, confirmation_gpu)
/// until it has kMinIncumbentRuns finished runs. They are repeats of one commit,
/// so they feed σ too.
int incumbent_reruns_wanted(int incumbent_runs);

/// Where a confirmation run goes: the GPU (of `gpus`, in order) the candidate
/// has run on least, so a second run lands on another board when there is one
/// and on the same board with one GPU. Empty when gpus is empty.
std::string confirmation_gpu(const std::vector<std::string>& gpus, const std::vector<std::string>& candidate_gpus);

}  // namespace ard
