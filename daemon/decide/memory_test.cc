// The research memory from store rows: which rows count, tries per region,
// outcomes, Δσ read back from the decision, the order of regions and records,
// and the editable files' filter of the proposal's memory.
#include "daemon/decide/memory.h"

#include <gtest/gtest.h>

#include "daemon/decide/keep_rule.h"

namespace ard {
namespace {

std::string hunk_in(const std::string& path, const std::string& function, int line) {
  return "diff --git a/" + path + " b/" + path + "\n--- a/" + path + "\n+++ b/" + path + "\n@@ -" +
         std::to_string(line) + ",2 +" + std::to_string(line) + ",2 @@ " + function + "\n-  a = 1;\n+  a = 2;\n   b();\n";
}

const std::string kStep = "void train_step(Model& m) {";
const std::string kAdam = "void adamw(Params& p) {";

/// A decision line as the keep rule writes it, with σ = 0.0015 against an incumbent at 0.985.
std::string decided(double mean) {
  KeepInput in;
  in.incumbent = {0.984, 0.985, 0.986};
  in.candidate = {mean};
  in.noise = NoiseEstimate{0.0015, 0, true};
  return decide_keep(in, {}).reason;
}

ExperimentRow row(int64_t id, const std::string& state, const std::string& diff, const std::string& decision = "") {
  ExperimentRow r;
  r.id = id;
  r.state = state;
  r.description = "change " + std::to_string(id);
  r.diff = diff;
  r.decision = decision;
  return r;
}

std::vector<ExperimentRow> night() {
  ExperimentRow baseline = row(1, "kept", "");
  baseline.is_baseline = true;
  return {
      baseline,
      row(2, "discarded", hunk_in("trainer/train.cu", kStep, 100), decided(0.9860)),  // Δσ -0.67
      row(3, "kept", hunk_in("trainer/train.cu", kStep, 120), decided(0.9800)),       // Δσ +3.33
      row(4, "crash", hunk_in("trainer/train.cu", kStep, 110)),
      row(5, "discarded", hunk_in("trainer/model/optim.cu", kAdam, 10), decided(0.9840)),  // Δσ +0.67
      row(6, "duplicate", hunk_in("trainer/train.cu", kStep, 100) + hunk_in("trainer/model/optim.cu", kAdam, 12)),
      row(7, "interrupted", hunk_in("trainer/model/optim.cu", kAdam, 10)),  // does not count
      row(8, "running", hunk_in("trainer/model/optim.cu", kAdam, 10)),      // not finished
      row(9, "proposer_error", ""),                                          // no change
      row(10, "build_fail", hunk_in("trainer/model/other.cu", "void f() {", 5)),
  };
}

TEST(TallyRegions, TriesOutcomesAndOrder) {
  const auto regions = tally_regions(night());
  ASSERT_EQ(regions.size(), 3u);
  EXPECT_EQ(regions[0].region, "trainer/train.cu: train_step");
  EXPECT_EQ(regions[0].tries, 4);  // 2, 3, 4, 6
  ASSERT_EQ(regions[0].outcomes.size(), 4u);
  EXPECT_EQ(regions[0].outcomes[0].status, "kept");  // ties of one: kept first
  EXPECT_EQ(kept_count(regions[0]), 1);
  EXPECT_EQ(regions[1].region, "trainer/model/optim.cu: adamw");
  EXPECT_EQ(regions[1].tries, 2);  // 5 and 6; 7 interrupted and 8 running do not count
  EXPECT_EQ(kept_count(regions[1]), 0);
  EXPECT_EQ(regions[2].region, "trainer/model/other.cu: f");
  EXPECT_EQ(regions[2].tries, 1);
}

TEST(TallyRegions, RecordsClosestToAKeepFirstWithTheirDeltaSigmaAndLines) {
  const auto regions = tally_regions(night());
  const auto& recs = regions[0].closest;
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[0].id, 3);
  ASSERT_TRUE(recs[0].delta_sigma);
  EXPECT_NEAR(*recs[0].delta_sigma, 0.005 / 0.0015, 1e-3);
  EXPECT_EQ(recs[0].status, "kept");
  EXPECT_EQ(recs[0].lines, "trainer/train.cu:120-121");
  EXPECT_EQ(recs[1].id, 2);
  EXPECT_NEAR(*recs[1].delta_sigma, -0.001 / 0.0015, 1e-3);
  EXPECT_EQ(recs[2].id, 6);  // without Δσ: the newest first
  EXPECT_FALSE(recs[2].delta_sigma);
  EXPECT_EQ(recs[3].id, 4);
}

/// The same decision under `summary.goal = "max"`: an incumbent at 1.015, the mirror of decided().
std::string decided_max(double mean) {
  KeepInput in;
  in.incumbent = {1.016, 1.015, 1.014};
  in.candidate = {mean};
  in.noise = NoiseEstimate{0.0015, 0, true};
  KeepSettings max;
  max.goal = MetricGoal::kMax;
  return decide_keep(in, max).reason;
}

TEST(TallyRegions, UnderGoalMaxTheHigherMeanIsClosestToAKeep) {
  const auto regions = tally_regions({
      row(2, "discarded", hunk_in("solver.cc", kStep, 100), decided_max(1.0140)),  // Δσ -0.67
      row(3, "kept", hunk_in("solver.cc", kStep, 120), decided_max(1.0200)),       // Δσ +3.33
  });
  ASSERT_EQ(regions.size(), 1u);
  const auto& recs = regions[0].closest;
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].id, 3);
  EXPECT_NEAR(*recs[0].delta_sigma, 0.005 / 0.0015, 1e-3);
  EXPECT_EQ(recs[1].id, 2);
  EXPECT_NEAR(*recs[1].delta_sigma, -0.001 / 0.0015, 1e-3);
}

TEST(TallyRegions, NothingFinishedWithAChangeIsNothing) {
  EXPECT_TRUE(tally_regions({}).empty());
  EXPECT_TRUE(outcome_totals({row(1, "proposer_error", ""), row(2, "running", hunk_in("x.cu", kStep, 1))}).empty());
}

TEST(OutcomeTotals, EveryCountingExperimentOnce) {
  const auto totals = outcome_totals(night());
  // 2 discarded, then kept, crash, build_fail, duplicate at one each (kept first among ties).
  ASSERT_EQ(totals.size(), 5u);
  EXPECT_EQ(totals[0].status, "discarded");
  EXPECT_EQ(totals[0].count, 2);
  EXPECT_EQ(totals[1].status, "kept");
  int sum = 0;
  for (const auto& t : totals) sum += t.count;
  EXPECT_EQ(sum, 6);  // 2, 3, 4, 5, 6, 10: the duplicate that touched two regions counts once
}

TEST(TriedMemory, OnlyTheEditableFilesAndAFewRecordsEach) {
  const std::vector<EditableFile> files = {{"trainer/train.cu", ""}, {"trainer/model/optim.cu", ""}};
  const TriedMemory m = tried_memory(night(), files, 2);
  ASSERT_EQ(m.regions.size(), 2u);  // other.cu is not among the files
  EXPECT_EQ(m.regions[0].closest.size(), 2u);
  EXPECT_EQ(m.regions[0].tries, 4);  // the count stays whole
  EXPECT_EQ(m.regions[1].region, "trainer/model/optim.cu: adamw");
  EXPECT_FALSE(m.totals.empty());
  // A path that only begins like an editable one is not it.
  EXPECT_TRUE(tried_memory(night(), {{"trainer/train.c", ""}}).regions.empty());
}

}  // namespace
}  // namespace ard
