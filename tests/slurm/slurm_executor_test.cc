// SlurmExecutor and SlurmClient against a real single-node Slurm cluster
// (tests/slurm/cluster.py): a job submitted and followed to its end, one that
// overruns and is cancelled, one requeued by `scontrol requeue`, stop, and a
// submission sbatch refuses.
#include "daemon/slurm/slurm_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <thread>

#include "daemon/exec/process_runner.h"
#include "slurm_cluster.h"

namespace ard {
namespace {

using ::testing::HasSubstr;

class SlurmExecutorTest : public ::testing::Test {
 public:  // the helpers below set on_job_hook
  testing::SlurmCluster cluster;
  testing::TempDir dir;
  boost::asio::io_context io;
  Log log{dir / "daemon.log", false};
  SlurmConfig config;
  std::unique_ptr<SlurmClient> client;
  std::unique_ptr<SlurmExecutor> executor;
  std::map<int64_t, std::vector<std::string>> ids;    // every id on_job gave, then nodes
  std::map<int64_t, JobEnd> ends;
  std::function<void(int64_t, const std::string&, const std::string&)> on_job_hook;

  void SetUp() override {
    ASSERT_TRUE(cluster.started()) << "Slurm did not start: " << cluster.error();
    config.gres = "";  // CPUs are the resource here
    config.poll_s = 0.3;
    client = std::make_unique<SlurmClient>(io, slurm_env(scrubbed_env({"PATH", "HOME"})), dir / "scratch");
    executor = std::make_unique<SlurmExecutor>(
        io, config, *client, log,
        [this](int64_t key, const std::string& job, const std::string& node) {
          ids[key].push_back(node.empty() ? job : "node:" + node);
          if (on_job_hook) on_job_hook(key, job, node);
        },
        [this](int64_t key, const JobEnd& end) { ends[key] = end; });
  }

  SlurmRun run(int64_t key, std::vector<JobStage> stages, double timeout_s = 120) {
    std::filesystem::create_directories(dir / "wt");
    SlurmRun r;
    r.key = key;
    r.name = "ard-test-" + std::to_string(key);
    r.worktree = dir / "wt";
    r.stages = std::move(stages);
    r.timeout_s = timeout_s;
    r.log = dir / (std::to_string(key) + "-job.log");
    r.script = dir / "scripts" / (r.name + ".sh");
    r.title = "test";
    return r;
  }

  /// Runs the loop until n jobs ended (or fails after timeout_s).
  void wait_ends(size_t n, double timeout_s = 90) {
    boost::asio::steady_timer deadline(io, std::chrono::seconds(static_cast<int>(timeout_s)));
    bool late = false;
    deadline.async_wait([&](const boost::system::error_code& e) {
      if (!e) late = true;
    });
    while (ends.size() < n && !late) io.run_one();
    deadline.cancel();
    ASSERT_FALSE(late) << "only " << ends.size() << " of " << n << " jobs ended; log:\n"
                       << testing::read_file(dir / "daemon.log");
  }
};

TEST_F(SlurmExecutorTest, AJobIsSubmittedFollowedAndCompletes) {
  executor->submit(run(1, {{"check", "echo checked"}, {"train", "sleep 1; echo '---'; echo 'val_bpb: 1.5'"}}));
  wait_ends(1);
  const JobEnd& end = ends.at(1);
  EXPECT_EQ(end.kind, JobEnd::Kind::kCompleted) << end.error;
  EXPECT_EQ(end.node, testing::shell("hostname").out.substr(0, testing::shell("hostname").out.find('\n')));
  ASSERT_FALSE(ids[1].empty());
  EXPECT_EQ(ids[1].front(), end.job_id);  // the id came before anything else
  std::string out = testing::read_file(dir / "1-job.log");
  EXPECT_THAT(out, HasSubstr("autoresearchd: job " + end.job_id));
  EXPECT_THAT(out, HasSubstr("checked"));
  EXPECT_THAT(out, HasSubstr("val_bpb: 1.5"));
  EXPECT_EQ(executor->active(), 0u);
}

TEST_F(SlurmExecutorTest, AFailingStageEndsTheJobWithItsCode) {
  executor->submit(run(1, {{"check", "exit 4"}, {"train", "echo never"}}));
  wait_ends(1);
  EXPECT_EQ(ends.at(1).kind, JobEnd::Kind::kFailed);
  EXPECT_EQ(ends.at(1).exit_code, 4);
  EXPECT_THAT(testing::read_file(dir / "1-job.log"), HasSubstr("autoresearchd: stage check exit 4"));
}

TEST_F(SlurmExecutorTest, AnOverrunningJobIsCancelledAtItsTimeout) {
  executor->submit(run(1, {{"train", "sleep 300"}}, 2));
  wait_ends(1);
  const JobEnd& end = ends.at(1);
  EXPECT_EQ(end.kind, JobEnd::Kind::kTimedOut) << end.error;
  EXPECT_THAT(end.error, HasSubstr("ran past its timeout of 2 s"));
  EXPECT_EQ(cluster.jobs("pending,running"), "");
}

TEST_F(SlurmExecutorTest, ARequeuedJobIsFollowedThroughItsNewRun) {
  bool requeued = false;
  on_job_hook = [&](int64_t, const std::string& job, const std::string& node) {
    if (node.empty() || requeued) return;
    requeued = true;  // seen running: Slurm puts it back in the queue
    // Once its first run has started its stage (on a loaded machine Slurm may
    // say running before the script printed anything), so that run's output exists.
    for (int i = 0; i < 200 && testing::read_file(dir / "1-job.log").find("stage train") == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto r = testing::shell("scontrol requeue " + job);
    EXPECT_EQ(r.code, 0) << r.out;
  };
  executor->submit(run(1, {{"train", "sleep 3; echo '---'; echo \"restart: ${SLURM_RESTART_COUNT:-0}\""}}));
  wait_ends(1, 120);
  EXPECT_TRUE(requeued);
  EXPECT_EQ(ends.at(1).kind, JobEnd::Kind::kCompleted) << ends.at(1).error;
  std::string out = testing::read_file(dir / "1-job.log");
  EXPECT_THAT(out, HasSubstr("(restart 0)"));  // the first run's output is kept (append mode)
  EXPECT_THAT(out, HasSubstr("(restart 1)"));
  EXPECT_THAT(testing::read_file(dir / "daemon.log"), HasSubstr("was requeued (restart 1)"));
}

/// Once the job runs, an exclusive job of the higher-tier partition "urgent"
/// preempts it (PreemptMode=CANCEL: it ends PREEMPTED).
void preempt_when_running(SlurmExecutorTest* t, bool* preempted) {
  t->on_job_hook = [preempted](int64_t, const std::string&, const std::string& node) {
    if (node.empty() || *preempted) return;
    *preempted = true;
    auto r = testing::shell("sbatch --parsable -p urgent --exclusive -o /dev/null --wrap 'sleep 2'");
    EXPECT_EQ(r.code, 0) << r.out;
  };
}

TEST_F(SlurmExecutorTest, APreemptedJobIsSubmittedAgainAndCompletes) {
  config.extra_args = {"--exclusive"};
  bool preempted = false;
  preempt_when_running(this, &preempted);
  executor->submit(run(1, {{"train", "sleep 4; echo finished"}}));
  wait_ends(1, 120);
  EXPECT_TRUE(preempted);
  const JobEnd& end = ends.at(1);
  EXPECT_EQ(end.kind, JobEnd::Kind::kCompleted) << end.error;
  // Two jobs: the preempted one and its resubmission, each id handed back.
  std::vector<std::string> job_ids;
  for (const auto& x : ids[1])
    if (x.rfind("node:", 0) != 0) job_ids.push_back(x);
  ASSERT_EQ(job_ids.size(), 2u);
  EXPECT_NE(job_ids[0], job_ids[1]);
  EXPECT_EQ(end.job_id, job_ids[1]);
  EXPECT_THAT(testing::read_file(dir / "daemon.log"),
              HasSubstr("Slurm job " + job_ids[0] + " preempted; submitted again (1 of 2)"));
  EXPECT_THAT(testing::read_file(dir / "1-job.log"), HasSubstr("finished"));
}

TEST_F(SlurmExecutorTest, PreemptedPastItsResubmitsIsTheMachinesFault) {
  config.extra_args = {"--exclusive"};
  config.max_resubmits = 0;
  bool preempted = false;
  preempt_when_running(this, &preempted);
  executor->submit(run(1, {{"train", "sleep 30"}}));
  wait_ends(1);
  EXPECT_EQ(ends.at(1).kind, JobEnd::Kind::kEnvironment);
  EXPECT_THAT(ends.at(1).error, HasSubstr("preempted"));
}

TEST_F(SlurmExecutorTest, StopCancelsEveryJobAndNoneIsLeft) {
  executor->submit(run(1, {{"train", "sleep 300"}}));
  executor->submit(run(2, {{"train", "sleep 300"}}));
  executor->submit(run(3, {{"train", "sleep 300"}}));
  // Once every id is back (some running, some maybe queued), stop them all.
  on_job_hook = [&](int64_t, const std::string&, const std::string&) {};
  while (ids.size() < 3) io.run_one();
  executor->stop_all();
  wait_ends(3);
  for (int64_t k : {1, 2, 3}) EXPECT_EQ(ends.at(k).kind, JobEnd::Kind::kStopped) << ends.at(k).error;
  EXPECT_EQ(cluster.jobs("pending,running,completing"), "");
}

TEST_F(SlurmExecutorTest, AStopThatSlurmCannotConfirmIsGivenUpWithAWarning) {
  executor->set_stop_confirm_s(2);
  executor->submit(run(1, {{"train", "sleep 15"}}));  // ends by itself, whatever happens to the controller
  while (ids[1].size() < 2) io.run_one();            // its id, then its node: running
  auto pid = testing::read_file(cluster.dir() / "slurmctld.daemon");
  ASSERT_EQ(testing::shell("kill -9 " + pid).code, 0);
  executor->stop_all();
  wait_ends(1, 60);
  EXPECT_EQ(ends.at(1).kind, JobEnd::Kind::kStopped);
  EXPECT_THAT(ends.at(1).error, HasSubstr("its end not confirmed"));
  std::string log = testing::read_file(dir / "daemon.log");
  EXPECT_THAT(log, HasSubstr("not confirmed ended 2 s after scancel; given up (check squeue)"));
  EXPECT_THAT(log, HasSubstr("scancel failed"));
}

TEST_F(SlurmExecutorTest, ARefusedSubmissionNamesSbatchsError) {
  config.partition = "nosuchpartition";
  executor->submit(run(1, {{"train", "true"}}));
  wait_ends(1);
  EXPECT_EQ(ends.at(1).kind, JobEnd::Kind::kSubmitFailed);
  EXPECT_THAT(ends.at(1).error, HasSubstr("sbatch failed"));
  EXPECT_THAT(ends.at(1).error, HasSubstr("partition"));
}

}  // namespace
}  // namespace ard
