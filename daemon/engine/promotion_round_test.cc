// Tests of a promotion round as a function of its runs: the chain, the rung's
// reference and stack from the labels, the runs each comparison asks for, the
// keep rule at the rung's σ, the bisection to the change that does not
// transfer, a failed run, and a round replayed from its finished runs.
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

TEST(PromotionRound, AsksForTheReferenceAndTheWholeStackFirst) {
  PromotionRound round(1, 1, kBase, stack_of(3));
  Runs r;
  auto wants = round.advance(r.trials, 0, KeepSettings{}, {});
  EXPECT_EQ(wants, (std::vector<RungRunWanted>{{1, "base", 3}, {13, "c3", 2}}));
  // Runs in flight are not asked for again.
  wants = round.advance(r.trials, 0, KeepSettings{}, {{"base", 3}, {"c3", 1}});
  EXPECT_EQ(wants, (std::vector<RungRunWanted>{{13, "c3", 1}}));
  EXPECT_FALSE(round.done());
}

TEST(PromotionRound, AStackThatImprovesTransfersWhole) {
  PromotionRound round(1, 1, kBase, stack_of(3));
  Runs r;
  r.add("base", {1.000, 1.002, 0.998});
  r.add("c3", {0.980, 0.981});
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  ASSERT_TRUE(round.done());
  for (const auto& [id, label] : round.labels()) {
    EXPECT_EQ(label.kind, LabelKind::kTransfers);
    ASSERT_TRUE(label.evidence);
    EXPECT_EQ(label.evidence->best_n, 3);
    EXPECT_EQ(label.evidence->candidate_n, 2);
    EXPECT_NEAR(label.evidence->delta, 1.0 - 0.9805, 1e-9);
    EXPECT_GT(label.evidence->sigma, 0);
    EXPECT_EQ(label.evidence->trials, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  }
  EXPECT_EQ(round.outcome(), "the stack of 3 change(s) improved at rung 1: each transfers");
  auto lines = round.take_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("promotion rung 1: #11..#13 (3 of 3 change(s)) against #1: improved (kept: "));
}

TEST(PromotionRound, BisectsToTheChangeThatDoesNotTransfer) {
  // c1 and c2 help at the rung, c3 undoes it all, c4 is measured only on top of c3.
  PromotionRound round(1, 1, kBase, stack_of(4));
  Runs r;
  r.add("base", {1.000, 1.002, 0.998});
  r.add("c4", {1.001, 0.999});
  EXPECT_EQ(round.advance(r.trials, 0, KeepSettings{}, {}), (std::vector<RungRunWanted>{{12, "c2", 2}}));
  r.add("c2", {0.980, 0.982});
  EXPECT_EQ(round.advance(r.trials, 0, KeepSettings{}, {}), (std::vector<RungRunWanted>{{13, "c3", 2}}));
  r.add("c3", {1.000, 1.001});
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  ASSERT_TRUE(round.done());
  auto labels = round.labels();
  ASSERT_EQ(labels.size(), 4u);
  EXPECT_EQ(labels[0].second.kind, LabelKind::kTransfers);
  EXPECT_EQ(labels[1].second.kind, LabelKind::kTransfers);
  EXPECT_EQ(labels[2].second.kind, LabelKind::kScaleBound);
  EXPECT_EQ(labels[3].second.kind, LabelKind::kUntested);
  EXPECT_EQ(labels[2].second.evidence->candidate_mean, 1.0005);
  EXPECT_EQ(round.outcome(), "#13 is scale-bound at rung 1; #11, #12 transfer(s); #14 untested there (measured only on top of it)");
  EXPECT_EQ(round.take_lines().size(), 3u);
}

TEST(PromotionRound, ReplaysAFinishedRoundFromItsRunsAlone) {
  // What a restart does: a new round over the same trials decides at once.
  Runs r;
  r.add("base", {1.000, 1.002, 0.998});
  r.add("c2", {1.001, 0.999});
  r.add("c1", {1.000, 1.001});
  PromotionRound round(1, 1, kBase, stack_of(2));
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  ASSERT_TRUE(round.done());
  EXPECT_EQ(round.labels()[0].second.kind, LabelKind::kScaleBound);
  EXPECT_EQ(round.labels()[1].second.kind, LabelKind::kUntested);
}

TEST(PromotionRound, AnUnclearComparisonRunsThePrefixAgain) {
  PromotionRound round(1, 1, kBase, stack_of(1));
  Runs r;
  r.add("base", {1.000, 1.002, 0.998});
  r.add("c1", {0.9960, 0.9970});  // Δ 0.0035 on σΔ ≈ 0.0015: between discard (1.5) and keep (3.3 at df 3)
  EXPECT_EQ(round.advance(r.trials, 0, KeepSettings{}, {}), (std::vector<RungRunWanted>{{11, "c1", 1}}));
  r.add("c1", {0.9965});
  round.advance(r.trials, 0, KeepSettings{}, {});
  // σ now on df 4 (margin 2.87 σΔ): Δ 0.0035 is 2.94 σΔ.
  ASSERT_TRUE(round.done());
  EXPECT_EQ(round.labels()[0].second.kind, LabelKind::kTransfers);
  EXPECT_EQ(round.labels()[0].second.evidence->candidate_n, 3);
}

TEST(PromotionRound, SigmaOnTooFewDegreesOfFreedomAsksTheReferenceAgain) {
  PromotionRound round(1, 1, kBase, stack_of(1));
  Runs r;
  r.add("base", {1.000, 1.000, 1.000});  // df 2 + 1, but σ 0 from the base: still df 3 -> decides
  r.add("c1", {0.99});
  r.trials.push_back(r.trials.back());
  r.trials.back().id = 5;
  r.trials.back().status = "crash";
  r.trials.back().val_bpb.reset();
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  ASSERT_TRUE(round.done());  // a prefix with a failed run did not improve
  EXPECT_EQ(round.labels()[0].second.kind, LabelKind::kScaleBound);
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

TEST(PromotionRound, RefusesAnEmptyStackOrRungZero) {
  EXPECT_THROW(PromotionRound(1, 1, kBase, {}), std::invalid_argument);
  EXPECT_THROW(PromotionRound(1, 0, kBase, stack_of(1)), std::invalid_argument);
}

}  // namespace
}  // namespace ard
