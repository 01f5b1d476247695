// Tests of the evidence a decision rests on: runs by commit and calibration,
// σ from the unselected repeats only, diff line counts, GPU time by purpose.
#include "daemon/decide/run_evidence.h"

#include <gmock/gmock.h>

#include <cmath>

namespace ard {
namespace {

TrialRow run(const std::string& commit, double v, const std::string& purpose, int64_t calibration = 1,
             const std::string& status = "ok", const std::string& gpu = "0") {
  TrialRow t;
  t.commit = commit;
  t.val_bpb = v;
  t.purpose = purpose;
  t.calibration = calibration;
  t.status = status;
  t.gpu = gpu;
  t.started_at = 100;
  t.ended_at = 130;
  t.training_seconds = 10;
  return t;
}

TEST(RunEvidence, RunsOfACommitUnderOneCalibrationOnlyFinishedOnes) {
  std::vector<TrialRow> t = {run("a", 1.0, "noise", 1, "ok", "0"), run("a", 1.1, "noise", 0),
                             run("a", 1.2, "noise", 1, "crash"), run("b", 0.9, "candidate"),
                             run("a", 1.3, "incumbent", 1, "ok", "2")};
  EXPECT_EQ(runs_of(t, "a", 1), (std::vector<double>{1.0, 1.3}));
  EXPECT_EQ(gpus_of(t, "a", 1), (std::vector<std::string>{"0", "2"}));
  EXPECT_EQ(runs_of(t, "a", 0), (std::vector<double>{1.1}));
  EXPECT_TRUE(runs_of(t, "c", 1).empty());
}

TEST(RunEvidence, SigmaPoolsOnlyRunsNoDecisionSelected) {
  // The kept candidate's own run (0.5) is far off: it must not pass for noise.
  std::vector<TrialRow> t = {run("a", 1.00, "baseline"), run("a", 1.02, "noise"), run("b", 0.5, "candidate"),
                             run("b", 0.90, "incumbent"), run("b", 0.94, "incumbent"), run("c", 0.7, "confirm"),
                             run("c", 0.8, "confirm")};
  auto n = measured_noise(t, 1);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->df, 2);
  // Σ squares: 2·0.01² + 2·0.02² = 0.001; σ = √(0.001/2).
  EXPECT_NEAR(n->sigma, std::sqrt(0.001 / 2), 1e-12);
  // Runs under calibration 0 are left out once the boards are calibrated.
  EXPECT_FALSE(measured_noise({run("a", 1.0, "noise", 0), run("a", 1.1, "noise", 0)}, 1));
  EXPECT_TRUE(measured_noise({run("a", 1.0, "noise", 0), run("a", 1.1, "noise", 0)}, 0));
}

TEST(RunEvidence, RunsAtALargerRungAreAnotherModelsAndCountForNeitherRunsNorSigma) {
  TrialRow larger = run("a", 0.80, "noise", 1, "ok", "1");
  larger.rung = 1;
  TrialRow larger_too = run("a", 0.95, "noise", 1, "ok", "1");
  larger_too.rung = 1;
  std::vector<TrialRow> t = {run("a", 1.00, "baseline"), run("a", 1.02, "noise"), larger, larger_too};
  EXPECT_EQ(runs_of(t, "a", 1), (std::vector<double>{1.00, 1.02}));
  EXPECT_EQ(gpus_of(t, "a", 1), (std::vector<std::string>{"0", "0"}));
  auto n = measured_noise(t, 1);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->df, 1);
  EXPECT_NEAR(n->sigma, std::sqrt(0.02 * 0.02 / 2), 1e-12);
}

TEST(RunEvidence, DecisionRuleNamesTheStrictRuleInTheGoalsWords) {
  EXPECT_EQ(decision_rule("kept: σ not yet known after 2 confirmation(s), so strictly lower by min_improvement 0 decides"),
            "strictly lower");
  EXPECT_EQ(decision_rule("kept: σ not yet known after 2 confirmation(s), so strictly higher by min_improvement 0 decides"),
            "strictly higher");
  EXPECT_EQ(decision_rule("confirm: σ not yet known; mean 1 (n=1)"), "σ unknown");
}

TEST(RunEvidence, DiffLinesLeaveTheHeadersOut) {
  const std::string diff =
      "diff --git a/t.cu b/t.cu\n--- a/t.cu\n+++ b/t.cu\n@@ -1,3 +1,2 @@\n-one\n-two\n+three\n same\n";
  DiffLines d = count_diff_lines(diff);
  EXPECT_EQ(d.added, 1);
  EXPECT_EQ(d.removed, 2);
}

TEST(RunEvidence, RunTimeSplitsRepeatsFromTheRest) {
  std::vector<TrialRow> t = {run("a", 1, "baseline"), run("b", 1, "candidate"), run("b", 1, "confirm"),
                             run("a", 1, "noise"), run("a", 1, "incumbent")};
  t.push_back(run("c", 1, "reapplied"));
  t.back().training_seconds.reset();  // falls back to its wall time, 30 s
  TrialRow open = run("d", 1, "candidate");
  open.ended_at.reset();  // still running: not counted
  t.push_back(open);
  RunTime r = run_time(t);
  EXPECT_DOUBLE_EQ(r.total_s, 80);
  EXPECT_DOUBLE_EQ(r.repeat_s, 30);
  EXPECT_DOUBLE_EQ(r.by_purpose["reapplied"], 30);
  EXPECT_DOUBLE_EQ(r.repeat_share(), 30.0 / 80);
  EXPECT_DOUBLE_EQ(r.promotion_share(), 0);
}

TEST(RunEvidence, RunTimeCountsTheRungsAboveZeroApart) {
  std::vector<TrialRow> t = {run("a", 1, "baseline"), run("b", 1, "candidate"), run("a", 1, "promote"),
                             run("b", 1, "promote")};
  t[2].rung = t[3].rung = 1;
  t[3].training_seconds = 30;
  RunTime r = run_time(t);
  EXPECT_DOUBLE_EQ(r.total_s, 60);
  EXPECT_DOUBLE_EQ(r.rung_s, 40);
  EXPECT_DOUBLE_EQ(r.promotion_share(), 40.0 / 60);
  EXPECT_DOUBLE_EQ(r.repeat_share(), 0);
}

TEST(RunEvidence, SpreadAndScalesRoundTrip) {
  Spread s = spread_of({1.0, 1.2, NAN});
  EXPECT_EQ(s.n, 2);
  EXPECT_DOUBLE_EQ(s.mean, 1.1);
  EXPECT_NEAR(s.spread, std::sqrt(0.02), 1e-12);
  EXPECT_EQ(spread_of({0.5}).spread, 0);
  EXPECT_EQ(format_scales({{"0", 1.0}, {"1", 0.96938}}), "0=1.0000,1=0.9694");
  auto back = parse_scales("0=1.0000,1=0.9694,bad,2=x,3=-1");
  EXPECT_EQ(back.size(), 2u);
  EXPECT_DOUBLE_EQ(back["1"], 0.9694);
}

}  // namespace
}  // namespace ard
