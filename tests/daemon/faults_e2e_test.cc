// End-to-end tests of the machine's faults: autoresearchd runs as a real
// process on a temporary git repo, fake_trainer is its build and stages, the
// proposer is scripted or the fake LLM server on loopback (whose request log
// counts the LLM calls). Full disks are size-limited tmpfs mounts (this needs
// root; where mounting is refused those tests skip, saying why); the locked
// store is a second SQLite connection holding BEGIN EXCLUSIVE.
#include <gmock/gmock.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "daemon/store/state_dir.h"
#include "daemon/store/store.h"
#include "daemon/util/clock.h"
#include "daemon_process.h"
#include "fake_llm_server.h"
#include "testing/test_util.h"
#include "testing/tmpfs.h"

namespace ard {
namespace {

using testing::read_file;
using testing::sh_quote;
using testing::shell;
using testing::write_file;
using llm::testing::whole_file_answer;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

const std::string kDaemon = AUTORESEARCHD;
const std::string kFake = FAKE_TRAINER;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class FaultsE2E : public ::testing::Test {
 protected:
  void SetUp() override { repo = dir.path() / "research"; }
  void TearDown() override {
    for (pid_t p : children) {
      kill(p, SIGKILL);
      int st;
      waitpid(p, &st, 0);
    }
    if (auto pid = running_daemon(repo / ".autoresearchd/daemon.pid"); pid && *pid > 0) kill(*pid, SIGKILL);
  }

  /// The research repo: train.cu says what fake_trainer reports.
  void make_repo(const std::string& train_cu = "val_bpb 1.0\nseconds 0.2\n") {
    write_file(repo / "trainer/train.cu", train_cu);
    write_file(repo / "trainer/harness/eval.h", "// fixed evaluation\n");
    write_file(repo / "program.md", "# program\nLower val_bpb.\n");
    write_file(repo / ".gitignore", "build/\n");
    ASSERT_EQ(testing::commit_base_repo(repo), 0);
  }
  /// One worker, nothing proposed ahead, fake_trainer as build and stage.
  void write_config(const std::string& proposer, double retry_wait_s = 0.2) {
    write_file(repo / "autoresearch.toml", "tag = \"e2e\"\nbudget_s = 1\nstartup_s = 1\nretry_wait_s = " +
                                               std::to_string(retry_wait_s) + "\ngpus = [0]\nlookahead = 0\n" R"(
[build]
command = "mkdir -p build && )" + kFake + R"( build trainer/train.cu"
timeout_s = 10
[[stage]]
name = "train"
command = ")" + kFake + R"( run trainer/train.cu"
timeout_s = 60
[data]
enabled = false
[preflight]
gpu = "off"
)" + proposer);
  }
  void write_script(const nlohmann::json& entries) {
    std::ofstream(dir.path() / "script.json") << entries.dump();
  }
  std::string scripted() const {
    return "[proposer]\nkind = \"scripted\"\nscript = \"" + (dir.path() / "script.json").string() + "\"\n";
  }
  static std::string llm(const llm::testing::FakeLlmServer& server) { return llm::testing::proposer_toml(server); }

  testing::ShellResult daemon(const std::string& args) {
    return shell("cd " + sh_quote(repo.string()) + " && " + kDaemon + " " + args);
  }
  pid_t spawn_daemon() {
    pid_t pid = testing::spawn_daemon(kDaemon, repo, dir.path() / "daemon.out");
    children.push_back(pid);
    return pid;
  }
  /// Waits for the daemon to exit; its exit status.
  int wait_exit(pid_t pid, double timeout_s) {
    auto t0 = std::chrono::steady_clock::now();
    int st = 0;
    while (waitpid(pid, &st, WNOHANG) == 0) {
      if (seconds_since(t0) > timeout_s) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    children.erase(std::remove(children.begin(), children.end(), pid), children.end());
    return st;
  }
  void stop_daemon(pid_t pid) {
    kill(pid, SIGTERM);
    int st = wait_exit(pid, 30);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(repo / ".autoresearchd/daemon.log");
  }
  std::vector<ExperimentRow> wait_for(const std::function<bool(const std::vector<ExperimentRow>&)>& pred,
                                      double timeout_s = 60) {
    return testing::wait_for_rows(repo, "e2e", pred, timeout_s);
  }
  /// Polls `status` until its output matches; returns it.
  std::string wait_for_status(const ::testing::Matcher<std::string>& m, double timeout_s = 30) {
    auto t0 = std::chrono::steady_clock::now();
    std::string out;
    while (seconds_since(t0) < timeout_s) {
      out = daemon("status").out;
      if (m.Matches(out)) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "status never matched; last:\n" << out << "daemon log:\n"
                  << read_file(repo / ".autoresearchd/daemon.log");
    return out;
  }
  /// The final states, oldest first (a row still waiting for a proposal is left out).
  static std::vector<std::string> states(const std::vector<ExperimentRow>& rows) {
    std::vector<std::string> out;
    for (const auto& r : rows)
      if (is_final_state(r.state)) out.push_back(r.state);
    return out;
  }
  std::filesystem::path db_path() const { return repo / ".autoresearchd/results.db"; }

  testing::TempDir dir;
  std::filesystem::path repo;
  std::vector<pid_t> children;
};

// A full logs directory: the build's and the stage's output cannot be
// written. Before, every healthy run was recorded as `crash: printed no
// summary block`; now the daemon pauses, names the directory and its free
// space, and runs the experiment again once there is room.
TEST_F(FaultsE2E, AFullLogsDirectoryPausesAndRunsTheExperimentAgainInsteadOfACrash) {
  make_repo();
  testing::SmallTmpfs logs(repo / ".autoresearchd/logs", 1 << 20);
  if (!logs.mounted()) GTEST_SKIP() << logs.why_not();
  logs.fill();
  write_script({{{"description", "better"},
                 {"writes", {{{"path", "trainer/train.cu"}, {"content", "val_bpb 0.9\nseconds 0.2\n"}}}}}});
  write_config(scripted());
  pid_t pid = spawn_daemon();

  const std::string logs_dir = (repo / ".autoresearchd/logs").string();
  std::string status = wait_for_status(HasSubstr("paused: " + logs_dir));
  EXPECT_THAT(status, MatchesRegex("(.|\n)*paused: " + logs_dir +
                                   ": No space left on device \\(0 B free\\), retrying at [0-9]{2}:[0-9]{2}\n(.|\n)*"));
  Store early(db_path().string());
  for (const auto& r : early.experiments("e2e")) EXPECT_FALSE(is_final_state(r.state)) << r.state << ": " << r.error;

  logs.clear();
  auto rows = wait_for([](const auto& r) { return testing::finished(r) >= 2; });
  stop_daemon(pid);
  EXPECT_EQ(states(rows), (std::vector<std::string>{"kept", "kept"}));
  EXPECT_THAT(read_file(repo / ".autoresearchd/daemon.log"), HasSubstr("resumed: the fault cleared"));
  EXPECT_THAT(read_file(repo / ".autoresearchd/logs/1-train.log"), HasSubstr("val_bpb"));
}

// A full disk under the repo (its object store, where candidate commits are
// written): before, every proposal became `patch_rejected` in a second. Now
// the proposal is held, the daemon pauses naming the directory, and the
// proposal is committed and run once there is room, without a second LLM call.
TEST_F(FaultsE2E, AFullRepoDiskHoldsTheProposalInsteadOfRejectingIt) {
  testing::SmallTmpfs disk(repo, 16 << 20);
  if (!disk.mounted()) GTEST_SKIP() << disk.why_not();
  make_repo();
  // The store and the slots have room (start's preflight asks for 2 GB there; tmpfs takes only what is written).
  testing::SmallTmpfs state(repo / ".autoresearchd", size_t{3} << 30);
  ASSERT_TRUE(state.mounted()) << state.why_not();
  // The answer comes after the disk filled (12 s: room for a slow, loaded machine). The disk
  // is filled once the request arrived: on one GPU the start's noise rounds (which reset the
  // slot, writing under .git) come first, and the proposal is asked for after them.
  llm::testing::FakeLlmServer server(
      nlohmann::json::array({{{"hang_s", 12}, {"answer", whole_file_answer("better", "val_bpb 0.9\nseconds 0.2\n")}}}),
      "", dir.path());
  write_config(llm(server));
  pid_t pid = spawn_daemon();
  wait_for([](const auto& r) { return !r.empty() && r[0].state == "kept"; });
  for (int i = 0; i < 600 && server.requests().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(server.requests().size(), 1u) << "no proposal was asked for within 30 s";
  disk.fill();

  const std::string objects = (repo / ".git/objects").string();
  std::string status = wait_for_status(HasSubstr("paused: " + objects));
  EXPECT_THAT(status, HasSubstr("paused: " + objects + ": No space left on device (0 B free), retrying at "));
  Store early(db_path().string());
  for (const auto& r : early.experiments("e2e")) EXPECT_NE(r.state, status::kPatchRejected) << r.error;
  EXPECT_EQ(server.requests().size(), 1u);  // held, not asked again

  disk.clear();
  auto rows = wait_for([](const auto& r) { return testing::finished(r) >= 2; });
  stop_daemon(pid);
  ASSERT_EQ(states(rows), (std::vector<std::string>{"kept", "kept"})) << read_file(dir.path() / "daemon.out");
  EXPECT_EQ(rows[1].description, "better");  // the held proposal, committed once there was room
}

// A stage that fills the disk under its slot: the probe after it finds the disk
// full, so the daemon takes it for a fault of the machine and runs it again. Before,
// forever (90 runs in 45 s); now a fault that follows the same experiment is its own
// failure after two runs again, and the slot's reset frees the space.
TEST_F(FaultsE2E, AStageThatFillsTheDiskFailsAfterTwoRerunsAndTheNextExperimentRuns) {
  make_repo();
  testing::SmallTmpfs slots(repo / ".autoresearchd/worktrees", 48 << 20);
  if (!slots.mounted()) GTEST_SKIP() << slots.why_not();
  write_script({{{"description", "fill the disk"},
                 {"writes", {{{"path", "trainer/train.cu"}, {"content", "val_bpb 0.5\nFILL junk.bin\n"}}}}},
                {{"description", "honest"},
                 {"writes", {{{"path", "trainer/train.cu"}, {"content", "val_bpb 0.9\nseconds 0.2\n"}}}}}});
  write_config(scripted() + testing::kOneRunDecides);
  pid_t pid = spawn_daemon();
  auto rows = wait_for([](const auto& r) { return testing::finished(r) >= 3; });
  stop_daemon(pid);
  ASSERT_EQ(states(rows), (std::vector<std::string>{"kept", "crash", "kept"})) << read_file(dir.path() / "daemon.out");
  EXPECT_THAT(rows[1].error, HasSubstr("run met a fault of the machine each of the 3 times it ran, so it is the "
                                       "experiment's (did it fill the disk?)"));
  size_t runs_of_filler = 0;
  for (const auto& t : Store(db_path().string()).trials("e2e")) runs_of_filler += t.experiment_id == rows[1].id;
  EXPECT_EQ(runs_of_filler, 3u);
  EXPECT_FALSE(std::filesystem::exists(repo / ".autoresearchd/worktrees/e2e/junk.bin"));
}

// results.db deleted while a stage runs (30 s): the daemon notices within
// seconds, not at its next write, and stops with one line naming the file.
TEST_F(FaultsE2E, ADeletedDatabaseStopsTheDaemonWithALineNamingTheFile) {
  make_repo("val_bpb 1.0\nseconds 30\n");
  write_script(nlohmann::json::array());
  write_config(scripted());
  pid_t pid = spawn_daemon();
  wait_for([](const auto& r) { return !r.empty() && r[0].state == "running"; });
  std::filesystem::remove(db_path());
  auto t0 = std::chrono::steady_clock::now();
  int st = wait_exit(pid, 10);
  ASSERT_NE(st, -1) << "the daemon did not stop; log:\n" << read_file(repo / ".autoresearchd/daemon.log");
  EXPECT_LT(seconds_since(t0), 8);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1);
  const std::string line = "autoresearchd: error: " + db_path().string() +
                           " was deleted while the daemon had it open; stopping so nothing is written to the lost file\n";
  EXPECT_THAT(read_file(dir.path() / "daemon.out"), HasSubstr(line));
  EXPECT_FALSE(std::filesystem::exists(db_path())) << "no new file was made in its place";
}

// `start --detach` with another process holding results.db in BEGIN
// EXCLUSIVE past the busy timeout: the start fails naming the file, instead
// of printing "started" and dying later. Once the lock is gone it starts.
TEST_F(FaultsE2E, DetachedStartFailsNamingTheFileWhileAnotherProcessHoldsTheStore) {
  make_repo();
  write_script(nlohmann::json::array());
  write_config(scripted());
  std::filesystem::create_directories(db_path().parent_path());
  { Store init(db_path().string()); }
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db_path().c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto t0 = std::chrono::steady_clock::now();
  auto locked = daemon("start --detach");
  EXPECT_LT(seconds_since(t0), 30);
  EXPECT_EQ(locked.code, 1);
  EXPECT_THAT(locked.out, Not(HasSubstr("started")));
  EXPECT_THAT(locked.out, HasSubstr("autoresearchd: error: " + db_path().string() +
                                    ": cannot take the write lock: database is locked"));
  EXPECT_FALSE(running_daemon(repo / ".autoresearchd/daemon.pid"));
  sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(other);

  auto free = daemon("start --detach");
  EXPECT_EQ(free.code, 0) << free.out;
  EXPECT_THAT(free.out, HasSubstr("autoresearchd: started, pid "));
  EXPECT_EQ(daemon("stop").code, 0);
}

// The first case of issue "failing well", end to end: on a machine without a
// GPU, the default stages and the default preflight stop `start` at the GPU
// line, before anything is built, and not one LLM call is made.
TEST_F(FaultsE2E, NoGpuStopsAtPreflightWithoutAnLlmCall) {
  if (shell("nvidia-smi -L").code == 0) GTEST_SKIP() << "this machine has a GPU";
  make_repo();
  llm::testing::FakeLlmServer server(
      nlohmann::json::array({{{"answer", whole_file_answer("x", "val_bpb 0.9\n")}}}), "", dir.path());
  // Only the tag and the proposer: default build, stages, data and preflight.
  write_file(repo / "autoresearch.toml", "tag = \"e2e\"\n" + llm(server));
  auto start = daemon("start");
  EXPECT_EQ(start.code, 1);
  EXPECT_THAT(start.out, HasSubstr("autoresearchd: error: \u2717 gpu: no GPU visible: "));
  EXPECT_THAT(start.out, HasSubstr("preflight.gpu = \"off\""));
  EXPECT_FALSE(std::filesystem::exists(repo / ".autoresearchd")) << "nothing is built or created";
  EXPECT_EQ(server.requests().size(), 0u);
}

// The circuit breaker end to end: every proposal fails the same way; after 3
// such failures proposing pauses, status says why and until when, and the
// LLM gets no further call while paused.
TEST_F(FaultsE2E, ThreeSameFailuresPauseProposingAndNoLlmCallIsMadeWhilePaused) {
  make_repo();
  nlohmann::json steps = nlohmann::json::array();
  for (int i = 0; i < 10; ++i)
    steps.push_back({{"answer", whole_file_answer("try " + std::to_string(i),
                                                  "val_bpb 0.9\nFAIL\n# try " + std::to_string(i) + "\n")}});
  llm::testing::FakeLlmServer server(steps, "", dir.path());
  write_config(llm(server));
  pid_t pid = spawn_daemon();
  std::string status = wait_for_status(HasSubstr("paused: 3 experiments in a row failed the same way"));
  EXPECT_THAT(status, MatchesRegex("(.|\n)*paused: 3 experiments in a row failed the same way: crash: stage train "
                                   "failed \\(exit code 1\\): FAIL: loss is NaN at step 3, retrying at "
                                   "[0-9]{2}:[0-9]{2}\n(.|\n)*"));
  EXPECT_EQ(server.requests().size(), 3u);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // many retry_wait_s (0.2 s) later
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_THAT(daemon("status").out, HasSubstr("paused: 3 experiments in a row failed the same way"));
  stop_daemon(pid);
  Store store(db_path().string());
  auto rows = store.experiments("e2e");
  EXPECT_EQ(states(rows), (std::vector<std::string>{"kept", "crash", "crash", "crash"}));
}

// An unavailable provider (503 three times, retry_wait_s = 1): the wait is no
// part of the experiment's duration, which starts with the call that got it.
TEST_F(FaultsE2E, WaitingForAnUnavailableProviderIsNoPartOfTheDuration) {
  make_repo();
  nlohmann::json steps = nlohmann::json::array({{{"status", 503}}, {{"status", 503}}, {{"status", 503}}});
  steps.push_back({{"answer", whole_file_answer("better", "val_bpb 0.9\nseconds 0.2\n")}});
  llm::testing::FakeLlmServer server(steps, "", dir.path());
  write_config(llm(server), 1.0);
  pid_t pid = spawn_daemon();
  auto rows = wait_for([](const auto& r) { return r.size() >= 2 && r[1].state == "kept"; });
  stop_daemon(pid);
  ASSERT_GE(rows.size(), 2u);
  ASSERT_GE(server.requests().size(), 4u);  // three 503s, the answer (then the next proposal's)
  ASSERT_TRUE(rows[1].ended_at);
  EXPECT_LT(*rows[1].ended_at - rows[1].started_at, 2.5) << "three waits of 1 s are not the experiment's";
}

// kill -9 during a stage, a restart 3 s later: the interrupted experiment,
// its trial and the dead session end when the daemon was last known to run,
// not at the restart.
TEST_F(FaultsE2E, AfterKillNineTheInterruptedExperimentEndsWhenTheDaemonDied) {
  make_repo("val_bpb 1.0\nseconds 30\n");
  write_script(nlohmann::json::array());
  write_config(scripted());
  pid_t pid = spawn_daemon();
  wait_for([](const auto& r) { return !r.empty() && r[0].state == "running"; });
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  kill(pid, SIGKILL);
  wait_exit(pid, 10);
  const double killed_at = now_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  pid = spawn_daemon();
  // Marked interrupted at the restart (reconcile), then run again (resume.h) once the new session
  // began: the poll waits for that session, after which the row may read either.
  const auto log_file = repo / ".autoresearchd/daemon.log";
  for (int i = 0; i < 300 && read_file(log_file).find("session 2:") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop_daemon(pid);
  EXPECT_THAT(read_file(log_file), HasSubstr("reconcile: #1 marked interrupted"));
  Store store(db_path().string());
  auto sessions = store.sessions("e2e");
  ASSERT_GE(sessions.size(), 2u);
  ASSERT_TRUE(sessions[0].ended_at);
  EXPECT_LE(*sessions[0].ended_at, killed_at);
  // The interrupted run ends when the daemon was last known to run.
  auto trials = store.trials("e2e");
  ASSERT_FALSE(trials.empty());
  ASSERT_TRUE(trials[0].ended_at);
  EXPECT_LE(*trials[0].ended_at, killed_at);
  EXPECT_GE(*trials[0].ended_at, killed_at - 3) << "the daemon wrote that it ran every 2 s";
}

}  // namespace
}  // namespace ard
