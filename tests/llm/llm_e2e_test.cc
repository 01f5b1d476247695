// End to end: autoresearchd runs as a real process with the LLM proposer
// against the fake LLM server (each protocol), fake_trainer as its build and
// stages. One answer's edit does not apply and is asked again. Checks the
// branch, the experiments, the attempts and LLM calls in the database,
// `show` and `status`, and that the API key, set in the daemon's environment,
// appears in no file the daemon or its children wrote (logs, database,
// commits, the child's environment).
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "daemon/store/store.h"
#include "fake_llm_server.h"
#include "llm_client/llm_config.h"
#include "testing/test_util.h"

namespace llm {
namespace {

using ard::testing::read_file;
using ard::testing::sh_quote;
using ard::testing::shell;
using ard::testing::write_file;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kKey = "sk-e2e-secret-7f3a9c21d4";
const std::string kDaemon = AUTORESEARCHD;
const std::string kFake = FAKE_TRAINER;

std::string search_replace(const std::string& description, const std::string& from, const std::string& to) {
  return "DESCRIPTION: " + description + "\n\ntrainer/train.cu\n<<<<<<< SEARCH\n" + from + "\n=======\n" + to +
         "\n>>>>>>> REPLACE\n";
}

class LlmDaemonE2E : public ::testing::TestWithParam<Protocol> {
 protected:
  void SetUp() override {
    repo = dir.path() / "research";
    write_file(repo / "trainer/train.cu", "val_bpb 1.0\n");
    write_file(repo / "trainer/harness/eval.h", "// fixed evaluation\n");
    write_file(repo / "program.md", "# program\nLower val_bpb with small, clear changes.\n");
    write_file(repo / ".gitignore", "build/\n");
    ASSERT_EQ(ard::testing::commit_base_repo(repo), 0);
  }
  void TearDown() override {
    if (daemon_pid > 0) {
      kill(daemon_pid, SIGKILL);
      int st;
      waitpid(daemon_pid, &st, 0);
    }
  }

  bool anthropic() const { return GetParam() == Protocol::kAnthropic; }

  /// retry_wait_s: the daemon's wait before asking an unavailable provider again.
  void write_config(const std::string& base_url, double retry_wait_s = 0.2) {
    write_file(repo / "autoresearch.toml", R"(
tag = "e2e"
budget_s = 1
startup_s = 1
retry_wait_s = )" + std::to_string(retry_wait_s) + R"(
lookahead = 0
[build]
command = "mkdir -p build && env > build/env.txt && )" + kFake + R"( build trainer/train.cu"
timeout_s = 10
[[stage]]
name = "train"
command = ")" + kFake + R"( run trainer/train.cu --data {data_dir}"
timeout_s = 10
[data]
enabled = false
[preflight]
gpu = "off"
[proposer]
kind = "llm"
[llm]
provider = ")" + std::string(protocol_name(GetParam())) + R"("
model = "fake-model"
base_url = ")" + base_url + R"("
api_key_env = "ARD_E2E_LLM_KEY"
max_output_tokens = 2000
retries = 0
max_edit_attempts = 3
[llm.prices.fake-model]
input = 3.0
output = 15.0
)");
  }

  /// `autoresearchd start` in the foreground, as our child, with the key in its environment.
  void start_daemon() {
    daemon_pid = fork();
    if (daemon_pid == 0) {
      if (chdir(repo.c_str()) != 0) _exit(127);
      FILE* f = std::fopen((repo / "daemon.out").c_str(), "a");
      if (f) {
        dup2(fileno(f), 1);
        dup2(fileno(f), 2);
      }
      setenv("ARD_E2E_LLM_KEY", kKey, 1);
      execl(kDaemon.c_str(), kDaemon.c_str(), "start", nullptr);
      _exit(127);
    }
  }

  std::vector<ard::ExperimentRow> wait_for_finished(size_t n) {
    std::vector<ard::ExperimentRow> rows;
    auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(90)) {
      if (std::filesystem::exists(repo / ".autoresearchd/results.db")) {
        rows = ard::Store((repo / ".autoresearchd/results.db").string()).experiments("e2e");
        size_t done = 0;
        for (const auto& r : rows) done += ard::is_final_state(r.state) ? 1 : 0;
        if (done >= n) return rows;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "timed out; daemon output:\n" << read_file(repo / "daemon.out");
    return rows;
  }

  ard::testing::ShellResult run(const std::string& args) {
    return shell("cd " + sh_quote(repo.string()) + " && " + kDaemon + " " + args);
  }

  ard::testing::TempDir dir, server_dir;
  std::filesystem::path repo;
  pid_t daemon_pid = -1;
};

// A build the LLM broke goes back to it with the compiler's errors and the
// broken file; its repair is the next experiment, recorded as the fix.
TEST_P(LlmDaemonE2E, ABrokenBuildIsHandedBackAndTheRepairIsKept) {
  json script = json::array({
      // #2: does not build.
      {{"answer", search_replace("declare nothing", "val_bpb 1.0", "val_bpb 0.9\nBUILD_ERROR 'x' was not declared")}},
      // #3: the fix, made on the broken file.
      {{"answer", search_replace("declare x", "val_bpb 0.9\nBUILD_ERROR 'x' was not declared", "val_bpb 0.9")}},
  });
  testing::FakeLlmServer server(script, kKey, server_dir.path());
  write_config(server.base_url(anthropic()));
  start_daemon();
  auto rows = wait_for_finished(3);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[1].state, "build_fail") << rows[1].error;
  EXPECT_EQ(rows[2].state, "kept") << rows[2].error;
  EXPECT_EQ(rows[2].fix_of, rows[1].id);
  ard::Store store((repo / ".autoresearchd/results.db").string());
  auto attempts = store.attempts(rows[2].id);
  ASSERT_FALSE(attempts.empty());
  EXPECT_THAT(attempts[0].prompt, HasSubstr("'x' was not declared"));  // the compiler's error
  EXPECT_THAT(attempts[0].prompt, HasSubstr("BUILD_ERROR"));            // the broken file
  EXPECT_THAT(run("status").out, HasSubstr("(fix of #" + std::to_string(rows[1].id) + ") declare x"));
}

TEST_P(LlmDaemonE2E, ResearchesWithTheLlmAndNeverLeaksTheKey) {
  json script = json::array({
      // #2: kept.
      {{"answer", "Lower it.\n" + search_replace("lower val_bpb to 0.95", "val_bpb 1.0", "val_bpb 0.95")}},
      // #3: the first answer's SEARCH text is not in the file; asked again, it regresses.
      {{"answer", search_replace("try 0.5", "val_bpb 0.5", "val_bpb 0.97")}},
      {{"answer", search_replace("regress to 0.97", "val_bpb 0.95", "val_bpb 0.97")}},
      // #4: kept, as a unified diff.
      {{"answer",
        "DESCRIPTION: reach 0.90\n```diff\n--- a/trainer/train.cu\n+++ b/trainer/train.cu\n@@ -1 +1 @@\n"
        "-val_bpb 0.95\n+val_bpb 0.90\n```\n"}},
      // #5: discarded, as a whole file; the answer quotes the key it was sent.
      {{"answer", "DESCRIPTION: whole file at 0.99 {key}\n=== FILE: trainer/train.cu ===\nval_bpb 0.99\n=== END FILE ===\n"},
       {"echo_key", true}},
      // Then the script is used up: 503s, the proposer is unavailable and the daemon waits.
  });
  testing::FakeLlmServer server(script, kKey, server_dir.path());
  write_config(server.base_url(anthropic()));
  start_daemon();

  auto rows = wait_for_finished(5);
  ASSERT_GE(rows.size(), 5u);
  // The daemon keeps asking the unavailable provider instead of exiting.
  auto t0 = std::chrono::steady_clock::now();
  while (server.requests().size() < 8 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GE(server.requests().size(), 8u);
  EXPECT_EQ(waitpid(daemon_pid, nullptr, WNOHANG), 0) << "the daemon exited";

  auto status = run("status");
  EXPECT_EQ(status.code, 0) << status.out;
  EXPECT_THAT(status.out, HasSubstr("llm: "));
  auto stopped = run("stop");
  ASSERT_EQ(stopped.code, 0) << stopped.out;
  int st = 0;
  waitpid(daemon_pid, &st, 0);
  daemon_pid = -1;

  ard::Store store((repo / ".autoresearchd/results.db").string());
  rows = store.experiments("e2e");
  ASSERT_GE(rows.size(), 5u);
  const std::vector<std::string> want = {"kept", "kept", "discarded", "kept", "discarded"};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(rows[i].state, want[i]) << "#" << rows[i].id << " " << rows[i].error;
  EXPECT_EQ(rows[1].description, "lower val_bpb to 0.95");
  EXPECT_EQ(rows[2].description, "regress to 0.97");
  EXPECT_DOUBLE_EQ(*rows[3].val_bpb, 0.90);
  EXPECT_EQ(rows[4].description, "whole file at 0.99 [redacted]");
  EXPECT_EQ(rows[1].proposer, std::string("llm:") + protocol_name(GetParam()) + "/fake-model");

  // The retry after the bad edit: two attempts, the first with the exact error.
  auto attempts = store.attempts(rows[2].id);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_THAT(attempts[0].error, HasSubstr("edit 1 (SEARCH/REPLACE, trainer/train.cu): SEARCH text matches nowhere"));
  EXPECT_THAT(attempts[0].prompt, HasSubstr("Lower val_bpb with small, clear changes."));
  EXPECT_THAT(attempts[0].prompt, HasSubstr("val_bpb 0.95"));  // the best file as it stands
  EXPECT_THAT(attempts[1].prompt, HasSubstr(attempts[0].error));
  EXPECT_EQ(attempts[1].error, "");

  // What was tried where: nothing before the first change; #4 was asked after #2's keep, at least.
  EXPECT_THAT(store.attempts(rows[1].id).at(0).prompt, Not(HasSubstr("# Tried before, by region")));
  const std::string fourth = store.attempts(rows[3].id).at(0).prompt;
  EXPECT_THAT(fourth, HasSubstr("# Tried before, by region"));
  EXPECT_THAT(fourth, HasSubstr("- trainer/train.cu: lines 1-50: "));
  EXPECT_THAT(fourth, HasSubstr("  - #" + std::to_string(rows[1].id) + " kept, "));
  EXPECT_THAT(fourth, HasSubstr("trainer/train.cu:1: lower val_bpb to 0.95\n"));

  // Branch: exactly the improving commits, in order, with the descriptions as messages.
  auto log = shell("cd " + sh_quote(repo.string()) + " && git log --format=%s autoresearch/e2e");
  EXPECT_EQ(log.out, "reach 0.90\nlower val_bpb to 0.95\nbase\n");
  auto tip = shell("cd " + sh_quote(repo.string()) + " && git show autoresearch/e2e:trainer/train.cu");
  EXPECT_EQ(tip.out, "val_bpb 0.90\n");
  // Objects in .git are compressed, so ask git for every commit's message and patch.
  auto history = shell("cd " + sh_quote(repo.string()) + " && git log -p --all");
  EXPECT_THAT(history.out, HasSubstr("lower val_bpb to 0.95"));
  EXPECT_EQ(history.out.find(kKey), std::string::npos);

  // One llm_calls row per HTTP call, with usage and cost.
  ard::LlmTotals totals = store.llm_totals();
  EXPECT_EQ(totals.calls, static_cast<int64_t>(server.requests().size()));
  EXPECT_GT(totals.input_tokens, 0);
  EXPECT_GT(totals.output_tokens, 0);
  EXPECT_GT(totals.cost_usd, 0);

  // `show` prints the stored prompt and response.
  auto show = run("show " + std::to_string(rows[2].id));
  EXPECT_EQ(show.code, 0) << show.out;
  EXPECT_THAT(show.out, HasSubstr("[system]"));
  EXPECT_THAT(show.out, HasSubstr("DESCRIPTION: regress to 0.97"));
  EXPECT_THAT(show.out, HasSubstr("SEARCH text matches nowhere"));
  EXPECT_THAT(show.out, HasSubstr("--- llm calls\nround 1 call 1: ok"));  // each call of the experiment
  EXPECT_THAT(status.out, HasSubstr(" cached + "));                        // the tag's totals, cache included
  EXPECT_THAT(status.out, HasSubstr("(cache hit "));

  // The key reached the provider, and nothing else.
  auto reqs = server.requests();
  ASSERT_FALSE(reqs.empty());
  EXPECT_EQ(reqs[0]["headers"].value(anthropic() ? "x-api-key" : "authorization", ""),
            anthropic() ? std::string(kKey) : "Bearer " + std::string(kKey));
  int env_files = 0, files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(repo)) {
    if (!e.is_regular_file()) continue;
    ++files;
    std::string content = read_file(e.path());
    EXPECT_EQ(content.find(kKey), std::string::npos) << "the key is in " << e.path();
    if (e.path().filename() == "env.txt") {
      ++env_files;
      EXPECT_THAT(content, HasSubstr("PATH="));
      EXPECT_EQ(content.find("ARD_E2E_LLM_KEY"), std::string::npos);
    }
  }
  EXPECT_GE(env_files, 1);  // the build's environment was seen and checked
  EXPECT_GT(files, 10);
  std::string out = status.out + stopped.out + show.out + read_file(repo / "daemon.out");
  EXPECT_EQ(out.find(kKey), std::string::npos);
}

// An authentication error event inside a 200 stream stops the daemon, naming
// the key's variable, and the stop's error line is written once.
TEST_P(LlmDaemonE2E, AnAuthErrorEventInAStreamStopsTheDaemonOnce) {
  json event = anthropic() ? json{{"type", "authentication_error"}, {"message", "invalid x-api-key"}}
                           : json{{"message", "Incorrect API key provided"}, {"code", "invalid_api_key"}};
  testing::FakeLlmServer server(json::array({{{"stream_error", event}}, {{"answer", "never"}}}), kKey,
                                server_dir.path());
  write_config(server.base_url(anthropic()));
  start_daemon();
  int st = 0;
  auto t0 = std::chrono::steady_clock::now();
  while (waitpid(daemon_pid, &st, WNOHANG) == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(WIFEXITED(st)) << read_file(repo / "daemon.out");
  daemon_pid = -1;
  EXPECT_EQ(WEXITSTATUS(st), 1);
  EXPECT_EQ(server.requests().size(), 1u);  // a stop, not a retry
  std::string log = read_file(repo / ".autoresearchd/daemon.log");
  EXPECT_THAT(log, HasSubstr("check $ARD_E2E_LLM_KEY"));
  size_t lines = 0;
  for (size_t at = log.find("error: proposer:"); at != std::string::npos; at = log.find("error: proposer:", at + 1))
    ++lines;
  EXPECT_EQ(lines, 1u) << log;
  EXPECT_EQ(log.find(kKey), std::string::npos);
}

// A proxy that refuses request bodies over 30 KB, and a train.cu of 60 KB:
// the first LLM experiment pays one 413, and the limit it taught is kept in
// results.db, so the next experiment and the next start send within it at once.
TEST_P(LlmDaemonE2E, A413IsPaidOnceAcrossExperimentsAndStarts) {
  std::string train = "val_bpb 1.0\n";
  for (int i = 0; train.size() < 60000; ++i)
    train += "// note " + std::to_string(i) + ": a line of the long research file\n";
  write_file(repo / "trainer/train.cu", train);
  ASSERT_EQ(shell("cd " + sh_quote(repo.string()) + " && git -c user.name=t -c user.email=t@t commit -qam long").code,
            0);
  json script = json::array({{{"answer", search_replace("lower to 0.95", "val_bpb 1.0", "val_bpb 0.95")}},
                             {{"answer", search_replace("regress to 0.97", "val_bpb 0.95", "val_bpb 0.97")}}});
  testing::FakeLlmServer server(script, kKey, server_dir.path(), 30000);
  write_config(server.base_url(anthropic()));
  auto refused = [&] {
    int n = 0;
    for (const auto& q : server.requests()) n += q.contains("refused");
    return n;
  };
  start_daemon();
  auto rows = wait_for_finished(3);  // the baseline and two LLM experiments
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[1].state, "kept") << rows[1].error;
  ASSERT_EQ(run("stop").code, 0);
  int st = 0;
  waitpid(daemon_pid, &st, 0);
  daemon_pid = -1;
  EXPECT_EQ(refused(), 1);
  {
    ard::Store store((repo / ".autoresearchd/results.db").string());
    auto limits = store.learnt_limits();
    ASSERT_EQ(limits.size(), 1u);
    EXPECT_EQ(limits[0].provider, std::string(protocol_name(GetParam())) + " " + server.base_url(anthropic()) +
                                      " fake-model");
    EXPECT_THAT(limits[0].reason, HasSubstr("HTTP 413"));
  }
  EXPECT_THAT(read_file(repo / ".autoresearchd/daemon.log"), HasSubstr("its limit is now"));

  const size_t before = server.requests().size();
  start_daemon();  // the next start asks at once within the remembered limit
  auto t0 = std::chrono::steady_clock::now();
  while (server.requests().size() < before + 2 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GE(server.requests().size(), before + 2);
  EXPECT_EQ(refused(), 1);
  EXPECT_THAT(run("status").out, HasSubstr("llm limit: "));
}

// A proxy that answers every request with an HTML page (a 200): three calls,
// then the provider is unavailable and the daemon waits retry_wait_s (30 s
// here), with no proposer_error rows; before, the hour's calls went in a second.
TEST_P(LlmDaemonE2E, AStormOfHtmlAnswersPausesAfterAHandfulOfCalls) {
  json html = {{"raw", "<html><body>502 Bad Gateway</body></html>"}, {"content_type", "text/html"}};
  json storm = json::array();
  for (int i = 0; i < 60; ++i) storm.push_back(html);
  testing::FakeLlmServer server(storm, kKey, server_dir.path());
  write_config(server.base_url(anthropic()), 30);
  start_daemon();
  auto t0 = std::chrono::steady_clock::now();
  std::string log;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
    log = read_file(repo / ".autoresearchd/daemon.log");
    if (log.find("proposer unavailable:") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_THAT(log, HasSubstr("3 responses in a row were not answers"));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // well within the 30 s wait
  EXPECT_LE(server.requests().size(), 5u);
  EXPECT_EQ(waitpid(daemon_pid, nullptr, WNOHANG), 0) << "the daemon exited";
  ASSERT_EQ(run("stop").code, 0);
  int st = 0;
  waitpid(daemon_pid, &st, 0);
  daemon_pid = -1;
  ard::Store store((repo / ".autoresearchd/results.db").string());
  for (const auto& r : store.experiments("e2e")) EXPECT_NE(r.state, "proposer_error") << "#" << r.id << " " << r.error;
}

INSTANTIATE_TEST_SUITE_P(BothProtocols, LlmDaemonE2E, ::testing::Values(Protocol::kOpenAI, Protocol::kAnthropic),
                         [](const auto& info) { return std::string(protocol_name(info.param)); });

}  // namespace
}  // namespace llm
