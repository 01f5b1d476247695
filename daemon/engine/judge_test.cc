// Tests of the judge: one case per row of the table at the top of judge.h,
// with the keep settings a user gets (confirmations on, noise rounds on, so σ
// comes from the rounds or the prior), each checking the action, the GPU of a
// confirm, the value recorded and the reason line to the character.
#include "daemon/engine/judge.h"

#include "daemon/store/store.h"

#include <gmock/gmock.h>

#include <functional>

namespace ard {
namespace {

const std::string kParent = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";  // an older best
const std::string kBest = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
constexpr double kSigma = 0.0015;
// σΔ for one candidate run against these three: 0.0015·√(1/3+1/1) = 0.001732,
// so 1.5·σΔ = 0.002598 and 2·σΔ = 0.003464.
const std::vector<double> kIncumbent = {0.9840, 0.9850, 0.9860};  // mean 0.985, n = 3
const std::string kSigmaDelta1 = "σΔ = 0.001500·√(1/3+1/1) = 0.001732 (σ from noise.prior_sigma)";

/// A candidate made against the best of now, measured once on GPU 0 of two,
/// with σ from the prior; each case changes what its row needs.
Evidence current(std::vector<double> runs) {
  Evidence e;
  e.parent = e.best = kBest;
  e.runs = std::move(runs);
  e.parent_runs = e.best_runs = kIncumbent;
  e.noise = NoiseEstimate{kSigma, 0, true};
  e.lines_added = 3;
  e.lines_removed = 1;
  e.gpus = {"0", "1"};
  e.run_gpus = {"0"};
  return e;
}

/// A candidate made against an older best (kParent, runs kIncumbent) while the
/// best of now is better still (kBest, mean 0.9705).
Evidence stale(std::vector<double> runs) {
  Evidence e = current(std::move(runs));
  e.parent = kParent;
  e.best_runs = {0.9700, 0.9710};
  return e;
}

struct Row {
  const char* name;
  std::function<Evidence()> evidence;
  Action action;
  std::optional<double> value;
  std::string reason;
  std::string gpu = "";
};

const Row kRows[] = {
    {"TheBaselineIsKept",
     [] {
       Evidence e;
       e.baseline = true;
       e.value = 0.98;
       e.baseline_pending = true;  // it is the baseline that was pending
       e.round_holds = true;       // the start round's first run
       return e;
     },
     Action::keep, 0.98, "kept: the baseline, val_bpb 0.98"},
    {"BeforeTheBaselineIsMeasuredItWaits",
     [] {
       Evidence e = current({0.9810});
       e.baseline_pending = true;
       return e;
     },
     Action::defer, std::nullopt, "deferred: the baseline is not measured yet"},
    {"ARoundThatHoldsCandidatesMakesItWait",
     [] {
       Evidence e = current({});  // waits even with no run under the calibration the round may change
       e.round_holds = true;
       return e;
     },
     Action::defer, std::nullopt, "deferred: a noise round holds candidates back until it ends"},
    {"TheBestsReRunsOnTheirWayMakeItWait",
     [] {
       Evidence e = current({0.9810});
       e.incumbent_pending = true;
       return e;
     },
     Action::defer, std::nullopt,
     "deferred: the best's re-runs are on their way (its mean rests on 3 runs before anything is measured "
     "against it)"},
    {"AStaleCandidateDoesNotWaitForTheBestsReRuns",
     [] {
       Evidence e = stale({0.9810});
       e.incumbent_pending = true;
       return e;
     },
     Action::reapply, 0.981,
     "re-applied: mean 0.981000 (n=1) on the older best 1111111, whose mean is 0.985000 (n=3): Δ = +0.004000 > 0"},
    {"NoRunUnderTheCurrentCalibrationRunsAgain", [] { return current({}); }, Action::remeasure, std::nullopt,
     "was measured under an older board calibration; it runs again"},
    {"AStaleCandidateWithNoRunUnderTheCurrentCalibrationRunsAgain", [] { return stale({}); }, Action::remeasure,
     std::nullopt, "was measured under an older board calibration; it runs again"},
    {"StaleAndBetterThanItsOlderBestIsReapplied",
     [] {
       Evidence e = stale({0.9810});  // worse than the best of now: the new runs decide that
       e.reapplies_done = kMaxReapplies - 1;
       return e;
     },
     Action::reapply, 0.981,
     "re-applied: mean 0.981000 (n=1) on the older best 1111111, whose mean is 0.985000 (n=3): Δ = +0.004000 > 0"},
    {"StaleAndWorseThanItsOlderBestIsDiscarded", [] { return stale({0.9880}); }, Action::discard, 0.988,
     "discarded: mean 0.988000 (n=1) on the older best 1111111, whose mean is 0.985000 (n=3): Δ = -0.003000 ≤ 0"},
    {"StaleAndEqualToItsOlderBestIsDiscarded",
     [] {
       Evidence e = stale({0.9850});
       e.parent_runs = {0.9850};
       return e;
     },
     Action::discard, 0.985,
     "discarded: mean 0.985000 (n=1) on the older best 1111111, whose mean is 0.985000 (n=1): Δ = +0.000000 ≤ 0"},
    {"StaleWithNoRunOfItsParentIsScreenedAgainstTheBest",
     [] {
       Evidence e = stale({0.9810});
       e.parent_runs.clear();  // the parent ran under an older calibration only
       return e;
     },
     Action::discard, 0.981,
     "discarded: mean 0.981000 (n=1) on the older best 1111111, whose mean is 0.970500 (n=2): Δ = -0.010500 ≤ 0"},
    {"AChangeReappliedTheMostTimesIsGivenUp",
     [] {
       Evidence e = stale({0.9810});
       e.reapplies_done = kMaxReapplies;
       return e;
     },
     Action::discard, 0.981,
     "discarded: mean 0.981000 (n=1) on the older best 1111111, whose mean is 0.985000 (n=3): Δ = +0.004000 > 0, "
     "but its change was re-applied 3 times already (at most 3): given up"},
    {"TheKeepRuleKeeps", [] { return current({0.9810}); }, Action::keep, 0.981,
     "kept: mean 0.981000 (n=1) against the incumbent's 0.985000 (n=3): Δ = +0.004000 ≥ 2.00·σΔ = 0.003464 and ≥ "
     "min_improvement 0.000000; " + kSigmaDelta1},
    {"TheKeepRuleDiscards", [] { return current({0.9880}); }, Action::discard, 0.988,
     "discarded: mean 0.988000 (n=1) against the incumbent's 0.985000 (n=3): Δ = -0.003000 < 1.50·σΔ = 0.002598; " +
         kSigmaDelta1},
    {"TheKeepRuleConfirmsOnTheOtherGpu", [] { return current({0.9820}); }, Action::confirm, 0.982,
     "confirm: mean 0.982000 (n=1) against the incumbent's 0.985000 (n=3): Δ = +0.003000 is between 1.50·σΔ = "
     "0.002598 and the keep margin 0.003464; run 2 of at most 3; " + kSigmaDelta1,
     "1"},
    {"AConfirmGoesToTheGpuUsedLeast",
     [] {
       Evidence e = current({0.9820});
       e.gpus = {"0", "1", "2"};
       e.run_gpus = {"1"};
       return e;
     },
     Action::confirm, 0.982,
     "confirm: mean 0.982000 (n=1) against the incumbent's 0.985000 (n=3): Δ = +0.003000 is between 1.50·σΔ = "
     "0.002598 and the keep margin 0.003464; run 2 of at most 3; " + kSigmaDelta1,
     "0"},
    {"OnOneGpuAConfirmRunsOnTheSameBoard",
     [] {
       Evidence e = current({0.9820});
       e.gpus = {"3"};
       e.run_gpus = {"3"};
       return e;
     },
     Action::confirm, 0.982,
     "confirm: mean 0.982000 (n=1) against the incumbent's 0.985000 (n=3): Δ = +0.003000 is between 1.50·σΔ = "
     "0.002598 and the keep margin 0.003464; run 2 of at most 3; " + kSigmaDelta1,
     "3"},
    {"NotConfirmedAfterTheLastConfirmationIsDiscarded",
     [] {
       Evidence e = current({0.9830, 0.9830, 0.9830});
       e.confirmations_done = 2;
       e.run_gpus = {"0", "1", "0"};
       return e;
     },
     Action::discard, 0.983,
     "discarded (not confirmed after 3 run(s)): mean 0.983000 (n=3) against the incumbent's 0.985000 (n=3): "
     "Δ = +0.002000 < the keep margin 0.002449 (2.00·σΔ = 0.002449, min_improvement 0.000000); "
     "σΔ = 0.001500·√(1/3+1/3) = 0.001225 (σ from noise.prior_sigma)"},
    {"EqualButSimplerIsKept",
     [] {
       Evidence e = current({0.9855});
       e.lines_added = 1;
       e.lines_removed = 5;
       return e;
     },
     Action::keep, 0.9855,
     "kept (equal but simpler): mean 0.985500 (n=1) against the incumbent's 0.985000 (n=3): Δ = -0.000500, "
     "|Δ| ≤ σ = 0.001500, and the diff removes 5 lines, adds 1"},
    {"SigmaUnknownConfirms",
     [] {
       Evidence e = current({0.9820});
       e.noise.reset();
       return e;
     },
     Action::confirm, 0.982,
     "confirm: σ not yet known; mean 0.982000 (n=1) against the incumbent's 0.985000 (n=3): Δ = +0.003000; "
     "run 2 of at most 3",
     "1"},
    {"SigmaUnknownAfterTheConfirmationsStrictlyLowerDecides",
     [] {
       Evidence e = current({0.9820, 0.9830, 0.9840});
       e.noise.reset();
       e.confirmations_done = 2;
       return e;
     },
     Action::keep, 0.983,
     "kept: σ not yet known after 2 confirmation(s), so strictly lower by min_improvement 0.000000 decides; "
     "mean 0.983000 (n=3) against the incumbent's 0.985000 (n=3): Δ = +0.002000"},
};

/// A failing row is named, not dumped as bytes.
void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class JudgeTable : public ::testing::TestWithParam<Row> {};

TEST_P(JudgeTable, RulesAsTheTableSays) {
  const Row& row = GetParam();
  const Ruling r = judge(row.evidence(), KeepSettings{});
  EXPECT_STREQ(to_string(r.action), to_string(row.action));
  EXPECT_EQ(r.reason, row.reason);
  EXPECT_EQ(r.gpu, row.gpu);
  ASSERT_EQ(r.value.has_value(), row.value.has_value());
  if (row.value) EXPECT_NEAR(*r.value, *row.value, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Judge, JudgeTable, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<Row>& info) { return std::string(info.param.name); });

TEST(Judge, TheKeepSettingsReachTheKeepRule) {
  // Without confirmations the in-between candidate of TheKeepRuleConfirmsOnTheOtherGpu is discarded.
  KeepSettings settings;
  settings.max_confirmations = 0;
  const Ruling r = judge(current({0.9820}), settings);
  EXPECT_EQ(r.action, Action::discard);
  EXPECT_THAT(r.reason, ::testing::StartsWith("discarded (not confirmed after 1 run(s)): "));
}

/// Every value of the evidence mirrored around 1, so a lower-is-better case
/// becomes its higher-is-better twin.
Evidence mirrored(Evidence e) {
  for (auto* runs : {&e.runs, &e.parent_runs, &e.best_runs})
    for (double& v : *runs) v = 2 - v;
  e.value = 2 - e.value;
  return e;
}

TEST(Judge, UnderGoalMaxEveryRowRulesAsItsMirroredTwin) {
  KeepSettings max;
  max.goal = MetricGoal::kMax;
  for (const Row& row : kRows) {
    const Ruling low = judge(row.evidence(), KeepSettings{});
    const Ruling high = judge(mirrored(row.evidence()), max);
    EXPECT_STREQ(to_string(high.action), to_string(low.action)) << row.name;
    EXPECT_EQ(high.gpu, low.gpu) << row.name;
  }
}

TEST(Judge, UnderGoalMaxAStaleScreenPassesAHigherMean) {
  KeepSettings max;
  max.goal = MetricGoal::kMax;
  const Ruling r = judge(mirrored(stale({0.9810})), max);
  EXPECT_EQ(r.action, Action::reapply);
  EXPECT_EQ(r.reason,
            "re-applied: mean 1.019000 (n=1) on the older best 1111111, whose mean is 1.015000 (n=3): Δ = +0.004000 > 0");
  EXPECT_EQ(judge(mirrored(stale({0.9880})), max).action, Action::discard);
}

TEST(Judge, ItsBaselineLineNamesTheMetric) {
  Evidence e;
  e.baseline = true;
  e.metric = "val_loss";
  e.value = 2.5;
  EXPECT_EQ(judge(e, {}).reason, "kept: the baseline, val_loss 2.5");
}

// The store's part of the evidence: each commit's finished runs under the
// current calibration only, the candidate's GPUs, and its diff's lines.
TEST(RecordedEvidence, TheRunsOfTheThreeCommitsUnderTheCalibrationAndTheDiffsLines) {
  auto trial = [](const std::string& commit, const std::string& gpu, double v, int64_t calibration,
                  const std::string& status) {
    TrialRow t;
    t.commit = commit;
    t.gpu = gpu;
    t.val_bpb = v;
    t.calibration = calibration;
    t.status = status;
    return t;
  };
  const std::vector<TrialRow> trials = {
      trial("cand", "0", 0.95, 2, "ok"),    trial("cand", "1", 0.96, 2, "ok"), trial("cand", "1", 0.5, 1, "ok"),
      trial("cand", "0", 0.1, 2, "crash"),  trial("parent", "0", 0.99, 2, "ok"), trial("best", "1", 0.97, 2, "ok")};
  const Evidence e = recorded_evidence(trials, 2, "cand", "parent", "best", "--- a/x\n+++ b/x\n-a\n+b\n+c\n");
  EXPECT_EQ(e.runs, (std::vector<double>{0.95, 0.96}));
  EXPECT_EQ(e.run_gpus, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(e.parent_runs, std::vector<double>{0.99});
  EXPECT_EQ(e.best_runs, std::vector<double>{0.97});
  EXPECT_EQ(e.parent, "parent");
  EXPECT_EQ(e.best, "best");
  EXPECT_EQ(e.lines_added, 2);
  EXPECT_EQ(e.lines_removed, 1);
}

}  // namespace
}  // namespace ard
