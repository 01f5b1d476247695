// Tests of the choices made over the candidates in flight: which is built,
// which trains next on a free GPU, what a stop waits for, what a proposal is told.
#include "daemon/engine/candidate.h"

#include <gmock/gmock.h>

namespace ard {
namespace {

using ::testing::ElementsAre;
using Phase = CandidatePhase;

std::map<int64_t, Candidate> in_flight(std::vector<Candidate> cs) {
  std::map<int64_t, Candidate> m;
  int64_t key = 0;
  for (auto& c : cs) {
    c.key = ++key;
    m[c.key] = std::move(c);
  }
  return m;
}

TEST(BuildOrder, RepeatRunsFirstThenInOrderOfCreation) {
  auto m = in_flight({{.experiment = 3, .phase = Phase::kCommitted},
                      {.experiment = 4, .phase = Phase::kBuilt},
                      {.experiment = 1, .repeat = 1, .phase = Phase::kCommitted},
                      {.experiment = 5, .phase = Phase::kCommitted}});
  EXPECT_THAT(build_order(m), ElementsAre(3, 1, 4));  // keys: the repeat first, then 1 and 4 (2 is built)
}

TEST(NextToTrain, RepeatsFirstAndARoundThatHoldsLetsOnlyTheBestsRunsTrain) {
  auto m = in_flight({{.experiment = 3, .phase = Phase::kBuilt},
                      {.experiment = 1, .repeat = 1, .phase = Phase::kBuilt, .pin_gpu = "1"}});
  EXPECT_EQ(next_to_train(m, "1", false), 2);  // the repeat on its GPU
  EXPECT_EQ(next_to_train(m, "0", false), 1);  // not pinned here: the candidate
  EXPECT_EQ(next_to_train(m, "0", true), 0);   // the round measures the best first
  m[1].baseline = true;
  EXPECT_EQ(next_to_train(m, "0", true), 1);
}

TEST(NextToTrain, AGpuAPinnedRunIsBuiltForIsKeptForIt) {
  auto m = in_flight({{.experiment = 1, .baseline = true, .phase = Phase::kBuilding, .pin_gpu = "0"},
                      {.experiment = 2, .phase = Phase::kBuilt}});
  EXPECT_EQ(next_to_train(m, "0", false), 0);  // the baseline waits for GPU 0: the candidate goes elsewhere
  EXPECT_EQ(next_to_train(m, "1", false), 2);
  m[1].phase = Phase::kTraining;
  EXPECT_EQ(next_to_train(m, "0", false), 2);
}

TEST(NextToTrain, APromotionRunFirstButOnlyWhereRungsMayTrain) {
  auto m = in_flight({{.experiment = 3, .phase = Phase::kBuilt},
                      {.experiment = 1, .repeat = 1, .phase = Phase::kBuilt, .rung = 1}});
  EXPECT_EQ(next_to_train(m, "0", false), 2);         // a repeat of a commit at the rung
  EXPECT_EQ(next_to_train(m, "0", false, false), 1);  // this GPU is not among promote.gpus: the candidate
  EXPECT_EQ(next_to_train(m, "0", true), 2);          // a noise round holds candidates only
}

TEST(NextToTrain, NothingBuiltIsNothingToTrain) {
  EXPECT_EQ(next_to_train({}, "0", false), 0);
  auto m = in_flight({{.experiment = 2, .phase = Phase::kMeasured}, {.experiment = 3, .phase = Phase::kCommitted}});
  EXPECT_EQ(next_to_train(m, "", false), 0);
}

TEST(RunningWork, NamesBuildsAndStagesAndLeavesJobsToTheirOwnLine) {
  auto m = in_flight({{.experiment = 7, .phase = Phase::kBuilding, .running = true},
                      {.experiment = 8, .phase = Phase::kTraining, .stage = 1, .running = true},
                      {.experiment = 9, .phase = Phase::kBuilt}});
  const std::vector<StageConfig> stages = {{.name = "check"}, {.name = "train"}};
  EXPECT_THAT(running_work(m, stages, false), ElementsAre("#7's build", "#8's stage train"));
  EXPECT_THAT(running_work(m, stages, true), ElementsAre("#7's build"));
  EXPECT_THAT(keys_of(m), ElementsAre(1, 2, 3));
}

TEST(InFlightHistory, TellsEachExperimentButNotTheBaselineOrARepeat) {
  auto m = in_flight({{.experiment = 1, .baseline = true, .phase = Phase::kTraining},
                      {.experiment = 1, .repeat = 2, .phase = Phase::kTraining},
                      {.experiment = 5, .phase = Phase::kMeasured, .commit = "abcdef1234567", .description = "lr"},
                      {.experiment = 6, .phase = Phase::kTraining},
                      {.experiment = 7, .phase = Phase::kBuilt}});
  std::vector<HistoryEntry> told = in_flight_history(m);
  ASSERT_EQ(told.size(), 3u);
  EXPECT_EQ(told[0].id, 5);
  EXPECT_EQ(told[0].status, "measured");
  EXPECT_EQ(told[0].description, "lr");
  EXPECT_EQ(told[1].status, "running");
  EXPECT_EQ(told[2].status, "committed");
}

}  // namespace
}  // namespace ard
