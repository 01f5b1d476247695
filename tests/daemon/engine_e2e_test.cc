// End-to-end tests of the engine with several workers: autoresearchd runs as a
// real process on temporary git repos, fake_trainer is its build and stages,
// and the proposer is scripted or the fake LLM server on loopback. On a
// machine without GPUs `gpus = [0, 1, ...]` only labels the workers; each
// worker's children still get CUDA_VISIBLE_DEVICES=<its id>.
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "daemon/decide/promotion.h"
#include "daemon/exec/process_runner.h"
#include "daemon/store/state_dir.h"
#include "daemon/store/store.h"
#include "daemon_process.h"
#include "fake_llm_server.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using testing::read_file;
using testing::sh_quote;
using testing::shell;
using testing::write_file;
using llm::testing::whole_file_answer;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kDaemon = AUTORESEARCHD;
const std::string kFake = FAKE_TRAINER;

/// The base trainer file: lines far enough apart that edits to different
/// slots re-apply onto each other, edits to the same slot conflict.
const std::string kBase = "val_bpb 1.0\nseconds 0.2\n#\n# a-slot\n#\n#\n# b-slot\n#\n";

std::string with(std::string text, const std::string& from, const std::string& to) {
  return text.replace(text.find(from), from.size(), to);
}

using testing::edit;

class EngineE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = dir.path() / "research";
    write_file(repo / "trainer/train.cu", kBase);
    write_file(repo / "trainer/harness/eval.h", "// fixed evaluation\n");
    write_file(repo / "program.md", "# program\nLower val_bpb.\n");
    write_file(repo / ".gitignore", "build/\n");
    ASSERT_EQ(testing::commit_base_repo(repo), 0);
    base = trim(git("rev-parse HEAD").out);
  }
  void TearDown() override {
    if (auto pid = running_daemon(repo / ".autoresearchd/daemon.pid"); pid && *pid > 0) {
      kill(*pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    for (pid_t p : children) {
      kill(p, SIGKILL);
      int st;
      waitpid(p, &st, 0);
    }
  }

  static std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }
  testing::ShellResult git(const std::string& args) { return shell("cd " + sh_quote(repo.string()) + " && git " + args); }
  testing::ShellResult daemon(const std::string& args) {
    return shell("cd " + sh_quote(repo.string()) + " && " + kDaemon + " " + args);
  }

  /// gpus: the TOML value; proposer: the [proposer] (and [llm]) tables.
  /// The old rule's knobs: no noise rounds (so no repeats of the best) and no
  /// confirmation runs; σ is then never known and strictly lower decides.
  static constexpr const char* kOldRule = testing::kOneRunDecides;
  void write_config(const std::string& gpus, int lookahead, const std::string& proposer, double train_timeout = 30,
                    const std::string& decisions = kOldRule,
                    const std::string& train = "echo gpu=$CUDA_VISIBLE_DEVICES; " + kFake + " run trainer/train.cu") {
    write_file(repo / "autoresearch.toml", "tag = \"e2e\"\nbudget_s = 1\nstartup_s = 1\nretry_wait_s = 0.2\n"
                                           "gpus = " + gpus + "\nlookahead = " + std::to_string(lookahead) + R"(
[build]
command = "mkdir -p build && )" + kFake + R"( build trainer/train.cu"
timeout_s = 10
[[stage]]
name = "train"
command = ")" + train + R"("
timeout_s = )" + std::to_string(train_timeout) + R"(
[data]
enabled = false
[preflight]
gpu = "off"
)" + proposer + decisions);
  }
  static std::string scripted() { return "[proposer]\nkind = \"scripted\"\nscript = \"script.json\"\n"; }
  static std::string llm(const llm::testing::FakeLlmServer& server) { return llm::testing::proposer_toml(server); }

  std::filesystem::path db_path() const { return repo / ".autoresearchd/results.db"; }

  pid_t spawn_daemon(const std::string& log_name) {
    pid_t pid = testing::spawn_daemon(kDaemon, repo, dir.path() / log_name);
    children.push_back(pid);
    return pid;
  }
  void stop_daemon(pid_t pid) {
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    children.erase(std::remove(children.begin(), children.end(), pid), children.end());
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(repo / ".autoresearchd/daemon.log");
  }

  std::vector<ExperimentRow> wait_for(const std::function<bool(const std::vector<ExperimentRow>&)>& pred,
                                      double timeout_s = 60) {
    return testing::wait_for_rows(repo, "e2e", pred, timeout_s);
  }
  static size_t finished(const std::vector<ExperimentRow>& rows) { return testing::finished(rows); }

  testing::TempDir dir;
  std::filesystem::path repo;
  std::string base;
  std::vector<pid_t> children;
};

TEST_F(EngineE2E, FourWorkersShareOneHistoryAndTrainSideBySide) {
  nlohmann::json steps = nlohmann::json::array();
  for (int i = 0; i < 40; ++i) {
    double v = 0.99 - 0.01 * (i % 7) + 0.001 * i;  // some better than the best, most not
    steps.push_back({{"answer", whole_file_answer("try " + std::to_string(i) + " at " + std::to_string(v),
                                                  "val_bpb " + std::to_string(v) + "\nseconds 0.6\n")}});
  }
  llm::testing::FakeLlmServer server(steps, "", dir.path());
  write_config("[0, 1, 2, 3]", 1, llm(server));
  pid_t pid = spawn_daemon("daemon.out");
  wait_for([](const auto& r) {
    std::set<std::string> busy;
    for (const auto& e : r)
      if (e.state == "running") busy.insert(e.gpu);
    return busy.size() >= 3;
  });
  auto running = daemon("status");
  std::cout << "status with four workers:\n" << running.out;
  EXPECT_THAT(running.out, HasSubstr("gpu 0: "));
  EXPECT_THAT(running.out, HasSubstr("gpu 3: "));
  EXPECT_THAT(running.out, HasSubstr("proposals: "));
  wait_for([](const auto& r) { return finished(r) >= 16; });
  stop_daemon(pid);

  Store store(db_path().string());
  auto rows = store.experiments("e2e");
  auto trials = store.trials("e2e");
  // Every GPU trained, and trainings overlapped in time.
  std::set<std::string> gpus;
  size_t max_overlap = 0;
  for (const auto& t : trials) {
    gpus.insert(t.gpu);
    size_t overlap = 0;
    for (const auto& u : trials)
      if (u.started_at <= t.started_at && u.ended_at.value_or(1e18) > t.started_at) ++overlap;
    max_overlap = std::max(max_overlap, overlap);
  }
  EXPECT_EQ(gpus, (std::set<std::string>{"0", "1", "2", "3"}));
  EXPECT_GE(max_overlap, 3u);
  // Each child saw its own GPU.
  for (const auto& r : rows) {
    if (r.gpu.empty() || r.state == "interrupted") continue;
    std::string log = read_file(repo / ".autoresearchd/logs" / (std::to_string(r.id) + "-train.log"));
    if (log.empty()) log = read_file(repo / ".autoresearchd/logs" / (std::to_string(r.id) + "-r1-train.log"));
    EXPECT_THAT(log, HasSubstr("gpu=" + r.gpu + "\n")) << "#" << r.id;
  }
  // The branch is the chain of kept commits, each on the one before.
  std::vector<std::string> kept;
  for (const auto& r : rows)
    if (r.state == "kept" && !r.is_baseline) kept.push_back(r.commit);
  ASSERT_FALSE(kept.empty());
  std::string chain = git("rev-list --first-parent --reverse autoresearch/e2e").out;
  std::string want = base + "\n";
  for (const auto& c : kept) want += c + "\n";
  EXPECT_EQ(chain, want);
  EXPECT_EQ(git("rev-list --merges autoresearch/e2e").out, "");
  // One history: a later prompt lists experiments trained on different GPUs.
  auto requests = server.requests();
  ASSERT_GE(requests.size(), 10u);
  std::string last_prompt = requests.back()["body"].dump();
  std::set<std::string> gpus_in_prompt;
  for (const auto& r : rows)
    if (is_final_state(r.state) && !r.gpu.empty() && r.ended_at && r.ended_at < rows.back().started_at &&
        last_prompt.find(r.description) != std::string::npos)
      gpus_in_prompt.insert(r.gpu);
  EXPECT_GE(gpus_in_prompt.size(), 2u);
  EXPECT_TRUE(store.unfinished().empty());
  auto status = daemon("status");
  EXPECT_THAT(status.out, HasSubstr("per GPU-hour"));
  EXPECT_THAT(status.out, HasSubstr("GPU busy"));
}

TEST_F(EngineE2E, AStaleWinnerIsReappliedOntoTheNewBestAndMeasuredAgain) {
  // Both edits are made against the base. "fast" (0.9) is kept while "slow"
  // still trains; slow's 0.8 beats 0.9, but it was measured without fast's
  // change: re-applied onto fast, it measures 0.7 and is kept on top.
  std::string fast = with(kBase, "# a-slot", "bonus 0.1");
  std::string slow = with(with(kBase, "# b-slot", "bonus 0.2"), "seconds 0.2", "seconds 2.5");
  write_file(repo / "script.json", nlohmann::json::array({edit("fast", fast), edit("slow", slow)}).dump());
  write_config("[0, 1]", 1, scripted());
  pid_t pid = spawn_daemon("daemon.out");
  auto rows = wait_for([](const auto& r) { return r.size() >= 3 && is_final_state(r[2].state); });
  stop_daemon(pid);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[1].state, "kept");
  EXPECT_EQ(rows[1].description, "fast");
  const ExperimentRow& s = rows[2];
  EXPECT_EQ(s.description, "slow");
  EXPECT_EQ(s.state, "kept") << s.error;
  EXPECT_FALSE(s.reapplied_from.empty());
  EXPECT_NE(s.reapplied_from, s.commit);
  EXPECT_EQ(s.parent_commit, rows[1].commit);
  EXPECT_DOUBLE_EQ(*s.val_bpb, 0.7);
  EXPECT_EQ(trim(git("rev-parse " + s.commit + "^").out), rows[1].commit);
  EXPECT_EQ(trim(git("rev-parse autoresearch/e2e").out), s.commit);
  EXPECT_EQ(trim(git("rev-parse refs/autoresearch/e2e/exp/" + std::to_string(s.id)).out), s.commit);
  EXPECT_EQ(git("cat-file -e " + s.reapplied_from).code, 0);  // the original stays in the object store
  // Two trials: the change as made, then re-applied.
  std::vector<TrialRow> mine;
  for (const auto& t : Store(db_path().string()).trials("e2e"))
    if (t.experiment_id == s.id) mine.push_back(t);
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(mine[0].purpose, "candidate");
  EXPECT_DOUBLE_EQ(*mine[0].val_bpb, 0.8);
  EXPECT_EQ(mine[1].purpose, "reapplied");
  EXPECT_DOUBLE_EQ(*mine[1].val_bpb, 0.7);
  EXPECT_THAT(daemon("show " + std::to_string(s.id)).out, HasSubstr("re-applied:"));
  EXPECT_EQ(git("log --format=%s autoresearch/e2e").out, "slow\nfast\nbase\n");
}

TEST_F(EngineE2E, AConflictIsRecordedAndItsDiffGoesBackToTheProposer) {
  // Both change the same line: the slow winner does not re-apply.
  std::string fast = with(kBase, "# a-slot", "bonus 0.1");
  std::string slow = with(with(kBase, "# a-slot", "bonus 0.2"), "seconds 0.2", "seconds 2.5");
  nlohmann::json steps = nlohmann::json::array({{{"answer", whole_file_answer("fast", fast)}},
                                                {{"answer", whole_file_answer("slow", slow)}}});
  for (int i = 0; i < 6; ++i)
    steps.push_back({{"hang_s", 1}, {"answer", whole_file_answer("later " + std::to_string(i),
                                                                  with(kBase, "#\n#\n# b", "#\n#\n# b" + std::to_string(i)))}});
  llm::testing::FakeLlmServer server(steps, "", dir.path());
  write_config("[0, 1]", 1, llm(server));
  pid_t pid = spawn_daemon("daemon.out");
  auto rows = wait_for([](const auto& r) {
    return std::any_of(r.begin(), r.end(), [](const ExperimentRow& e) { return e.state == "conflict"; });
  });
  // The next requests carry the conflict and the stale diff.
  auto t0 = std::chrono::steady_clock::now();
  bool told = false;
  while (!told && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
    for (const auto& r : server.requests())
      if (r["body"].dump().find("conflict") != std::string::npos &&
          r["body"].dump().find("+bonus 0.2") != std::string::npos)
        told = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  stop_daemon(pid);
  const ExperimentRow* conflict = nullptr;
  for (const auto& r : Store(db_path().string()).experiments("e2e"))
    if (r.state == "conflict" && r.description == "slow") conflict = new ExperimentRow(r);
  ASSERT_TRUE(conflict);
  EXPECT_THAT(conflict->error, HasSubstr("conflicts in trainer/train.cu"));
  if (conflict->val_bpb) EXPECT_DOUBLE_EQ(*conflict->val_bpb, 0.8);  // what it measured is kept
  EXPECT_TRUE(told);
  EXPECT_EQ(trim(git("rev-parse refs/autoresearch/e2e/exp/" + std::to_string(conflict->id)).out), conflict->commit);
  delete conflict;
}

TEST_F(EngineE2E, ASecretAStagePrintsBeforeItCrashesNeverReachesTheProvider) {
  // A file the user can read, printed by a stage; its crash's log tail goes into the next prompt.
  // Unconfined, so the stage sees the test's /tmp (in the sandbox /tmp is its own).
  const auto secret_file = dir.path() / "id_ed25519";
  write_file(secret_file,
             "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMw\n"
             "-----END OPENSSH PRIVATE KEY-----\nexport HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz\n");
  nlohmann::json steps = nlohmann::json::array(
      {{{"answer", whole_file_answer("print and crash", with(kBase, "# a-slot", "PRINT " + secret_file.string() + "\nCRASH"))}},
       {{"answer", whole_file_answer("after", with(kBase, "# b-slot", "bonus 0.1"))}}});
  llm::testing::FakeLlmServer server(steps, "", dir.path());
  write_config("[0]", 0, llm(server) + "[sandbox]\nmode = \"off\"\n");
  pid_t pid = spawn_daemon("daemon.out");
  auto rows = wait_for([](const auto& r) { return testing::finished(r) >= 3; });
  stop_daemon(pid);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[1].state, "crash") << rows[1].error;
  EXPECT_THAT(rows[1].log_tail, HasSubstr("b3BlbnNzaC1rZXktdjEAAAAA"));  // the local log keeps what ran
  auto requests = server.requests();
  ASSERT_GE(requests.size(), 2u);
  const std::string second = requests[1]["body"].dump();
  EXPECT_THAT(second, HasSubstr("crash"));
  EXPECT_THAT(second, HasSubstr("[redacted private key]"));
  EXPECT_THAT(second, Not(HasSubstr("b3BlbnNzaC1rZXktdjEAAAAA")));
  EXPECT_THAT(second, Not(HasSubstr("hf_abcdefghijklmnopqrstuvwxyz")));
}

TEST_F(EngineE2E, StopEndsAnLlmCallOfSixtySecondsWithinTenSeconds) {
  nlohmann::json steps = nlohmann::json::array(
      {{{"hang_s", 60}, {"answer", whole_file_answer("slow answer", with(kBase, "# a-slot", "bonus 0.1"))}}});
  llm::testing::FakeLlmServer server(steps, "", dir.path());
  write_config("[0]", 1, llm(server));
  ASSERT_EQ(daemon("start --detach").code, 0);
  auto t_wait = std::chrono::steady_clock::now();
  while (server.requests().empty() && std::chrono::steady_clock::now() - t_wait < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(server.requests().size(), 1u);  // the call is in flight
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto t0 = std::chrono::steady_clock::now();
  auto stopped = daemon("stop --timeout 10");
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(stopped.code, 0) << stopped.out;
  EXPECT_LT(took, 10);
  Store store(db_path().string());
  EXPECT_TRUE(store.unfinished().empty());
  EXPECT_EQ(store.last_session()->end_reason, "stopped");
  EXPECT_EQ(trim(git("rev-parse autoresearch/e2e").out), base);
}

TEST_F(EngineE2E, SigkillWithFourInFlightThenRestartLeavesNoOrphan) {
  nlohmann::json script = nlohmann::json::array();
  for (int i = 0; i < 4; ++i)
    script.push_back(edit("hang " + std::to_string(i), with(kBase, "# a-slot", "HANG " + std::to_string(i))));
  // It waits, built, behind the hangs when the daemon dies.
  script.push_back(edit("improve", with(kBase, "# b-slot", "bonus 0.3")));
  write_file(repo / "script.json", script.dump());
  write_config("[0, 1, 2, 3]", 1, scripted(), 60);
  pid_t first = spawn_daemon("first.out");
  // Four hangs training, each past its first output (a child that writes
  // after the daemon died meets a closed pipe and ends by itself).
  auto rows = wait_for([this](const auto& r) {
    int n = 0;
    for (const auto& e : r)
      n += e.description.rfind("hang", 0) == 0 && e.state == "running" && e.pgid &&
                   read_file(repo / ".autoresearchd/logs" / (std::to_string(e.id) + "-train.log")).find("step 0") !=
                       std::string::npos
               ? 1
               : 0;
    return n == 4;
  });
  std::vector<pid_t> groups;
  for (const auto& r : rows)
    if (r.description.rfind("hang", 0) == 0 && r.state == "running" && r.pgid)
      groups.push_back(static_cast<pid_t>(*r.pgid));
  ASSERT_EQ(groups.size(), 4u);
  kill(first, SIGKILL);
  int st;
  waitpid(first, &st, 0);
  children.clear();
  // Do they outlive the daemon? In the sandbox, --die-with-parent ends them with it, which
  // takes a moment; a child that writes to its closed pipe may end too. So a group counts as
  // an orphan only if it is still there 2 s later: then the restart must kill it, and say so.
  size_t alive = 0;
  for (int i = 0; i < 40; ++i) {
    alive = 0;
    for (pid_t g : groups) alive += group_members(g).empty() ? 0 : 1;
    if (alive == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  // The restarted daemon runs the four again, from their commits (they hang again, now
  // until a 2 s timeout), and goes on with the script's next entry.
  script.push_back(edit("improve", with(kBase, "# b-slot", "bonus 0.3")));
  write_file(repo / "script.json", script.dump());
  write_config("[0, 1, 2, 3]", 1, scripted(), 2);
  pid_t second = spawn_daemon("second.out");
  rows = wait_for([](const auto& r) {
    return std::any_of(r.begin(), r.end(), [](const ExperimentRow& e) { return e.description == "improve" && e.state == "kept"; });
  });
  for (pid_t g : groups) EXPECT_TRUE(group_members(g).empty()) << "group " << g;
  if (alive > 0)
    EXPECT_THAT(read_file(repo / ".autoresearchd/daemon.log"), HasSubstr("killed orphaned process group"));
  stop_daemon(second);
  Store store(db_path().string());
  EXPECT_TRUE(store.unfinished().empty());
  int resumed = 0;
  for (const auto& r : store.experiments("e2e")) {
    if (r.description.rfind("hang", 0) != 0) continue;
    EXPECT_EQ(r.resumes, 1) << r.description;
    EXPECT_EQ(r.state, "timeout") << r.description << ": " << r.error;
    resumed += r.resumes;
  }
  EXPECT_EQ(resumed, 4);
  auto best = store.best("e2e");
  ASSERT_TRUE(best);
  EXPECT_EQ(best->description, "improve");
  EXPECT_EQ(trim(git("rev-parse autoresearch/e2e").out), best->commit);
  for (const auto& t : store.trials("e2e")) EXPECT_TRUE(t.ended_at);
}

// ---------------------------------------------------------------- decisions that hold

TEST_F(EngineE2E, AnUndecidedCandidateIsConfirmedOnAnotherGpuThenKept) {
  // σ = 0.01 (the prior; rounds off, so the baseline has one run). A gain of
  // 0.025 on one run: σΔ = 0.01·√2 = 0.0141, between 1.5σΔ and 2σΔ: confirm.
  // The second run goes to the other GPU; with n = 2 the margin is
  // 2·0.01·√1.5 = 0.0245 < 0.025: kept.
  write_file(repo / "script.json",
             nlohmann::json::array({edit("gain", with(kBase, "# a-slot", "bonus 0.025"))}).dump());
  write_config("[0, 1]", 0, scripted(), 30, "[noise]\nrounds = false\nprior_sigma = 0.01\n");
  pid_t pid = spawn_daemon("daemon.out");
  auto rows = wait_for([](const auto& r) { return r.size() >= 2 && is_final_state(r[1].state); });
  stop_daemon(pid);
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[1].state, "kept") << rows[1].error;
  std::vector<TrialRow> mine;
  for (const auto& t : Store(db_path().string()).trials("e2e"))
    if (t.experiment_id == rows[1].id) mine.push_back(t);
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(mine[0].purpose, "candidate");
  EXPECT_EQ(mine[1].purpose, "confirm");
  EXPECT_NE(mine[0].gpu, mine[1].gpu);
  auto show = daemon("show " + std::to_string(rows[1].id)).out;
  EXPECT_THAT(show, HasSubstr("kept: mean 0.975000 (n=2)"));
  EXPECT_THAT(show, HasSubstr("confirm"));
}

TEST_F(EngineE2E, ACandidateThatFailsItsConfirmationIsDiscarded) {
  // As above, but the gain is 0.022: confirmed on the other GPU, n = 2 gives
  // 0.022 < 0.0245 and no confirmation is left (confirmations = 1): discarded.
  write_file(repo / "script.json",
             nlohmann::json::array({edit("small", with(kBase, "# a-slot", "bonus 0.022"))}).dump());
  write_config("[0, 1]", 0, scripted(), 30, "[noise]\nrounds = false\nprior_sigma = 0.01\n[keep]\nconfirmations = 1\n");
  pid_t pid = spawn_daemon("daemon.out");
  auto rows = wait_for([](const auto& r) { return r.size() >= 2 && is_final_state(r[1].state); });
  stop_daemon(pid);
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[1].state, "discarded");
  EXPECT_THAT(rows[1].error, HasSubstr("not confirmed after 2 run(s)"));
  EXPECT_EQ(trim(git("rev-parse autoresearch/e2e").out), base);
}

TEST_F(EngineE2E, TheStartRoundRunsTheBestOnEveryGpuAndCalibratesTheBoards) {
  // Four fake boards at 0.95, 0.98, 1.00 and 1.03 × speed (daemon/sim_board.h):
  // the first round at scale 1 takes 2850..3090 steps; the boards are then
  // calibrated to the slowest, and the second round takes 2850 steps (±1) on
  // every board. σ comes from the repeats of the second round.
  write_file(repo / "trainer/train.cu", "effect 0\nseconds 0.1\n");
  git("commit -qam sim");
  write_file(repo / "script.json", "[]");
  const std::string train = "FAKE_GPU_SPEEDS=0.95,0.98,1.00,1.03 " + kFake +
                            " run trainer/train.cu --budget 300 --budget-scale {budget_scale}";
  write_config("[0, 1, 2, 3]", 0, scripted(), 30, "", train);
  pid_t pid = spawn_daemon("daemon.out");
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<NoiseRow> noise;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (!std::filesystem::exists(db_path())) continue;
    noise = Store(db_path().string()).last_noise_estimate("e2e");
    if (noise && noise->calibration == 1 && noise->sigma) break;  // a round under the calibration
  }
  auto status = daemon("status").out;
  stop_daemon(pid);
  ASSERT_TRUE(noise && noise->calibration == 1) << read_file(repo / ".autoresearchd/daemon.log");
  ASSERT_TRUE(noise->sigma);
  EXPECT_GT(*noise->sigma, 0.0001);
  EXPECT_LT(*noise->sigma, 0.006);
  std::map<std::string, std::vector<TrialRow>> by_calibration[2];
  for (const auto& t : Store(db_path().string()).trials("e2e"))
    if (t.calibration < 2 && t.status == "ok") by_calibration[t.calibration][t.gpu].push_back(t);
  const std::map<std::string, double> speed = {{"0", 0.95}, {"1", 0.98}, {"2", 1.00}, {"3", 1.03}};
  ASSERT_EQ(by_calibration[0].size(), 4u);  // the first round: every GPU, scale 1
  ASSERT_EQ(by_calibration[1].size(), 4u);  // the second: every GPU, calibrated
  for (const auto& [gpu, runs] : by_calibration[1]) {
    const TrialRow& first = by_calibration[0][gpu].front();
    EXPECT_DOUBLE_EQ(first.budget_scale, 1);
    EXPECT_EQ(*first.num_steps, static_cast<int64_t>(std::floor(300 * speed.at(gpu) / 0.1 + 1e-9)));
    const TrialRow& run = runs.front();
    EXPECT_EQ(run.purpose, "noise");
    EXPECT_NEAR(run.budget_scale, 0.95 / speed.at(gpu), 1e-3) << "GPU " << gpu;
    EXPECT_NEAR(static_cast<double>(*run.num_steps), 2850, 1) << "GPU " << gpu;
    EXPECT_GT(*run.tokens, 0);
  }
  EXPECT_THAT(status, HasSubstr("σ = "));
  EXPECT_THAT(status, HasSubstr("budget scales"));
  EXPECT_THAT(status, HasSubstr("repeats and calibration"));
}

TEST_F(EngineE2E, OnOneGpuTheStartMakesSigmaUsableAndClearCandidatesTakeOneRun) {
  // The configuration most users run: one GPU, confirmations and noise rounds
  // on (the defaults). The fake trainer simulates val_bpb with σ = 0.0015.
  // The start round runs the baseline until σ rests on df 3 (4 runs), so the
  // first candidate is decided by the keep rule on a measured σ, never by
  // "strictly lower": a gain of 0.02 (≫ σ) is kept on its first run and then
  // re-run to 3 runs as the new best; a loss of 0.02 is discarded on its first run.
  write_file(repo / "trainer/train.cu", "effect 0 a\n#\n#\neffect 0 b\nseconds 0.05\n");
  git("commit -qam sim");
  write_file(repo / "script.json",
             nlohmann::json::array({edit("gain", "effect 0.02 a\n#\n#\neffect 0 b\nseconds 0.05\n"),
                                    testing::edit_find("loss", "effect 0 b\n", "effect -0.02 b\n")})
                 .dump());
  write_config("[0]", 0, scripted(), 30, "",
               kFake + std::string(" run trainer/train.cu --budget 300 --budget-scale {budget_scale}"));
  pid_t pid = spawn_daemon("daemon.out");
  auto rows = wait_for([](const auto& r) { return r.size() >= 3 && is_final_state(r[2].state); }, 90);
  const std::string status = daemon("status").out;
  stop_daemon(pid);
  ASSERT_GE(rows.size(), 3u) << read_file(repo / ".autoresearchd/daemon.log");
  const auto trials = Store(db_path().string()).trials("e2e");
  // The baseline's runs: the start round and its settle rounds, all before any candidate ran.
  std::vector<std::string> before_first_candidate;
  for (const auto& t : trials) {
    if (t.purpose == "candidate") break;
    before_first_candidate.push_back(t.purpose);
    EXPECT_EQ(t.commit, rows[0].commit);
  }
  EXPECT_EQ(before_first_candidate, (std::vector<std::string>{"baseline", "noise", "noise", "noise"}));

  EXPECT_EQ(rows[1].description, "gain");
  EXPECT_EQ(rows[1].state, "kept") << rows[1].error;
  const std::string gain = Store(db_path().string()).decision(rows[1].id);
  EXPECT_THAT(gain, HasSubstr("(n=1)"));
  EXPECT_THAT(gain, HasSubstr("σ measured, df 3; keep margin t(df 3) = 3.31"));
  std::vector<std::string> gain_runs;
  for (const auto& t : trials)
    if (t.commit == rows[1].commit) gain_runs.push_back(t.purpose);
  EXPECT_EQ(gain_runs, (std::vector<std::string>{"candidate", "incumbent", "incumbent"}));

  EXPECT_EQ(rows[2].description, "loss");
  EXPECT_EQ(rows[2].state, "discarded");
  EXPECT_THAT(rows[2].error, HasSubstr("(n=1)"));
  EXPECT_THAT(rows[2].error, HasSubstr("< 1.50·σΔ"));
  for (const auto& r : rows) EXPECT_THAT(Store(db_path().string()).decision(r.id), Not(HasSubstr("σ not yet known")));
  EXPECT_THAT(status, HasSubstr("(measured, df "));
  EXPECT_THAT(status, HasSubstr("): usable; kept at Δ ≥ "));
  EXPECT_THAT(status, HasSubstr("σ measured"));  // the rule column
}

// The default ladder on one GPU, as users run it (confirmations, noise
// rounds, the sandbox): two kept changes make a promotion round (promote.every
// = 2). The fake trainer's `scaled` effects say how each does at rung 1 (the
// stage gets --depth-scale {depth_scale}, twice the depth, and twice the
// budget): "wide" transfers, "deep" undoes it at the larger scale. Each is
// judged against the commit before it by the transfer rule (does it keep the
// gain it had at rung 0?): "wide" transfers, "deep" is scale-bound, each with
// its evidence. `promote` asks for the next round; a
// second while one is asked for is refused in one line.
TEST_F(EngineE2E, APromotionRoundLabelsTheChangeThatTransfersAndTheOneThatDoesNot) {
  write_file(repo / "trainer/train.cu", "effect 0 a\n#\n#\neffect 0 b\nseconds 0.05\nnoise_sigma 0.001\n");
  git("commit -qam sim");
  write_file(repo / "script.json",
             nlohmann::json::array({testing::edit_find("wide", "effect 0 a\n", "effect 0.02 scaled 0.02 a\n"),
                                    testing::edit_find("deep", "effect 0 b\n", "effect 0.02 scaled -0.02 b\n")})
                 .dump());
  // max_share = 1: the night is a few seconds long, too short for a round to fit the default 25 %.
  write_config("[0]", 0, scripted() + "[promote]\nevery = 2\nmax_share = 1\n", 30, "",
               kFake + std::string(" run trainer/train.cu --budget {budget} --depth-scale {depth_scale}"));
  pid_t pid = spawn_daemon("daemon.out");
  std::vector<PromotionRoundRow> rounds;
  for (int i = 0; i < 600; ++i) {  // 120 s at most
    try {  // the daemon creates and migrates the store as it starts: read it once it can be read
      if (std::filesystem::exists(db_path())) rounds = Store::open_read_only(db_path().string())->promotion_rounds("e2e");
    } catch (const std::exception&) {
    }
    if (!rounds.empty() && rounds.back().ended_at) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  stop_daemon(pid);
  const std::string log = read_file(repo / ".autoresearchd/daemon.log");
  ASSERT_FALSE(rounds.empty()) << log;
  ASSERT_TRUE(rounds.back().ended_at) << log;
  Store store(db_path().string());
  const auto rows = store.experiments("e2e");
  std::map<std::string, int64_t> id_of;
  for (const auto& r : rows) id_of[r.description] = r.id;
  ASSERT_EQ(store.experiment(id_of["wide"])->state, "kept") << log;
  ASSERT_EQ(store.experiment(id_of["deep"])->state, "kept") << log;
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_THAT(rounds[0].outcome, HasSubstr("; #" + std::to_string(id_of["wide"]) + " transfer(s); #" +
                                               std::to_string(id_of["deep"]) + " scale-bound")) << log;
  const auto deep = store.change_label(id_of["deep"], 1);
  ASSERT_TRUE(deep) << log;
  EXPECT_EQ(deep->label, "scale_bound");
  const auto wide = store.change_label(id_of["wide"], 1);
  ASSERT_TRUE(wide) << log;
  EXPECT_EQ(wide->label, "transfers") << log;
  auto evidence = parse_evidence_json(wide->evidence);
  ASSERT_TRUE(evidence);
  EXPECT_EQ(evidence->best_n, 4);  // the base: one run, then three more for σ at the rung on df 3
  EXPECT_GE(evidence->candidate_n, 1);
  EXPECT_GT(evidence->delta, 0.01);
  int at_rung = 0;
  for (const auto& t : store.trials("e2e"))
    if (t.rung == 1) {
      ++at_rung;
      EXPECT_EQ(t.purpose, "promote");
      EXPECT_EQ(t.status, "ok") << log;
    }
  EXPECT_GE(at_rung, 6);
  EXPECT_THAT(log, HasSubstr("promotion round at rung 1 (2x)"));

  const auto asked = daemon("promote");
  EXPECT_EQ(asked.code, 0) << asked.out;
  EXPECT_THAT(asked.out, HasSubstr("promotion round 2 asked for tag e2e"));
  const auto again = daemon("promote");
  EXPECT_EQ(again.code, 1);
  EXPECT_THAT(again.out, HasSubstr("autoresearchd: error: promote: round 2 of tag e2e is asked for already"));
}

// The same ladder with the LLM proposer, as users run it: after the round,
// the history in the next prompt marks "deep" scale-bound at 2x, says not to
// build on it, and shows train.cu as it has grown with both kept changes.
TEST_F(EngineE2E, TheLlmIsToldWhichKeptChangeIsScaleBound) {
  const std::string tail = "seconds 0.05\nnoise_sigma 0.001\n";
  write_file(repo / "trainer/train.cu", "effect 0 a\n#\n#\neffect 0 b\n" + tail);
  git("commit -qam sim");
  const std::string wide = "effect 0.02 scaled 0.02 a\n#\n#\neffect 0 b\n" + tail;
  const std::string both = "effect 0.02 scaled 0.02 a\n#\n#\neffect 0.02 scaled -0.02 b\n" + tail;
  nlohmann::json steps = nlohmann::json::array({{{"answer", whole_file_answer("wide", wide)}},
                                                {{"answer", whole_file_answer("deep", both)}}});
  for (int i = 0; i < 8; ++i)  // later proposals: no effect, each a line of its own
    steps.push_back({{"answer", whole_file_answer("note " + std::to_string(i),
                                                  "effect 0.02 scaled 0.02 a\n# note " + std::to_string(i) +
                                                      "\n#\neffect 0.02 scaled -0.02 b\n" + tail)}});
  llm::testing::FakeLlmServer server(steps, "", dir.path());
  // max_share = 1: the night is a few seconds long, too short for a round to fit the default 25 %.
  write_config("[0]", 0, llm(server) + "[promote]\nevery = 2\nmax_share = 1\n", 30, "",
               kFake + std::string(" run trainer/train.cu --budget {budget} --depth-scale {depth_scale}"));
  pid_t pid = spawn_daemon("daemon.out");
  std::string marked;  // the first prompt that marks a change scale-bound
  for (int i = 0; i < 600 && marked.empty(); ++i) {  // 120 s at most
    for (const auto& r : server.requests())
      if (std::string body = r["body"].dump(); body.find("scale-bound at 2x") != std::string::npos) marked = body;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  stop_daemon(pid);
  const std::string log = read_file(repo / ".autoresearchd/daemon.log");
  ASSERT_FALSE(marked.empty()) << log;
  Store store(db_path().string());
  std::map<std::string, int64_t> id_of;
  for (const auto& r : store.experiments("e2e")) id_of[r.description] = r.id;
  ASSERT_TRUE(store.change_label(id_of["deep"], 1)) << log;
  EXPECT_EQ(store.change_label(id_of["deep"], 1)->label, "scale_bound");
  EXPECT_EQ(store.change_label(id_of["wide"], 1)->label, "transfers");
  // The row of "deep" carries the mark, the line above the table says what it means, and the
  // prompt holds train.cu with both kept changes in it (JSON-escaped in the request body).
  EXPECT_THAT(marked, HasSubstr("kept, scale-bound at 2x | deep"));
  EXPECT_THAT(marked, HasSubstr("kept, transfers at 2x | wide"));
  EXPECT_THAT(marked, HasSubstr("do not build on them"));
  EXPECT_THAT(marked, HasSubstr("effect 0.02 scaled -0.02 b\\n"));
}

}  // namespace
}  // namespace ard
