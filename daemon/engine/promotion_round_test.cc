// Tests of a promotion round as a function of its runs: the chain, the rung's
// reference and stack from the labels, the runs it asks for, each change
// against the commit before it by the transfer rule at the rung's σ with the
// gain it had at rung 0, a failed run, and a round replayed from its finished
// runs.
#include "daemon/engine/promotion_round.h"

#include <gmock/gmock.h>

namespace ard {
namespace {

using ::testing::HasSubstr;

/// Trials with the given values per commit (ids in order), at rung 1 unless said.
struct Runs {
  std::vector<TrialRow> trials;
  void add(const std::string& commit, std::vector<double> values, const std::string& status = "ok", int rung = 1) {
    for (double v : values) {
      TrialRow t;
      t.id = static_cast<int64_t>(trials.size()) + 1;
      t.commit = commit;
      t.rung = rung;
      t.purpose = rung > 0 ? "promote" : "candidate";
      t.status = status;
      if (status == "ok") t.val_bpb = v;
      t.started_at = 1;
      t.ended_at = 2;
      trials.push_back(t);
    }
  }
};

const ChainLink kBase{1, "base"};

/// Rung 0: each of the first m changes gained `gain` over the commit before it.
void add_rung0(Runs& r, int m, double gain) {
  r.add("base", {1.0}, "ok", 0);
  for (int i = 1; i <= m; ++i) r.add("c" + std::to_string(i), {1.0 - i * gain}, "ok", 0);
}
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
  // No σ at the rung yet: the reference's runs for df 3 come with the first runs.
  auto wants = round.advance(r.trials, 0, KeepSettings{}, {});
  EXPECT_EQ(wants, (std::vector<RungRunWanted>{{1, "base", 4}, {11, "c1", 1}, {12, "c2", 1}, {13, "c3", 1}}));
  // Runs in flight are not asked for again.
  wants = round.advance(r.trials, 0, KeepSettings{}, {{"base", 1}, {"c1", 1}, {"c3", 1}});
  EXPECT_EQ(wants, (std::vector<RungRunWanted>{{1, "base", 3}, {12, "c2", 1}}));
  EXPECT_FALSE(round.done());
}

TEST(PromotionRound, EachChangeAgainstTheCommitBeforeIt) {
  // Each change gained 0.02 at rung 0. c1 and c3 keep it at the rung; c2 does nothing there.
  // A stack test would call all three transfers.
  PromotionRound round(1, 1, kBase, stack_of(3));
  Runs r;
  add_rung0(r, 3, 0.02);
  r.add("base", {1.000, 1.001, 1.002, 0.999});  // a reference of 4 runs: σ on df 3
  r.add("c1", {0.980});
  r.add("c2", {0.9805});
  r.add("c3", {0.9605});
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  ASSERT_TRUE(round.done());
  auto labels = round.labels();
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_EQ(labels[0].second.kind, LabelKind::kTransfers);
  EXPECT_EQ(labels[1].second.kind, LabelKind::kScaleBound);
  EXPECT_EQ(labels[2].second.kind, LabelKind::kTransfers);
  const RungEvidence& e = *labels[2].second.evidence;
  EXPECT_EQ(e.best_n, 1);
  EXPECT_EQ(e.candidate_n, 1);
  EXPECT_NEAR(e.best_mean, 0.9805, 1e-12);  // c2's run: the commit before c3
  EXPECT_NEAR(e.delta, 0.9805 - 0.9605, 1e-9);
  EXPECT_GT(e.sigma, 0);
  EXPECT_EQ(e.trials, (std::vector<int64_t>{10, 11}));
  EXPECT_EQ(round.outcome(), "the stack of 3 change(s) gained 0.04 at rung 1; #11, #13 transfer(s); #12 scale-bound");
  auto lines = round.take_lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr("promotion at rung 1: #11 against #1: transfers: mean 0.980000 (n=1) against "
                                  "1.000500 (n=4) before it: Δ = +0.020500; g = 0.020000 ± 0.000000, its gain at rung 0"));
  EXPECT_THAT(lines[1], HasSubstr("promotion at rung 1: #12 against #11: scale-bound: "));
}

TEST(PromotionRound, AChangeMustKeepTheGainItHadAtRungZero) {
  // The same Δ at the rung: a transfer for a change that gained that much at rung 0, scale-bound
  // for one that gained four times more there.
  for (double gain : {0.005, 0.02}) {
    PromotionRound round(1, 1, kBase, stack_of(1));
    Runs r;
    add_rung0(r, 1, gain);
    r.add("base", {1.000, 1.001, 1.002, 0.999});
    r.add("c1", {0.9955});
    round.advance(r.trials, 0, KeepSettings{}, {});
    ASSERT_TRUE(round.done()) << gain;
    EXPECT_EQ(round.labels()[0].second.kind, gain < 0.01 ? LabelKind::kTransfers : LabelKind::kScaleBound) << gain;
  }
}

TEST(PromotionRound, ReplaysAFinishedRoundFromItsRunsAlone) {
  // What a restart does: a new round over the same trials decides at once.
  Runs r;
  add_rung0(r, 2, 0.02);
  r.add("base", {1.000, 1.002, 1.000, 1.002});
  r.add("c1", {1.001});
  r.add("c2", {0.980});
  PromotionRound round(1, 1, kBase, stack_of(2));
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  ASSERT_TRUE(round.done());
  EXPECT_EQ(round.labels()[0].second.kind, LabelKind::kScaleBound);
  EXPECT_EQ(round.labels()[1].second.kind, LabelKind::kTransfers);
}

TEST(PromotionRound, AnUnclearComparisonRunsTheChangeAgain) {
  // As long as the keep rule's confirmations (2 by default), then the likelier answer.
  PromotionRound round(1, 1, kBase, stack_of(2));
  Runs r;
  add_rung0(r, 2, 0.0045);
  r.add("base", {1.000, 1.002, 1.000, 1.002});  // mean 1.001, σ 0.00115 on df 3
  r.add("c1", {0.99875});  // Δ = 0.00225 = g/2: in doubt
  r.add("c2", {0.9915});
  EXPECT_EQ(round.advance(r.trials, 0, KeepSettings{}, {}), (std::vector<RungRunWanted>{{11, "c1", 1}}));
  EXPECT_TRUE(round.labels().empty());
  r.add("c1", {0.99875});  // the same again: still in doubt
  EXPECT_EQ(round.advance(r.trials, 0, KeepSettings{}, {}), (std::vector<RungRunWanted>{{11, "c1", 1}}));
  r.add("c1", {0.99875});
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  ASSERT_EQ(round.labels().size(), 2u);
  EXPECT_EQ(round.labels()[0].second.evidence->candidate_n, 3);
  EXPECT_THAT(round.take_lines()[0], HasSubstr("at the change's last run (n=3)"));
  EXPECT_EQ(round.labels()[1].second.kind, LabelKind::kTransfers);
}

/// An unclear comparison: c1 gained 0.0045 at rung 0 and 0.4 of it at the rung (λ between −1 and +1).
Runs unclear_comparison() {
  Runs r;
  add_rung0(r, 1, 0.0045);
  r.add("base", {1.000, 1.002, 1.000, 1.002});
  r.add("c1", {0.9992});
  return r;
}

TEST(PromotionRound, NoConfirmationsDecideOnTheFirstRun) {
  // keep.confirmations = 0: the unclear comparison is decided on its one run, by the likelier answer.
  const Runs r = unclear_comparison();
  PromotionRound round(1, 1, kBase, stack_of(1));
  KeepSettings none;
  none.max_confirmations = 0;
  EXPECT_TRUE(round.advance(r.trials, 0, none, {}).empty());
  ASSERT_TRUE(round.done());
  EXPECT_EQ(round.labels()[0].second.kind, LabelKind::kScaleBound);
  EXPECT_THAT(round.take_lines()[0], HasSubstr("at the change's last run (n=1): < 0, the likelier"));
  // With a confirmation allowed, the same runs ask for one.
  PromotionRound again(1, 1, kBase, stack_of(1));
  EXPECT_EQ(again.advance(r.trials, 0, KeepSettings{}, {}), (std::vector<RungRunWanted>{{11, "c1", 1}}));
}

TEST(PromotionRound, WithoutRoomInTheShareADoubtIsDecidedOnItsRuns) {
  // When one more run at the rung would take the night past promote.max_share: no
  // confirmation, the likelier answer now.
  const Runs r = unclear_comparison();
  PromotionRound round(1, 1, kBase, stack_of(1));
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}, /*confirmation_room=*/0).empty());
  ASSERT_TRUE(round.done());
  EXPECT_EQ(round.labels()[0].second.kind, LabelKind::kScaleBound);
  EXPECT_THAT(round.take_lines()[0],
              HasSubstr("at the change's last run (n=1): < 0, the likelier (no room in promote.max_share for another run)"));
}

TEST(PromotionRound, TheShareConfirmsTheChangesMostInDoubtFirst) {
  // c1 and c2 each gained half their rung-0 gain at the rung: both in doubt.
  Runs r;
  add_rung0(r, 2, 0.0045);
  r.add("base", {1.000, 1.002, 1.000, 1.002});
  r.add("c1", {0.99875});
  r.add("c2", {0.99650});
  PromotionRound roomy(1, 1, kBase, stack_of(2)), tight(1, 1, kBase, stack_of(2));
  EXPECT_EQ(roomy.advance(r.trials, 0, KeepSettings{}, {}).size(), 2u);
  // Room for one run: one change runs again, the other is decided on its run once the round ends.
  const std::vector<RungRunWanted> one = tight.advance(r.trials, 0, KeepSettings{}, {}, 1);
  ASSERT_EQ(one.size(), 1u);
  r.add(one[0].commit, {one[0].commit == "c1" ? 0.99875 : 0.99650});
  tight.advance(r.trials, 0, KeepSettings{}, {}, 0);
  ASSERT_TRUE(tight.done());
  const std::vector<std::string> lines = tight.take_lines();
  ASSERT_EQ(lines.size(), 2u);
  const size_t other = one[0].commit == "c1" ? 1 : 0;
  EXPECT_THAT(lines[other], HasSubstr("(n=1): "));
  EXPECT_THAT(lines[other], HasSubstr("(no room in promote.max_share for another run)"));
}

TEST(PromotionRound, SigmaOnTooFewDegreesOfFreedomAsksTheReferenceAgain) {
  PromotionRound round(1, 1, kBase, stack_of(1));
  Runs r;
  add_rung0(r, 1, 0.05);
  r.add("base", {1.000});
  r.add("c1", {0.95});  // no repeat at the rung yet: σ unknown, the reference runs until it gives df 3
  EXPECT_EQ(round.advance(r.trials, 0, KeepSettings{}, {}), (std::vector<RungRunWanted>{{1, "base", 3}}));
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {{"base", 3}}).empty());  // asked once
  r.add("base", {1.002, 1.000, 1.002});
  EXPECT_TRUE(round.advance(r.trials, 0, KeepSettings{}, {}).empty());
  ASSERT_TRUE(round.done());
  EXPECT_EQ(round.labels()[0].second.kind, LabelKind::kTransfers);
  EXPECT_EQ(round.labels()[0].second.evidence->best_n, 4);
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
  r.add("base", {1.0, 1.001, 1.0, 1.001});  // a round before ran the reference: σ on df 3
  r.add("c1", {0.99});
  EXPECT_DOUBLE_EQ(runs_expected(kBase, stack_of(3), 0, r.trials, 1, 0), 0);
  EXPECT_DOUBLE_EQ(runs_expected(kBase, stack_of(3), 1, r.trials, 1, 0), 0);
  EXPECT_DOUBLE_EQ(runs_expected(kBase, stack_of(3), 2, r.trials, 1, 0), 1);
  EXPECT_DOUBLE_EQ(runs_expected(kBase, stack_of(3), 3, r.trials, 1, 0), 2);
  // Nothing ran at rung 2: the reference once and three more times for σ there, and the changes.
  EXPECT_DOUBLE_EQ(runs_expected(kBase, stack_of(3), 3, r.trials, 2, 0), 4 + 3);
}

/// A plan's input: the base and m kept changes (#11.. as stack_of), rung 0 at
/// 100 s and rung 1 at 200 s, rung-0 runs of 100 s GPU time each.
RoundPlanInput plan_input(int m, int rung0_runs) {
  RoundPlanInput in;
  in.chain.push_back(kBase);
  for (const ChainLink& l : stack_of(m)) in.chain.push_back(l);
  in.rung_budgets_s = {100, 200};
  Runs r;
  for (int i = 0; i < rung0_runs; ++i) r.add("base", {1.0}, "ok", 0);
  for (TrialRow& t : r.trials) t.training_seconds = 100;
  in.trials = r.trials;
  return in;
}

TEST(PromotionPlan, ARoundIsDueAfterEveryKeptChanges) {
  EXPECT_FALSE(plan_round(plan_input(4, 100)));
  auto plan = plan_round(plan_input(5, 100));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->rung, 1);
  EXPECT_EQ(plan->reference, kBase);
  EXPECT_EQ(plan->stack, stack_of(5));
  EXPECT_THAT(plan->why, HasSubstr("5 kept change(s) since the last round (promote.every 5)"));
  RoundPlanInput off = plan_input(5, 100);
  off.max_share = 0;
  EXPECT_FALSE(plan_round(off));
}

TEST(PromotionPlan, ARoundTakesTheOldestChangesThatFitTheShare) {
  // 5000 s at rung 0; a run at rung 1 is expected to take 200 s. Within 25 %, the round may
  // take 1666 s, 8.3 runs: the reference's 4 (σ at the rung needs df 3) and one of each of
  // the four oldest changes (runs_expected).
  auto plan = plan_round(plan_input(5, 50));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->stack, stack_of(4));
  EXPECT_THAT(plan->why, HasSubstr("the oldest 4 of 5 fit the share now"));
  // Runs the rung has already (a round before ran the reference, σ there on df 3) cost nothing more.
  RoundPlanInput in = plan_input(5, 50);
  Runs r;
  r.add("base", {1.0, 1.001, 1.0, 1.001});
  for (TrialRow& t : r.trials) {
    t.id += 1000;
    t.training_seconds = 0;
    in.trials.push_back(t);
  }
  plan = plan_round(in);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->stack.size(), 5u);
  // Nothing fits: no round.
  EXPECT_FALSE(plan_round(plan_input(5, 10)));
}

TEST(PromotionPlan, ARoundAskedForNeedsOneKeptChange) {
  RoundPlanInput in = plan_input(2, 100);
  in.open = PromotionRoundRow{.id = 7, .tag = "t", .rung = 1, .requested_at = 1.0};
  auto plan = plan_round(in);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->stack, stack_of(2));
  EXPECT_THAT(plan->why, HasSubstr("a round was requested with 2 kept change(s) to promote"));
  in.chain.resize(1);  // nothing kept yet: it waits
  EXPECT_FALSE(plan_round(in));
}

TEST(PromotionPlan, ARoundIsDueWithOneKeptChangeWhileTheProposerWaits) {
  RoundPlanInput in = plan_input(2, 100);
  EXPECT_FALSE(plan_round(in));  // 2 kept changes, promote.every 5
  in.proposer_waits = "nothing to propose: the script has no more edits";
  auto plan = plan_round(in);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->stack, stack_of(2));
  EXPECT_THAT(plan->why, HasSubstr("the proposer waits (nothing to propose: the script has no more edits), so the "
                                   "idle GPUs take a round with 2 kept change(s) to promote"));
  in.max_share = 0.01;  // the share still holds
  EXPECT_FALSE(plan_round(in));
}

TEST(PromotionPlan, ARoundInProgressResumesWithWhatFitsNowOneChangeAtLeast) {
  RoundPlanInput in = plan_input(5, 5);  // 500 s at rung 0: no new round would fit
  in.open = PromotionRoundRow{.id = 7, .tag = "t", .rung = 1, .reason = "5 kept change(s)", .started_at = 2.0};
  auto plan = plan_round(in);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->stack, stack_of(1));
  EXPECT_EQ(plan->why, "5 kept change(s) (resumed)");
}

TEST(PromotionPlan, ARungAboveOneTakesWhatTheRungBelowLabelled) {
  RoundPlanInput in = plan_input(3, 100);
  in.rung_budgets_s = {100, 200, 400};
  for (int64_t e : {11, 12, 13}) in.labels.push_back({0, e, 1, e == 12 ? "scale_bound" : "transfers"});
  auto plan = plan_round(in);  // rung 1 has nothing left; rung 2 takes one change at a time (every = 1 there)
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->rung, 2);
  EXPECT_EQ(plan->reference, kBase);
  EXPECT_EQ(plan->stack, stack_of(3));
}

TEST(PromotionRound, RefusesAnEmptyStackOrRungZero) {
  EXPECT_THROW(PromotionRound(1, 1, kBase, {}), std::invalid_argument);
  EXPECT_THROW(PromotionRound(1, 0, kBase, stack_of(1)), std::invalid_argument);
}

TEST(PromotionPlan, AConfirmationRunsOnlyWithinTheShare) {
  // 10 rung-0 runs of 100 s; a rung-1 run is expected to take 200 s.
  RoundPlanInput in = plan_input(1, 10);
  EXPECT_DOUBLE_EQ(rung_run_seconds(in.trials, in.rung_budgets_s, 1), 200);
  EXPECT_TRUE(share_allows(in.trials, in.rung_budgets_s, 1, 0.25));  // 200 / 1200 = 0.17
  Runs r;
  r.add("base", {1.0, 1.0});  // 400 s at the rung already: (400 + 200) / 1600 = 0.375
  for (TrialRow& t : r.trials) {
    t.id += 1000;
    t.training_seconds = 200;
    in.trials.push_back(t);
  }
  EXPECT_FALSE(share_allows(in.trials, in.rung_budgets_s, 1, 0.25));
  EXPECT_TRUE(share_allows(in.trials, in.rung_budgets_s, 1, 0.4));
  EXPECT_FALSE(share_allows({}, in.rung_budgets_s, 1, 0.25));  // nothing ran yet: no time to share
}

TEST(PromotionPlan, TheRoomForConfirmationsLeavesTheWaitingChangesTheirFirstRuns) {
  // 100 rung-0 runs of 100 s, runs at rung 1 of 200 s: within 25 %, n runs fit while
  // 200n / (10000 + 200n) <= 0.25, n <= 16.
  const RoundPlanInput in = plan_input(1, 100);
  EXPECT_EQ(confirmation_room(in.trials, in.rung_budgets_s, 1, 0.25, 0), 16);
  EXPECT_EQ(confirmation_room(in.trials, in.rung_budgets_s, 1, 0.25, 10), 6);
  EXPECT_EQ(confirmation_room(in.trials, in.rung_budgets_s, 1, 0.25, 20), 0);
  EXPECT_EQ(confirmation_room(in.trials, in.rung_budgets_s, 1, 1.0, 0), kMaxRoom);
}

TEST(PromotionPlan, KeptChangesWaitForARoundUntilLabelledOrTaken) {
  std::vector<ExperimentRow> rows(5);
  for (int i = 0; i < 5; ++i) rows[i].id = i + 1, rows[i].state = "kept";
  rows[0].is_baseline = true;
  rows[4].state = "discarded";
  // #2 transfers at rung 1, #3 is untested there (it waits), #4 is in the round.
  const std::vector<ChangeLabelRow> labels = {{0, 2, 1, "transfers"}, {0, 3, 1, "untested"}, {0, 3, 2, "transfers"}};
  EXPECT_EQ(kept_changes_waiting(rows, labels, 1, {{4, "d"}}), 1);
  EXPECT_EQ(kept_changes_waiting(rows, labels, 1, {}), 2);
  EXPECT_EQ(kept_changes_waiting(rows, labels, 2, {}), 2);  // at rung 2 only #3 is labelled
}

}  // namespace
}  // namespace ard
