// Tests of the overflow-safe conversion of seconds to a clock duration.
#include "daemon/duration.h"

#include <gtest/gtest.h>

#include <limits>

namespace ard {
namespace {

TEST(Duration, HugeSecondsAreClampedNotWrapped) {
  const auto max = steady_seconds(kMaxDurationS);
  EXPECT_GT(max, std::chrono::hours(24 * 365 * 99));
  EXPECT_EQ(steady_seconds(1e10), max);  // 317 years: past the clock's nanoseconds
  EXPECT_EQ(steady_seconds(1e300), max);
  EXPECT_EQ(steady_seconds(std::numeric_limits<double>::infinity()), max);
  // The clock can add it to now without overflowing.
  EXPECT_GT(std::chrono::steady_clock::now() + max, std::chrono::steady_clock::now());
}

TEST(Duration, NegativeAndNanAreZeroAndOrdinaryValuesAreExact) {
  EXPECT_EQ(steady_seconds(-5), std::chrono::steady_clock::duration::zero());
  EXPECT_EQ(steady_seconds(std::numeric_limits<double>::quiet_NaN()), std::chrono::steady_clock::duration::zero());
  EXPECT_EQ(steady_seconds(1.5), std::chrono::milliseconds(1500));
}

}  // namespace
}  // namespace ard
