// Tests for child_process.h on a real io_context with real children: exits
// arrive as events, the group is recorded before the command runs, timeouts
// and stop() kill the whole group, output is capped, children see only the
// environment they are given and no descriptor of the daemon's.
#include "daemon/exec/child_process.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>

#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;

class ChildTest : public ::testing::Test {
 protected:
  ChildSpec spec(const std::string& command, double timeout_s = 10) {
    ChildSpec s;
    s.command = command;
    s.cwd = dir.path();
    s.env = scrubbed_env({"PATH"});
    s.log = dir / "log.txt";
    s.timeout_s = timeout_s;
    s.kill_grace_s = 0.5;
    return s;
  }
  /// Runs one child to its end on a fresh loop.
  ProcessResult run(const ChildSpec& s) {
    ProcessResult out;
    auto child = ChildProcess::start(io, s, [this](pid_t g) { pgid = g; }, [&](const ProcessResult& r) { out = r; });
    io.run();
    io.restart();
    return out;
  }
  testing::TempDir dir;
  boost::asio::io_context io;
  pid_t pgid = 0;
};

TEST_F(ChildTest, ManyChildrenRunAtOnceOnOneLoop) {
  std::vector<ProcessResult> results(3);
  std::vector<std::shared_ptr<ChildProcess>> children;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    auto s = spec("sleep 0.5; exit " + std::to_string(i));
    s.log = dir / ("log" + std::to_string(i));
    children.push_back(ChildProcess::start(io, s, nullptr, [&results, i](const ProcessResult& r) { results[i] = r; }));
  }
  io.run();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(results[i].end, ProcessResult::End::kExited);
    EXPECT_EQ(results[i].code, i);
  }
  EXPECT_LT(elapsed, 1.4);  // side by side, not one after another
}

TEST_F(ChildTest, GroupIsRecordedBeforeTheCommandRuns) {
  std::string marker = (dir / "ran").string();
  bool existed = true;
  ProcessResult out;
  auto child = ChildProcess::start(
      io, spec("touch " + marker),
      [&](pid_t g) {
        existed = std::filesystem::exists(marker);
        EXPECT_EQ(getpgid(g), g);
      },
      [&](const ProcessResult& r) { out = r; });
  io.run();
  EXPECT_TRUE(out.ok());
  EXPECT_FALSE(existed);
  EXPECT_TRUE(std::filesystem::exists(marker));
}

TEST_F(ChildTest, AFailingRecorderMeansTheCommandNeverRuns) {
  std::string marker = (dir / "ran").string();
  ProcessResult out;
  auto child = ChildProcess::start(
      io, spec("touch " + marker), [](pid_t) { throw std::runtime_error("db down"); },
      [&](const ProcessResult& r) { out = r; });
  io.run();
  EXPECT_EQ(out.end, ProcessResult::End::kSpawnFailed);
  EXPECT_THAT(out.error, HasSubstr("db down"));
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(ChildTest, StopKillsTheGroupEvenWhenItIgnoresSigterm) {
  ProcessResult out;
  auto child = ChildProcess::start(io, spec("trap '' TERM; sleep 30 & sleep 30"), [this](pid_t g) { pgid = g; },
                                   [&](const ProcessResult& r) { out = r; });
  boost::asio::steady_timer t(io, std::chrono::milliseconds(200));
  t.async_wait([&](const boost::system::error_code&) { child->stop(); });
  io.run();
  EXPECT_EQ(out.end, ProcessResult::End::kStopped);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(group_members(pgid).empty());
}

TEST_F(ChildTest, TimeoutEndsTheChild) {
  auto r = run(spec("sleep 30", 0.3));
  EXPECT_EQ(r.end, ProcessResult::End::kTimedOut);
  EXPECT_LT(r.seconds, 3);
}

TEST_F(ChildTest, AHugeTimeoutDoesNotEndTheChildAtOnce) {
  // 1e10 s is past what the clock's nanoseconds hold: a wrapped duration would fire at once.
  auto r = run(spec("sleep 0.2; echo finished", 1e10));
  EXPECT_EQ(r.end, ProcessResult::End::kExited) << r.describe();
  EXPECT_THAT(testing::read_file(dir / "log.txt"), HasSubstr("finished"));
}

TEST_F(ChildTest, OutputIsCappedWithHeadAndTail) {
  auto s = spec("yes x | head -c 100000; echo; echo THE-END");
  s.log_cap_bytes = 1000;
  auto r = run(s);
  EXPECT_TRUE(r.ok());
  std::string log = testing::read_file(dir / "log.txt");
  EXPECT_LT(log.size(), 1200u);
  EXPECT_THAT(log, HasSubstr("bytes of output dropped"));
  EXPECT_THAT(log, HasSubstr("THE-END"));
}

TEST_F(ChildTest, ChildSeesOnlyItsEnvironmentAndNoDaemonDescriptor) {
  setenv("ARD_TEST_SECRET_KEY", "sk-secret", 1);
  int leaky = dup2(open("/dev/null", O_RDONLY), 42);  // not close-on-exec: must not reach the child anyway
  auto r = run(spec("env; ls /proc/$$/fd"));
  close(leaky);
  unsetenv("ARD_TEST_SECRET_KEY");
  ASSERT_TRUE(r.ok());
  std::string log = testing::read_file(dir / "log.txt");
  EXPECT_THAT(log, HasSubstr("PATH="));
  EXPECT_EQ(log.find("sk-secret"), std::string::npos);
  EXPECT_EQ(log.find("\n" + std::to_string(leaky) + "\n"), std::string::npos) << log;
}

TEST_F(ChildTest, SetsidGrandchildDoesNotHoldTheExitBack) {
  // A grandchild that leaves the group keeps the output pipe open; the exit
  // is still reported within about a second.
  auto r = run(spec("setsid sleep 5 & echo started"));
  EXPECT_TRUE(r.ok());
  EXPECT_LT(r.seconds, 3);
  EXPECT_THAT(testing::read_file(dir / "log.txt"), HasSubstr("started"));
  system("pkill -f 'sleep 5' 2>/dev/null");
}

}  // namespace
}  // namespace ard
