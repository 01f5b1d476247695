// Tests of the transfer rule: its edges (no runs, σ not usable, either bound,
// the last run's leaning to scale-bound, the floor on g, the goal's sign) and its
// rates by Monte-Carlo in the setting its header's table is for.
#include "daemon/decide/transfer_rule.h"

#include <gmock/gmock.h>

#include <cmath>
#include <cstdio>
#include <random>

namespace ard {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr double kSigma = 0.0015;
constexpr double kGain = 3 * kSigma;

TransferInput input(std::vector<double> before, std::vector<double> change, std::optional<double> gain = kGain) {
  return {std::move(before), std::move(change), {kSigma, 10, false}, gain};
}

TEST(TransferRule, NoRunOnEitherSideIsScaleBound) {
  TransferDecision d = decide_transfer(input({}, {0.9}), {});
  EXPECT_EQ(d.verdict, TransferVerdict::scale_bound);
  EXPECT_EQ(d.reason, "scale-bound: the commit before it has no finished run at the rung");
  d = decide_transfer(input({1.0}, {NAN}), {});
  EXPECT_EQ(d.verdict, TransferVerdict::scale_bound);
  EXPECT_EQ(d.reason, "scale-bound: no finished run at the rung");
}

TEST(TransferRule, SigmaThatIsNotPositiveDecidesNothing) {
  TransferInput in = input({1.0}, {0.99});
  in.noise.sigma = 0;
  EXPECT_EQ(decide_transfer(in, {}).verdict, TransferVerdict::scale_bound);
  EXPECT_THAT(decide_transfer(in, {}).reason, HasSubstr("σ at the rung is not a positive number"));
}

TEST(TransferRule, TheGainItHadTransfersOnOneRun) {
  // Δ = g: λ = (g² − g²/2)/(2σ²) = 9/4 = 2.25 ≥ 1.
  TransferDecision d = decide_transfer(input({1.0}, {1.0 - kGain}), {});
  EXPECT_EQ(d.verdict, TransferVerdict::transfers);
  EXPECT_NEAR(d.delta, kGain, 1e-12);
  EXPECT_THAT(d.reason, StartsWith("transfers: mean 0.995500 (n=1) against 1.000000 (n=1) before it: Δ = +0.004500; "
                                   "g = 0.004500, its gain at rung 0; σ = 0.001500 (df 10); "
                                   "λ = (Δ·g − g²/2)/(σ²·(1/1+1/1)) = +2.25 ≥ +1"));
}

TEST(TransferRule, NoGainIsScaleBoundOnOneRun) {
  // Δ = 0: λ = −9/4.
  TransferDecision d = decide_transfer(input({1.0}, {1.0}), {});
  EXPECT_EQ(d.verdict, TransferVerdict::scale_bound);
  EXPECT_THAT(d.reason, HasSubstr("= -2.25 ≤ −1"));
}

TEST(TransferRule, HalfTheGainRunsAgainThenLeansToScaleBound) {
  // Δ = 0.55·g: λ = (0.55 − 0.5)·g²/(2σ²) = 0.225, between the bounds.
  const std::vector<double> before{1.0};
  TransferDecision d = decide_transfer(input(before, {1.0 - 0.55 * kGain}), {});
  EXPECT_EQ(d.verdict, TransferVerdict::run_again);
  EXPECT_THAT(d.reason, HasSubstr("between −1 and +1"));
  // The second run of the change is the last (max_runs 2): λ = 0.05·9/1.5 = 0.3 < 0.5.
  const double x = 1.0 - 0.55 * kGain;
  d = decide_transfer(input(before, {x, x}), {});
  EXPECT_EQ(d.verdict, TransferVerdict::scale_bound);
  EXPECT_THAT(d.reason, HasSubstr("= +0.30 at the change's last run (n=2): < +0.5, in doubt scale-bound"));
  // Δ = 0.6·g: λ = 0.1·9/1.5 = 0.6 ≥ 0.5.
  const double y = 1.0 - 0.6 * kGain;
  d = decide_transfer(input(before, {y, y}), {});
  EXPECT_EQ(d.verdict, TransferVerdict::transfers);
  EXPECT_THAT(d.reason, HasSubstr("= +0.60 at the change's last run (n=2): ≥ +0.5"));
  // More runs allowed: the second is not the last.
  TransferSettings three;
  three.max_runs = 3;
  EXPECT_EQ(decide_transfer(input(before, {x, x}), three).verdict, TransferVerdict::run_again);
}

TEST(TransferRule, AGainBelowTheNoiseIsTestedAgainstOneSigma) {
  TransferDecision d = decide_transfer(input({1.0}, {1.0 - kSigma}, 0.2 * kSigma), {});
  EXPECT_THAT(d.reason, HasSubstr("g = 0.001500, its gain at rung 0 floored at σ"));
  d = decide_transfer(input({1.0}, {1.0 - kSigma}, std::nullopt), {});
  EXPECT_THAT(d.reason, HasSubstr("g = σ = 0.001500, its gain at rung 0 unknown"));
  EXPECT_EQ(d.verdict, TransferVerdict::run_again);  // λ = (1 − 1/2)/2 = 0.25
}

TEST(TransferRule, TheGoalGivesTheSign) {
  TransferSettings max;
  max.goal = MetricGoal::kMax;
  EXPECT_EQ(decide_transfer(input({0.5}, {0.5 + kGain}), max).verdict, TransferVerdict::transfers);
  EXPECT_EQ(decide_transfer(input({0.5}, {0.5 - kGain}), max).verdict, TransferVerdict::scale_bound);
}

struct Rates {
  double transfers = 0, runs = 0;
};

/// The rule's rates for a change whose true Δ at the rung is effect, against
/// one run of the commit before it, g = 3σ, σ exact, the default settings.
Rates simulate(double effect, int trials) {
  std::mt19937_64 rng(4321);
  std::normal_distribution<double> noise(0, kSigma);
  Rates r;
  for (int t = 0; t < trials; ++t) {
    TransferInput in = input({1.0 + noise(rng)}, {});
    for (;;) {
      in.change.push_back(1.0 - effect + noise(rng));
      TransferDecision d = decide_transfer(in, {});
      if (d.verdict == TransferVerdict::run_again) continue;
      r.transfers += d.verdict == TransferVerdict::transfers;
      r.runs += in.change.size();
      break;
    }
  }
  r.transfers /= trials;
  r.runs /= trials;
  return r;
}

TEST(TransferRule, RatesAsTheHeaderSays) {
  const Rates full = simulate(kGain, 40000), most = simulate(0.8 * kGain, 40000), none = simulate(0, 40000),
              worse = simulate(-0.5 * kGain, 40000);
  std::printf("transfers: g %.3f (runs %.2f), 0.8g %.3f (%.2f), 0 %.3f (%.2f), -g/2 %.3f (%.2f)\n", full.transfers,
              full.runs, most.transfers, most.runs, none.transfers, none.runs, worse.transfers, worse.runs);
  EXPECT_NEAR(full.transfers, 0.86, 0.02);
  EXPECT_NEAR(most.transfers, 0.72, 0.02);
  EXPECT_NEAR(none.transfers, 0.10, 0.02);
  EXPECT_LE(worse.transfers, 0.02);
  EXPECT_NEAR(full.runs, 1.2, 0.05);
  EXPECT_NEAR(none.runs, 1.2, 0.05);
  EXPECT_LE(worse.runs, 1.1);
}

}  // namespace
}  // namespace ard
