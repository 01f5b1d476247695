// Tests of a run's record in a real store: an experiment's group and stage on
// its row, a repeat run's group on a row of its own with the best's row left
// alone, and a Slurm job on the trial.
#include "daemon/engine/run_record.h"

#include <gmock/gmock.h>
#include <unistd.h>

#include "testing/test_util.h"

namespace ard {
namespace {

class RunRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store.add_run("t", "autoresearch/t", "base");
    id = store.create_experiment("t", false, "base", "", "p", std::nullopt);
  }
  testing::TempDir dir;
  Store store{(dir.path() / "results.db").string()};
  int64_t id = 0;
  RunStep train{"train", "true", {}, 300, 120, "/l/train.log"};
};

TEST_F(RunRecordTest, AnExperimentsGroupAndStageAreOnItsRowUntilTheRunEnds) {
  RunRecord record(store, id, false, "raise lr", false);
  record.group_started(getpid());  // a live process as the leader: its start time is readable
  record.step_started(0, train);
  auto row = store.experiment(id);
  EXPECT_EQ(row->pgid, getpid());
  EXPECT_TRUE(row->pgid_start);  // the leader's start time: a restart kills this group and no other
  EXPECT_EQ(row->state, "running");
  EXPECT_EQ(row->stage, "train");
  EXPECT_NEAR(*row->stage_deadline - *row->stage_started_at, 300, 1e-6);
  record.ended();
  EXPECT_FALSE(store.experiment(id)->pgid);
  EXPECT_TRUE(store.live_process_groups().empty());
}

TEST_F(RunRecordTest, ABuildReadsBuilding) {
  RunRecord record(store, id, false, "raise lr", true);
  record.step_started(0, RunStep{"build", "make", {}, 600, 600, "/l/build.log"});
  EXPECT_EQ(store.experiment(id)->state, "building");
}

TEST_F(RunRecordTest, ARepeatsGroupIsARowOfItsOwnAndTheBestsRowIsLeftAlone) {
  RunRecord record(store, id, true, "noise run of #1", false);
  record.group_started(getpid());
  record.step_started(0, train);
  auto groups = store.live_process_groups();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].what, "noise run of #1");
  EXPECT_FALSE(store.experiment(id)->pgid);
  EXPECT_EQ(store.experiment(id)->stage, "");
  record.step_started(1, train);  // the group of the step before is gone
  EXPECT_TRUE(store.live_process_groups().empty());
  record.group_started(getpid());
  record.ended();
  EXPECT_TRUE(store.live_process_groups().empty());
}

TEST_F(RunRecordTest, ASlurmJobAndItsNodeAreOnTheTrial) {
  const int64_t trial = store.begin_trial(id, "t", "0", "candidate", "c");
  RunRecord record(store, id, false, "raise lr", false);
  record.job(trial, "42", "", "/l/42-job.log");
  record.job(trial, "42", "node3", "/l/42-job.log");
  record.job(0, "43", "", "/l/x.log");  // no trial yet: nothing to write on
  const auto trials = store.trials("t");
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].slurm_job_id, "42");
  EXPECT_EQ(trials[0].slurm_log, "/l/42-job.log");
  EXPECT_EQ(trials[0].node, "node3");
}

}  // namespace
}  // namespace ard
