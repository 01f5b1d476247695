// Tests of the data step with a real child: a stand-in prepare script that
// speaks prepare's protocol (last line `data_dir: PATH`, one-line errors).
#include "daemon/data/data_prep.h"

#include <gmock/gmock.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "daemon/exec/process_groups.h"
#include "daemon/exec/sandbox.h"
#include "daemon/fatal_error.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;

class DataPrepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config = parse_config(R"(
[build]
command = "echo built > built.txt"
[data]
prepare = "./prepare.sh"
train = ["../corpus/train.jsonl.xz", "/abs/more.txt"]
val = ["../corpus/val.jsonl.xz"]
cache = "/tmp/cache dir"
)", dir / "repo");
    std::filesystem::create_directories(worktree);
    state.create();
  }
  void write_prepare(const std::string& body) {
    testing::write_file(worktree / "prepare.sh", "#!/bin/sh\n" + body);
    std::filesystem::permissions(worktree / "prepare.sh", std::filesystem::perms::owner_all);
  }
  testing::TempDir dir;
  Config config;
  std::filesystem::path worktree = dir / "wt";
  StateDir state{dir / "repo"};
  PosixProcessRunner runner;
  Log log{"", false};
};

TEST_F(DataPrepTest, CommandResolvesInputsAgainstTheRepo) {
  EXPECT_EQ(prepare_command(config), "'./prepare.sh' --train '" + (dir / "corpus/train.jsonl.xz").string() +
                                         "' --train '/abs/more.txt' --val '" + (dir / "corpus/val.jsonl.xz").string() +
                                         "' --field 'text' --cache '/tmp/cache dir'");
}

TEST_F(DataPrepTest, BuildsThenReturnsTheLastDataDirLine) {
  write_prepare("echo 'data_dir: /old'\necho progress\necho \"data_dir: /cache/$2\"\n");
  std::string d = prepare_data(config, worktree, state, runner, log);
  EXPECT_EQ(d, "/cache/" + (dir / "corpus/train.jsonl.xz").string());
  EXPECT_EQ(testing::read_file(worktree / "built.txt"), "built\n");
}

TEST_F(DataPrepTest, PrepareRunsInTheSandboxWritingOnlyItsCache) {
  if (auto why = sandbox_unavailable()) GTEST_SKIP() << *why;
  const auto program = dir / "repo/program.md";
  testing::write_file(program, "# program\n");
  config.data.cache = (dir / "cache").string();
  config.data.train = {(dir / "corpus/train.txt").string()};
  testing::write_file(dir / "corpus/train.txt", "some text\n");
  write_prepare("echo appended >> '" + program.string() + "' 2>/dev/null && echo repo-written\n"
                "cat '" + (dir / "corpus/train.txt").string() + "'\n"
                "touch '" + (dir / "cache/made").string() + "' && echo cache-written\n"
                "echo 'data_dir: /d'\n");
  EXPECT_EQ(prepare_data(config, worktree, state, runner, log), "/d");
  const std::string out = testing::read_file(state.logs() / "data-prepare.log");
  EXPECT_THAT(out, HasSubstr("some text"));  // its inputs are readable
  EXPECT_THAT(out, HasSubstr("cache-written"));
  // (Under /tmp the append may land in the sandbox's own /tmp; the user's file is what counts.)
  EXPECT_EQ(testing::read_file(program), "# program\n");
  // The control: unconfined, the same prepare appends to the user's program.md.
  config.sandbox.mode = SandboxMode::kOff;
  prepare_data(config, worktree, state, runner, log);
  EXPECT_THAT(testing::read_file(state.logs() / "data-prepare.log"), HasSubstr("repo-written"));
  EXPECT_EQ(testing::read_file(program), "# program\nappended\n");
}

TEST_F(DataPrepTest, PreparesGroupIsRecordedWhileItRuns) {
  // prepare says it started, then waits for the test to look at the store.
  write_prepare("touch started\nwhile [ ! -e go ]; do sleep 0.02; done\necho 'data_dir: /d'\n");
  Store store((dir / "results.db").string());
  std::string d;
  std::thread daemon([&] { d = prepare_data(config, worktree, state, runner, log, &store); });
  while (!std::filesystem::exists(worktree / "started")) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Store reader((dir / "results.db").string());
  auto groups = reader.live_process_groups();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].what, "prepare");
  EXPECT_EQ(process_start_time(static_cast<pid_t>(groups[0].pgid)), groups[0].leader_start);
  testing::write_file(worktree / "go", "");
  daemon.join();
  EXPECT_EQ(d, "/d");
  EXPECT_TRUE(store.live_process_groups().empty());  // ended with its run
}

TEST_F(DataPrepTest, FailuresCarryPreparesOwnErrorLine) {
  write_prepare("echo 'prepare: error: train.jsonl:3: bad json' >&2\nexit 1\n");
  try {
    prepare_data(config, worktree, state, runner, log);
    FAIL();
  } catch (const FatalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("prepare failed (exit code 1): prepare: error: train.jsonl:3: bad json"));
  }
  write_prepare("echo nothing useful\n");
  EXPECT_THROW(prepare_data(config, worktree, state, runner, log), FatalError);
  config.build_command = "echo 'x.cc:1: error: nope'; exit 1";
  try {
    prepare_data(config, worktree, state, runner, log);
    FAIL();
  } catch (const FatalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("does not build"));
    EXPECT_THAT(e.what(), HasSubstr("x.cc:1: error: nope"));
  }
}

// On a thread of its own, the step's end comes back through post (to run on
// the caller's loop): its data directory, or the error that stopped it.
TEST_F(DataPrepTest, OnAThreadItsEndIsPostedBackAndItRunsUntilThen) {
  Store store((dir / "results.db").string());
  // Runs a step on its thread, waits for its post, and runs what was posted here.
  auto run = [&] {
    DataStep step;
    std::mutex mutex;
    std::condition_variable cv;
    std::function<void()> posted;
    std::pair<std::string, std::string> end;
    step.start(
        config, worktree, state, log, store,
        [&](std::function<void()> f) {
          std::lock_guard<std::mutex> lock(mutex);
          posted = std::move(f);
          cv.notify_one();
        },
        [&](const std::string& d, const std::string& e) { end = {d, e}; });
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return static_cast<bool>(posted); });
    EXPECT_TRUE(step.running());  // until its end is handed back on the caller's loop
    posted();
    EXPECT_FALSE(step.running());
    return end;
  };
  write_prepare("echo 'data_dir: /d'\n");
  EXPECT_EQ(run(), std::make_pair(std::string("/d"), std::string()));
  write_prepare("echo 'no space left' >&2\nexit 3\n");
  const auto failed = run();
  EXPECT_EQ(failed.first, "");
  EXPECT_THAT(failed.second, HasSubstr("no space left"));
}

}  // namespace
}  // namespace ard
