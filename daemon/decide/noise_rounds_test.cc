// Tests of the noise rounds' state: one GPU keeps scale 1, the first
// calibration always applies, small moves keep the scales, restore.
#include "daemon/decide/noise_rounds.h"

#include <gmock/gmock.h>

namespace ard {
namespace {

TEST(NoiseRounds, OneGpuNeverCalibrates) {
  NoiseRounds r({"0"}, true);
  EXPECT_FALSE(r.calibrates());
  EXPECT_EQ(r.due(0, 1000, 20, 0), NoiseDue::never_measured);
  r.begin(true, "start");
  EXPECT_TRUE(r.holds());
  r.run_done("0", 1, 3000);
  ASSERT_TRUE(r.complete());
  EXPECT_EQ(r.finish(1000), "");
  EXPECT_FALSE(r.recalibrated());
  EXPECT_DOUBLE_EQ(r.scale("0"), 1);
  EXPECT_EQ(r.calibration(), 0);
  EXPECT_EQ(r.noise_from(), 0);
  EXPECT_EQ(r.due(19, 1001, 20, 0), NoiseDue::not_due);
  EXPECT_EQ(r.due(20, 1001, 20, 0), NoiseDue::every_experiments);
  EXPECT_EQ(r.due(0, 1000 + 3601, 20, 3600), NoiseDue::too_old);
}

TEST(NoiseRounds, TheFirstRoundCalibratesThenSmallMovesKeepTheScales) {
  NoiseRounds r({"0", "1"}, true);
  ASSERT_TRUE(r.calibrates());
  r.begin(true, "start");
  r.run_done("0", 1, 2850);
  EXPECT_FALSE(r.complete());
  r.run_done("1", 1, 3090);
  ASSERT_TRUE(r.complete());
  EXPECT_EQ(r.finish(10), "");
  EXPECT_TRUE(r.recalibrated());
  EXPECT_EQ(r.calibration(), 1);
  EXPECT_DOUBLE_EQ(r.scale("0"), 1);
  EXPECT_NEAR(r.scale("1"), 2850.0 / 3090, 1e-12);
  EXPECT_EQ(r.noise_from(), 1);
  // Step jitter under the tolerance: the scales and the calibration stay.
  const double s1 = r.scale("1");
  r.begin(false, "every");
  r.run_done("0", 1, 2850);
  r.run_done("1", s1, 2849);
  EXPECT_EQ(r.finish(20), "");
  EXPECT_FALSE(r.recalibrated());
  EXPECT_EQ(r.calibration(), 1);
  EXPECT_DOUBLE_EQ(r.scale("1"), s1);
  // A board that slowed by 2 %: a new calibration.
  r.begin(false, "every");
  r.run_done("0", 1, 2850);
  r.run_done("1", s1, 2793);
  EXPECT_EQ(r.finish(30), "");
  EXPECT_TRUE(r.recalibrated());
  EXPECT_EQ(r.calibration(), 2);
  EXPECT_GT(r.scale("1"), s1);
}

TEST(NoiseRounds, AFailedRunSkipsTheCalibrationAndSaysSo) {
  NoiseRounds r({"0", "1"}, true);
  r.begin(true, "start");
  r.run_done("0", 1, 2850);
  r.run_done("1", 1, std::nullopt);
  ASSERT_TRUE(r.complete());
  EXPECT_THAT(r.finish(5), ::testing::HasSubstr("calibration skipped"));
  EXPECT_EQ(r.calibration(), 0);
  EXPECT_EQ(r.due(0, 6, 20, 0), NoiseDue::not_due);  // measured, only not calibrated: no round in a loop
}

TEST(NoiseRounds, RestoreTakesTheStoredScalesOnlyForTheSameGpus) {
  NoiseRow row;
  row.created_at = 50;
  row.calibration = 3;
  row.scales = "0=1.0000,1=0.9500";
  NoiseRounds same({"0", "1"}, true);
  same.restore(row);
  EXPECT_EQ(same.calibration(), 3);
  EXPECT_DOUBLE_EQ(same.scale("1"), 0.95);
  EXPECT_EQ(same.due(0, 60, 20, 0), NoiseDue::not_due);
  NoiseRounds other({"0", "2"}, true);
  other.restore(row);
  EXPECT_EQ(other.calibration(), 0);
  EXPECT_DOUBLE_EQ(other.scale("2"), 1);
  NoiseRounds off({"0", "1"}, false);  // calibration off: scale 1 whatever was stored
  off.restore(row);
  EXPECT_DOUBLE_EQ(off.scale("1"), 1);
}

TEST(NoiseRounds, AHoldingRoundIsFollowedByAnotherUntilSigmaRestsOnEnoughDf) {
  NoiseRounds r({"0", "1", "2", "3"}, false);
  r.begin(true, "start");
  for (const char* g : {"0", "1", "2", "3"}) r.run_done(g, 1, 3000);
  r.finish(1);
  EXPECT_TRUE(r.wants_settle_round(NoiseEstimate{0.0015, 3}));
  EXPECT_TRUE(r.wants_settle_round(std::nullopt));
  EXPECT_FALSE(r.wants_settle_round(NoiseEstimate{0.0015, kSettleNoiseDf}));
  EXPECT_TRUE(r.wants_settle_round(NoiseEstimate{0.0015, 6}));
  EXPECT_FALSE(r.wants_settle_round(NoiseEstimate{0.0015, 6}));  // at most kMaxSettleRounds
  NoiseRounds periodic({"0", "1"}, false);
  periodic.begin(false, "every");
  periodic.run_done("0", 1, 3000);
  periodic.run_done("1", 1, 3000);
  periodic.finish(2);
  EXPECT_FALSE(periodic.wants_settle_round(NoiseEstimate{0.0015, 1}));  // a round that held nothing back
  NoiseRounds one({"0"}, false);
  one.begin(true, "start");
  one.run_done("0", 1, 3000);
  one.finish(3);
  // One GPU: the start round is followed by more runs of the baseline until σ
  // rests on kMinNoiseDf (each round is one run: df 0, 1, 2, then 3).
  EXPECT_TRUE(one.wants_settle_round(std::nullopt));
  EXPECT_TRUE(one.wants_settle_round(NoiseEstimate{0.0015, 1}));
  EXPECT_FALSE(one.wants_settle_round(NoiseEstimate{0.0015, kMinNoiseDf}));
  EXPECT_TRUE(one.wants_settle_round(NoiseEstimate{0.0015, 2}));
  EXPECT_FALSE(one.wants_settle_round(NoiseEstimate{0.0015, 2}));  // at most kMaxSettleRounds
  EXPECT_EQ(settle_noise_df(1), kMinNoiseDf);
  EXPECT_EQ(settle_noise_df(4), kSettleNoiseDf);
}

}  // namespace
}  // namespace ard
