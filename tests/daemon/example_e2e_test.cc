// The knapsack example (examples/knapsack/) under the real daemon: a copy of
// the directory in a temporary git repository, its own autoresearch.toml, and
// a higher-is-better metric (`summary.goal = "max"`). With the scripted
// proposer the outcome is fixed: the edit that raises the score is kept, the
// one that lowers it is discarded, and status, export and the branch agree.
// With the offline proposer, as the example ships, every decision line's Δ is
// the candidate's mean minus the incumbent's.
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tests/daemon/daemon_process.h"

namespace ard {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::sh_quote;
using testing::shell;
using testing::write_file;
using ::testing::HasSubstr;

const std::string kDaemon = AUTORESEARCHD;
const fs::path kExample = fs::path(ARD_SOURCE_DIR) / "examples/knapsack";

/// One find/replace edit of solver.cc, as the scripted proposer reads it.
nlohmann::json solver_edit(const std::string& description, const std::string& find, const std::string& replace) {
  return {{"description", description}, {"edits", {{{"path", "solver.cc"}, {"find", find}, {"replace", replace}}}}};
}

class ExampleE2E : public ::testing::Test {
 protected:
  /// Copies the example into a fresh repository; `top_keys` go before its
  /// autoresearch.toml's first line and `tables` after its last, before the
  /// first commit.
  void make_repo(const std::string& top_keys, const std::string& tables) {
    repo = dir / "knapsack";
    fs::copy(kExample, repo, fs::copy_options::recursive);
    fs::remove_all(repo / "build");
    write_file(repo / "autoresearch.toml", top_keys + read_file(repo / "autoresearch.toml") + tables);
    ASSERT_EQ(testing::commit_base_repo(repo), 0);
  }
  void TearDown() override {
    if (pid > 0) {
      kill(pid, SIGKILL);
      int st;
      waitpid(pid, &st, 0);
    }
  }
  /// Runs the daemon until n experiments have finished, then stops it.
  std::vector<ExperimentRow> run_until_finished(size_t n, double timeout_s) {
    pid = testing::spawn_daemon(kDaemon, repo, dir / "daemon.out");
    auto rows = testing::wait_for_rows(repo, "knapsack", [n](const auto& r) { return testing::finished(r) >= n; },
                                       timeout_s);
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    pid = 0;
    return rows;
  }
  testing::ShellResult daemon(const std::string& args) {
    return shell("cd " + sh_quote(repo.string()) + " && " + kDaemon + " " + args);
  }

  testing::TempDir dir;
  fs::path repo;
  pid_t pid = 0;
};

TEST_F(ExampleE2E, AScriptedRunKeepsTheHigherScoreAndDiscardsTheLower) {
  // One candidate at a time (lookahead 0): the second edit is made on the first's result,
  // never screened against the baseline and re-applied (its line is next to the first's).
  make_repo("lookahead = 0\n",
            std::string("\n") + testing::kOneRunDecides + "[proposer]\nkind = \"scripted\"\nscript = \"script.json\"\n");
  write_file(repo / "script.json",
             nlohmann::json::array({solver_edit("swap more often", "SWAP_SHARE = 0.02;", "SWAP_SHARE = 0.5;"),
                                    solver_edit("end the annealing hot", "END_TEMPERATURE = 0.5;",
                                                "END_TEMPERATURE = 5.0;")})
                 .dump(2));
  auto rows = run_until_finished(3, 120);
  ASSERT_GE(rows.size(), 3u) << read_file(dir / "daemon.out");

  // The baseline about 0.973, swaps about 0.992 (kept), a hot end about 0.980 (discarded).
  EXPECT_TRUE(rows[0].is_baseline);
  EXPECT_EQ(rows[0].state, "kept");
  ASSERT_TRUE(rows[0].val_bpb && rows[1].val_bpb && rows[2].val_bpb);
  EXPECT_GT(*rows[0].val_bpb, 0.9);
  EXPECT_LT(*rows[0].val_bpb, 1.0);
  EXPECT_EQ(rows[1].state, "kept") << rows[1].error;
  EXPECT_GT(*rows[1].val_bpb, *rows[0].val_bpb);
  EXPECT_EQ(rows[2].state, "discarded");
  EXPECT_LT(*rows[2].val_bpb, *rows[1].val_bpb);

  Store store((repo / ".autoresearchd/results.db").string());
  EXPECT_EQ(store.best("knapsack")->id, rows[1].id);
  // σ is never known with one run a candidate: "strictly higher" decides, with Δ = candidate − incumbent.
  const std::string kept = store.decision(rows[1].id), discarded = store.decision(rows[2].id);
  EXPECT_THAT(kept, HasSubstr("so strictly higher by min_improvement"));
  EXPECT_THAT(kept, HasSubstr("Δ = +"));
  EXPECT_THAT(discarded, HasSubstr("Δ = -"));

  // The branch holds the kept commit; status and export say the same.
  EXPECT_EQ(shell("cd " + sh_quote(repo.string()) + " && git rev-parse autoresearch/knapsack").out,
            rows[1].commit + "\n");
  auto status = daemon("status");
  ASSERT_EQ(status.code, 0) << status.out;
  EXPECT_THAT(status.out, HasSubstr("best: " + [&] {
    char text[32];
    std::snprintf(text, sizeof text, "%.6f", *rows[1].val_bpb);
    return std::string(text);
  }() + " at " + rows[1].commit.substr(0, 7)));
  EXPECT_THAT(status.out, HasSubstr("strictly higher"));
  EXPECT_THAT(status.out, HasSubstr(", score: higher is better\n"));
  auto tsv = daemon("export --tsv");
  ASSERT_EQ(tsv.code, 0) << tsv.out;
  EXPECT_THAT(tsv.out, HasSubstr("\tkeep\tswap more often\n"));
  EXPECT_THAT(tsv.out, HasSubstr("\tdiscard\tend the annealing hot\n"));
}

TEST_F(ExampleE2E, AsShippedTheOfflineProposersDecisionsFollowGoalMax) {
  make_repo("", "");
  auto rows = run_until_finished(4, 240);
  ASSERT_GE(testing::finished(rows), 4u) << read_file(dir / "daemon.out");
  Store store((repo / ".autoresearchd/results.db").string());
  int compared = 0;
  for (const auto& r : rows) {
    const std::string d = store.decision(r.id);
    const size_t at = d.find("mean ");
    double candidate = 0, incumbent = 0, delta = 0;
    int n_candidate = 0, n_incumbent = 0;
    if (at == std::string::npos ||
        std::sscanf(d.c_str() + at, "mean %lf (n=%d) against the incumbent's %lf (n=%d): Δ = %lf", &candidate,
                    &n_candidate, &incumbent, &n_incumbent, &delta) != 5)
      continue;
    ++compared;
    EXPECT_NEAR(delta, candidate - incumbent, 2e-6) << d;
    if (r.state == "kept" && d.rfind("kept (equal but simpler)", 0) != 0) EXPECT_GT(delta, 0) << d;
  }
  EXPECT_GT(compared, 0) << "no decision compared a candidate with the incumbent";
}

// The swarm end to end: two offline profiles, drawn 2:1, each experiment
// recorded with its profile, and status's table of what each proposed and kept.
TEST_F(ExampleE2E, TwoProfilesShareTheNightByWeightAndStatusShowsEach) {
  make_repo("", R"(
[[proposer.profile]]
name = "bold"
weight = 2
[[proposer.profile]]
name = "careful"
weight = 1
)");
  auto rows = run_until_finished(7, 240);
  ASSERT_GE(testing::finished(rows), 7u) << read_file(dir / "daemon.out");
  int bold = 0, careful = 0;
  for (const auto& r : rows) {
    if (r.is_baseline) {
      EXPECT_EQ(r.profile, "");
      continue;
    }
    EXPECT_EQ(r.proposer, "offline");
    bold += r.profile == "bold";
    careful += r.profile == "careful";
  }
  EXPECT_GE(bold, 2 * careful - 1);  // the draw follows the weights to within one proposal
  EXPECT_LE(bold, 2 * careful + 2);
  EXPECT_GE(careful, 1);
  const std::string status = daemon("status").out;
  EXPECT_THAT(status, ::testing::HasSubstr("profiles (proposer.profile):  proposals  keeps  duplicates  cost"));
  EXPECT_THAT(status, ::testing::HasSubstr("  bold "));
  EXPECT_THAT(status, ::testing::HasSubstr("  careful "));
}

}  // namespace
}  // namespace ard
