// Tests of the POSIX runner with real children: exit codes, signals, timeouts
// that kill a whole group, stop requests, the scrubbed environment, the group
// id reported before the command runs, and orphan clean-up.
#include "daemon/exec/process_runner.h"

#include <gmock/gmock.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "testing/test_util.h"

namespace ard {
namespace {

using testing::read_file;
using ::testing::HasSubstr;

class RunnerTest : public ::testing::Test {
 protected:
  ProcessSpec spec(const std::string& command, double timeout_s = 10) {
    return {command, dir.path(), scrubbed_env({"PATH"}), dir / "log.txt", timeout_s};
  }
  ProcessResult run(const ProcessSpec& s) { return runner.run(s, [this](pid_t g) { pgid = g; }); }
  testing::TempDir dir;
  StopFlag stop;
  PosixProcessRunner runner{&stop, 0.5};
  pid_t pgid = 0;
};

TEST_F(RunnerTest, CapturesOutputAndExitCode) {
  auto r = run(spec("echo out; echo err >&2; pwd; exit 3"));
  EXPECT_EQ(r.end, ProcessResult::End::kExited);
  EXPECT_EQ(r.code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.describe(), "exit code 3");
  EXPECT_EQ(read_file(dir / "log.txt"), "out\nerr\n" + dir.path().string() + "\n");
  EXPECT_GT(pgid, 0);
}

TEST_F(RunnerTest, ReportsTheGroupBeforeTheCommandRuns) {
  std::string marker = (dir / "ran").string();
  bool existed = true;
  auto r = runner.run(spec("touch " + marker), [&](pid_t g) {
    existed = std::filesystem::exists(marker);
    EXPECT_EQ(getpgid(g), g);  // the child leads its own group already
  });
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(existed);
  EXPECT_TRUE(std::filesystem::exists(marker));
}

TEST_F(RunnerTest, ASignalIsReportedAsSuch) {
  auto r = run(spec("kill -SEGV $$"));
  EXPECT_EQ(r.end, ProcessResult::End::kSignaled);
  EXPECT_EQ(r.code, SIGSEGV);
  EXPECT_THAT(r.describe(), HasSubstr("signal 11"));
}

TEST_F(RunnerTest, TimeoutKillsTheWholeGroup) {
  // A grandchild that ignores SIGTERM must die too.
  auto r = run(spec("sh -c 'trap \"\" TERM; sleep 30' & sleep 30", 0.5));
  EXPECT_EQ(r.end, ProcessResult::End::kTimedOut);
  EXPECT_LT(r.seconds, 5);
  EXPECT_TRUE(group_members(pgid).empty());
}

TEST_F(RunnerTest, BackgroundChildrenDieWithTheCommand) {
  auto r = run(spec("sleep 30 & echo done"));
  EXPECT_TRUE(r.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(group_members(pgid).empty());
}

TEST_F(RunnerTest, StopEndsTheChild) {
  std::thread t([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.request();
  });
  auto r = run(spec("sleep 30"));
  t.join();
  EXPECT_EQ(r.end, ProcessResult::End::kStopped);
  EXPECT_TRUE(group_members(pgid).empty());
}

TEST_F(RunnerTest, ChildSeesOnlyTheAllowedEnvironment) {
  setenv("ARD_TEST_SECRET_KEY", "sk-secret", 1);
  auto r = run(spec("env"));
  unsetenv("ARD_TEST_SECRET_KEY");
  ASSERT_TRUE(r.ok());
  std::string env = read_file(dir / "log.txt");
  EXPECT_THAT(env, HasSubstr("PATH="));
  EXPECT_EQ(env.find("sk-secret"), std::string::npos) << env;
  EXPECT_EQ(scrubbed_env({"ARD_TEST_UNSET_VARIABLE"}).size(), 0u);
}

TEST_F(RunnerTest, AFailingRecorderKillsTheChildBeforeItRuns) {
  std::string marker = (dir / "ran").string();
  EXPECT_THROW(runner.run(spec("touch " + marker), [](pid_t) { throw std::runtime_error("db down"); }),
               std::runtime_error);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(RunnerTest, BadWorkingDirectoryFails) {
  auto s = spec("true");
  s.cwd = dir / "missing";
  auto r = run(s);
  EXPECT_EQ(r.end, ProcessResult::End::kSpawnFailed);
  EXPECT_THAT(r.describe(), HasSubstr("cannot enter the working directory"));
}

TEST(OrphanGroup, KillsOnlyGroupsRunningUnderThePrefix) {
  testing::TempDir dir;
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (chdir(dir.path().c_str()) != 0) _exit(1);
    execl("/bin/sleep", "sleep", "30", nullptr);
    _exit(127);
  }
  setpgid(pid, pid);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(kill_orphan_group(pid, "/nonexistent-prefix"));
  EXPECT_EQ(group_members(pid).size(), 1u);
  EXPECT_TRUE(kill_orphan_group(pid, dir.path()));
  int st;
  waitpid(pid, &st, 0);
  EXPECT_TRUE(group_members(pid).empty());
}

TEST(FileTail, KeepsTheLastLines) {
  testing::TempDir dir;
  testing::write_file(dir / "f", "a\nb\nc\n");
  EXPECT_EQ(file_tail(dir / "f", 2), "b\nc\n");
  EXPECT_EQ(file_tail(dir / "f", 10), "a\nb\nc\n");
  EXPECT_EQ(file_tail(dir / "f", 1), "c\n");
  EXPECT_EQ(file_tail(dir / "missing"), "");
  testing::write_file(dir / "g", std::string(100, 'x') + "\nlast");
  EXPECT_EQ(file_tail(dir / "g", 10, 10), "last");
}

}  // namespace
}  // namespace ard
