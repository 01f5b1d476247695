// The transfer rule: does a kept change still help at a larger rung, is it
// scale-bound there, or should it run again? A pure function of the runs at
// the rung, σ there and the gain the change had at rung 0, so every label can
// be checked by hand from the numbers its line prints (docs/daemon.md,
// "Promotion to larger scales").
//
// A sequential likelihood-ratio test on Δ, the change's improvement at the
// rung over the commit before it (keep_rule.h's sign: positive is better),
// between two hypotheses:
//   transfers     Δ = g, the gain the change had at rung 0 (floored at σ);
//   scale-bound   Δ = 0, no gain at the rung.
// With σΔ = σ·√(1/n_before + 1/n_change), after every run of the change:
//
//   λ = (Δ·g − g²/2) / σΔ²      the log of the likelihood ratio
//   λ ≥ +1                       transfers
//   λ ≤ −1                       scale-bound
//   in between                   run the change again while it has fewer
//                                than max_runs runs; after the last,
//                                transfers only when λ ≥ +0.5
//
// Why not the keep rule's z·σ margin: a round compares every kept change with
// the one before it, and the keep rule needs about two runs of each commit at
// the rung to decide. At twice rung 0's budget that is more GPU time than
// promote.max_share (25 %) affords when a change is kept every few
// experiments (scripts/bench_promotion.sh: a third of the kept changes went
// untested). This test decides most changes on one run of each commit. Why
// +0.5 at the last run and not 0 (the nearer hypothesis): building on a change
// that does not transfer costs more than leaving one that does unlabelled as
// such; with 0, one scale-bound change in thirteen passed (docs/LOG.md).
//
// Its rates with one run of the commit before, g = 3σ, σ exact and max_runs 2
// (transfer_rule_test.cc, by Monte-Carlo):
//   true Δ at the rung    labelled transfers    mean runs of the change
//   g                     0.86                  1.2
//   0.8·g                 0.72                  1.3
//   0                     0.10                  1.2
//   −g/2                  0.01                  1.0
// A third run (max_runs 3) moves these rates by about a hundredth, for a tenth
// more runs at twice rung 0's budget. scripts/sim_transfer_rule.py runs the
// rule over simulated rounds with other bounds.
// A label rests on little: it is a screen for what to build on, not a proof.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/noise.h"
#include "proposers/metric_goal.h"

namespace ard {

struct TransferInput {
  std::vector<double> before;  ///< the metric of every finished run at the rung of the commit before the change
  std::vector<double> change;  ///< the same of the change
  NoiseEstimate noise;         ///< σ at the rung
  /// The change's improvement at rung 0 over the commit before it, as the
  /// keep rule counts it (positive: better); nullopt: not known.
  std::optional<double> gain_at_rung0;
};

struct TransferSettings {
  int max_runs = 2;                    ///< runs of the change at most (one confirmation)
  MetricGoal goal = MetricGoal::kMin;  ///< `summary.goal`: the sign of Δ
};

enum class TransferVerdict { transfers, scale_bound, run_again };

struct TransferDecision {
  TransferVerdict verdict = TransferVerdict::scale_bound;
  double delta = 0;   ///< Δ at the rung (0 without finite runs on both sides)
  double g = 0;       ///< the gain tested against (0 when nothing was compared)
  double lambda = 0;  ///< λ (0 when nothing was compared)
  std::string reason;  ///< one line with every number the decision used
};

/// Decides on one change at a rung. No finite run of the change or of the
/// commit before it: scale-bound (nothing shows a gain). Non-finite values
/// are ignored. σ must be positive and finite, else scale-bound with the
/// reason saying so.
TransferDecision decide_transfer(const TransferInput& input, const TransferSettings& settings);

const char* to_string(TransferVerdict verdict);

}  // namespace ard
