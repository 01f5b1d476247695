// End-to-end tests: autoresearchd runs as a real process on a temporary git
// repo, with fake_trainer as its build and stages and the scripted proposer.
// They check the branch, the database, `status`, `export --tsv`, restarts
// after SIGKILL, program.md edits, and the command line's errors.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <poll.h>
#include <signal.h>
#include <sys/fanotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <atomic>
#include <map>
#include <regex>
#include <thread>

#include "daemon/exec/process_runner.h"
#include "daemon/store/state_dir.h"
#include "daemon/store/store.h"
#include "daemon_process.h"
#include "testing/test_util.h"

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

/// Denies every second open of one file, by any process, through fanotify's
/// permission events (root only): a reader that checks the file and then opens
/// it again finds the second open failing just after the check passed.
class EverySecondOpenDenied {
 public:
  explicit EverySecondOpenDenied(const std::filesystem::path& file)
      : fd_(fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_CLOEXEC)) {
    if (fd_ >= 0 && fanotify_mark(fd_, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, file.c_str()) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
    if (fd_ >= 0) thread_ = std::thread([this] { answer(); });
  }
  ~EverySecondOpenDenied() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);  // pending events are allowed
  }
  bool ok() const { return fd_ >= 0; }
  int denied() const { return opens_ / 2; }

 private:
  void answer() {
    alignas(fanotify_event_metadata) char buf[4096];
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;  // wakes to see stop_
      ssize_t n = ::read(fd_, buf, sizeof buf);
      for (auto* md = reinterpret_cast<fanotify_event_metadata*>(buf); n > 0 && FAN_EVENT_OK(md, n);
           md = FAN_EVENT_NEXT(md, n)) {
        if (md->fd < 0) continue;
        if (md->mask & FAN_OPEN_PERM) {
          fanotify_response r{md->fd, static_cast<__u32>(++opens_ % 2 == 0 ? FAN_DENY : FAN_ALLOW)};
          if (::write(fd_, &r, sizeof r) != sizeof r) ADD_FAILURE() << "fanotify response not written";
        }
        ::close(md->fd);
      }
    }
  }
  int fd_;
  std::atomic<bool> stop_{false};
  std::atomic<int> opens_{0};
  std::thread thread_;
};

class DaemonE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = dir.path() / "research";
    write_file(repo / "trainer/train.cu", "val_bpb 1.0\n");
    write_file(repo / "trainer/harness/eval.h", "// fixed evaluation\n");
    write_file(repo / "trainer/model/sub/kernel.cuh", "// editable\n");
    write_file(repo / "program.md", "# program v1\nLower val_bpb.\n");
    write_file(repo / ".gitignore", "build/\n");
    ASSERT_EQ(testing::commit_base_repo(repo), 0);
    base = trim(git("rev-parse HEAD").out);
  }
  void TearDown() override {
    // Never leave a daemon behind, whatever the test did.
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
  testing::ShellResult git(const std::string& args) {
    return shell("cd " + sh_quote(repo.string()) + " && git " + args);
  }
  testing::ShellResult daemon(const std::string& args, const std::string& env = "") {
    return shell("cd " + sh_quote(repo.string()) + " && " + env + " " + kDaemon + " " + args);
  }

  void write_config(double train_timeout_s, const std::string& extra = "", const std::string& data = "enabled = false") {
    write_file(repo / "autoresearch.toml", R"(
tag = "e2e"
budget_s = 1
startup_s = 1
retry_wait_s = 0.2
max_fix_attempts = 1
lookahead = 0
)" + extra + R"(
[build]
command = "mkdir -p build && env | tee build/env.txt && )" + kFake + R"( build trainer/train.cu"
timeout_s = 10
[[stage]]
name = "check"
command = ")" + kFake + R"( run trainer/train.cu --check"
timeout_s = 5
[[stage]]
name = "train"
command = ")" + kFake + R"( run trainer/train.cu --data {data_dir}"
timeout_s = )" + std::to_string(train_timeout_s) + R"(
[data]
)" + data + R"(
[proposer]
kind = "scripted"
script = "script.json"
[preflight]
gpu = "off"
)");
  }
  void write_script(const nlohmann::json& entries) { write_file(repo / "script.json", entries.dump(2)); }

  std::filesystem::path db_path() const { return repo / ".autoresearchd/results.db"; }
  pid_t daemon_pid() {
    std::string text = read_file(repo / ".autoresearchd/daemon.pid");
    return text.empty() ? 0 : static_cast<pid_t>(std::stol(text));
  }

  pid_t spawn_daemon(const std::string& log_name) {
    pid_t pid = testing::spawn_daemon(kDaemon, repo, dir.path() / log_name);
    children.push_back(pid);
    return pid;
  }

  std::vector<ExperimentRow> wait_for(const std::function<bool(const std::vector<ExperimentRow>&)>& pred,
                                      double timeout_s = 60) {
    return testing::wait_for_rows(repo, "e2e", pred, timeout_s);
  }
  static size_t finished(const std::vector<ExperimentRow>& rows) { return testing::finished(rows); }
  /// Runs the daemon in the foreground until n experiments have finished, then stops it.
  std::vector<ExperimentRow> run_until_finished(size_t n) {
    pid_t pid = spawn_daemon("daemon.log");
    auto rows = wait_for([n](const auto& r) { return finished(r) >= n; });
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    children.clear();
    return rows;
  }

  testing::TempDir dir;
  std::filesystem::path repo;
  std::string base;
  std::vector<pid_t> children;
};

TEST_F(DaemonE2E, RunsMixedExperimentsAndKeepsExactlyTheImprovements) {
  write_config(3);  // the hanging experiment times out after 3 s
  write_script(nlohmann::json::array({
      edit("lower val to 0.95", "val_bpb 0.95\n"),                                    // #2 kept
      edit("regress to 0.97", "val_bpb 0.97\n"),                                      // #3 discarded
      edit("crash in training", "val_bpb 0.5\nCRASH\n"),                              // #4 crash
      edit("hang forever", "val_bpb 0.5\nHANG\n"),                                    // #5 timeout
      edit("break the build", "val_bpb 0.9\nBUILD_ERROR 'x' was not declared\n"),     // #6 build_fail
      [] {  // #7 kept, fixes #6 (the script's "fix" entry makes it a proposer that fixes builds)
        auto e = edit("fix the build", "val_bpb 0.90\n");
        e["fix"] = true;
        return e;
      }(),
      edit("nan loss", "NAN\n"),                                                      // #8 crash
      edit("print nothing", "SILENT\n"),                                              // #9 crash
      {{"description", "touch the harness"},
       {"writes", {{{"path", "trainer/harness/eval.h"}, {"content", "cheat\n"}}}}},  // #10 patch_rejected
      edit("tamper via the build", "val_bpb 0.5\nTAMPER\n"),                          // #11 tampered
      {{"description", "write over a directory"},
       {"writes", {{{"path", "trainer/model/sub"}, {"content", "x\n"}}}}},          // #12 patch_rejected
      edit("reach 0.80", "val_bpb 0.80\nvram 4096\nseconds 0.2\n"),                  // #13 kept
      edit("fail loudly", "FAIL\n"),                                                  // #14 crash
      edit("fool the metric", "val_bpb 0.1\nPROBE_FAIL\n"),                         // #15 tampered
  }));
  auto started = daemon("start --detach", "OPENAI_API_KEY=sk-should-not-leak");
  ASSERT_EQ(started.code, 0) << started.out;
  EXPECT_THAT(started.out, HasSubstr("started, pid"));

  // A second daemon on the same repo is refused.
  auto second = daemon("start");
  EXPECT_EQ(second.code, 1);
  EXPECT_THAT(second.out, HasSubstr("a daemon already runs"));

  wait_for([](const auto& r) { return finished(r) >= 15; });

  auto running = daemon("status");
  EXPECT_EQ(running.code, 0);
  EXPECT_THAT(running.out, HasSubstr("running (pid"));
  std::cout << "status while running:\n" << running.out;

  auto stopped = daemon("stop");
  ASSERT_EQ(stopped.code, 0) << stopped.out;
  EXPECT_THAT(stopped.out, HasSubstr("stopped"));
  // The experiment that was waiting for a proposal recorded nothing and is gone.
  auto rows = Store(db_path().string()).experiments("e2e");
  ASSERT_EQ(rows.size(), 15u);

  const std::vector<std::string> want = {"kept",  "kept",  "discarded", "crash",   "timeout",
                                         "build_fail", "kept", "crash", "crash", "patch_rejected",
                                         "tampered", "patch_rejected", "kept", "crash", "tampered"};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(rows[i].state, want[i]) << "#" << rows[i].id << " " << rows[i].error;
  EXPECT_TRUE(rows[0].is_baseline);
  EXPECT_EQ(rows[0].commit, base);
  EXPECT_DOUBLE_EQ(*rows[1].val_bpb, 0.95);
  EXPECT_DOUBLE_EQ(*rows[2].val_bpb, 0.97);
  EXPECT_THAT(rows[3].error, HasSubstr("stage train failed (killed by signal 6"));
  EXPECT_THAT(rows[3].log_tail, HasSubstr("step 1 | loss 8.50"));
  EXPECT_EQ(rows[4].stage, "train");
  EXPECT_THAT(rows[4].error, HasSubstr("timed out"));
  EXPECT_THAT(rows[5].error, HasSubstr("error: 'x' was not declared"));
  EXPECT_EQ(rows[6].fix_of, rows[5].id);
  EXPECT_THAT(rows[7].error, HasSubstr("val_bpb is nan"));
  EXPECT_THAT(rows[8].error, HasSubstr("no summary"));
  EXPECT_EQ(rows[9].error, "edit touches trainer/harness/eval.h, which is not editable");
  EXPECT_TRUE(rows[9].commit.empty());
  EXPECT_THAT(rows[10].error, HasSubstr("trainer/harness/eval.h"));
  EXPECT_EQ(rows[10].stage, "build");
  EXPECT_THAT(rows[11].error, HasSubstr("the edit cannot be applied"));
  EXPECT_THAT(rows[13].error, HasSubstr("FAIL: loss is NaN at step 3"));
  // The harness's probes caught it: tampered, with the probe's message, never kept.
  EXPECT_THAT(rows[14].error, HasSubstr("integrity probe failed: causality: row 0 position 5"));
  EXPECT_DOUBLE_EQ(*rows[12].peak_vram_mb, 4096);

  // The branch holds exactly the improving commits, in order, on the base.
  EXPECT_EQ(git("log --format=%s autoresearch/e2e").out,
            "reach 0.80\nfix the build\nlower val to 0.95\nbase\n");
  EXPECT_EQ(trim(git("rev-parse autoresearch/e2e").out), rows[12].commit);
  EXPECT_EQ(trim(git("rev-parse HEAD").out), base);  // the user's checkout is untouched
  EXPECT_EQ(read_file(repo / "trainer/harness/eval.h"), "// fixed evaluation\n");
  EXPECT_EQ(git("status --porcelain --untracked-files=no").out, "");
  auto wt = repo / ".autoresearchd/worktrees/e2e";
  EXPECT_EQ(read_file(wt / "trainer/harness/eval.h"), "// fixed evaluation\n");  // tampering was reset
  EXPECT_EQ(read_file(wt / "trainer/train.cu"), "val_bpb 0.80\nvram 4096\nseconds 0.2\n");
  // Children never saw the daemon's secrets (the build prints its environment).
  std::string env = read_file(repo / ".autoresearchd/logs" / (std::to_string(rows[12].id) + "-build.log"));
  EXPECT_THAT(env, HasSubstr("PATH="));
  EXPECT_THAT(env, Not(HasSubstr("sk-should-not-leak")));

  auto status = daemon("status");
  EXPECT_EQ(status.code, 0);
  std::cout << "status after stop:\n" << status.out;
  EXPECT_THAT(status.out, HasSubstr("not running (last stopped"));
  EXPECT_THAT(status.out, HasSubstr("best: 0.800000 at " + rows[12].commit.substr(0, 7)));
  EXPECT_THAT(status.out, HasSubstr(" 0.970000  +0.020000  discarded"));
  EXPECT_THAT(status.out, HasSubstr("experiments: 15 finished"));
  EXPECT_THAT(status.out, HasSubstr("per hour"));
  EXPECT_THAT(status.out, HasSubstr("training share of wall time"));
  EXPECT_THAT(status.out, HasSubstr("now: nothing"));
  EXPECT_THAT(status.out, Not(HasSubstr("clamped")));  // the fake trainer reports less than its wall time
  EXPECT_THAT(status.out, HasSubstr("(fix of #" + std::to_string(rows[5].id) + ") fix the build"));
  // The keep rule's reasons say "kept: ..." themselves: the log line says it once.
  const std::string daemon_log = read_file(repo / ".autoresearchd/daemon.log");
  EXPECT_THAT(daemon_log, HasSubstr(" kept: "));
  EXPECT_THAT(daemon_log, Not(HasSubstr("kept: kept:")));

  // A tag with no experiments is one line naming it and the tags there are, not an empty table.
  for (const char* cmd : {"status --tag nope", "export --tag nope", "plot --tag nope"}) {
    auto nope = daemon(cmd);
    EXPECT_EQ(nope.code, 1) << cmd;
    EXPECT_EQ(nope.out, "autoresearchd: error: no experiments with tag nope in this repo's results (the tag: e2e)\n")
        << cmd;
  }
  // plot without --out: plot.svg in the current directory, said in its one line.
  auto plotted = daemon("plot");
  EXPECT_EQ(plotted.code, 0) << plotted.out;
  EXPECT_EQ(plotted.out, "autoresearchd: wrote plot.svg in the current directory (the default; --out FILE.png or "
                         "FILE.svg writes another)\n");
  EXPECT_THAT(read_file(repo / "plot.svg"), HasSubstr("<svg"));
  std::filesystem::remove(repo / "plot.svg");

  auto tsv = daemon("export --tsv");
  ASSERT_EQ(tsv.code, 0);
  EXPECT_EQ(daemon("export").out, tsv.out);  // TSV is the only format: the flag may be left out
  std::vector<std::string> lines;
  std::istringstream in(tsv.out);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 14u);  // header + 13 committed experiments (the rejected edits have no commit)
  EXPECT_EQ(lines[0], "commit\tval_bpb\tmemory_gb\tstatus\tdescription");
  EXPECT_EQ(lines[1], base.substr(0, 7) + "\t1.000000\t1.0\tkeep\tbaseline");
  EXPECT_EQ(lines[3], rows[2].commit.substr(0, 7) + "\t0.970000\t1.0\tdiscard\tregress to 0.97");
  EXPECT_EQ(lines[4], rows[3].commit.substr(0, 7) + "\t0.000000\t0.0\tcrash\tcrash in training");
  EXPECT_EQ(lines[11], rows[12].commit.substr(0, 7) + "\t0.800000\t4.0\tkeep\treach 0.80");

  auto show = daemon("show " + std::to_string(rows[5].id));
  EXPECT_EQ(show.code, 0);
  EXPECT_THAT(show.out, HasSubstr("status:       build_fail"));
  EXPECT_THAT(show.out, HasSubstr("+BUILD_ERROR"));  // the diff
  EXPECT_THAT(show.out, HasSubstr("\"break the build\""));  // the proposer's response
  EXPECT_THAT(show.out, HasSubstr("# program v1"));
  EXPECT_THAT(show.out, HasSubstr("ninja: build stopped"));  // the log tail
  EXPECT_EQ(daemon("show 999").code, 1);
}

TEST_F(DaemonE2E, WhatAStageLeavesOrChangesIsTamperedAndNeverWedgesTheNextExperiment) {
  // In the sandbox (the default): the worktree is writable, so leftovers and
  // edits reach it; the repo's .git is not, so a commit from a stage fails.
  write_config(10);
  write_script(nlohmann::json::array({
      edit("leave a core file", "val_bpb 0.5\nLEAVE core\n"),                          // #2 tampered
      edit("leave a checkpoint", "val_bpb 0.5\nLEAVE checkpoint.bin\n"),               // #3 tampered
      edit("innocent", "val_bpb 0.95\n"),                                              // #4 kept
      edit("edit itself after the commit", "val_bpb 0.5\nLEAVE trainer/train.cu\n"),  // #5 tampered
      edit("edit the harness in training", "val_bpb 0.5\nLEAVE trainer/harness/eval.h\n"),  // #6 tampered
      edit("innocent after", "val_bpb 0.9\n"),                                         // #7 kept
      edit("commit from a stage", "val_bpb 0.99\nGIT_COMMIT\n"),                      // #8 discarded
  }));
  pid_t pid = spawn_daemon("daemon.log");
  auto rows = wait_for([](const auto& r) { return finished(r) >= 8; });
  kill(pid, SIGTERM);
  int st;
  waitpid(pid, &st, 0);
  children.clear();
  ASSERT_GE(rows.size(), 8u);
  const std::vector<std::string> want = {"kept", "tampered", "tampered", "kept", "tampered", "tampered", "kept", "discarded"};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(rows[i].state, want[i]) << "#" << rows[i].id << " " << rows[i].error;
  EXPECT_THAT(rows[1].error, HasSubstr("after stage train: the worktree differs from the experiment's commit: core"));
  EXPECT_THAT(rows[2].error, HasSubstr("checkpoint.bin"));
  EXPECT_THAT(rows[4].error, HasSubstr("trainer/train.cu"));
  EXPECT_THAT(rows[5].error, HasSubstr("trainer/harness/eval.h"));
  // The commit failed on the read-only .git; what ran is what was committed.
  EXPECT_THAT(read_file(repo / ".autoresearchd/logs" / (std::to_string(rows[7].id) + "-train.log")),
              HasSubstr("git commit: rc "));
  EXPECT_EQ(trim(git("rev-parse refs/autoresearch/e2e/exp/" + std::to_string(rows[7].id)).out), rows[7].commit);
  // Only the innocent changes reached the branch, and nothing a child left stayed behind.
  EXPECT_EQ(git("log --format=%s autoresearch/e2e").out, "innocent after\ninnocent\nbase\n");
  auto wt = repo / ".autoresearchd/worktrees/e2e";
  EXPECT_FALSE(std::filesystem::exists(wt / "core"));
  EXPECT_FALSE(std::filesystem::exists(wt / "checkpoint.bin"));
  EXPECT_EQ(read_file(wt / "trainer/harness/eval.h"), "// fixed evaluation\n");
  EXPECT_EQ(read_file(repo / "trainer/harness/eval.h"), "// fixed evaluation\n");
}

TEST_F(DaemonE2E, ASymlinkAStagePlantsIsRemovedWithNoWriteThroughItAndTheNextExperimentRuns) {
  // A tracked file the experiment changes, replaced in training by a link to a
  // file outside: the reset to the best must neither write the best's content
  // through the link nor leave the link for the next experiment.
  write_file(repo / "trainer/model/payload.cuh", "// payload v1\n");
  ASSERT_EQ(git("add -A && git -c user.name=t -c user.email=t@t commit -qm payload").code, 0);
  const auto outside = dir.path() / "authorized_keys";
  write_file(outside, "ssh-ed25519 AAAA the user's key\n");
  write_config(10);
  write_script(nlohmann::json::array({
      {{"description", "plant a link"},
       {"writes",
        {{{"path", "trainer/train.cu"}, {"content", "val_bpb 0.5\nSYMLINK trainer/model/payload.cuh " + outside.string() + "\n"}},
         {{"path", "trainer/model/payload.cuh"}, {"content", "// payload v2, written by the LLM\n"}}}}},  // #2 tampered
      edit("innocent", "val_bpb 0.9\n"),                                                                  // #3 kept
  }));
  auto rows = run_until_finished(3);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[1].state, "tampered") << rows[1].error;
  EXPECT_THAT(rows[1].error, HasSubstr("trainer/model/payload.cuh"));
  EXPECT_EQ(rows[2].state, "kept") << rows[2].error;
  EXPECT_EQ(read_file(outside), "ssh-ed25519 AAAA the user's key\n");
  auto wt = repo / ".autoresearchd/worktrees/e2e";
  EXPECT_FALSE(std::filesystem::is_symlink(wt / "trainer/model/payload.cuh"));
  EXPECT_EQ(read_file(wt / "trainer/model/payload.cuh"), "// payload v1\n");
}

TEST_F(DaemonE2E, ASameSizeRewriteOfTheHarnessIsTamperedOnceAndRestored) {
  write_config(10);
  write_script(nlohmann::json::array({
      edit("rewrite the harness in place", "val_bpb 0.5\nREWRITE trainer/harness/eval.h\n"),  // #2 tampered
      edit("innocent", "val_bpb 0.9\n"),                                                    // #3 kept
      edit("innocent again", "val_bpb 0.8\n"),                                              // #4 kept
  }));
  auto rows = run_until_finished(4);
  ASSERT_GE(rows.size(), 4u);
  EXPECT_THAT(read_file(repo / ".autoresearchd/logs" / (std::to_string(rows[1].id) + "-train.log")),
              HasSubstr("rewrote trainer/harness/eval.h: same size, old mtime"));
  EXPECT_EQ(rows[1].state, "tampered") << rows[1].error;
  EXPECT_THAT(rows[1].error, HasSubstr("trainer/harness/eval.h"));
  EXPECT_EQ(rows[2].state, "kept") << rows[2].error;
  EXPECT_EQ(rows[3].state, "kept") << rows[3].error;
  EXPECT_EQ(read_file(repo / ".autoresearchd/worktrees/e2e/trainer/harness/eval.h"), "// fixed evaluation\n");
}

TEST_F(DaemonE2E, AForgedSummaryIsTamperedAndNeverBecomesTheBest) {
  write_config(10, testing::kOneRunDecides);
  write_script(nlohmann::json::array({
      edit("a negative val_bpb", "val_bpb -5\n"),                           // #2 tampered
      edit("a block after the real one", "val_bpb 0.95\nEXTRA_BLOCK 0.01\n"),  // #3 tampered
      edit("a hexadecimal float", "VAL_TEXT 0x1p-3\n"),                     // #4 tampered
      edit("honest", "val_bpb 0.9\n"),                                      // #5 kept
  }));
  auto rows = run_until_finished(5);
  ASSERT_GE(rows.size(), 5u);
  const std::vector<std::string> want = {"kept", "tampered", "tampered", "tampered", "kept"};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(rows[i].state, want[i]) << "#" << rows[i].id << " " << rows[i].error;
  EXPECT_THAT(rows[1].error, HasSubstr("the summary cannot be believed: val_bpb -5 is outside its range (0, 20)"));
  EXPECT_THAT(rows[2].error, HasSubstr("2 summary blocks in the output"));
  EXPECT_THAT(rows[3].error, HasSubstr("val_bpb: '0x1p-3' is not a decimal number"));
  ASSERT_TRUE(rows[4].val_bpb);
  EXPECT_DOUBLE_EQ(*rows[4].val_bpb, 0.9);
  EXPECT_EQ(git("log --format=%s autoresearch/e2e").out, "honest\nbase\n");
}

// A proposer that does not read a build's failure (a script without a "fix"
// entry, like the offline proposer) is never asked to fix it: the next idea
// starts from the best and is not lost as a second build failure.
TEST_F(DaemonE2E, ABrokenBuildTakesNoIdeaDownWhenTheProposerDoesNotFixBuilds) {
  // One run decides: the test is about which base the next idea gets, not the keep rule's repeats.
  write_config(10, testing::kOneRunDecides);
  write_script(nlohmann::json::array({
      edit("break the build", "val_bpb 0.9\nBUILD_ERROR 'x' was not declared\n"),  // #2 build_fail
      edit("a real gain", "val_bpb 0.9\n"),                                        // #3 kept, from the best
  }));
  auto rows = run_until_finished(3);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[1].state, "build_fail") << rows[1].error;
  EXPECT_EQ(rows[2].state, "kept") << rows[2].error;
  EXPECT_EQ(rows[2].fix_of, std::nullopt);  // not handed the broken files as a fix
}

// A commit the user makes on their branch after the tag started is not
// ignored silently: start says so, and `start --rebase` moves the tag's kept
// changes onto it and measures a new baseline there. A kept change that does
// not apply stops the start, naming it, with nothing moved.
TEST_F(DaemonE2E, StartRebaseMovesTheKeptChangesOntoTheUsersNewCommit) {
  // One run decides: the test is about which commit the research sits on, not the keep rule's repeats.
  write_config(10, testing::kOneRunDecides);
  write_script(nlohmann::json::array({edit("improve", "val_bpb 0.9\n")}));
  auto rows = run_until_finished(2);
  ASSERT_GE(rows.size(), 2u);
  ASSERT_EQ(rows[1].state, "kept") << rows[1].error;
  const std::string kept = rows[1].commit;

  // The user commits on their branch: a file the kept change does not touch.
  write_file(repo / "trainer/model/notes.cuh", "// the user's new kernel\n");
  ASSERT_EQ(git("add trainer/model/notes.cuh && git -c user.name=t -c user.email=t@t commit -qm 'a new kernel'").code, 0);
  const std::string head = trim(git("rev-parse HEAD").out);

  // Without --rebase: one note, and the research stays where it was.
  const std::string note = "note: your checkout's HEAD " + head.substr(0, 7) + " has 1 commit(s) that tag e2e does not";
  pid_t second = spawn_daemon("second.log");
  for (int i = 0; i < 300 && read_file(repo / ".autoresearchd/daemon.log").find(note) == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(second, SIGTERM);
  int st;
  waitpid(second, &st, 0);
  children.clear();
  EXPECT_THAT(read_file(repo / ".autoresearchd/daemon.log"), HasSubstr(note));
  EXPECT_EQ(trim(git("rev-parse autoresearch/e2e").out), kept);

  // With --rebase: the kept change on HEAD, measured as the new baseline, which is the best.
  ASSERT_EQ(daemon("start --detach --rebase").code, 0);
  rows = wait_for([](const auto& r) { return r.size() >= 3 && r[2].state == "kept"; });
  ASSERT_EQ(daemon("stop").code, 0);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_TRUE(rows[2].is_baseline);
  EXPECT_EQ(rows[2].description, "baseline on " + head.substr(0, 7) + " (--rebase)");
  const std::string tip = trim(git("rev-parse autoresearch/e2e").out);
  EXPECT_EQ(tip, rows[2].commit);
  EXPECT_EQ(trim(git("rev-parse " + tip + "^").out), head);  // one change, re-applied onto HEAD
  EXPECT_EQ(git("show " + tip + ":trainer/train.cu").out, "val_bpb 0.9\n");
  EXPECT_EQ(git("show " + tip + ":trainer/model/notes.cuh").out, "// the user's new kernel\n");
  EXPECT_EQ(Store(db_path().string()).run_base("e2e"), head);

  // A user commit that conflicts with the kept change: nothing moves.
  write_file(repo / "trainer/train.cu", "val_bpb 0.8\n");
  ASSERT_EQ(git("-c user.name=t -c user.email=t@t commit -qam 'the user lowers it too'").code, 0);
  auto refused = daemon("start --rebase");
  EXPECT_EQ(refused.code, 1) << refused.out;
  const std::string head2 = trim(git("rev-parse HEAD").out);
  EXPECT_THAT(refused.out, HasSubstr("autoresearchd: error: --rebase: kept change " + tip.substr(0, 7) +
                                     " (improve) does not apply onto " + head2.substr(0, 7)));
  EXPECT_THAT(refused.out, HasSubstr("conflicts in trainer/train.cu; nothing was moved"));
  EXPECT_EQ(trim(git("rev-parse autoresearch/e2e").out), tip);
  EXPECT_EQ(Store(db_path().string()).run_base("e2e"), head);
}

// An incremental build that keeps its output while it is newer than the source,
// as make and Ninja do: a stage that leaves a future-dated "binary" would have the
// next experiment run it instead of what was committed.
class PoisonedBuild : public DaemonE2E {
 protected:
  void write_incremental_config(const std::string& extra) {
    write_file(repo / "autoresearch.toml", R"(
tag = "e2e"
budget_s = 1
startup_s = 1
retry_wait_s = 0.2
lookahead = 0
)" + extra + R"(
[build]
command = "mkdir -p build && { test build/train.cu -nt trainer/train.cu || cp trainer/train.cu build/train.cu; }"
[[stage]]
name = "check"
command = ")" + kFake + R"( run build/train.cu --check"
[[stage]]
name = "train"
command = ")" + kFake + R"( run build/train.cu"
timeout_s = 10
[data]
enabled = false
[proposer]
kind = "scripted"
script = "script.json"
[preflight]
gpu = "off"
)" + testing::kOneRunDecides);
  }
  std::vector<ExperimentRow> run_three() {
    write_script(nlohmann::json::array({
        edit("poison the build output", "val_bpb 1.5\nPOISON build/train.cu\n"),  // #2
        edit("honest", "val_bpb 0.8\n"),                                           // #3 kept at 0.8
    }));
    return run_until_finished(3);
  }
  std::string train_log(const ExperimentRow& row) {
    return read_file(repo / ".autoresearchd/logs" / (std::to_string(row.id) + "-train.log"));
  }
};

TEST_F(PoisonedBuild, AStageCannotWriteTheBuildOutputSoTheNextExperimentRunsWhatWasCommitted) {
  write_incremental_config("");
  auto rows = run_three();
  ASSERT_GE(rows.size(), 3u);
  EXPECT_THAT(train_log(rows[1]), HasSubstr("poisoned build/train.cu: not written"));  // read-only to stages
  EXPECT_EQ(rows[1].state, "discarded") << rows[1].error;
  EXPECT_EQ(rows[2].state, "kept") << rows[2].error;
  ASSERT_TRUE(rows[2].val_bpb);
  EXPECT_DOUBLE_EQ(*rows[2].val_bpb, 0.8);
}

TEST_F(PoisonedBuild, UnconfinedAStageThatWritesTheBuildOutputIsTamperedAndTheOutputIsDiscarded) {
  write_incremental_config("[sandbox]\nmode = \"off\"\n");
  auto rows = run_three();
  ASSERT_GE(rows.size(), 3u);
  EXPECT_THAT(train_log(rows[1]), HasSubstr("poisoned build/train.cu: written"));
  EXPECT_EQ(rows[1].state, "tampered") << rows[1].error;
  EXPECT_THAT(rows[1].error, HasSubstr("build (changed after the build)"));
  EXPECT_EQ(rows[2].state, "kept") << rows[2].error;
  ASSERT_TRUE(rows[2].val_bpb);
  EXPECT_DOUBLE_EQ(*rows[2].val_bpb, 0.8);
}

TEST_F(DaemonE2E, UnconfinedACommitFromAStageIsTamperedAndTheBranchStays) {
  write_config(10, "[sandbox]\nmode = \"off\"\n");
  write_script(nlohmann::json::array({edit("commit from a stage", "val_bpb 0.5\nGIT_COMMIT\n"),  // #2 tampered
                                      edit("innocent", "val_bpb 0.9\n")}));                     // #3 kept
  auto rows = run_until_finished(3);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[1].state, "tampered") << rows[1].error;
  EXPECT_THAT(rows[1].error, HasSubstr("HEAD (moved to"));
  EXPECT_EQ(rows[2].state, "kept") << rows[2].error;
  EXPECT_EQ(git("log --format=%s autoresearch/e2e").out, "innocent\nbase\n");
}

TEST_F(DaemonE2E, UnconfinedABranchMovedByAStageIsPutBackAndTheNextExperimentRuns) {
  write_config(10, "[sandbox]\nmode = \"off\"\n" + std::string(testing::kOneRunDecides));
  write_script(nlohmann::json::array({edit("move the branch", "val_bpb 0.5\nMOVE_REF refs/heads/autoresearch/e2e\n"),  // #2
                                      edit("innocent", "val_bpb 0.9\n")}));  // #3 kept
  auto rows = run_until_finished(3);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[1].state, "tampered") << rows[1].error;
  EXPECT_THAT(rows[1].error, HasSubstr("autoresearch/e2e (moved)"));
  EXPECT_EQ(rows[2].state, "kept") << rows[2].error;
  EXPECT_EQ(git("log --format=%s autoresearch/e2e").out, "innocent\nbase\n");
}

TEST_F(DaemonE2E, SigkillMidRunThenRestartReconcilesAndRunsTheCandidateAgain) {
  // Unconfined, a child outlives a killed daemon (in the sandbox it dies with
  // it): the restart must find its group and kill it. The candidate it ran
  // runs again from its commit (its trainer hangs until `release` exists).
  write_config(60, "[sandbox]\nmode = \"off\"\n");
  const auto release = dir.path() / "release";
  write_script(nlohmann::json::array(
      {edit("hang", "val_bpb 0.5\nHANG_UNLESS " + release.string() + "\n"), edit("improve", "val_bpb 0.9\n")}));
  pid_t first = spawn_daemon("first.log");
  auto rows = wait_for([](const auto& r) { return r.size() == 2 && r[1].state == "running" && r[1].stage == "train" && r[1].pgid; });
  ASSERT_EQ(rows.size(), 2u);
  pid_t pgid = static_cast<pid_t>(*rows[1].pgid);
  ASSERT_FALSE(group_members(pgid).empty());
  // The branch holds kept commits only; the candidate lives under its own ref.
  EXPECT_EQ(trim(git("rev-parse autoresearch/e2e").out), base);
  EXPECT_EQ(trim(git("rev-parse refs/autoresearch/e2e/exp/" + std::to_string(rows[1].id)).out), rows[1].commit);
  kill(first, SIGKILL);
  int st;
  waitpid(first, &st, 0);
  children.clear();
  EXPECT_FALSE(group_members(pgid).empty());  // the child outlived the daemon

  write_file(release, "");
  pid_t second = spawn_daemon("second.log");
  rows = wait_for([](const auto& r) { return finished(r) == 3; });
  ASSERT_GE(rows.size(), 3u);
  EXPECT_TRUE(group_members(pgid).empty());  // the orphaned group was killed
  EXPECT_EQ(rows[0].state, "kept");
  EXPECT_EQ(rows[1].state, "kept") << rows[1].error;  // run again, from the same commit
  EXPECT_EQ(rows[1].resumes, 1);
  EXPECT_FALSE(rows[1].pgid);
  EXPECT_EQ(trim(git("rev-parse autoresearch/e2e").out), rows[1].commit);
  EXPECT_EQ(git("log --format=%s autoresearch/e2e").out, "hang\nbase\n");
  EXPECT_TRUE(is_final_state(rows[2].state)) << rows[2].state;  // improve, made on base: after the keep, stale
  std::string log = read_file(repo / ".autoresearchd/daemon.log");
  EXPECT_THAT(log, HasSubstr("reconcile: #" + std::to_string(rows[1].id) + " marked interrupted (was running (stage train))"));
  EXPECT_THAT(log, HasSubstr("#" + std::to_string(rows[1].id) + " resumed (the daemon stopped while the experiment was running (stage train)"));

  kill(second, SIGTERM);
  waitpid(second, &st, 0);
  children.clear();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  Store store(db_path().string());
  EXPECT_EQ(store.experiments("e2e").size(), 3u);
  EXPECT_TRUE(store.unfinished().empty());
  auto sessions = shell("sqlite3 " + sh_quote(db_path().string()) + " 'SELECT end_reason FROM sessions ORDER BY id'");
  EXPECT_EQ(sessions.out, "killed\nstopped\n");
}

TEST_F(DaemonE2E, ProgramEditsTakeEffectOnTheNextExperiment) {
  write_config(10);
  nlohmann::json script = nlohmann::json::array();
  for (int i = 0; i < 30; ++i)
    script.push_back(edit("try " + std::to_string(i), "val_bpb " + std::to_string(1.0 - 0.01 * i) + "\nseconds 0.2\n"));
  write_script(script);
  pid_t pid = spawn_daemon("daemon.log");
  wait_for([](const auto& r) { return finished(r) >= 2; });
  std::string v1 = Store(db_path().string()).experiments("e2e").front().program_hash;
  write_file(repo / "program.md", "# program v2\nTry a deeper model.\n");
  auto rows = wait_for([&](const auto& r) {
    return std::any_of(r.begin(), r.end(), [&](const ExperimentRow& e) {
      return is_final_state(e.state) && !e.program_hash.empty() && e.program_hash != v1;
    });
  });
  const ExperimentRow* first_v2 = nullptr;
  for (const auto& r : rows)
    if (!first_v2 && r.program_hash != v1) first_v2 = &r;
  ASSERT_TRUE(first_v2);
  kill(pid, SIGTERM);
  int st;
  waitpid(pid, &st, 0);
  children.clear();

  Store store(db_path().string());
  EXPECT_EQ(store.program_count(), 2);
  std::string v2 = first_v2->program_hash;
  EXPECT_NE(v2, v1);
  EXPECT_EQ(store.program(v2), "# program v2\nTry a deeper model.\n");
  // Every experiment used one of the two versions, v1 ones first.
  bool seen_v2 = false;
  for (const auto& r : store.experiments("e2e")) {
    EXPECT_TRUE(r.program_hash == v1 || r.program_hash == v2);
    if (r.program_hash == v2) seen_v2 = true;
    else EXPECT_FALSE(seen_v2) << "#" << r.id << " went back to the old program.md";
  }
  EXPECT_THAT(daemon("show " + std::to_string(first_v2->id)).out, HasSubstr("# program v2"));
}

TEST_F(DaemonE2E, EachProposalRecordsAndSendsTheProgramItCheckedNeverAnEmptyOne) {
  // program.md fails every second open: a daemon that read it again after its
  // check would record (and send) an empty program.
  write_config(10, testing::kOneRunDecides);
  nlohmann::json script = nlohmann::json::array();
  for (int i = 0; i < 10; ++i) script.push_back(edit("try " + std::to_string(i), "val_bpb 0.9" + std::to_string(i) + "\n"));
  write_script(script);
  EverySecondOpenDenied gate(repo / "program.md");
  ASSERT_TRUE(gate.ok()) << "fanotify needs root: " << std::strerror(errno);
  auto rows = run_until_finished(5);
  EXPECT_GE(gate.denied(), 2);
  Store store(db_path().string());
  for (const auto& r : rows) {
    if (r.is_baseline || r.program_hash.empty()) continue;
    EXPECT_EQ(store.program(r.program_hash), "# program v1\nLower val_bpb.\n") << "#" << r.id;
  }
}

TEST_F(DaemonE2E, StopDuringARunRecordsItInterruptedAndResetsTheBranch) {
  write_config(60);
  write_script(nlohmann::json::array({edit("hang", "val_bpb 0.5\nHANG\n")}));
  ASSERT_EQ(daemon("start --detach").code, 0);
  auto rows = wait_for([](const auto& r) { return r.size() == 2 && r[1].stage == "train" && r[1].pgid; });
  ASSERT_EQ(rows.size(), 2u);
  pid_t pgid = static_cast<pid_t>(*rows[1].pgid);
  auto running = daemon("status");
  std::cout << "status during a run:\n" << running.out;
  EXPECT_THAT(running.out, HasSubstr("now: #2 running stage train"));
  // The stage has no expected_s: its timeout is its only end, and no expected end is made up.
  EXPECT_THAT(running.out, HasSubstr("elapsed, timeout at "));
  EXPECT_THAT(running.out, Not(HasSubstr("expected end")));
  auto stopped = daemon("stop");
  ASSERT_EQ(stopped.code, 0) << stopped.out;
  EXPECT_TRUE(group_members(pgid).empty());
  Store store(db_path().string());
  auto r = *store.experiment(rows[1].id);
  EXPECT_EQ(r.state, "interrupted");
  EXPECT_EQ(r.error, "stopped during stage train");
  EXPECT_FALSE(r.pgid);
  EXPECT_EQ(store.last_session()->end_reason, "stopped");
  EXPECT_THAT(read_file(repo / ".autoresearchd/daemon.log"),
              HasSubstr("1 interrupted experiment(s) run again at the next start, from their commits"));
  EXPECT_EQ(trim(git("rev-parse autoresearch/e2e").out), base);
  EXPECT_EQ(read_file(repo / ".autoresearchd/worktrees/e2e/trainer/train.cu"), "val_bpb 1.0\n");
  EXPECT_EQ(daemon("stop").code, 1);  // nothing left to stop
}

// A stop during the start's checkouts (8 GPUs and a lookahead of 8: 80 worktrees of a repo of
// 400 files) ends at once: before, the signal waited for every checkout (7.4 s for 80 checkouts
// of the project's own tree). Nothing begins: no session, no experiment.
TEST_F(DaemonE2E, AStopDuringTheStartsCheckoutsEndsThemAndBeginsNothing) {
  for (int i = 0; i < 400; ++i) write_file(repo / "bulk" / ("f" + std::to_string(i) + ".txt"), std::string(4096, 'x'));
  ASSERT_EQ(git("add -A").code, 0);
  ASSERT_EQ(git("-c user.name=t -c user.email=t@t commit -q -m bulk").code, 0);
  write_config(10);
  std::string toml = read_file(repo / "autoresearch.toml");
  toml.replace(toml.find("lookahead = 0"), 13, "lookahead = 8\ngpus = [0, 1, 2, 3, 4, 5, 6, 7]");
  write_file(repo / "autoresearch.toml", toml);
  write_script(nlohmann::json::array());
  pid_t pid = spawn_daemon("daemon.log");
  const auto first = repo / ".autoresearchd/worktrees/e2e";
  for (int i = 0; i < 3000 && !std::filesystem::exists(first); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(std::filesystem::exists(first)) << read_file(dir.path() / "daemon.log");
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  children.clear();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(dir.path() / "daemon.log");
  size_t slots = 0;
  for (const auto& e : std::filesystem::directory_iterator(repo / ".autoresearchd/worktrees")) slots += e.is_directory();
  EXPECT_LT(slots, 80u) << "every checkout was made before the stop";
  const std::string log = read_file(repo / ".autoresearchd/daemon.log");
  EXPECT_THAT(log, HasSubstr("stopping: waiting for nothing\n"));
  EXPECT_THAT(log, HasSubstr("stopped\n"));
  EXPECT_THAT(log, Not(HasSubstr("session ")));
  EXPECT_TRUE(Store(db_path().string()).experiments("e2e").empty());
}

TEST_F(DaemonE2E, StopSaysWhatItWaitsFor) {
  // Unconfined, a stage that ignores SIGTERM holds the stop for the kill grace.
  write_config(60, "[sandbox]\nmode = \"off\"\n");
  write_script(nlohmann::json::array({edit("hang", "val_bpb 0.5\nHANG\n")}));
  pid_t pid = spawn_daemon("daemon.log");
  wait_for([](const auto& r) { return r.size() >= 2 && r[1].state == "running" && r[1].stage == "train"; });
  auto stopped = daemon("stop");
  waitpid(pid, nullptr, 0);
  children.clear();
  ASSERT_EQ(stopped.code, 0) << stopped.out;
  EXPECT_THAT(stopped.out, HasSubstr("autoresearchd: stopping pid " + std::to_string(pid)));
  EXPECT_THAT(stopped.out, HasSubstr("autoresearchd: daemon: "));
  EXPECT_THAT(stopped.out, HasSubstr("stopping: waiting for #2's stage train"));
  EXPECT_THAT(stopped.out, HasSubstr("autoresearchd: stopped (pid " + std::to_string(pid) + ")"));
}

TEST_F(DaemonE2E, DataStepGivesTheStagesTheirDataDir) {
  write_file(dir / "corpus/train.jsonl", "{\"text\": \"a\"}\n");
  write_file(dir / "corpus/val.jsonl", "{\"text\": \"b\"}\n");
  write_file(dir / "fake_prepare.sh", "#!/bin/sh\nexec " + kFake + " prepare \"$@\"\n");
  std::filesystem::permissions(dir / "fake_prepare.sh", std::filesystem::perms::owner_all);
  std::string cache = (dir / "cache").string();
  std::string data = "prepare = \"" + (dir / "fake_prepare.sh").string() + "\"\ntrain = [\"../corpus/train.jsonl\"]\n" +
                     "val = [\"../corpus/val.jsonl\"]\ncache = \"" + cache + "\"\nfetch = false\n";
  // The prepare script runs a tool its command line does not name: the sandbox shows it only
  // through sandbox.read_only, as a user with a tool outside the system paths would list it.
  write_config(10, "[sandbox]\nread_only = [\"" + std::filesystem::path(kFake).parent_path().string() + "\"]\n", data);
  write_script(nlohmann::json::array());

  auto prepared = daemon("prepare");
  ASSERT_EQ(prepared.code, 0) << prepared.out;
  EXPECT_THAT(prepared.out, HasSubstr(cache + "/dataset\n"));

  pid_t pid = spawn_daemon("daemon.log");
  auto rows = wait_for([](const auto& r) { return !r.empty() && is_final_state(r[0].state); });
  kill(pid, SIGTERM);
  int st;
  waitpid(pid, &st, 0);
  children.clear();
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].state, "kept") << rows[0].error;
  std::string log = read_file(repo / ".autoresearchd/logs/1-train.log");
  EXPECT_THAT(log, HasSubstr("data: " + cache + "/dataset\n"));
  EXPECT_EQ(Store(db_path().string()).last_session()->data_dir, cache + "/dataset");

  // A missing input: the preflight's one line naming the key and the file,
  // before anything is built.
  std::filesystem::remove(dir / "corpus/val.jsonl");
  std::filesystem::remove(repo / ".autoresearchd/logs/data-build.log");
  auto bad = daemon("start");
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.out, "autoresearchd: error: \u2717 data: data.val[0]: " + (dir / "corpus/val.jsonl").string() +
                         ": no such file; fix: put the file there, set data.train and data.val to your own files, or "
                         "set data.fetch = true to download the default corpus (autoresearchd doctor lists every "
                         "check)\n");
  EXPECT_FALSE(std::filesystem::exists(repo / ".autoresearchd/logs/data-build.log"));

}

// A fatal error is one line in daemon.log: a failed baseline's cause is not logged
// a second time as the experiment's own line, and nothing else repeats it there.
TEST_F(DaemonE2E, AFatalErrorIsOneLineInTheDaemonLog) {
  write_file(repo / "trainer/train.cu", "val_bpb 1.0\nCRASH\n");
  ASSERT_EQ(git("-c user.name=t -c user.email=t@t commit -qam 'a base that crashes'").code, 0);
  write_config(3);
  write_script(nlohmann::json::array());
  auto fg = daemon("start");
  EXPECT_EQ(fg.code, 1) << fg.out;
  const std::string cause = "stage train failed (killed by signal 6";
  std::vector<std::string> out_lines;
  std::istringstream out(fg.out);
  for (std::string l; std::getline(out, l);) out_lines.push_back(l);
  ASSERT_FALSE(out_lines.empty());
  EXPECT_THAT(out_lines.back(), ::testing::StartsWith("autoresearchd: error: the baseline #1 failed (crash): " + cause));
  // The terminal (the foreground echoes the log) shows the fatal line once: main's.
  size_t on_terminal = 0;
  for (const auto& l : out_lines) on_terminal += l.find("error: the baseline #1 failed") != std::string::npos;
  EXPECT_EQ(on_terminal, 1u) << fg.out;

  std::string log = read_file(repo / ".autoresearchd/daemon.log");
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(cause), 1u) << log;
  EXPECT_EQ(count(" error: the baseline #1 failed (crash): " + cause), 1u) << log;
  EXPECT_EQ(count("#1 crash"), 0u) << log;
  // Every line of the log is there once.
  std::istringstream lines(log);
  std::map<std::string, int> seen;
  for (std::string l; std::getline(lines, l);) ++seen[l.size() > 20 ? l.substr(20) : l];
  for (const auto& [line, n] : seen)
    if (line.rfind("error: ", 0) == 0) EXPECT_EQ(n, 1) << line;
}

TEST_F(DaemonE2E, CommandLineErrorsAreOneLineWithExitCode2) {
  EXPECT_EQ(daemon("--help").code, 0);
  for (const char* sub : {"start", "stop", "status", "show", "export", "prepare", "doctor", "data fetch"}) {
    auto r = daemon(std::string(sub) + " --help");
    EXPECT_EQ(r.code, 0) << sub;
    EXPECT_THAT(r.out, HasSubstr("--repo")) << sub;
  }
  for (const char* bad : {"frobnicate", "start --bogus", "show", "show abc", "export --csv", ""}) {
    auto r = daemon(bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << bad << ": " << r.out;
  }
  EXPECT_EQ(daemon("stop").code, 1);  // nothing runs
  auto status = daemon("status");
  EXPECT_EQ(status.code, 0);
  EXPECT_THAT(status.out, HasSubstr("not running"));
}

TEST_F(DaemonE2E, ConfigErrorsNameTheKeyAndStopTheStart) {
  write_config(5, "budget = 3\n");
  auto r = daemon("start");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("budget: unknown key"));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  write_config(5);
  write_file(repo / "autoresearch.toml", read_file(repo / "autoresearch.toml") + "[llm]\n");
  write_file(repo / "autoresearch.toml",
             std::regex_replace(read_file(repo / "autoresearch.toml"), std::regex("kind = \"scripted\""), "kind = \"psychic\""));
  r = daemon("start --detach");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("proposer.kind: unknown proposer 'psychic'"));
  EXPECT_EQ(daemon_pid() > 0 ? kill(daemon_pid(), 0) : -1, -1);  // nothing left running
}

TEST_F(DaemonE2E, StartInsideTheStateDirectoryRefusesAndNamesTheRepo) {
  write_config(5);
  auto wt = repo / ".autoresearchd/worktrees/e2e";
  ASSERT_EQ(git("worktree add -q -b autoresearch/e2e " + sh_quote(wt.string())).code, 0);
  auto in_worktree = [&](const std::string& args) {
    return shell("cd " + sh_quote(wt.string()) + " && " + kDaemon + " " + args);
  };
  auto r = in_worktree("start");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr(wt.string() + " is inside the daemon's state directory of " + repo.string() +
                               "; run it in " + repo.string()));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_FALSE(std::filesystem::exists(wt / ".autoresearchd"));  // no nested daemon state
  // Commands that only read or signal act on the real repo.
  r = in_worktree("status");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("no results yet in " + repo.string() + "\n"));
  r = in_worktree("stop");
  EXPECT_THAT(r.out, HasSubstr("no daemon is running on " + repo.string() + "\n"));
}

// `idea` queues a researcher's idea; the daemon's next proposal is linked to it,
// and status says what became of it. A blank or a page-long idea is refused.
TEST_F(DaemonE2E, AnIdeaIsQueuedTriedByTheNextProposalAndShownInStatus) {
  write_config(10, testing::kOneRunDecides);
  write_script(nlohmann::json::array({edit("rotary", "val_bpb 0.9\n")}));
  auto queued = daemon("idea 'try rotary embeddings, base 50000'");
  ASSERT_EQ(queued.code, 0) << queued.out;
  EXPECT_THAT(queued.out, HasSubstr("idea 1 queued for tag e2e: the next proposal is asked to try it"));
  EXPECT_THAT(daemon("status").out, HasSubstr("waiting for the next proposal  try rotary embeddings, base 50000"));
  auto blank = daemon("idea '  '");
  EXPECT_EQ(blank.code, 1);
  EXPECT_THAT(blank.out, HasSubstr("autoresearchd: error: an idea needs its text"));
  auto long_one = daemon("idea " + std::string(2001, 'x'));
  EXPECT_EQ(long_one.code, 1);
  EXPECT_THAT(long_one.out, HasSubstr("the idea is 2001 bytes; at most 2000"));

  auto rows = run_until_finished(2);
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[1].idea_id, 1);
  const std::string status = daemon("status").out;
  EXPECT_THAT(status, HasSubstr("ideas (autoresearchd idea):"));
  EXPECT_THAT(status, HasSubstr("#" + std::to_string(rows[1].id) + " " + rows[1].state + "  try rotary embeddings"));
  EXPECT_THAT(daemon("show " + std::to_string(rows[1].id)).out,
              HasSubstr("idea:         1, asked to try: try rotary embeddings, base 50000"));
}

// A researcher's own commits go through the path of a proposal: refused at
// `try` when they touch what the daemon may not edit, taken before any
// proposer is asked, re-applied onto the best when made on an older one, and
// recorded with "user" as the proposer.
TEST_F(DaemonE2E, ACommitOfTheUsersIsTriedLikeAProposalAndMovedOntoTheBest) {
  // One run decides: the test is about the try's path, not the keep rule's repeats.
  write_config(10, testing::kOneRunDecides);
  write_script(nlohmann::json::array());  // the proposer has nothing: only the tries run
  const std::string home = trim(git("rev-parse --abbrev-ref HEAD").out);  // the user's branch
  auto commit_on_branch = [&](const std::string& branch, const std::string& path, const std::string& content,
                              const std::string& message) {
    EXPECT_EQ(git("checkout -qb " + branch + " " + base).code, 0);
    write_file(repo / path, content);
    EXPECT_EQ(git("-c user.name=u -c user.email=u@u commit -qam '" + message + "'").code, 0);
    const std::string id = trim(git("rev-parse HEAD").out);
    EXPECT_EQ(git("checkout -q " + home).code, 0);
    return id;
  };
  const std::string lower = commit_on_branch("t1", "trainer/train.cu", "val_bpb 0.85\n", "lower it");
  const std::string kernel = commit_on_branch("t2", "trainer/model/sub/kernel.cuh", "// v2\n", "a new kernel");
  const std::string harness = commit_on_branch("t3", "trainer/harness/eval.h", "// easier\n", "easier eval");

  auto queued = daemon("try t1");
  ASSERT_EQ(queued.code, 0) << queued.out;
  EXPECT_THAT(queued.out, HasSubstr("try 1 queued for tag e2e: " + lower.substr(0, 7) + " lower it"));
  ASSERT_EQ(daemon("try " + kernel.substr(0, 12)).code, 0);
  auto again = daemon("try t1");
  EXPECT_EQ(again.code, 1);
  EXPECT_THAT(again.out, HasSubstr("autoresearchd: error: try: " + lower.substr(0, 7) + " is try 1 of tag e2e already"));
  auto fixed = daemon("try t3");
  EXPECT_EQ(fixed.code, 1);
  EXPECT_THAT(fixed.out, HasSubstr("autoresearchd: error: try: " + harness.substr(0, 7) +
                                   " cannot be tried: it changes trainer/harness/eval.h, which the daemon may not edit"));
  auto unknown = daemon("try no-such-branch");
  EXPECT_EQ(unknown.code, 1);
  EXPECT_THAT(unknown.out, HasSubstr("try: 'no-such-branch' names no commit of"));
  EXPECT_THAT(daemon("status").out, HasSubstr(lower.substr(0, 7) + "  waiting for the next experiment  lower it"));

  auto rows = run_until_finished(3);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_TRUE(rows[0].is_baseline);
  EXPECT_EQ(rows[1].proposer, "user");
  EXPECT_EQ(rows[1].description, "lower it");
  EXPECT_EQ(rows[1].commit, lower);  // made on the best: measured as it is
  EXPECT_EQ(rows[1].state, "kept") << rows[1].error;
  EXPECT_EQ(rows[2].proposer, "user");
  EXPECT_EQ(rows[2].reapplied_from, kernel);  // made on the base, an older best: moved onto the best first
  EXPECT_EQ(rows[2].parent_commit, lower);
  EXPECT_EQ(git("show " + rows[2].commit + ":trainer/train.cu").out, "val_bpb 0.85\n");
  EXPECT_EQ(git("show " + rows[2].commit + ":trainer/model/sub/kernel.cuh").out, "// v2\n");
  EXPECT_EQ(rows[2].state, "discarded") << rows[2].error;  // no gain over the best it now sits on
  const std::string status = daemon("status").out;
  EXPECT_THAT(status, HasSubstr("tries (autoresearchd try):"));
  EXPECT_THAT(status, HasSubstr(lower.substr(0, 7) + "  #" + std::to_string(rows[1].id) + " kept  lower it"));
  EXPECT_EQ(trim(git("rev-parse autoresearch/e2e").out), lower);
}

}  // namespace
}  // namespace ard
