// Tests of the circuit breaker on an injected clock: when it opens, how its
// pauses back off, what closes it.
#include "daemon/decide/circuit_breaker.h"

#include "testing/test_util.h"

namespace ard {
namespace {

class BreakerTest : public ::testing::Test {
 protected:
  double now = 1000;
  CircuitBreaker breaker{BreakerConfig{3, 60, 1800}, [this] { return now; }};
};

TEST_F(BreakerTest, OpensAfterKSameFailuresInARow) {
  breaker.record_failure("crash", "CUDA driver version is insufficient\nat 0x1234");
  breaker.record_failure("crash", "CUDA driver version is insufficient\nat 0x5678");
  EXPECT_FALSE(breaker.paused());
  breaker.record_failure("crash", "  CUDA driver version is insufficient  \n");
  auto p = breaker.paused();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->reason, "3 experiments in a row failed the same way: crash: CUDA driver version is insufficient");
  EXPECT_DOUBLE_EQ(p->until, 1060);
  EXPECT_EQ(p->trips, 1);
}

TEST_F(BreakerTest, DifferentFailuresDoNotAddUp) {
  breaker.record_failure("crash", "a");
  breaker.record_failure("crash", "b");
  breaker.record_failure("timeout", "b");
  breaker.record_failure("crash", "a");
  EXPECT_FALSE(breaker.paused());
}

TEST_F(BreakerTest, BacksOffExponentiallyUpToTheCap) {
  for (int i = 0; i < 3; ++i) breaker.record_failure("build_fail", "error: x");
  std::vector<double> pauses;
  for (int trip = 0; trip < 8; ++trip) {
    auto p = breaker.paused();
    ASSERT_TRUE(p);
    pauses.push_back(p->until - now);
    now = p->until;  // the pause ends: one experiment is let through
    EXPECT_FALSE(breaker.paused());
    breaker.record_failure("build_fail", "error: x");  // and fails the same way: paused at once
  }
  EXPECT_EQ(pauses, (std::vector<double>{60, 120, 240, 480, 960, 1800, 1800, 1800}));
}

TEST_F(BreakerTest, ASuccessCloses) {
  for (int i = 0; i < 3; ++i) breaker.record_failure("crash", "x");
  now += 60;
  breaker.record_success();
  EXPECT_FALSE(breaker.paused());
  EXPECT_FALSE(breaker.last_pause());
  breaker.record_failure("crash", "x");
  breaker.record_failure("crash", "x");
  EXPECT_FALSE(breaker.paused());  // counting starts again
}

TEST_F(BreakerTest, AnEnvironmentFaultPausesAtOnce) {
  breaker.record_environment_fault("/s/results.db: database or disk is full (12 KiB free)\nmore");
  auto p = breaker.paused();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->reason, "/s/results.db: database or disk is full (12 KiB free)");
  EXPECT_DOUBLE_EQ(p->until, 1060);
  now = 1060;
  breaker.record_environment_fault("/s/results.db: database or disk is full (12 KiB free)");
  EXPECT_DOUBLE_EQ(breaker.paused()->until, 1060 + 120);
}

TEST_F(BreakerTest, StatusLineSaysWhenItRetries) {
  EXPECT_EQ(breaker.status_line(), "");
  breaker.record_environment_fault("no GPU");
  std::string line = breaker.status_line();
  EXPECT_EQ(line.rfind("paused: no GPU, retrying at ", 0), 0u) << line;
  EXPECT_EQ(line.size(), std::string("paused: no GPU, retrying at HH:MM").size()) << line;
}

TEST(FirstLine, Trims) {
  EXPECT_EQ(first_line("  a b \r\nc"), "a b");
  EXPECT_EQ(first_line(""), "");
}

TEST_F(BreakerTest, AnEndCountsAsItsStatusSays) {
  for (const char* nothing : {"interrupted", "conflict", "duplicate"}) {
    breaker.record_end("crash", "a");
    breaker.record_end("crash", "a");
    breaker.record_end(nothing, "a");  // neither a failure nor a success: the run of failures goes on
    breaker.record_end("crash", "a");
    ASSERT_TRUE(breaker.paused()) << nothing;
    breaker.record_end("discarded", "");  // a success closes it
    EXPECT_FALSE(breaker.paused()) << nothing;
  }
  breaker.record_end("timeout", "t");
  breaker.record_end("timeout", "t");
  breaker.record_end("kept", "");
  breaker.record_end("timeout", "t");
  EXPECT_FALSE(breaker.paused());
}

}  // namespace
}  // namespace ard
