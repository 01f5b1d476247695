// Tests of promotion's pure core: when a round is due, the size check of a run
// at a rung, labels and their evidence as text, a commit's runs and σ at a rung.
#include "daemon/decide/promotion.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include <gmock/gmock.h>

namespace ard {
namespace {

using ::testing::HasSubstr;

TEST(Promotion, DueAfterEveryKeptChangesWhileUnderTheShare) {
  EXPECT_EQ(promotion_due(4, 5, 0, 1000, 0.25), "");
  EXPECT_EQ(promotion_due(5, 5, 100, 1000, 0.25),
            "5 kept change(s) since the last round (promote.every 5); rungs above 0 have used 10% of the GPU time "
            "(promote.max_share 25%)");
  EXPECT_EQ(promotion_due(7, 5, 0, 0, 0.25).empty(), false);  // no GPU time yet: share 0
  EXPECT_EQ(promotion_due(5, 5, 250, 1000, 0.25), "");         // the share is used up
  EXPECT_EQ(promotion_due(5, 5, 300, 1000, 0.25), "");
  EXPECT_EQ(promotion_due(1, 0, 0, 10, 0.25).empty(), false);  // every < 1 is 1
}

TEST(Promotion, ARoundWaitsUntilItsOwnRunsFitTheShare) {
  // 6 runs of 600 s: the night must have 3 × 3600 s more at rung 0 than at the rungs.
  EXPECT_EQ(promotion_due(5, 5, 0, 10000, 0.25, false, 3600), "");
  EXPECT_FALSE(promotion_due(5, 5, 0, 10800, 0.25, false, 3600).empty());
  EXPECT_EQ(promotion_due(5, 5, 3600, 24000, 0.25, false, 3600), "");  // (3600 + 3600) / 27600 > 0.25
  EXPECT_FALSE(promotion_due(5, 5, 3600, 25200, 0.25, false, 3600).empty());
}

TEST(Promotion, ARequestedRoundNeedsOneKeptChangeAndTheShare) {
  EXPECT_THAT(promotion_due(2, 5, 0, 1000, 0.25, true), HasSubstr("a round was requested with 2 kept change(s)"));
  EXPECT_EQ(promotion_due(0, 5, 0, 1000, 0.25, true), "");
  EXPECT_EQ(promotion_due(2, 5, 500, 1000, 0.25, true), "");
}

TEST(Promotion, RungSizeMustBeTheScaledDepthWithMoreParameters) {
  const ModelSize base{8, 50};
  EXPECT_EQ(rung_size_check(base, {16, 95}, 2), "");
  EXPECT_EQ(rung_size_check(base, {8, 95}, 2), "depth 8 where the rung asks 8 x 2 = 16");
  EXPECT_EQ(rung_size_check(base, {16, 50}, 2), "num_params_M 50 did not grow from 50 at rung 0");
  EXPECT_EQ(rung_size_check(base, {8, 50}, 1), "");
  EXPECT_EQ(rung_size_check(base, {8, 40}, 1), "num_params_M 40 shrank from 50 at rung 0");
  // 8 x 1.5625 = 12.5: either whole number next to it.
  EXPECT_EQ(rung_size_check(base, {12, 70}, 1.5625), "");
  EXPECT_EQ(rung_size_check(base, {13, 70}, 1.5625), "");
  EXPECT_THAT(rung_size_check(base, {14, 70}, 1.5625), HasSubstr("depth 14 where the rung asks"));
  EXPECT_EQ(rung_size_check(base, {std::nullopt, 95}, 2), "the run at the rung reported no valid depth");
  EXPECT_EQ(rung_size_check(base, {16, std::nullopt}, 2), "the run at the rung reported no valid num_params_M");
  EXPECT_EQ(rung_size_check(base, {16, NAN}, 2), "the run at the rung reported no valid num_params_M");
  EXPECT_EQ(rung_size_check({std::nullopt, 50}, {16, 95}, 2), "the rung-0 run reported no valid depth");
}

TEST(Promotion, LabelKindsReadBackAndNothingElseDoes) {
  for (LabelKind kind : {LabelKind::kTransfers, LabelKind::kScaleBound, LabelKind::kUntested})
    EXPECT_EQ(parse_label_kind(to_string(kind)), kind);
  EXPECT_STREQ(to_string(LabelKind::kScaleBound), "scale_bound");
  EXPECT_EQ(parse_label_kind("Transfers"), std::nullopt);
  EXPECT_EQ(parse_label_kind(""), std::nullopt);
}

TEST(Promotion, EvidenceReadsBackFromItsJson) {
  const RungEvidence e{0.981, 0.975, 3, 4, 0.002, 0.006, {11, 12, 15}};
  EXPECT_EQ(parse_evidence_json(evidence_json(e)), e);
  EXPECT_EQ(evidence_json(e).find("lambda"), std::string::npos);  // a label from before the transfer rule
  RungEvidence rule = e;
  rule.gain_at_rung0 = 0.005;
  rule.lambda = 1.75;
  EXPECT_EQ(parse_evidence_json(evidence_json(rule)), rule);
  EXPECT_THROW(parse_evidence_json(R"({"best_mean":1,"candidate_mean":1,"best_n":1,"candidate_n":1,"sigma":1,)"
                                   R"("delta":0,"trials":[],"lambda":"high"})"),
               std::invalid_argument);
  EXPECT_EQ(evidence_json(std::nullopt), "{}");
  EXPECT_EQ(parse_evidence_json("{}"), std::nullopt);
  EXPECT_EQ(parse_evidence_json(""), std::nullopt);
  EXPECT_THROW(parse_evidence_json("[1]"), std::invalid_argument);
  EXPECT_THROW(parse_evidence_json("{"), std::invalid_argument);
  try {
    parse_evidence_json(R"({"best_mean":1,"candidate_mean":1,"best_n":1.5})");
    ADD_FAILURE() << "a fractional run count was read";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "label evidence: best_n: expected an integer");
  }
}

// change_labels.label's CHECK in results.db.schema names exactly the kinds' words.
TEST(Promotion, TheSchemaAllowsExactlyTheLabelWords) {
  std::ifstream in(std::string(ARD_SOURCE_DIR) + "/results.db.schema");
  ASSERT_TRUE(in) << "results.db.schema not found";
  std::stringstream text;
  text << in.rdbuf();
  std::smatch m;
  const std::string schema = text.str();
  ASSERT_TRUE(std::regex_search(schema, m, std::regex(R"(label\s+TEXT NOT NULL CHECK \(label IN \(([^)]*)\)\))")));
  const std::string list = m[1];
  std::vector<std::string> listed;
  const std::regex word("'([a-z_]+)'");
  for (std::sregex_iterator it(list.begin(), list.end(), word), end; it != end; ++it) listed.push_back((*it)[1]);
  EXPECT_EQ(listed, (std::vector<std::string>{to_string(LabelKind::kTransfers), to_string(LabelKind::kScaleBound),
                                              to_string(LabelKind::kUntested)}));
}

}  // namespace
}  // namespace ard

namespace ard {
namespace {

TrialRow rung_run(int64_t id, const std::string& commit, int rung, std::optional<double> v, const std::string& status = "ok",
                  int64_t calibration = 0) {
  TrialRow t;
  t.id = id;
  t.commit = commit;
  t.rung = rung;
  t.val_bpb = v;
  t.status = status;
  t.calibration = calibration;
  t.purpose = rung ? "promote" : "noise";
  t.started_at = 1;
  t.ended_at = 2;
  return t;
}

TEST(RungRuns, ModelSizeFromASummaryOrItsJson) {
  Summary summary;
  summary.values = {{"val_bpb", 1.0}, {"depth", 16}, {"num_params_M", 52.5}};
  ModelSize a = model_size(summary);
  ModelSize b = model_size(summary.to_json());
  EXPECT_EQ(a.depth, 16);
  EXPECT_EQ(b.depth, 16);
  EXPECT_EQ(b.num_params_m, 52.5);
  EXPECT_FALSE(model_size(std::string("not json")).depth);
  EXPECT_FALSE(model_size(std::string(R"({"val_bpb": 1})")).num_params_m);
}

TEST(RungRuns, OneCommitAtOneRungUnderOneCalibration) {
  std::vector<TrialRow> t = {rung_run(1, "a", 1, 1.0),          rung_run(2, "a", 0, 0.9),
                             rung_run(3, "b", 1, 0.8),          rung_run(4, "a", 1, 1.2),
                             rung_run(5, "a", 1, std::nullopt, "crash"), rung_run(6, "a", 1, 1.1, "ok", 3),
                             rung_run(7, "a", 1, std::nullopt, "environment_error")};
  t.push_back(rung_run(8, "a", 1, 1.3));
  t.back().ended_at.reset();  // still running
  RungRuns r = rung_runs(t, "a", 1, 0);
  EXPECT_EQ(r.values, (std::vector<double>{1.0, 1.2}));
  EXPECT_EQ(r.trials, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(r.failed, 1);  // the crash; a fault of the machine is no failure of the change
}

TEST(RungRuns, SigmaAtARungPoolsItsOwnRunsOnly) {
  std::vector<TrialRow> t = {rung_run(1, "a", 1, 1.0), rung_run(2, "a", 1, 1.2), rung_run(3, "b", 1, 0.8),
                             rung_run(4, "b", 1, 0.9), rung_run(5, "a", 0, 5.0), rung_run(6, "a", 0, 9.0),
                             rung_run(7, "c", 2, 0.1), rung_run(8, "c", 2, 0.5)};
  auto noise = rung_noise(t, 1, 0);
  ASSERT_TRUE(noise);
  EXPECT_EQ(noise->df, 2);
  // (0.1² + 0.1² + 0.05² + 0.05²) / 2
  EXPECT_NEAR(noise->sigma, std::sqrt((0.02 + 0.005) / 2), 1e-12);
  EXPECT_FALSE(rung_noise(t, 3, 0));
  EXPECT_FALSE(rung_noise(t, 1, 1));  // none since calibration 1
}

}  // namespace
}  // namespace ard
