// Tests of a fault held on the loop: its retry time, its probe, and the wake-up.
#include "daemon/engine/fault_hold.h"

#include <gmock/gmock.h>

#include "testing/test_util.h"
#include "testing/tmpfs.h"

namespace ard {
namespace {

using ::testing::HasSubstr;
using Now = FaultHold::Now;

TEST(FaultHold, HoldsUntilItsRetryThenProbesUntilTheDiskTakesWritesAgain) {
  testing::TempDir dir;
  testing::SmallTmpfs disk(dir / "logs", 1 << 20);
  if (!disk.mounted()) GTEST_SKIP() << disk.why_not();
  boost::asio::io_context io;
  double now = 1000;
  FaultHold hold(io, 5, [] {}, [&] { return now; });
  EXPECT_EQ(hold.now(), Now::kFree);
  disk.fill();
  const std::string line = hold.hold(EnvironmentFault(dir / "logs" / "f", std::nullopt, "No space left on device"));
  EXPECT_THAT(line, HasSubstr("No space left on device"));
  EXPECT_THAT(line, HasSubstr("retrying at"));
  EXPECT_EQ(hold.now(), Now::kHeld);
  now += 4;
  hold.hold(EnvironmentFault(dir / "logs" / "g", std::nullopt, "another handler met it"));  // paused once
  EXPECT_EQ(hold.now(), Now::kHeld);
  EXPECT_THAT(hold.fault()->what(), HasSubstr("/f: No space left on device"));
  now += 1;
  EXPECT_EQ(hold.now(), Now::kProbeFailed);  // the retry is due and the disk is still full: backed off
  EXPECT_TRUE(hold.active());
  now += 9;
  EXPECT_EQ(hold.now(), Now::kHeld);  // the second wait is twice the first
  disk.clear();
  now += 1;
  EXPECT_EQ(hold.now(), Now::kCleared);
  EXPECT_FALSE(hold.active());
  EXPECT_EQ(hold.now(), Now::kFree);
}

TEST(FaultHold, WakesTheLoopWhenItsRetryIsDueAndNotAfterCancel) {
  testing::TempDir dir;
  boost::asio::io_context io;
  int wakes = 0;
  FaultHold hold(io, 0.1, [&] { ++wakes; });
  hold.hold(EnvironmentFault(dir.path() / "gone" / "f", std::nullopt, "I/O error"));
  io.run_for(std::chrono::seconds(3));  // returns once the timer fired: nothing else is queued
  EXPECT_EQ(wakes, 1);
  io.restart();
  hold.hold(EnvironmentFault(dir.path() / "gone" / "f", std::nullopt, "I/O error"));
  hold.cancel();
  io.run_for(std::chrono::seconds(1));
  EXPECT_EQ(wakes, 1);
}

}  // namespace
}  // namespace ard
