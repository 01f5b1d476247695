// Tests of the environment pause: back-off, the probe that ends it, the status
// line, and how a child's failure is told to be the machine's. The full disk
// is a size-limited tmpfs (the tests skip, saying why, where mounting is refused).
#include "daemon/exec/fault_pause.h"

#include <gmock/gmock.h>
#include <string.h>

#include "testing/test_util.h"
#include "testing/tmpfs.h"

namespace ard {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(FaultPause, BacksOffWhileTheDiskStaysFullAndEndsWhenItClears) {
  testing::TempDir dir;
  testing::SmallTmpfs disk(dir / "logs", 1 << 20);
  if (!disk.mounted()) GTEST_SKIP() << disk.why_not();
  double now = 1000;
  FaultPause pause(10, 30, [&] { return now; });
  EXPECT_FALSE(pause.active());
  EXPECT_EQ(pause.status_line(), "");

  disk.fill();
  auto fault = probe_write(dir / "logs");
  ASSERT_TRUE(fault);
  pause.trip(*fault);
  EXPECT_TRUE(pause.active());
  EXPECT_EQ(pause.until(), 1010);
  EXPECT_THAT(pause.status_line(),
              MatchesRegex("paused: .*/logs: No space left on device \\(0 B free\\), retrying at [0-9][0-9]:[0-9][0-9]"));

  now = 1010;
  EXPECT_FALSE(pause.check());  // still full: twice the wait
  EXPECT_EQ(pause.until(), 1030);
  now = 1030;
  EXPECT_FALSE(pause.check());  // capped
  EXPECT_EQ(pause.until(), 1060);

  disk.clear();
  EXPECT_TRUE(pause.check());
  EXPECT_FALSE(pause.active());
  EXPECT_EQ(pause.status_line(), "");
}

TEST(FaultPause, AProbeOfAFileLooksInItsDirectory) {
  testing::TempDir dir;
  testing::write_file(dir / "state/results.db", "x");
  EXPECT_EQ(probe_dir(dir / "state/results.db"), dir / "state");
  EXPECT_EQ(probe_dir(dir / "state"), dir / "state");
}

TEST(ChildFault, AHealthyRunWithALostLogIsTheMachinesFault) {
  testing::TempDir dir;
  ProcessResult r;
  r.end = ProcessResult::End::kExited;
  EXPECT_FALSE(child_fault(r, dir / "logs/1-train.log", {dir.path()}));  // a clean run: no probe, no fault
  r.log_error = (dir / "logs/1-train.log").string() + ": cannot write: " + strerror(EIO);
  auto fault = child_fault(r, dir / "logs/1-train.log", {dir.path()});
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->path(), dir / "logs/1-train.log");
  EXPECT_EQ(fault->message(), std::string("cannot write: ") + strerror(EIO));
}

TEST(ChildFault, AFailureNextToAFullDiskIsTheMachinesAndElseTheChilds) {
  testing::TempDir dir;
  ProcessResult r;
  r.end = ProcessResult::End::kExited;
  r.code = 1;
  EXPECT_FALSE(child_fault(r, dir / "logs/1-build.log", {dir.path()}));  // the disk is fine: the build's own failure
  testing::SmallTmpfs disk(dir / "worktree", 1 << 20);
  if (!disk.mounted()) GTEST_SKIP() << disk.why_not();
  disk.fill();
  auto fault = child_fault(r, dir / "logs/1-build.log", {dir.path(), dir / "worktree"});
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->path(), dir / "worktree");
  EXPECT_THAT(fault->what(), HasSubstr("No space left on device (0 B free)"));
}

}  // namespace
}  // namespace ard
