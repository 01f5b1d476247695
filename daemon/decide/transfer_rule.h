// The transfer rule: does each kept change of a promotion round still help at
// the larger rung, is it scale-bound there, or should it run again? A pure
// function of the runs at the rung of every commit of the round's chain (c0,
// the reference, then c1..cm, each kept on top of the one before), σ there,
// and the gain each change had at rung 0 (docs/daemon.md, "Promotion to
// larger scales").
//
// Two answers for each change ck, in keep_rule.h's sign (positive is better),
// g_k being its gain over c(k-1) at rung 0:
//   transfers     at the rung it gains about g_k:   e_k ~ N(g_k, v_k)
//   scale-bound   at the rung it gains nothing:     e_k ~ N(0, v_k)
//   v_k = var(g_k) + (0.3·g_k)²: how loosely g_k is known, and how far a gain
//   may move with the scale.
// g_k as measured (σ0²·(1/n + 1/n′) from the rung-0 runs) is drawn toward the
// mean gain of the round's changes (shrink_gains), then floored at σ: a kept
// change's gain was selected for being high and rests on a run or two.
// The commits' true means at the rung follow the chain, m_k = m_(k-1) + e_k,
// and a run of ck reads m_k + N(0, σ²), σ² taken as a Student t's variance,
// σ̂²·df/(df − 2), since σ at the rung rests on few degrees of freedom.
//
//   λ_k = log( P(runs | ck transfers) / P(runs | ck is scale-bound) )
//
// over the runs of c(k-3)..c(k+2): ck, the two changes on either side of it
// (each of them transfers or not, at even odds) and the commit the first of
// them was kept on, whose runs anchor the chain. For each of the 2^5 answers
// of those changes, a Kalman filter along the chain gives the runs'
// likelihood exactly; λ_k sums them. With one change on its reference, it is
//
//   λ = (Δ·g − g²/2) / (σ²·df/(df − 2)·(1/n_before + 1/n_change) + v)
//
// so λ grows with Δ: a change that gains more at the rung than at rung 0
// transfers. After every run at the rung:
//
//   λ_k ≥ +1      transfers
//   λ_k ≤ −1      scale-bound
//   in between    run ck again while it has fewer than max_runs runs; after
//                 the last, the likelier answer (transfers when λ_k ≥ 0)
//
// A run of one commit moves its neighbours' λ, so a round gives its labels
// together, once no change wants another run (promotion_round.h).
//
// Why the chain and not each change against the commit before it alone: that
// Δ rests on one run on each side, σΔ = σ·√2, and the chain knows more. The
// mean of c(k-1) is also c(k-2)'s plus what c(k-1) gained, and ck's is
// c(k+1)'s less what c(k+1) gained, so a label rests on its neighbours' runs
// too. scripts/sim_transfer_rule.py compares the two over simulated rounds
// (σ at the rung and at rung 0 alike, g measured with σ0 of noise): labels
// right 0.91 of the time against 0.86, scale-bound changes labelled transfers
// 0.05 against 0.05, for 1.3 runs of a change against 1.2. Why the likelier
// answer at the last run (the rule before leaned to scale-bound, at
// λ ≥ +0.5): with the chain few scale-bound changes pass at 0, and leaning
// costs 0.04 of the right labels.
//
// A round allows as many runs as the keep rule's confirmations, up to 3
// (promotion_round.h); the simulation puts a third run at 0.008 more right
// labels and 0.011 fewer false transfers, for 0.18 more runs a change.
//
// Its rates in the middle of a chain of five changes (the others transfer
// with odds 0.7, else gain nothing or lose half, as in
// scripts/bench_promotion.sh), the reference run 4 times, g = 3σ measured
// with σ·0.8 of noise, σ exact, max_runs 2 (transfer_rule_test.cc, by
// Monte-Carlo; σ on df 10):
//   true gain at the rung    labelled transfers    mean runs of the change
//   g                        0.93                  1.3
//   0.8·g                    0.81                  1.45
//   0                        0.09                  1.4
//   −g/2                     0.003                 1.1
// A label rests on little: it is a screen for what to build on, not a proof.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/noise.h"
#include "proposers/metric_goal.h"

namespace ard {

/// What a change gained at rung 0 over the commit before it.
struct GainAtRung0 {
  std::optional<double> gain;  ///< as the keep rule counts it (positive: better); nullopt: not known
  double variance = 0;         ///< of that measurement: σ0²·(1/n_before + 1/n_change); 0 when not known
};

struct TransferInput {
  /// c0 (the reference), then c1..cm: the metric of every finished run at the
  /// rung of each commit of the chain, in order.
  std::vector<std::vector<double>> runs;
  std::vector<GainAtRung0> gains;  ///< by change c1..cm (runs.size() − 1 of them)
  NoiseEstimate noise;             ///< σ at the rung
};

struct TransferSettings {
  int max_runs = 2;                    ///< runs of a change at most (one confirmation)
  MetricGoal goal = MetricGoal::kMin;  ///< `summary.goal`: the sign of Δ
};

enum class TransferVerdict { transfers, scale_bound, run_again };

struct TransferDecision {
  TransferVerdict verdict = TransferVerdict::scale_bound;
  double delta = 0;   ///< Δ at the rung, the change's mean over the commit before it (0 without runs on both sides)
  double g = 0;       ///< the gain tested against (0 when nothing was compared)
  double lambda = 0;  ///< λ over the chain (0 when nothing was compared)
  std::string reason;  ///< one line with the numbers the decision used
};

/// Decides on every change c1..cm of input, in order (one decision each).
/// Non-finite values are ignored. A change with no finite run is
/// scale-bound (nothing shows a gain), and so is the change after it (nothing
/// to compare with); the chain around them is decided in parts. σ must be
/// positive and finite, else every change is scale-bound, its reason saying
/// so. Throws std::invalid_argument when gains.size() + 1 != runs.size().
std::vector<TransferDecision> decide_transfers(const TransferInput& input, const TransferSettings& settings);

/// The gains drawn toward their mean, by how much they differ beyond their
/// measurement noise (an empirical-Bayes estimate, as James and Stein's):
/// with ḡ their mean, s² their sample variance and v̄ their mean variance,
/// τ² = max(0, s² − v̄) is how much the true gains differ, and each gain
/// becomes ḡ + w·(g − ḡ), w = τ²/(τ² + var(g)), its variance
/// w·var(g) + (1 − w)²·s²/n. A kept change's gain was selected for being
/// high, and one or two runs on each side measure it loosely: when the gains
/// of a round differ no more than their noise, each is the round's mean. With
/// fewer than 3 known gains, they are returned as they are; unknown ones stay
/// unknown.
std::vector<GainAtRung0> shrink_gains(const std::vector<GainAtRung0>& gains);

const char* to_string(TransferVerdict verdict);

}  // namespace ard
