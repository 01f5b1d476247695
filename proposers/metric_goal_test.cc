// Tests of the metric's direction: the sign of an improvement under each goal.
#include "proposers/metric_goal.h"

#include <gtest/gtest.h>

namespace ard {
namespace {

TEST(MetricGoal, ImprovementIsPositiveWhenTheCandidateIsBetter) {
  EXPECT_DOUBLE_EQ(improvement(MetricGoal::kMin, 1.0, 0.9), 0.1);
  EXPECT_DOUBLE_EQ(improvement(MetricGoal::kMin, 0.9, 1.0), -0.1);
  EXPECT_DOUBLE_EQ(improvement(MetricGoal::kMax, 0.5, 0.75), 0.25);
  EXPECT_DOUBLE_EQ(improvement(MetricGoal::kMax, 0.75, 0.5), -0.25);
}

TEST(MetricGoal, IsBetterIsStrict) {
  EXPECT_TRUE(is_better(MetricGoal::kMin, 0.9, 1.0));
  EXPECT_FALSE(is_better(MetricGoal::kMin, 1.0, 1.0));
  EXPECT_FALSE(is_better(MetricGoal::kMin, 1.1, 1.0));
  EXPECT_TRUE(is_better(MetricGoal::kMax, 1.1, 1.0));
  EXPECT_FALSE(is_better(MetricGoal::kMax, 1.0, 1.0));
  EXPECT_FALSE(is_better(MetricGoal::kMax, 0.9, 1.0));
}

TEST(MetricGoal, Words) {
  EXPECT_STREQ(to_string(MetricGoal::kMin), "min");
  EXPECT_STREQ(to_string(MetricGoal::kMax), "max");
  EXPECT_STREQ(better_word(MetricGoal::kMax), "higher");
  EXPECT_STREQ(improve_verb(MetricGoal::kMin), "lowers");
}

}  // namespace
}  // namespace ard
