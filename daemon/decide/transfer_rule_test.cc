// Tests of the transfer rule: its edges (no runs, σ not usable, the sizes),
// either bound and the last look for one change, what its neighbours' runs
// add, the floor on g, the goal's sign, and its rates by Monte-Carlo in the
// setting its header's table is for.
#include "daemon/decide/transfer_rule.h"

#include <gmock/gmock.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>

namespace ard {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr double kSigma = 0.0015;
constexpr double kGain = 3 * kSigma;

/// A chain: runs of c0..cm, every change's rung-0 gain `gain` measured exactly.
TransferInput chain(std::vector<std::vector<double>> runs, std::optional<double> gain = kGain) {
  TransferInput in{std::move(runs), {}, {kSigma, 10, false}};
  in.gains.assign(in.runs.size() - 1, GainAtRung0{gain, 0});
  return in;
}

TransferDecision one(const TransferInput& in, const TransferSettings& settings = {}) {
  const std::vector<TransferDecision> d = decide_transfers(in, settings);
  EXPECT_EQ(d.size(), 1u);
  return d.at(0);
}

TEST(TransferRule, NoRunOnEitherSideIsScaleBound) {
  TransferDecision d = one(chain({{}, {0.9}}));
  EXPECT_EQ(d.verdict, TransferVerdict::scale_bound);
  EXPECT_EQ(d.reason, "scale-bound: the commit before it has no finished run at the rung");
  d = one(chain({{1.0}, {NAN}}));
  EXPECT_EQ(d.verdict, TransferVerdict::scale_bound);
  EXPECT_EQ(d.reason, "scale-bound: no finished run at the rung");
  // A commit without runs in the middle: the chain is decided in two parts around it.
  const std::vector<TransferDecision> ds =
      decide_transfers(chain({{1.0, 1.0}, {1.0 - kGain}, {}, {0.9}, {0.9 - kGain}}), {});
  ASSERT_EQ(ds.size(), 4u);
  EXPECT_EQ(ds[0].verdict, TransferVerdict::transfers);
  EXPECT_EQ(ds[1].reason, "scale-bound: no finished run at the rung");
  EXPECT_EQ(ds[2].reason, "scale-bound: the commit before it has no finished run at the rung");
  EXPECT_EQ(ds[3].verdict, TransferVerdict::transfers);
  EXPECT_THAT(ds[3].reason, HasSubstr("λ over c3..c4"));
}

TEST(TransferRule, SigmaThatIsNotPositiveDecidesNothing) {
  TransferInput in = chain({{1.0}, {0.99}, {0.98}});
  in.noise.sigma = 0;
  for (const TransferDecision& d : decide_transfers(in, {})) {
    EXPECT_EQ(d.verdict, TransferVerdict::scale_bound);
    EXPECT_EQ(d.reason, "scale-bound: σ at the rung is not a positive number");
  }
}

TEST(TransferRule, OneGainAtRungZeroPerChange) {
  TransferInput in = chain({{1.0}, {0.99}});
  in.gains.push_back({});
  EXPECT_THROW(decide_transfers(in, {}), std::invalid_argument);
}

// One change on one run of each side: λ = (Δ·g − g²/2)/V, V = σ²·1.25·(1/1 + 1/1) + (0.3·g)²
// = 3.31σ² for g = 3σ measured exactly (σ on df 10 is taken as a t's: ×10/8 in variance).
TEST(TransferRule, TheGainItHadTransfersOnOneRun) {
  // Δ = g: λ = 4.5/3.31 = +1.36.
  TransferDecision d = one(chain({{1.0}, {1.0 - kGain}}));
  EXPECT_EQ(d.verdict, TransferVerdict::transfers);
  EXPECT_NEAR(d.delta, kGain, 1e-12);
  EXPECT_NEAR(d.lambda, 4.5 / 3.31, 1e-9);
  EXPECT_THAT(d.reason, StartsWith("transfers: mean 0.995500 (n=1) against 1.000000 (n=1) before it: Δ = +0.004500; "
                                   "g = 0.004500 ± 0.000000, its gain at rung 0; σ = 0.001500 (df 10, taken ×1.12 for "
                                   "its df); λ over c0..c1 = +1.36 ≥ +1"));
}

TEST(TransferRule, NoGainIsScaleBoundOnOneRun) {
  TransferDecision d = one(chain({{1.0}, {1.0}}));
  EXPECT_EQ(d.verdict, TransferVerdict::scale_bound);
  EXPECT_NEAR(d.lambda, -4.5 / 3.31, 1e-9);
  EXPECT_THAT(d.reason, HasSubstr("= -1.36 ≤ −1"));
}

TEST(TransferRule, MoreThanItsGainAtRungZeroTransfers) {
  // λ grows with Δ: a change that gains more at the rung than at rung 0 transfers.
  EXPECT_EQ(one(chain({{1.0}, {1.0 - 3 * kGain}})).verdict, TransferVerdict::transfers);
  EXPECT_EQ(one(chain({{1.0}, {1.0 - 10 * kGain}})).verdict, TransferVerdict::transfers);
}

TEST(TransferRule, HalfTheGainRunsAgainThenTakesTheLikelierAnswer) {
  // Δ = 0.55·g on one run: λ = 0.45/3.31 = +0.14, between the bounds.
  const double x = 1.0 - 0.55 * kGain, y = 1.0 - 0.45 * kGain;
  TransferDecision d = one(chain({{1.0}, {x}}));
  EXPECT_EQ(d.verdict, TransferVerdict::run_again);
  EXPECT_THAT(d.reason, HasSubstr("between −1 and +1"));
  // Its second run is the last (max_runs 2): V = 1.25·1.5σ² + 0.81σ² = 2.685σ², so
  // Δ = 0.55·g gives λ = +0.17 and Δ = 0.45·g λ = −0.17.
  d = one(chain({{1.0}, {x, x}}));
  EXPECT_EQ(d.verdict, TransferVerdict::transfers);
  EXPECT_THAT(d.reason, HasSubstr("= +0.17 at the change's last run (n=2): ≥ 0, the likelier"));
  d = one(chain({{1.0}, {y, y}}));
  EXPECT_EQ(d.verdict, TransferVerdict::scale_bound);
  EXPECT_THAT(d.reason, HasSubstr("= -0.17 at the change's last run (n=2): < 0, the likelier"));
  // More runs allowed: the second is not the last.
  TransferSettings three;
  three.max_runs = 3;
  EXPECT_EQ(one(chain({{1.0}, {x, x}}), three).verdict, TransferVerdict::run_again);
}

TEST(TransferRule, TheCommitAfterAChangeSpeaksForIt) {
  // c3 reads half a gain below c2: in doubt on its own. If c4, one change
  // more, reads four gains below c0, c3 must have reached three; if c4 reads
  // two gains below, c3 more likely stayed at two.
  const auto c3 = [](double c4) {
    return decide_transfers(chain({{1.0, 1.0, 1.0, 1.0}, {1.0 - kGain}, {1.0 - 2 * kGain}, {1.0 - 2.5 * kGain}, {c4}}),
                            {})[2];
  };
  const TransferDecision alone = decide_transfers(chain({{1.0 - 2 * kGain}, {1.0 - 2.5 * kGain}}), {})[0];
  const TransferDecision up = c3(1.0 - 4 * kGain), down = c3(1.0 - 2 * kGain);
  EXPECT_EQ(alone.verdict, TransferVerdict::run_again);
  EXPECT_EQ(up.verdict, TransferVerdict::transfers);
  EXPECT_GT(up.lambda, 1);
  EXPECT_LT(down.lambda, alone.lambda - 0.4);
  EXPECT_THAT(up.reason, HasSubstr("λ over c0..c4"));
  EXPECT_NEAR(up.delta, down.delta, 1e-12);  // the same pair: only the chain around it differs
}

TEST(TransferRule, TheWindowIsTwoChangesOnEitherSide) {
  std::vector<std::vector<double>> runs{{1.0}};
  for (int k = 1; k <= 8; ++k) runs.push_back({1.0 - k * kGain});
  const std::vector<TransferDecision> ds = decide_transfers(chain(runs), {});
  EXPECT_THAT(ds[0].reason, HasSubstr("λ over c0..c3"));
  EXPECT_THAT(ds[4].reason, HasSubstr("λ over c2..c7"));
  EXPECT_THAT(ds[7].reason, HasSubstr("λ over c5..c8"));
  for (const TransferDecision& d : ds) EXPECT_EQ(d.verdict, TransferVerdict::transfers);
}

TEST(TransferRule, AGainBelowTheNoiseIsTestedAgainstOneSigma) {
  TransferDecision d = one(chain({{1.0}, {1.0 - kSigma}}, 0.2 * kSigma));
  EXPECT_THAT(d.reason, HasSubstr("g = 0.001500 ± 0.000000, its gain at rung 0 floored at σ"));
  d = one(chain({{1.0}, {1.0 - kSigma}}, std::nullopt));
  EXPECT_THAT(d.reason, HasSubstr("g = σ = 0.001500, its gain at rung 0 unknown"));
  EXPECT_EQ(d.verdict, TransferVerdict::run_again);
}

TEST(TransferRule, ALooselyMeasuredGainWeighsLess) {
  // The variance of g's measurement at rung 0 adds to V: the same Δ moves λ less.
  for (double delta : {0.0, 2 * kGain}) {
    TransferInput exact = chain({{1.0}, {1.0 - delta}});
    TransferInput loose = exact;
    loose.gains[0].variance = kGain * kGain;
    EXPECT_LT(std::abs(one(loose).lambda), std::abs(one(exact).lambda)) << delta;
    EXPECT_NEAR(one(loose).lambda * (3.31 + 9), one(exact).lambda * 3.31, 1e-9) << delta;
    EXPECT_THAT(one(loose).reason, HasSubstr("g = 0.004500 ± 0.004500"));
  }
}

TEST(TransferRule, TheGoalGivesTheSign) {
  TransferSettings max;
  max.goal = MetricGoal::kMax;
  EXPECT_EQ(one(chain({{0.5}, {0.5 + kGain}}), max).verdict, TransferVerdict::transfers);
  EXPECT_EQ(one(chain({{0.5}, {0.5 - kGain}}), max).verdict, TransferVerdict::scale_bound);
}

TEST(TransferRule, FewDegreesOfFreedomWidenSigma) {
  // σ on df 3 is taken as a t's, ×3 in variance: V = 6σ² + 0.81σ², λ(Δ = g) = 4.5/6.81 = +0.66.
  TransferInput in = chain({{1.0}, {1.0 - kGain}});
  in.noise.df = 3;
  EXPECT_NEAR(one(in).lambda, 4.5 / 6.81, 1e-9);
  EXPECT_EQ(one(in).verdict, TransferVerdict::run_again);
  EXPECT_THAT(one(in).reason, HasSubstr("σ = 0.001500 (df 3, taken ×1.73 for its df)"));
}

TEST(TransferRule, GainsThatDifferNoMoreThanTheirNoiseAreTheirMean) {
  // Measured 0.002, 0.004, 0.006, each ± 0.002: their spread (s² = 4e-6) is their noise (4e-6),
  // so τ² = 0 and each becomes the mean, 0.004, known to s²/n.
  const double v = 0.002 * 0.002;
  std::vector<GainAtRung0> g = shrink_gains({{0.002, v}, {0.004, v}, {0.006, v}, {std::nullopt, 0}});
  ASSERT_EQ(g.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(*g[i].gain, 0.004, 1e-12);
    EXPECT_NEAR(g[i].variance, v / 3, 1e-15);
  }
  EXPECT_FALSE(g[3].gain);
  // Gains far apart keep most of their own: s² = 1e-4, τ² = 9.6e-5, w = 0.96.
  g = shrink_gains({{0.0, v}, {0.01, v}, {0.02, v}});
  EXPECT_NEAR(*g[0].gain, 0.01 - 0.96 * 0.01, 1e-12);
  EXPECT_NEAR(*g[2].gain, 0.01 + 0.96 * 0.01, 1e-12);
  // Fewer than 3 known: as they are.
  g = shrink_gains({{0.002, v}, {0.006, v}});
  EXPECT_NEAR(*g[0].gain, 0.002, 1e-15);
  // The rule tests against the drawn gain and says so.
  TransferInput in = chain({{1.0}, {0.996}, {0.992}, {0.988}});
  in.gains = {{0.002, v}, {0.004, v}, {0.006, v}};
  EXPECT_THAT(decide_transfers(in, {})[0].reason,
              HasSubstr("g = 0.004000 ± 0.001155, its gain at rung 0 (0.002000 ± 0.002000 as measured, drawn "
                        "toward the round's mean)"));
}

struct Rates {
  double transfers = 0, runs = 0;
};

/// The rule's rates for the middle change (c3) of a chain of five whose true
/// gain at the rung is effect: the others transfer (g) with odds 0.7, else
/// gain 0 or lose g/2; the reference runs 4 times, every change once and
/// again while the rule asks; each g measured as 3σ + N(0, (0.8σ)²), with
/// that variance; σ exact; the default settings.
Rates simulate(double effect, int trials) {
  std::mt19937_64 rng(4321);
  std::normal_distribution<double> noise(0, kSigma), g_noise(0, 0.8 * kSigma);
  std::uniform_real_distribution<double> u(0, 1);
  Rates r;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> mean{1.0};
    TransferInput in{{{}}, {}, {kSigma, 10, false}};
    for (int k = 1; k <= 5; ++k) {
      const double v = u(rng);
      const double e = k == 3 ? effect : v < 0.7 ? kGain : v < 0.85 ? 0 : -0.5 * kGain;
      mean.push_back(mean.back() - e);
      in.gains.push_back({kGain + g_noise(rng), 0.64 * kSigma * kSigma});
      in.runs.push_back({mean.back() + noise(rng)});
    }
    for (int i = 0; i < 4; ++i) in.runs[0].push_back(1.0 + noise(rng));
    for (;;) {
      const std::vector<TransferDecision> ds = decide_transfers(in, {});
      bool again = false;
      for (size_t k = 0; k < ds.size(); ++k)
        if (ds[k].verdict == TransferVerdict::run_again) {
          in.runs[k + 1].push_back(mean[k + 1] + noise(rng));
          again = true;
        }
      if (again) continue;
      r.transfers += ds[2].verdict == TransferVerdict::transfers;
      r.runs += static_cast<double>(in.runs[3].size());
      break;
    }
  }
  r.transfers /= trials;
  r.runs /= trials;
  return r;
}

TEST(TransferRule, RatesAsTheHeaderSays) {
  const Rates full = simulate(kGain, 20000), most = simulate(0.8 * kGain, 20000), none = simulate(0, 20000),
              worse = simulate(-0.5 * kGain, 20000);
  std::printf("transfers: g %.3f (runs %.2f), 0.8g %.3f (%.2f), 0 %.3f (%.2f), -g/2 %.3f (%.2f)\n", full.transfers,
              full.runs, most.transfers, most.runs, none.transfers, none.runs, worse.transfers, worse.runs);
  EXPECT_NEAR(full.transfers, 0.93, 0.02);
  EXPECT_NEAR(most.transfers, 0.81, 0.02);
  EXPECT_NEAR(none.transfers, 0.09, 0.02);
  EXPECT_LE(worse.transfers, 0.02);
  EXPECT_NEAR(full.runs, 1.3, 0.05);
  EXPECT_NEAR(most.runs, 1.45, 0.05);
  EXPECT_NEAR(none.runs, 1.4, 0.05);
  EXPECT_LE(worse.runs, 1.15);
}

}  // namespace
}  // namespace ard
