// autoresearchd with executor = "slurm" as a real process, its experiments'
// stages as jobs of a real single-node Slurm cluster (slurm_cluster.h), with
// fake_trainer and the scripted proposer: jobs submitted and completed, one
// that overruns and is cancelled, one requeued that still records its result,
// a SIGKILL with jobs in flight and a restart that adopts them, and `stop`
// leaving no job in the queue.
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "daemon/store/store.h"
#include "slurm_cluster.h"
#include "testing/test_util.h"
#include "tests/daemon/daemon_process.h"

namespace ard {
namespace {

using testing::read_file;
using testing::sh_quote;
using testing::shell;
using testing::write_file;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kDaemon = AUTORESEARCHD;
const std::string kFake = FAKE_TRAINER;

using testing::edit;

class SlurmE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster.started()) << "Slurm did not start: " << cluster.error();
    repo = dir.path() / "research";
    write_file(repo / "trainer/train.cu", "val_bpb 1.0\n");
    write_file(repo / "trainer/harness/eval.h", "// fixed evaluation\n");
    write_file(repo / "program.md", "# program\nLower val_bpb.\n");
    write_file(repo / ".gitignore", "build/\n");
    ASSERT_EQ(testing::commit_base_repo(repo), 0);
  }
  void TearDown() override {
    for (pid_t p : children) {
      kill(p, SIGKILL);
      int st;
      waitpid(p, &st, 0);
    }
  }

  void write_config(double train_timeout_s, int max_jobs, const std::string& extra = "") {
    write_file(repo / "autoresearch.toml", R"(
tag = "e2e"
budget_s = 1
startup_s = 1
retry_wait_s = 0.2
max_fix_attempts = 0
lookahead = 0
executor = "slurm"
[slurm]
gres = ""
max_jobs = )" + std::to_string(max_jobs) + R"(
poll_s = 0.3
)" + extra + "\n" + testing::kOneRunDecides + R"(
[build]
command = "mkdir -p build && )" + kFake + R"( build trainer/train.cu"
timeout_s = 10
[[stage]]
name = "check"
command = ")" + kFake + R"( run trainer/train.cu --check"
timeout_s = 5
[[stage]]
name = "train"
command = ")" + kFake + R"( run trainer/train.cu"
timeout_s = )" + std::to_string(train_timeout_s) + R"(
[data]
enabled = false
[proposer]
kind = "scripted"
script = "script.json"
[preflight]
gpu = "off"
)");
  }
  void write_script(const nlohmann::json& entries) { write_file(repo / "script.json", entries.dump(2)); }
  std::filesystem::path db_path() const { return repo / ".autoresearchd/results.db"; }
  pid_t spawn_daemon(const std::string& log_name) {
    pid_t pid = testing::spawn_daemon(kDaemon, repo, dir.path() / log_name);
    children.push_back(pid);
    return pid;
  }
  void end_daemon(pid_t pid, int sig) {
    kill(pid, sig);
    int st;
    waitpid(pid, &st, 0);
    children.erase(std::remove(children.begin(), children.end(), pid), children.end());
  }
  std::vector<ExperimentRow> wait_for(const std::function<bool(const std::vector<ExperimentRow>&)>& pred,
                                      double timeout_s = 90) {
    return testing::wait_for_rows(repo, "e2e", pred, timeout_s);
  }
  std::vector<TrialRow> wait_trials(const std::function<bool(const std::vector<TrialRow>&)>& pred) {
    return testing::wait_for_trials(repo, "e2e", pred, 90);
  }
  /// Candidates' jobs running now (seen on a node, not ended).
  static size_t running_jobs(const std::vector<TrialRow>& trials) {
    size_t n = 0;
    for (const auto& t : trials)
      n += t.purpose != "baseline" && !t.ended_at && !t.slurm_job_id.empty() && !t.node.empty();
    return n;
  }
  std::string daemon(const std::string& args) { return shell("cd " + sh_quote(repo.string()) + " && " + kDaemon + " " + args).out; }

  testing::SlurmCluster cluster;
  testing::TempDir dir;
  std::filesystem::path repo;
  std::vector<pid_t> children;
};

TEST_F(SlurmE2E, JobsCompleteAndOneThatOverrunsIsCancelled) {
  write_config(3, 2);
  write_script(nlohmann::json::array({edit("improve", "val_bpb 0.95\n"), edit("regress", "val_bpb 0.97\n"),
                                      edit("hang", "val_bpb 0.5\nHANG\n")}));
  pid_t pid = spawn_daemon("daemon.log");
  auto rows = wait_for([](const auto& r) { return testing::finished(r) >= 4; });
  end_daemon(pid, SIGTERM);
  ASSERT_GE(rows.size(), 4u);
  std::map<std::string, ExperimentRow> by;
  for (const auto& r : rows) by[r.description] = r;
  EXPECT_EQ(by["baseline"].state, "kept");
  EXPECT_EQ(by["improve"].state, "kept");
  // regress is discarded against improve when it is proposed once improve is the best; when it
  // was proposed earlier, against the baseline (a matter of timing), its whole-file edit does not
  // apply onto the new best and it ends as a conflict. Either way it is not kept.
  EXPECT_THAT(by["regress"].state, ::testing::AnyOf("discarded", "conflict")) << by["regress"].error;
  EXPECT_EQ(by["hang"].state, "timeout");
  EXPECT_THAT(by["hang"].error, HasSubstr("ran past its timeout"));
  // Every trial ran as a recorded job on this cluster's node.
  Store store(db_path().string());
  std::string host = shell("hostname").out;
  host = host.substr(0, host.find('\n'));
  for (const auto& t : store.trials("e2e")) {
    if (t.status == "interrupted") continue;
    EXPECT_FALSE(t.slurm_job_id.empty()) << "trial " << t.id;
    EXPECT_EQ(t.node, host) << "trial " << t.id;
  }
  EXPECT_THAT(read_file(repo / ".autoresearchd/logs/2-job.log"), HasSubstr("autoresearchd: stage train"));
  EXPECT_EQ(cluster.jobs("pending,running,completing"), "");
  EXPECT_EQ(cluster.leftovers(), "");  // the hang ignores TERM: nothing of it outlived its job
}

TEST_F(SlurmE2E, ARequeuedJobStillRecordsItsResult) {
  write_config(30, 1);
  write_script(nlohmann::json::array({edit("slow improve", "val_bpb 0.9\nseconds 4\n")}));
  pid_t pid = spawn_daemon("daemon.log");
  // The candidate's job is running (the baseline's trial is the first).
  auto trials = wait_trials([](const auto& t) { return t.size() >= 2 && !t[1].node.empty() && !t[1].ended_at; });
  ASSERT_GE(trials.size(), 2u);
  auto r = shell("scontrol requeue " + trials[1].slurm_job_id);
  ASSERT_EQ(r.code, 0) << r.out;
  auto rows = wait_for([](const auto& r) { return r.size() >= 2 && r[1].state == "kept"; }, 120);
  end_daemon(pid, SIGTERM);
  ASSERT_GE(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(*rows[1].val_bpb, 0.9);
  std::string log = read_file(repo / ".autoresearchd/logs/2-job.log");
  EXPECT_THAT(log, HasSubstr("(restart 0)"));
  EXPECT_THAT(log, HasSubstr("(restart 1)"));
  EXPECT_THAT(read_file(repo / ".autoresearchd/daemon.log"), HasSubstr("was requeued"));
}

TEST_F(SlurmE2E, SigkillWithJobsInFlightThenARestartAdoptsThemAndRecordsResults) {
  write_config(60, 2);
  write_script(nlohmann::json::array({edit("improve slowly", "val_bpb 0.9\nseconds 8\n"),
                                      edit("improve a little", "val_bpb 0.95\nseconds 2\n")}));
  pid_t first = spawn_daemon("first.log");
  auto trials = wait_trials([](const auto& t) { return running_jobs(t) == 2; });
  ASSERT_EQ(running_jobs(trials), 2u);
  end_daemon(first, SIGKILL);
  // One of them ends while no daemon runs.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  pid_t second = spawn_daemon("second.log");
  auto rows = wait_for([](const auto& r) { return r.size() >= 3 && testing::finished(r) >= 3; });
  end_daemon(second, SIGTERM);
  ASSERT_GE(rows.size(), 3u);
  std::map<std::string, ExperimentRow> by;
  for (const auto& r : rows) by[r.description] = r;
  EXPECT_EQ(by["improve slowly"].state, "kept");
  EXPECT_EQ(by["improve a little"].state, "discarded");  // 0.95 against the kept 0.9
  ASSERT_TRUE(by["improve a little"].val_bpb);
  EXPECT_DOUBLE_EQ(*by["improve a little"].val_bpb, 0.95);
  // The slow job was still running when the daemon came back: adopted, seen
  // running by the new daemon, then recorded; the quick one had ended.
  std::map<int64_t, std::string> job_of;
  for (const auto& t : trials) job_of[t.experiment_id] = t.slurm_job_id;
  const int64_t slow = by["improve slowly"].id, quick = by["improve a little"].id;
  std::string log = read_file(repo / ".autoresearchd/daemon.log");
  size_t restart = log.find("reconcile: #");
  ASSERT_NE(restart, std::string::npos) << log;
  std::string second_log = log.substr(restart);
  for (int64_t id : {slow, quick}) {
    const std::string job = "#" + std::to_string(id) + " Slurm job " + job_of[id];
    EXPECT_THAT(second_log, HasSubstr("reconcile: " + job + " adopted"));
    EXPECT_THAT(second_log, HasSubstr("reconcile: " + job + " ended: val_bpb"));
  }
  EXPECT_THAT(second_log, HasSubstr("#" + std::to_string(slow) + " Slurm job " + job_of[slow] + " running on"));
  EXPECT_THAT(second_log, Not(HasSubstr("#" + std::to_string(quick) + " Slurm job " + job_of[quick] + " running on")))
      << second_log;
  Store store(db_path().string());
  for (const auto& t : store.trials("e2e")) EXPECT_EQ(t.status, "ok") << "trial " << t.id;
  EXPECT_EQ(cluster.jobs("pending,running,completing"), "");
}

// A job that fails the harness's integrity probe while no daemon runs is
// `tampered` when the restart finds it ended, as it is when a live daemon sees
// it end (run_end.h): the restart once recorded it as a crash.
TEST_F(SlurmE2E, AJobThatFailsItsIntegrityProbeWhileTheDaemonIsDownIsTamperedAtRestart) {
  write_config(60, 1);
  write_script(nlohmann::json::array({edit("fool the metric", "val_bpb 0.5\nseconds 3\nPROBE_FAIL\n")}));
  pid_t first = spawn_daemon("first.log");
  auto trials = wait_trials([](const auto& t) { return running_jobs(t) == 1 && t.size() >= 2; });
  ASSERT_EQ(running_jobs(trials), 1u);
  end_daemon(first, SIGKILL);
  std::this_thread::sleep_for(std::chrono::seconds(5));  // the job fails its probe meanwhile
  EXPECT_EQ(cluster.jobs("pending,running,completing"), "");
  pid_t second = spawn_daemon("second.log");
  auto rows = wait_for([](const auto& r) { return r.size() >= 2 && r[1].state == "tampered"; });
  end_daemon(second, SIGTERM);
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[1].state, "tampered");
  EXPECT_THAT(rows[1].error, HasSubstr("integrity probe failed: causality: row 0 position 5"));
  EXPECT_THAT(read_file(repo / ".autoresearchd/daemon.log"),
              HasSubstr("reconcile: #2 Slurm job " + trials.back().slurm_job_id + ": tampered: "));
}

TEST_F(SlurmE2E, ARestartWithOnRestartCancelCancelsTheJobsItFinds) {
  write_config(120, 1, "on_restart = \"cancel\"\n");
  write_script(nlohmann::json::array({edit("hang", "val_bpb 0.5\nHANG\n")}));
  pid_t first = spawn_daemon("first.log");
  auto trials = wait_trials([](const auto& t) { return running_jobs(t) == 1; });
  ASSERT_EQ(running_jobs(trials), 1u);
  const TrialRow hang = trials.back();
  end_daemon(first, SIGKILL);
  EXPECT_THAT(cluster.jobs("running"), HasSubstr(hang.slurm_job_id + "|RUNNING"));  // the job outlived the daemon
  pid_t second = spawn_daemon("second.log");
  // The job it found is cancelled; the experiment, interrupted, runs again as a job of its own.
  trials = wait_trials([&](const auto& t) {
    return std::any_of(t.begin(), t.end(), [&](const TrialRow& r) {
      return r.experiment_id == hang.experiment_id && r.id != hang.id && !r.ended_at && !r.node.empty();
    });
  });
  EXPECT_THAT(cluster.jobs("pending,running,completing"), Not(HasSubstr(hang.slurm_job_id + "|")));
  end_daemon(second, SIGTERM);
  EXPECT_EQ(cluster.jobs("pending,running,completing"), "");
  auto rows = Store(db_path().string()).experiments("e2e");
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[1].resumes, 1);
  EXPECT_EQ(rows[1].state, "interrupted");  // by the second stop
  std::string log = read_file(repo / ".autoresearchd/daemon.log");
  EXPECT_THAT(log, HasSubstr("reconcile: #2 Slurm job " + hang.slurm_job_id + " to be cancelled"));
  EXPECT_THAT(log, HasSubstr("scancel " + hang.slurm_job_id));
  EXPECT_THAT(log, HasSubstr("#2 resumed (the daemon stopped while the experiment was running (stage job)"));
  for (const auto& t : Store(db_path().string()).trials("e2e"))
    if (t.id == hang.id) EXPECT_EQ(t.status, "interrupted");
}

TEST_F(SlurmE2E, WithBuildJobTheJobBuildsFirstAndABrokenBuildIsABuildFailure) {
  write_config(30, 1, "build = \"job\"\n");
  write_script(nlohmann::json::array({edit("break the build", "val_bpb 0.9\nBUILD_ERROR 'x' was not declared\n"),
                                      edit("improve", "val_bpb 0.9\n")}));
  pid_t pid = spawn_daemon("daemon.log");
  auto rows = wait_for([](const auto& r) { return testing::finished(r) >= 3; });
  end_daemon(pid, SIGTERM);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[0].state, "kept");
  EXPECT_EQ(rows[1].state, "build_fail");
  EXPECT_THAT(rows[1].error, HasSubstr("build failed (exit code 1)"));
  EXPECT_THAT(rows[1].error, HasSubstr("'x' was not declared"));
  EXPECT_EQ(rows[2].state, "kept");
  // The build ran in the job, on the node; none ran on the daemon's machine.
  const auto logs = repo / ".autoresearchd/logs";
  EXPECT_THAT(read_file(logs / "3-job.log"), HasSubstr("autoresearchd: stage build\n"));
  EXPECT_THAT(read_file(logs / "2-job.log"), HasSubstr("autoresearchd: stage build exit 1"));
  EXPECT_FALSE(std::filesystem::exists(logs / "3-build.log"));
}

TEST_F(SlurmE2E, StopCancelsEveryJobAndLeavesNoneInTheQueue) {
  write_config(120, 2);
  write_script(nlohmann::json::array({edit("hang 1", "val_bpb 0.5\nHANG\n"), edit("hang 2", "val_bpb 0.6\nHANG\n")}));
  ASSERT_EQ(shell("cd " + sh_quote(repo.string()) + " && " + kDaemon + " start --detach").code, 0);
  auto trials = wait_trials([](const auto& t) { return running_jobs(t) == 2; });
  ASSERT_EQ(running_jobs(trials), 2u);
  ASSERT_NE(cluster.jobs("running"), "");
  std::string host = shell("hostname").out;
  host = host.substr(0, host.find('\n'));
  std::string status = daemon("status");
  std::cout << "status with two jobs running:\n" << status;
  for (const auto& t : trials)
    if (t.purpose != "baseline")
      EXPECT_THAT(status, HasSubstr("#" + std::to_string(t.experiment_id) + " running stage job (Slurm job " +
                                    t.slurm_job_id + " on " + host + ")"));
  auto out = shell("cd " + sh_quote(repo.string()) + " && " + kDaemon + " stop");
  ASSERT_EQ(out.code, 0) << out.out;
  EXPECT_EQ(cluster.jobs("pending,running,completing"), "");
  EXPECT_EQ(cluster.leftovers(), "");
  Store store(db_path().string());
  for (const auto& r : store.experiments("e2e")) {
    if (r.is_baseline) continue;
    EXPECT_EQ(r.state, "interrupted") << r.description;
    EXPECT_THAT(r.error, HasSubstr("cancelled")) << r.description;
  }
  EXPECT_TRUE(store.unfinished().empty());
  const TrialRow& last = trials.back();
  EXPECT_THAT(daemon("show " + std::to_string(last.experiment_id)),
              HasSubstr("slurm job:    " + last.slurm_job_id + " on " + host + " (interrupted), output " + last.slurm_log));
}

}  // namespace
}  // namespace ard
