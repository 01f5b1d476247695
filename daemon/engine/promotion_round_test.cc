// Tests of a promotion round as a function of its runs: the chain, the rung's
// reference and stack from the labels, the runs it asks for, each change
// against the commit before it by the keep rule at the rung's σ, a failed
// run, and a round replayed from its finished runs.
#include "daemon/engine/promotion_round.h"

#include <gmock/gmock.h>

namespace ard {
namespace {

using ::testing::HasSubstr;

/// Trials at rung 1 with the given values per commit (ids in order).
struct Runs {
  std::vector<TrialRow> trials;
  void add(const std::string& commit, std::vector<double> values, const std::string& status = "ok") {
    for (double v : values) {
      TrialRow t;
      t.id = static_cast<int64_t>(trials.size()) + 1;
      t.commit = commit;
      t.rung = 1;
      t.purpose = "promote";
      t.status = status;
      if (status == "ok") t.val_bpb = v;
      t.started_at = 1;
      t.ended_at = 2;
      trials.push_back(t);
    }
  }
};

const ChainLink kBase{1, "base"};
std::vector<ChainLink> stack_of(int m) {
  std::vector<ChainLink> s;
  for (int i = 1; i <= m; ++i) s.push_back({10 + i, "c" + std::to_string(i)});
  return s;
}

TEST(PromotionChain, LinksTheKeptChangesOfThePathInOrder) {
  std::vector<ExperimentRow> rows(4);
  rows[0] = {.id = 1, .is_baseline = true, .commit = "base", .state = "kept"};
  rows[1] = {.id = 5, .commit = "x", .state = "kept"};
  rows[2] = {.id = 6, .commit = "y", .state = "discarded"};
  rows[3] = {.id = 7, .commit = "z", .state = "kept"};
  auto chain = chain_links(kBase, {"z", "x", "y"}, rows);
  EXPECT_EQ(chain, (std::vector<ChainLink>{kBase, {7, "z"}, {5, "x"}}));  // y was not kept
}

TEST(PromotionChain, ReferenceAndStackFollowTheLabels) {
  std::vector<ChainLink> chain{kBase, {2, "a"}, {3, "b"}, {4, "c"}, {5, "d"}};
  EXPECT_EQ(rung_reference(chain, {}, 1), 0u);
  EXPECT_EQ(rung_stack(chain, {}, 1).size(), 4u);
  EXPECT_TRUE(rung_stack(chain, {}, 2).empty());  // nothing promoted to rung 1 yet
  std::vector<ChangeLabelRow> labels = {{0, 2, 1, "transfers"}, {0, 3, 1, "scale_bound"}, {0, 4, 1, "untested"},
                                        {0, 2, 2, "transfers"}};
  EXPECT_EQ(rung_reference(chain, labels, 1), 2u);  // b: the chain keeps it, later changes go on top of it
  EXPECT_EQ(rung_stack(chain, labels, 1), (std::vector<ChainLink>{{4, "c"}, {5, "d"}}));
  EXPECT_EQ(rung_stack(chain, labels, 2), (std::vector<ChainLink>{{3, "b"}}));
  EXPECT_TRUE(rung_stack(chain, labels, 3).empty() == false);  // rung 3's reference is the base: a and b
}

TEST(PromotionRound, AsksForEveryCommitOfTheStackAtOnce) {
  PromotionRound round(1, 1, kBase, stack_of(3));
  Runs r;
  auto wants = round.advance(r.trials, 0, KeepSettings{}, {});
  EXPECT_EQ(wants, (std::vector<RungRunWanted>{{1, "base", 2}, {11, "c1", 2}, {12, "c2", 2}, {13, "c3", 2}}));
  // Runs in flight are not asked for again.
  wants = round.advance(r.trials, 0, KeepSettings{}, {{"base", 2}, {"c1", 2}, {"c2", 1}, {"c3", 2}});
  EXPECT_EQ(wants, (std::vector<RungRunWanted>{{12, "c2", 1}}));
  EXPECT_FALSE(round.done());
}

TEST(PromotionRound, EachChangeAgainstTheCommitBeforeIt) {
  // c1 and c3 help at the rung; c2 does nothing there. A stack test would call all three transfers.
  PromotionRound round(1, 1, kBase, stack_of(3));
  Runs r;
  r.add("base", {1.000, 1.001});
  r.add("c1", {0.980, 0.981});
  r.add("c2", {0.981, 0.980});
  r.add("c3", {0.960, 0.961});
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  ASSERT_TRUE(round.done());
  auto labels = round.labels();
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_EQ(labels[0].second.kind, LabelKind::kTransfers);
  EXPECT_EQ(labels[1].second.kind, LabelKind::kScaleBound);
  EXPECT_EQ(labels[2].second.kind, LabelKind::kTransfers);
  const RungEvidence& e = *labels[2].second.evidence;
  EXPECT_EQ(e.best_n, 2);
  EXPECT_EQ(e.candidate_n, 2);
  EXPECT_NEAR(e.best_mean, 0.9805, 1e-12);  // c2's runs: the commit before c3
  EXPECT_NEAR(e.delta, 0.9805 - 0.9605, 1e-9);
  EXPECT_GT(e.sigma, 0);
  EXPECT_EQ(e.trials, (std::vector<int64_t>{5, 6, 7, 8}));
  EXPECT_EQ(round.outcome(), "the stack of 3 change(s) gained 0.04 at rung 1; #11, #13 transfer(s); #12 scale-bound");
  auto lines = round.take_lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr("promotion at rung 1: #11 against #1: transfers (kept: "));
  EXPECT_THAT(lines[1], HasSubstr("promotion at rung 1: #12 against #11: scale-bound (discarded: "));
}

TEST(PromotionRound, ReplaysAFinishedRoundFromItsRunsAlone) {
  // What a restart does: a new round over the same trials decides at once.
  Runs r;
  r.add("base", {1.000, 1.002});
  r.add("c1", {1.001, 0.999});
  r.add("c2", {0.970, 0.971});
  PromotionRound round(1, 1, kBase, stack_of(2));
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  ASSERT_TRUE(round.done());
  EXPECT_EQ(round.labels()[0].second.kind, LabelKind::kScaleBound);
  EXPECT_EQ(round.labels()[1].second.kind, LabelKind::kTransfers);
}

TEST(PromotionRound, AnUnclearComparisonRunsTheChangeAgain) {
  PromotionRound round(1, 1, kBase, stack_of(2));
  Runs r;
  r.add("base", {1.000, 1.002});
  r.add("c1", {0.9973, 0.9993});  // Δ 0.0027 on σΔ 0.00115 (σ on df 3): between discard (1.5) and keep (3.31)
  r.add("c2", {0.9965, 0.9965});
  EXPECT_EQ(round.advance(r.trials, 0, KeepSettings{}, {}), (std::vector<RungRunWanted>{{11, "c1", 1}}));
  EXPECT_TRUE(round.labels().empty());
  r.add("c1", {0.9983});  // σ 0.001 on df 4 (margin 2.87): Δ is 2.96 σΔ
  round.advance(r.trials, 0, KeepSettings{}, {});
  ASSERT_GE(round.labels().size(), 1u);
  EXPECT_EQ(round.labels()[0].second.kind, LabelKind::kTransfers);
  EXPECT_EQ(round.labels()[0].second.evidence->candidate_n, 3);
}

TEST(PromotionRound, SigmaOnTooFewDegreesOfFreedomAsksTheReferenceAgain) {
  PromotionRound round(1, 1, kBase, stack_of(1));
  Runs r;
  r.add("base", {1.000, 1.002});
  r.add("c1", {0.95, 0.951});  // df 2: σ not usable yet
  EXPECT_EQ(round.advance(r.trials, 0, KeepSettings{}, {}), (std::vector<RungRunWanted>{{1, "base", 1}}));
  r.add("base", {1.001});
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  ASSERT_TRUE(round.done());
  EXPECT_EQ(round.labels()[0].second.kind, LabelKind::kTransfers);
  EXPECT_EQ(round.labels()[0].second.evidence->best_n, 3);
}

TEST(PromotionRound, AChangeWithAFailedRunIsScaleBound) {
  PromotionRound round(1, 1, kBase, stack_of(2));
  Runs r;
  r.add("base", {1.000, 1.002});
  r.add("c1", {0}, "crash");
  r.add("c2", {0.95, 0.951});
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  ASSERT_TRUE(round.done());
  EXPECT_EQ(round.labels()[0].second.kind, LabelKind::kScaleBound);
  EXPECT_EQ(round.labels()[1].second.kind, LabelKind::kUntested);  // measured only on top of c1
  auto lines = round.take_lines();
  EXPECT_THAT(lines[0], HasSubstr("scale-bound (a run failed at the rung)"));
  EXPECT_THAT(lines[1], HasSubstr("untested (the change before it failed at the rung)"));
}

TEST(PromotionRound, AReferenceThatFailsEndsTheRoundWithoutLabels) {
  PromotionRound round(1, 1, kBase, stack_of(2));
  Runs r;
  r.add("base", {0}, "timeout");
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  EXPECT_TRUE(round.done());
  EXPECT_THAT(round.aborted(), HasSubstr("the reference #1 failed at rung 1"));
  EXPECT_EQ(round.outcome(), round.aborted());
}

TEST(PromotionRound, TheRunsARoundStillNeedsCountWhatTheRungHasOfEachCommit) {
  Runs r;
  r.add("base", {1.0, 1.0});  // a round before ran the reference
  r.add("c1", {0.99});
  EXPECT_EQ(runs_still_needed(kBase, stack_of(3), 0, r.trials, 1, 0), 0);
  EXPECT_EQ(runs_still_needed(kBase, stack_of(3), 1, r.trials, 1, 0), 1);
  EXPECT_EQ(runs_still_needed(kBase, stack_of(3), 3, r.trials, 1, 0), 5);
  EXPECT_EQ(runs_still_needed(kBase, stack_of(3), 3, r.trials, 2, 0), 8);  // nothing ran at rung 2
}

TEST(PromotionRound, RefusesAnEmptyStackOrRungZero) {
  EXPECT_THROW(PromotionRound(1, 1, kBase, {}), std::invalid_argument);
  EXPECT_THROW(PromotionRound(1, 0, kBase, stack_of(1)), std::invalid_argument);
}

}  // namespace
}  // namespace ard
