// Tests of finishing `evaluated` experiments at restart: the keep decision
// the daemon would have made, never `interrupted`.
#include "daemon/store/evaluated_reconcile.h"

#include <gmock/gmock.h>

#include "testing/test_util.h"

namespace ard {
namespace {

const std::string kBase = "1111111111111111111111111111111111111111";

class EvaluatedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store.add_run("t", "autoresearch/t", kBase);
    int64_t b = store.create_experiment("t", true, kBase, "", "baseline", std::nullopt);
    store.set_commit(b, kBase, "");
    store.set_metrics(b, {1.0, std::nullopt, std::nullopt, "{}"});
    store.finish(b, status::kKept, "", "");
  }
  /// An experiment the daemon died on right after storing its summary.
  int64_t evaluated(const std::string& commit, double v) {
    int64_t id = store.create_experiment("t", false, kBase, "", "scripted", std::nullopt);
    store.set_proposal(id, "edit");
    store.set_commit(id, commit, "+x\n");
    store.set_metrics(id, {v, 100.0, 30.0, "{\"val_bpb\":" + std::to_string(v) + "}"});
    return id;
  }
  /// Three runs of the baseline (mean 1.0): σ from them has df 2, below what decisions use.
  void baseline_runs() {
    for (double v : {1.0, 1.002, 0.998}) {
      int64_t t = store.begin_trial(1, "t", "0", v == 1.0 ? "baseline" : "incumbent", kBase);
      store.end_trial(t, "ok", 30.0, v, "{}");
    }
  }
  /// A measured candidate's run: its commit and value.
  int64_t measured(const std::string& commit, double v) {
    int64_t id = evaluated(commit, v);
    store.end_trial(store.begin_trial(id, "t", "1", "candidate", commit), "ok", 30.0, v, "{}");
    return id;
  }
  testing::TempDir dir;
  Store store{(dir / "results.db").string()};
};

TEST_F(EvaluatedTest, KeepsAnImprovementTheDaemonDiedBeforeDeciding) {
  int64_t id = evaluated(std::string(40, 'a'), 0.9);
  auto d = finish_evaluated(store, "t", 0.0);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].id, id);
  EXPECT_TRUE(d[0].kept);
  EXPECT_EQ(d[0].commit, std::string(40, 'a'));
  EXPECT_EQ(d[0].best_before, 1.0);
  EXPECT_EQ(store.experiment(id)->state, status::kKept);
  EXPECT_EQ(store.best("t")->id, id);  // the branch must move to it
  EXPECT_EQ(store.experiment(id)->val_bpb, 0.9);
}

TEST_F(EvaluatedTest, DiscardsWhatIsNotBetterByTheMinimum) {
  int64_t worse = evaluated(std::string(40, 'a'), 1.1);
  auto d = finish_evaluated(store, "t", 0.0);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].kept);
  auto r = store.experiment(worse);
  EXPECT_EQ(r->state, status::kDiscarded);
  EXPECT_EQ(r->error, "val_bpb 1.1 vs best 1 is no improvement (decided at restart)");

  int64_t small = evaluated(std::string(40, 'b'), 0.995);
  EXPECT_FALSE(finish_evaluated(store, "t", 0.01)[0].kept);
  EXPECT_EQ(store.experiment(small)->state, status::kDiscarded);
}

TEST_F(EvaluatedTest, ComparesEachWithTheBestOfItsMoment) {
  int64_t a = evaluated(std::string(40, 'a'), 0.9);
  int64_t b = evaluated(std::string(40, 'b'), 0.95);
  auto d = finish_evaluated(store, "t", 0.0);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE(d[0].kept);
  EXPECT_FALSE(d[1].kept);
  EXPECT_EQ(d[1].best_before, 0.9);
  EXPECT_EQ(store.best("t")->id, a);
  EXPECT_EQ(store.experiment(b)->state, status::kDiscarded);
}

TEST_F(EvaluatedTest, LeavesRowsItCannotDecide) {
  int64_t running = store.create_experiment("t", false, kBase, "", "scripted", std::nullopt);
  store.set_stage(running, ExperimentState::kRunning, "train", 1, 2, 3);
  EXPECT_TRUE(finish_evaluated(store, "t", 0.0).empty());
  EXPECT_EQ(store.experiment(running)->state, "running");
}

TEST_F(EvaluatedTest, UnderGoalMaxAHigherMeanIsKeptAtRestart) {
  baseline_runs();
  KeepSettings settings;
  settings.goal = MetricGoal::kMax;
  measured(std::string(40, 'a'), 0.95);
  auto d = finish_evaluated(store, "t", settings, 0.01);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].kept);
  int64_t higher = measured(std::string(40, 'b'), 1.05);
  d = finish_evaluated(store, "t", settings, 0.01);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].kept);
  EXPECT_EQ(store.best("t")->id, higher);
}

TEST(KeepRule, StrictlyLowerByTheMinimum) {
  EXPECT_TRUE(is_improvement(5, std::nullopt, 0));
  EXPECT_TRUE(is_improvement(0.9, 1.0, 0.1 - 1e-12));
  EXPECT_FALSE(is_improvement(1.0, 1.0, 0));
  EXPECT_FALSE(is_improvement(0.95, 1.0, 0.1));
  EXPECT_TRUE(is_improvement(1.2, 1.0, 0.1, MetricGoal::kMax));
  EXPECT_FALSE(is_improvement(0.9, 1.0, 0, MetricGoal::kMax));
  EXPECT_FALSE(is_improvement(1.05, 1.0, 0.1, MetricGoal::kMax));
}

TEST_F(EvaluatedTest, WithTheKeepRuleAGainWithinTheNoiseIsDiscardedAtRestart) {
  // The best has three runs (σ from them, df 2, below what decisions use), so
  // noise.prior_sigma = 0.01 decides: a candidate 0.005 better on one run is
  // under 2σΔ = 2·0.01·√(1/3+1) = 0.0231, and a restart runs no confirmation.
  baseline_runs();
  int64_t small = measured(std::string(40, 'a'), 0.995);
  KeepSettings settings;
  auto d = finish_evaluated(store, "t", settings, 0.01);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].kept);
  EXPECT_EQ(store.experiment(small)->state, status::kDiscarded);
  EXPECT_THAT(store.experiment(small)->error, ::testing::HasSubstr("(n=3)"));
  EXPECT_THAT(store.decision(small), ::testing::HasSubstr("decided at restart"));
  // A gain well beyond the margin is kept, and becomes the best.
  int64_t big = measured(std::string(40, 'b'), 0.95);
  d = finish_evaluated(store, "t", settings, 0.01);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].kept);
  EXPECT_EQ(store.best("t")->id, big);
}

}  // namespace
}  // namespace ard
