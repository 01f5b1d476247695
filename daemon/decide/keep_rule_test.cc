// Tests of the keep rule: its edges (equal, just below the margin, a failed
// confirmation, σ not yet known, one GPU, the min_improvement floor, equal but
// simpler), the t multiplier against a numeric integral, and the error rates
// of the rule by Monte-Carlo in the idealized setting the margins are set for.
#include "daemon/decide/keep_rule.h"

#include <gmock/gmock.h>

#include <cmath>
#include <random>

namespace ard {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr double kSigma = 0.0015;
const std::vector<double> kIncumbent = {0.9840, 0.9850, 0.9860};  // mean 0.985, n = 3

NoiseEstimate prior() { return {kSigma, 0, true}; }
NoiseEstimate measured(int df) { return {kSigma, df, false}; }

KeepInput input(std::vector<double> candidate, std::optional<NoiseEstimate> noise = prior(), int confirmations = 0) {
  KeepInput in;
  in.incumbent = kIncumbent;
  in.candidate = std::move(candidate);
  in.noise = noise;
  in.lines_added = 3;
  in.lines_removed = 1;
  in.confirmations_done = confirmations;
  return in;
}

TEST(KeepRule, NothingToBeatIsKept) {
  KeepInput in = input({0.99});
  in.incumbent.clear();
  KeepDecision d = decide_keep(in, {});
  EXPECT_EQ(d.verdict, Verdict::keep);
  EXPECT_EQ(d.reason, "kept: mean 0.990000 (n=1), nothing to beat yet");
}

TEST(KeepRule, NoFiniteCandidateRunIsDiscarded) {
  EXPECT_EQ(decide_keep(input({}), {}).verdict, Verdict::discard);
  EXPECT_EQ(decide_keep(input({NAN, INFINITY}), {}).verdict, Verdict::discard);
}

TEST(KeepRule, NonFiniteRunsAreIgnored) {
  KeepDecision d = decide_keep(input({0.9800, NAN}), {});
  EXPECT_EQ(d.verdict, Verdict::keep);
  EXPECT_THAT(d.reason, HasSubstr("mean 0.980000 (n=1)"));
}

TEST(KeepRule, EqualIsDiscardedAtOnce) {
  KeepDecision d = decide_keep(input({0.9850}), {});
  EXPECT_EQ(d.verdict, Verdict::discard);
  EXPECT_THAT(d.reason, StartsWith("discarded: mean 0.985000 (n=1) against the incumbent's 0.985000 (n=3): "
                                   "Δ = +0.000000 < 1.50·σΔ = 0.002598"));
}

TEST(KeepRule, ReasonCarriesEveryNumberOfTheCheck) {
  // σΔ = 0.0015·√(1/3 + 1/1) = 0.0017320; 2σΔ = 0.0034641; Δ = 0.0040.
  KeepDecision d = decide_keep(input({0.9810}), {});
  EXPECT_EQ(d.verdict, Verdict::keep);
  EXPECT_EQ(d.reason,
            "kept: mean 0.981000 (n=1) against the incumbent's 0.985000 (n=3): Δ = +0.004000 ≥ 2.00·σΔ = 0.003464 "
            "and ≥ min_improvement 0.000000; σΔ = 0.001500·√(1/3+1/1) = 0.001732 (σ from noise.prior_sigma)");
}

/// The same table under `summary.goal = "max"`: the runs mirrored around 1, so
/// every Δ is the one of the lower-is-better case and so is every verdict.
std::vector<double> mirrored(std::vector<double> values) {
  for (double& v : values) v = 2 - v;
  return values;
}

KeepSettings goal_max() {
  KeepSettings s;
  s.goal = MetricGoal::kMax;
  return s;
}

TEST(KeepRuleGoalMax, AHigherMeanBeyondTheMarginIsKept) {
  KeepInput in = input(mirrored({0.9810}));
  in.incumbent = mirrored(kIncumbent);  // mean 1.015
  KeepDecision d = decide_keep(in, goal_max());
  EXPECT_EQ(d.verdict, Verdict::keep);
  EXPECT_EQ(d.reason,
            "kept: mean 1.019000 (n=1) against the incumbent's 1.015000 (n=3): Δ = +0.004000 ≥ 2.00·σΔ = 0.003464 "
            "and ≥ min_improvement 0.000000; σΔ = 0.001500·√(1/3+1/1) = 0.001732 (σ from noise.prior_sigma)");
  EXPECT_NEAR(*delta_sigma(d.reason), 0.004 / kSigma, 1e-3);
}

TEST(KeepRuleGoalMax, ALowerMeanIsDiscardedWithANegativeDelta) {
  KeepInput in = input(mirrored({0.9880}));
  in.incumbent = mirrored(kIncumbent);
  KeepDecision d = decide_keep(in, goal_max());
  EXPECT_EQ(d.verdict, Verdict::discard);
  EXPECT_THAT(d.reason, HasSubstr("Δ = -0.003000 < 1.50·σΔ"));
  EXPECT_NEAR(*delta_sigma(d.reason), -0.003 / kSigma, 1e-3);
  // The same runs under the default goal: the lower mean is the better one, by 1.73·σΔ: confirmed.
  EXPECT_EQ(decide_keep(in, {}).verdict, Verdict::confirm);
}

TEST(KeepRuleGoalMax, EveryVerdictMirrorsTheLowerIsBetterOne) {
  KeepSettings one = goal_max();
  one.max_confirmations = 1;
  KeepSettings one_min;
  one_min.max_confirmations = 1;
  for (const auto& runs : std::vector<std::vector<double>>{
           {0.9810}, {0.9830}, {0.9850}, {0.9880}, {0.9830, 0.9825}, {0.9860}, {0.9700, 0.9710}}) {
    for (const auto& noise : std::vector<std::optional<NoiseEstimate>>{prior(), measured(12), std::nullopt}) {
      KeepInput low = input(runs, noise, static_cast<int>(runs.size()) - 1);
      KeepInput high = low;
      high.candidate = mirrored(low.candidate);
      high.incumbent = mirrored(low.incumbent);
      EXPECT_EQ(decide_keep(high, one).verdict, decide_keep(low, one_min).verdict) << runs[0];
    }
  }
}

TEST(KeepRuleGoalMax, SigmaNotYetKnownSaysStrictlyHigher) {
  KeepSettings one = goal_max();
  one.max_confirmations = 1;
  KeepInput in = input(mirrored({0.9700, 0.9710}), std::nullopt, 1);
  in.incumbent = mirrored(kIncumbent);
  KeepDecision d = decide_keep(in, one);
  EXPECT_EQ(d.verdict, Verdict::keep);
  EXPECT_THAT(d.reason, StartsWith("kept: σ not yet known after 1 confirmation(s), so strictly higher"));
}

TEST(DeltaSigma, ReadBackFromEveryKindOfReasonWithSigma) {
  // kept: Δ = 0.004 over σ = 0.0015 (not over σΔ, nor the margin's 2.00·σΔ).
  EXPECT_NEAR(*delta_sigma(decide_keep(input({0.9810}), {}).reason), 0.004 / kSigma, 1e-3);
  // discarded at once, worse: Δ = -0.003.
  EXPECT_NEAR(*delta_sigma(decide_keep(input({0.9880}), {}).reason), -0.003 / kSigma, 1e-3);
  // confirm with σ measured (its df in the line too): Δ = 0.0030.
  EXPECT_NEAR(*delta_sigma(decide_keep(input({0.9820}, measured(12)), {}).reason), 0.003 / kSigma, 1e-3);
  // equal but simpler: "|Δ| ≤ σ = ...".
  KeepInput simpler = input({0.9860});
  simpler.lines_added = 2;
  simpler.lines_removed = 10;
  EXPECT_NEAR(*delta_sigma(decide_keep(simpler, {}).reason), -0.001 / kSigma, 1e-3);
  // a line stored at restart carries a suffix; still read.
  EXPECT_NEAR(*delta_sigma(decide_keep(input({0.9810}), {}).reason + " (decided at restart)"), 0.004 / kSigma, 1e-3);
}

TEST(DeltaSigma, NoneWithoutSigmaOrAComparison) {
  EXPECT_FALSE(delta_sigma(""));
  EXPECT_FALSE(delta_sigma(decide_keep(input({0.9810}, std::nullopt), {}).reason));  // σ not yet known
  KeepInput first = input({0.99});
  first.incumbent.clear();
  EXPECT_FALSE(delta_sigma(decide_keep(first, {}).reason));  // nothing to beat
  EXPECT_FALSE(delta_sigma(decide_keep(input({NAN}), {}).reason));
  EXPECT_FALSE(delta_sigma("re-applied onto the best: measured again"));
}

TEST(KeepRule, JustBelowTheMarginIsConfirmedJustAboveIsKept) {
  const double sigma_delta = kSigma * std::sqrt(1.0 / 3 + 1.0);
  KeepDecision below = decide_keep(input({0.985 - 2 * sigma_delta + 2e-6}), {});
  EXPECT_EQ(below.verdict, Verdict::confirm);
  EXPECT_THAT(below.reason, HasSubstr("run 2 of at most 3"));
  EXPECT_EQ(decide_keep(input({0.985 - 2 * sigma_delta - 2e-6}), {}).verdict, Verdict::keep);
  // Below the discard margin (1.5σΔ): discarded without a second run.
  EXPECT_EQ(decide_keep(input({0.985 - 1.5 * sigma_delta + 2e-6}), {}).verdict, Verdict::discard);
  EXPECT_EQ(decide_keep(input({0.985 - 1.5 * sigma_delta - 2e-6}), {}).verdict, Verdict::confirm);
}

TEST(KeepRule, ConfirmationDecidesOnTheMeanOfTheRuns) {
  // Two runs: σΔ = 0.0015·√(1/3 + 1/2) = 0.0013693, 2σΔ = 0.0027386.
  KeepDecision kept = decide_keep(input({0.9820, 0.9815}, prior(), 1), {});
  EXPECT_EQ(kept.verdict, Verdict::keep);
  EXPECT_THAT(kept.reason, HasSubstr("mean 0.981750 (n=2)"));
  EXPECT_THAT(kept.reason, HasSubstr("≥ 2.00·σΔ = 0.002739"));
}

TEST(KeepRule, ConfirmationThatFails) {
  // Two runs: Δ = 0.00225 is between 1.5σΔ = 0.00205 and 2σΔ = 0.00274: a third run.
  KeepDecision again = decide_keep(input({0.9820, 0.9835}, prior(), 1), {});
  EXPECT_EQ(again.verdict, Verdict::confirm);
  EXPECT_THAT(again.reason, HasSubstr("run 3 of at most 3"));
  // The third run leaves Δ = 0.002167 between 1.5σΔ = 0.001837 and 2σΔ = 0.002449, with no confirmation left.
  KeepDecision d = decide_keep(input({0.9820, 0.9835, 0.9830}, prior(), 2), {});
  EXPECT_EQ(d.verdict, Verdict::discard);
  EXPECT_THAT(d.reason, StartsWith("discarded (not confirmed after 3 run(s)): mean 0.982833 (n=3)"));
  EXPECT_THAT(d.reason, HasSubstr("< the keep margin 0.002449"));
  // A second run that falls back to the incumbent: discarded under the discard margin at once.
  EXPECT_EQ(decide_keep(input({0.9820, 0.9870}, prior(), 1), {}).verdict, Verdict::discard);
}

TEST(KeepRule, NoConfirmationsMeansDecideOnTheFirstRun) {
  KeepSettings none;
  none.max_confirmations = 0;
  const double margin = 2 * kSigma * std::sqrt(1.0 / 3 + 1.0);
  KeepDecision d = decide_keep(input({0.985 - margin * 0.85}), none);
  EXPECT_EQ(d.verdict, Verdict::discard);
  EXPECT_THAT(d.reason, HasSubstr("not confirmed after 1 run(s)"));
}

TEST(KeepRule, SigmaNotYetKnownConfirmsThenFallsBackToStrictlyLower) {
  KeepSettings one;
  one.max_confirmations = 1;
  KeepDecision first = decide_keep(input({0.9700}, std::nullopt), one);
  EXPECT_EQ(first.verdict, Verdict::confirm);
  EXPECT_THAT(first.reason, StartsWith("confirm: σ not yet known; mean 0.970000 (n=1)"));

  KeepDecision lower = decide_keep(input({0.9700, 0.9710}, std::nullopt, 1), one);
  EXPECT_EQ(lower.verdict, Verdict::keep);
  EXPECT_THAT(lower.reason, StartsWith("kept: σ not yet known after 1 confirmation(s), so strictly lower"));

  EXPECT_EQ(decide_keep(input({0.9850, 0.9850}, std::nullopt, 1), one).verdict, Verdict::discard);
  KeepSettings floor = one;
  floor.min_improvement = 0.002;
  EXPECT_EQ(decide_keep(input({0.9840, 0.9835}, std::nullopt, 1), floor).verdict, Verdict::discard);
  EXPECT_EQ(decide_keep(input({0.9830, 0.9825}, std::nullopt, 1), floor).verdict, Verdict::keep);
}

TEST(KeepRule, MeasuredSigmaSaysItsDegreesOfFreedom) {
  KeepDecision d = decide_keep(input({0.9810}, measured(12)), {});
  EXPECT_EQ(d.verdict, Verdict::keep);
  EXPECT_THAT(d.reason, HasSubstr("(σ measured, df 12; keep margin t(df 12) = 2.23 for z = 2.00)"));
}

TEST(KeepRule, MinImprovementIsAFloor) {
  KeepSettings floor;
  floor.min_improvement = 0.005;
  // Δ = 0.004 beats 2σΔ but not the floor: confirmed, then discarded.
  KeepDecision d = decide_keep(input({0.9810}), floor);
  EXPECT_EQ(d.verdict, Verdict::confirm);
  EXPECT_THAT(d.reason, HasSubstr("the keep margin 0.005000"));
  EXPECT_EQ(decide_keep(input({0.9810, 0.9810, 0.9810}, prior(), 2), floor).verdict, Verdict::discard);
  EXPECT_EQ(decide_keep(input({0.9795}), floor).verdict, Verdict::keep);
}

TEST(KeepRule, EqualButSimpler) {
  KeepInput in = input({0.9860});  // Δ = -0.001: within ±σ, slightly worse
  in.lines_added = 2;
  in.lines_removed = 10;
  KeepDecision d = decide_keep(in, {});
  EXPECT_EQ(d.verdict, Verdict::keep);
  EXPECT_EQ(d.reason,
            "kept (equal but simpler): mean 0.986000 (n=1) against the incumbent's 0.985000 (n=3): Δ = -0.001000, "
            "|Δ| ≤ σ = 0.001500, and the diff removes 10 lines, adds 2");

  KeepSettings off;
  off.equal_but_simpler = false;
  EXPECT_EQ(decide_keep(in, off).verdict, Verdict::discard);

  in.lines_added = 10;  // as many lines added as removed: not simpler
  EXPECT_EQ(decide_keep(in, {}).verdict, Verdict::discard);

  in.lines_added = 2;
  in.candidate = {0.9870};  // Δ = -0.002: worse by more than σ
  EXPECT_EQ(decide_keep(in, {}).verdict, Verdict::discard);

  in.candidate = {0.9850};
  in.noise = std::nullopt;  // no σ: nothing is "within σ" yet
  EXPECT_EQ(decide_keep(in, {}).verdict, Verdict::confirm);
}

TEST(KeepRule, OneGpuConfirmsOnTheSameBoard) {
  EXPECT_EQ(confirmation_gpu({"0"}, {"0"}), "0");
  EXPECT_EQ(confirmation_gpu({"0"}, {"0", "0"}), "0");
  EXPECT_EQ(confirmation_gpu({"0", "1", "2", "3"}, {"0"}), "1");
  EXPECT_EQ(confirmation_gpu({"0", "1", "2", "3"}, {"2", "0", "1"}), "3");
  EXPECT_EQ(confirmation_gpu({"0", "1"}, {"0", "1", "0"}), "1");
  EXPECT_EQ(confirmation_gpu({}, {"0"}), "");
}

TEST(KeepRule, ANewIncumbentIsReRunUntilItHasEnoughRuns) {
  EXPECT_EQ(incumbent_reruns_wanted(1), kMinIncumbentRuns - 1);
  EXPECT_EQ(incumbent_reruns_wanted(2), kMinIncumbentRuns - 2);
  EXPECT_EQ(incumbent_reruns_wanted(kMinIncumbentRuns), 0);
  EXPECT_EQ(incumbent_reruns_wanted(10), 0);
}

struct Rates {
  double keep = 0, runs = 0;
};

/// The rule's keep rate and runs per candidate when the incumbent's mean is
/// known from 4 runs and σ is exact, for a candidate whose true Δ is effect.
Rates simulate(double effect, int trials) {
  std::mt19937_64 rng(1234);
  std::normal_distribution<double> noise(0, kSigma);
  KeepSettings settings;
  Rates r;
  for (int t = 0; t < trials; ++t) {
    KeepInput in;
    for (int i = 0; i < 4; ++i) in.incumbent.push_back(1.0 + noise(rng));
    in.noise = prior();
    for (;;) {
      in.candidate.push_back(1.0 - effect + noise(rng));
      KeepDecision d = decide_keep(in, settings);
      if (d.verdict == Verdict::confirm) {
        ++in.confirmations_done;
        continue;
      }
      r.keep += d.verdict == Verdict::keep;
      r.runs += in.candidate.size();
      break;
    }
  }
  r.keep /= trials;
  r.runs /= trials;
  return r;
}

TEST(KeepRule, ErrorRatesMeetTheTargets) {
  const Rates null = simulate(0, 40000);
  const Rates gain = simulate(3 * kSigma, 40000);
  const Rates worse = simulate(-3 * kSigma, 40000);
  std::printf("null keep %.4f runs %.3f; 3σ gain keep %.4f runs %.3f; 3σ worse keep %.4f runs %.3f\n", null.keep,
              null.runs, gain.keep, gain.runs, worse.keep, worse.runs);
  // The first look alone keeps Φ̄(2) = 2.28 % of the no-effect candidates; the confirmations add under 1 %.
  EXPECT_GE(null.keep, 0.0228 - 0.002);
  EXPECT_LE(null.keep, 0.0228 + 0.01);
  EXPECT_GE(gain.keep, 0.85);
  EXPECT_LE(worse.keep, 0.001);
  // The night's mix (50 % worse, 35 % null, 15 % gain): confirmations under a quarter of the runs.
  const double runs = 0.5 * worse.runs + 0.35 * null.runs + 0.15 * gain.runs;
  EXPECT_LE((runs - 1) / runs, 0.25);
}

}  // namespace
}  // namespace ard
