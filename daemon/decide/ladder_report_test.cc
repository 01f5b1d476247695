// Tests of the promotion ladder as status and show present it, on a store
// holding a promotion round's rows (testing/ladder_rows.h).
#include "daemon/decide/ladder_report.h"

#include <gmock/gmock.h>

#include "testing/ladder_rows.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

/// Rung 0 as configured (300 s) and rung 1 "2x" (depth_scale 2, 600 s).
LadderSettings two_rungs() {
  LadderSettings s;
  s.rungs.resize(2);
  s.rungs[0].name = "base";
  s.rungs[0].budget_s = 300;
  s.rungs[1].name = "2x";
  s.rungs[1].budget_s = 600;
  s.rungs[1].depth_scale = 2;
  return s;
}

class LadderReportTest : public ::testing::Test {
 protected:
  testing::TempDir dir;
  Store store{(dir.path() / "results.db").string()};
  testing::LadderRows rows = testing::add_ladder_rows(store, "t");
};

TEST_F(LadderReportTest, TheLadderHasEachRungsReferenceSigmaAndEveryKeptChangesLabel) {
  const Ladder ladder = ladder_of(store, "t", two_rungs());
  ASSERT_EQ(ladder.rungs.size(), 1u);
  const RungStanding& rung = ladder.rungs[0];
  EXPECT_EQ(rung.rung, 1);
  EXPECT_EQ(rung.name, "2x");
  EXPECT_EQ(rung.reference, rows.wider);  // the latest change tested there, scale-bound or not
  EXPECT_EQ(rung.reference_commit, testing::kLadderWider);
  ASSERT_TRUE(rung.sigma.has_value());
  EXPECT_NEAR(rung.sigma->sigma, 0.0014142, 1e-6);
  EXPECT_EQ(rung.sigma->df, 4);
  EXPECT_NEAR(ladder.promotion_share, 4800.0 / 5500.0, 1e-9);
  ASSERT_EQ(ladder.changes.size(), 3u);  // kept changes only: no baseline, no discarded one
  EXPECT_EQ(ladder.changes[0].experiment_id, rows.lower_lr);
  EXPECT_EQ(ladder.changes[0].labels, std::vector<LabelKind>{LabelKind::kTransfers});
  EXPECT_EQ(ladder.changes[1].labels, std::vector<LabelKind>{LabelKind::kScaleBound});
  EXPECT_EQ(ladder.changes[2].labels, std::vector<LabelKind>{LabelKind::kUntested});
}

// Before any round: the base is every rung's reference, σ is not measured,
// and every kept change is untested (no label row).
TEST_F(LadderReportTest, BeforeAnyRoundTheBaseIsTheReferenceAndEveryChangeIsUntested) {
  testing::TempDir fresh;
  Store empty{(fresh.path() / "results.db").string()};
  empty.add_run("t", "autoresearch/t", testing::kLadderBase);
  const int64_t id = empty.create_experiment("t", false, testing::kLadderBase, "", "scripted", std::nullopt);
  empty.set_proposal(id, "lower lr");
  empty.set_commit(id, testing::kLadderLowerLr, "+x\n");
  empty.finish(id, status::kKept, "", "");
  const Ladder ladder = ladder_of(empty, "t", two_rungs());
  ASSERT_EQ(ladder.rungs.size(), 1u);
  EXPECT_FALSE(ladder.rungs[0].reference.has_value());
  EXPECT_EQ(ladder.rungs[0].reference_commit, testing::kLadderBase);
  EXPECT_FALSE(ladder.rungs[0].sigma.has_value());
  ASSERT_EQ(ladder.changes.size(), 1u);
  EXPECT_EQ(ladder.changes[0].labels, std::vector<LabelKind>{LabelKind::kUntested});
  const std::string text = render_ladder(ladder);
  EXPECT_THAT(text, HasSubstr("reference the base a000000; σ at 2x not measured yet\n"));
  EXPECT_THAT(text, HasSubstr("untested at 2x"));
}

TEST_F(LadderReportTest, StatusSectionSaysWhereEachChangeStandsInWords) {
  EXPECT_EQ(render_ladder(ladder_of(store, "t", two_rungs())),
            "promotion ladder (a round every 5 kept changes, on_fail label): GPU time at rungs above 0 87.3% of 25% "
            "allowed (promote.max_share)\n"
            "  2x (rung 1): depth_scale 2, budget 600 s; reference #4 a200000; σ at 2x = 0.001414 (df 4)\n"
            "  kept changes at larger scales:\n"
            "     #2  a100000  transfers at 2x    lower lr\n"
            "     #4  a200000  scale-bound at 2x  wider mlp\n"
            "     #5  a300000  untested at 2x     deeper\n");
}

TEST_F(LadderReportTest, NoLadderWithoutARungAboveZero) {
  LadderSettings one = two_rungs();
  one.rungs.resize(1);
  EXPECT_TRUE(ladder_of(store, "t", one).rungs.empty());
  EXPECT_EQ(render_ladder(ladder_of(store, "t", one)), "");
  EXPECT_EQ(render_ladder(ladder_of(store, "t", {})), "");
}

// Two rungs above 0: one label per rung, a rung with no row untested.
TEST_F(LadderReportTest, EachChangeHasALabelAtEveryRung) {
  LadderSettings three = two_rungs();
  three.rungs.push_back(three.rungs[1]);
  three.rungs[2].name = "4x";
  three.rungs[2].depth_scale = 4;
  three.rungs[2].budget_s = 1200;
  store.add_change_label({0, rows.lower_lr, 2, "scale_bound", "{}", 2000});
  const std::string text = render_ladder(ladder_of(store, "t", three));
  EXPECT_THAT(
      text, HasSubstr("  4x (rung 2): depth_scale 4, budget 1200 s; reference #2 a100000; σ at 4x not measured yet\n"));
  EXPECT_THAT(text, HasSubstr("#2  a100000  transfers at 2x, scale-bound at 4x  lower lr\n"));
  EXPECT_THAT(text, HasSubstr("#5  a300000  untested at 2x, untested at 4x      deeper\n"));
}

TEST_F(LadderReportTest, ShowGivesEachLabelWithItsEvidenceAndTheRunsAtTheRung) {
  const std::string text = render_rung_standing(store, *store.experiment(rows.lower_lr), two_rungs());
  EXPECT_THAT(text, HasSubstr("at larger scales:\n"
                              "  2x (rung 1): transfers at 2x, decided "));
  EXPECT_THAT(text, HasSubstr(": the change 0.941000 (n 2) against the commit before it 0.951000 (n 2): "
                              "Δ = +0.010000, σ at the rung 0.001414, against its gain at rung 0 g = +0.012000: "
                              "λ = +24.01; trials 6, 7, 10, 11\n"));
  EXPECT_THAT(text, HasSubstr("    its runs at 2x: 0.941000 ± 0.001414 (2); trials 10, 11\n"));
}

TEST_F(LadderReportTest, ShowSaysUntestedForAKeptChangeWithoutALabelAndNothingForOthers) {
  LadderSettings three = two_rungs();
  three.rungs.push_back(three.rungs[1]);
  three.rungs[2].name = "4x";
  const std::string deeper = render_rung_standing(store, *store.experiment(rows.deeper), three);
  EXPECT_THAT(deeper, HasSubstr("  2x (rung 1): untested at 2x, decided "));
  EXPECT_THAT(deeper, HasSubstr(": no comparison recorded\n"));
  EXPECT_THAT(deeper, HasSubstr("  4x (rung 2): untested at 4x: never compared there\n"));
  EXPECT_EQ(render_rung_standing(store, *store.experiment(rows.discarded), three), "");
  // The base has no label, but runs at 2x as the reference.
  const std::string base = render_rung_standing(store, *store.experiment(rows.base), three);
  EXPECT_THAT(base, Not(HasSubstr("untested")));
  EXPECT_THAT(base, HasSubstr("    its runs at 2x: 0.951000 ± 0.001414 (2); trials 6, 7\n"));
}

TEST_F(LadderReportTest, AnEarlierLabelIsShownUnderTheCurrentOne) {
  store.add_change_label({0, rows.wider, 1, "transfers", evidence_json(rows.wider_evidence), 3000});
  const std::string text = render_rung_standing(store, *store.experiment(rows.wider), two_rungs());
  EXPECT_THAT(text, HasSubstr("  2x (rung 1): transfers at 2x, decided "));
  EXPECT_THAT(text, HasSubstr("    earlier: scale-bound at 2x, decided "));
}

TEST_F(LadderReportTest, UnreadableEvidenceIsSaidNotThrown) {
  store.add_change_label({0, rows.deeper, 1, "transfers", "{\"best_mean\": \"x\"}", 3000});
  EXPECT_THAT(render_rung_standing(store, *store.experiment(rows.deeper), two_rungs()),
              HasSubstr("its evidence is unreadable ("));
}

TEST(LadderWords, EachLabelInWords) {
  EXPECT_EQ(label_words(LabelKind::kTransfers, "2x"), "transfers at 2x");
  EXPECT_EQ(label_words(LabelKind::kScaleBound, "2x"), "scale-bound at 2x");
  EXPECT_EQ(label_words(LabelKind::kUntested, "2x"), "untested at 2x");
  EXPECT_EQ(rung_name({}, 3), "rung 3");
}

}  // namespace
}  // namespace ard
