// Tests of the repeat runs' plan: where the incumbent's re-runs go, and what
// a finished noise round says.
#include "daemon/engine/repeat_plan.h"

#include <gmock/gmock.h>

#include "daemon/decide/keep_rule.h"
#include "daemon/decide/run_evidence.h"

namespace ard {
namespace {

using ::testing::ElementsAre;

TEST(IncumbentRerunGpus, TheBoardsItRanOnLeastUntilItHasItsRuns) {
  ASSERT_EQ(kMinIncumbentRuns, 3);
  EXPECT_THAT(incumbent_rerun_gpus({"0", "1"}, {"0"}), ElementsAre("1", "0"));
  EXPECT_THAT(incumbent_rerun_gpus({"0", "1", "2"}, {"1"}), ElementsAre("0", "2"));
  EXPECT_THAT(incumbent_rerun_gpus({""}, {""}), ElementsAre("", ""));  // one worker: the same board
  EXPECT_TRUE(incumbent_rerun_gpus({"0", "1"}, {"0", "1", "0"}).empty());
}

TrialRow noise_run(const std::string& gpu, double value) {
  TrialRow t;
  t.gpu = gpu;
  t.purpose = purpose::kNoise;
  t.commit = "best";
  t.status = "ok";
  t.val_bpb = value;
  return t;
}

void run_round(NoiseRounds& rounds, bool hold) {
  rounds.begin(hold, "start");
  rounds.run_done("0", 1, 100);
  rounds.run_done("1", 1, 100);
  ASSERT_TRUE(rounds.complete());
}

TEST(EndRound, ARoundThatHeldNothingIsDone) {
  NoiseRounds rounds({"0", "1"}, false);
  run_round(rounds, false);
  const RoundEnd end = end_round(rounds, {noise_run("0", 1.0), noise_run("1", 1.2)}, 1000);
  EXPECT_EQ(end.next_round, "");
  EXPECT_EQ(end.warning, "");
  EXPECT_EQ(end.log_line, "noise round done: σ = 0.141421 (df 1)");
  EXPECT_DOUBLE_EQ(end.row.created_at, 1000);
  ASSERT_TRUE(end.row.sigma);
  EXPECT_NEAR(*end.row.sigma, 0.141421, 1e-6);
  EXPECT_EQ(end.row.df, 1);
  EXPECT_EQ(end.row.reason, "start");
  EXPECT_FALSE(rounds.active());
}

TEST(EndRound, ARoundThatHeldCandidatesOnTooFewDfIsFollowedByAnother) {
  NoiseRounds rounds({"0", "1"}, false);
  run_round(rounds, true);
  const RoundEnd end = end_round(rounds, {}, 1000);
  EXPECT_EQ(end.next_round, "σ rests on df 0: another round");
  EXPECT_EQ(end.log_line, "");
  EXPECT_FALSE(end.row.sigma);
}

TEST(RoundDue, NeverMeasuredThenEveryNExperimentsThenWhenTooOld) {
  NoiseRounds rounds({"0", "1"}, false);
  EXPECT_EQ(round_due(rounds, 0, 1000, 20, 7200), "never measured");
  run_round(rounds, false);
  rounds.finish(1000);
  EXPECT_EQ(round_due(rounds, 3, 1010, 20, 7200), "");
  EXPECT_EQ(round_due(rounds, 39, 1010, 20, 7200), "");  // every 20 per GPU
  EXPECT_EQ(round_due(rounds, 40, 1010, 20, 7200), "40 experiments since the last round");
  EXPECT_EQ(round_due(rounds, 3, 1000 + 3 * 3600, 20, 7200), "the estimate is 3.0 h old");
}

TEST(BestMean, TheMeanOfTheBestsFinishedRunsUnderTheCalibration) {
  TrialRow old_board = noise_run("0", 0.5);
  old_board.calibration = 1;
  TrialRow crashed = noise_run("1", 0.1);
  crashed.status = "crash";
  EXPECT_EQ(best_mean({noise_run("0", 0.96), noise_run("1", 0.98), old_board, crashed}, "best", 0), 0.97);
  EXPECT_FALSE(best_mean({old_board}, "best", 0));
}

Config rounds_on() {
  Config config;
  config.noise.rounds = true;
  config.noise.every = 20;
  config.noise.max_age_s = 7200;
  return config;
}

TEST(RepeatRuns, ARoundRunsTheBestOnEveryGpuTheBaselineDoesNotCoverAndNumbersItsRuns) {
  const Config config = rounds_on();
  RepeatRuns repeats(config, {"0", "1"});
  const BestRun best{1, "best", std::nullopt};
  std::map<int64_t, Candidate> in_flight;
  in_flight[1] = {.key = 1, .experiment = 1, .baseline = true, .pin_gpu = "0", .in_round = true};
  const std::vector<Candidate> runs = repeats.begin_round(true, "start (baseline)", best, in_flight);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].pin_gpu, "1");
  EXPECT_EQ(runs[0].repeat, 1);
  EXPECT_EQ(runs[0].experiment, 1);
  EXPECT_EQ(runs[0].commit, "best");
  EXPECT_EQ(runs[0].purpose, purpose::kNoise);
  EXPECT_TRUE(runs[0].in_round);
  EXPECT_TRUE(repeats.rounds().holds());
  EXPECT_EQ(repeats.due(best, 1000), "");  // one runs
  const std::vector<Candidate> next = repeats.begin_round(false, "again", best, {});
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[1].repeat, 3);  // numbered on
}

TEST(RepeatRuns, ARoundEndsOnceEachOfItsRunsIsDoneAndTheCountOfDecisionsStartsAgain) {
  const Config config = rounds_on();
  RepeatRuns repeats(config, {"0", "1"});
  const BestRun best{1, "best", 0.9};
  EXPECT_EQ(repeats.due(best, 1000), "never measured");
  EXPECT_EQ(repeats.due({}, 1000), "");  // no best yet
  std::vector<Candidate> runs = repeats.begin_round(false, "never measured", best, {});
  repeats.run_done(runs[0], 100);
  EXPECT_FALSE(repeats.end_if_complete({}, 1000));
  repeats.run_done(runs[0], 100);  // counted once
  EXPECT_FALSE(repeats.end_if_complete({}, 1000));
  repeats.run_done(runs[1], 100);
  const auto end = repeats.end_if_complete({noise_run("0", 1.0), noise_run("1", 1.2)}, 1000);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->next_round, "");
  for (int i = 0; i < 39; ++i) repeats.decided();
  EXPECT_EQ(repeats.due(best, 1010), "");
  repeats.decided();
  EXPECT_EQ(repeats.due(best, 1010), "40 experiments since the last round");
}

TEST(RepeatRuns, TheIncumbentIsReRunUntilItHasItsRunsCountingThoseOnTheirWay) {
  const Config config = rounds_on();
  RepeatRuns repeats(config, {"0", "1"});
  const BestRun best{4, "best", 0.9};
  TrialRow first = noise_run("0", 0.9);
  first.purpose = purpose::kCandidate;
  std::vector<Candidate> runs = repeats.incumbent_runs({first}, best, {});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].pin_gpu, "1");
  EXPECT_EQ(runs[1].pin_gpu, "0");
  EXPECT_EQ(runs[0].purpose, purpose::kIncumbent);
  EXPECT_FALSE(runs[0].in_round);
  std::map<int64_t, Candidate> in_flight;
  in_flight[7] = runs[0];
  in_flight[8] = runs[1];
  EXPECT_TRUE(repeats.incumbent_runs({first}, best, in_flight).empty());  // on their way
  EXPECT_TRUE(RepeatRuns::incumbent_pending(in_flight, "best"));
  EXPECT_FALSE(RepeatRuns::incumbent_pending(in_flight, "newer"));
  Config off = rounds_on();
  off.noise.rounds = false;
  RepeatRuns without(off, {"0", "1"});
  EXPECT_TRUE(without.incumbent_runs({first}, best, {}).empty());
  EXPECT_EQ(without.due(best, 1000), "");
}

}  // namespace
}  // namespace ard
