// `autoresearchd demo` end to end, as a user runs it: the built daemon alone
// (no test binary as its trainer), a repo it makes itself, a kept experiment
// within a minute in results.db and in `status`, the dashboard served while it
// runs, and Ctrl-C (SIGINT) stopping it cleanly.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <regex>

#include "tests/daemon/daemon_process.h"

namespace ard {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::sh_quote;
using testing::shell;

const std::string kDaemon = AUTORESEARCHD;

std::vector<ExperimentRow> kept_candidates(const fs::path& repo) {
  Store store((repo / ".autoresearchd/results.db").string());
  std::vector<ExperimentRow> out;
  for (auto& r : store.experiments("demo"))
    if (!r.is_baseline && r.state == "kept") out.push_back(r);
  return out;
}

TEST(DemoE2E, KeepsAnExperimentWithinAMinuteAndStatusShowsIt) {
  testing::TempDir tmp;
  const fs::path repo = tmp / "demo";
  const auto t0 = std::chrono::steady_clock::now();
  auto r = shell(sh_quote(kDaemon) + " demo --dir " + sh_quote(repo.string()) + " --stop-after-kept 1 --timeout 90");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.code, 0) << r.out;

  // What it prints: the dashboard, the commands with the flags they need, the first keep.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("dashboard: http://127\\.0\\.0\\.1:[0-9]+/\n"))) << r.out;
  EXPECT_NE(r.out.find(kDaemon + " status --repo " + repo.string() + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(kDaemon + " show N --repo " + repo.string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sandbox:   bwrap\n"), std::string::npos) << r.out;  // bwrap works where the tests run
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("autoresearchd demo: #([0-9]+) kept after ([0-9.]+) s: "))) << r.out;
  const int64_t first = std::stoll(m[1]);
  EXPECT_LT(std::stod(m[2]), 60.0) << r.out;
  EXPECT_NE(r.out.find(kDaemon + " show " + std::to_string(first) + " --repo " + repo.string()), std::string::npos);
  EXPECT_NE(r.out.find("autoresearchd demo: stopped; "), std::string::npos) << r.out;
  std::cout << "demo: first keep #" << first << " after " << m[2] << " s; whole run " << wall << " s\n";

  // The store: a kept candidate (not the baseline) with its known true effect.
  auto kept = kept_candidates(repo);
  ASSERT_FALSE(kept.empty()) << r.out;
  EXPECT_EQ(kept.front().id, first);
  EXPECT_NE(kept.front().description.find("(true effect: val_bpb -"), std::string::npos);
  ASSERT_TRUE(kept.front().val_bpb);
  EXPECT_FALSE(kept.front().commit.empty());

  // status and show, with the flags the demo printed.
  auto status = shell(sh_quote(kDaemon) + " status --repo " + sh_quote(repo.string()));
  ASSERT_EQ(status.code, 0) << status.out;
  EXPECT_NE(status.out.find("autoresearchd: not running (last stopped"), std::string::npos) << status.out;
  EXPECT_TRUE(std::regex_search(status.out, std::regex("\n +" + std::to_string(first) + " +[0-9a-f]{7} .* kept .*" +
                                                       "\\(true effect: val_bpb -")))
      << status.out;
  auto show = shell(sh_quote(kDaemon) + " show " + std::to_string(first) + " --repo " + sh_quote(repo.string()));
  ASSERT_EQ(show.code, 0) << show.out;
  EXPECT_NE(show.out.find("trainer/train.sim"), std::string::npos) << show.out;
}

TEST(DemoE2E, ServesTheDashboardWhileItRunsAndCtrlCStopsItCleanly) {
  testing::TempDir tmp;
  const fs::path repo = tmp / "demo", out = tmp / "demo.out";
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::fopen(out.c_str(), "w");
    if (f) {
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
    }
    execl(kDaemon.c_str(), kDaemon.c_str(), "demo", "--dir", repo.c_str(), nullptr);
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  testing::wait_for_rows(repo, "demo", [](const auto& rows) {
    for (const auto& r : rows)
      if (!r.is_baseline && r.state == "kept") return true;
    return false;
  }, 90);
  std::smatch m;
  const std::string printed = read_file(out);
  ASSERT_TRUE(std::regex_search(printed, m, std::regex("dashboard: (http://127\\.0\\.0\\.1:[0-9]+/)\n"))) << printed;
  auto api = shell("curl -sS --max-time 10 " + std::string(m[1]) + "api/status");
  EXPECT_EQ(api.code, 0) << api.out;
  auto doc = nlohmann::json::parse(api.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << api.out;
  EXPECT_TRUE(doc["daemon"]["running"].get<bool>());

  ASSERT_EQ(kill(pid, SIGINT), 0);
  int st = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(30)) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      FAIL() << "the demo did not stop within 30 s of SIGINT:\n" << read_file(out);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(WIFEXITED(st)) << read_file(out);
  EXPECT_EQ(WEXITSTATUS(st), 0) << read_file(out);
  EXPECT_NE(read_file(out).find("autoresearchd demo: stopped; "), std::string::npos) << read_file(out);
  // Stopped as `stop` stops it: the session closed, nothing left running.
  auto status = shell(sh_quote(kDaemon) + " status --repo " + sh_quote(repo.string()));
  EXPECT_NE(status.out.find("autoresearchd: not running (last stopped"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("now: nothing"), std::string::npos) << status.out;
  Store store((repo / ".autoresearchd/results.db").string());
  for (const auto& r : store.experiments("demo")) EXPECT_TRUE(is_final_state(r.state)) << r.id << " " << r.state;
}

}  // namespace
}  // namespace ard
