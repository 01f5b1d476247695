// Tests of board calibration: the scales that give every board the slowest
// board's steps, re-calibration at non-unit scales, and the refusals.
#include "daemon/decide/calibration.h"

#include <gmock/gmock.h>

namespace ard {
namespace {

using Scales = std::map<std::string, double>;

Scales ok(const std::vector<CalibrationRun>& runs) {
  auto r = calibrate_scales(runs);
  if (auto* e = std::get_if<std::string>(&r)) ADD_FAILURE() << *e;
  return std::get<Scales>(r);
}

std::string error_of(const std::vector<CalibrationRun>& runs) {
  auto r = calibrate_scales(runs);
  return std::holds_alternative<std::string>(r) ? std::get<std::string>(r) : "no error";
}

TEST(Calibration, OneGpuGetsOne) {
  Scales s = ok({{"0", 1, 2800}});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s["0"], 1);
  // Also when its last run was at another scale.
  EXPECT_DOUBLE_EQ(ok({{"0", 0.9, 2500}})["0"], 1);
}

TEST(Calibration, EveryBoardGetsTheSlowestBoardsSteps) {
  // Boards at 0.95, 0.98, 1.00, 1.03 × speed, 3000 steps at speed 1.
  Scales s = ok({{"0", 1, 2850}, {"1", 1, 2940}, {"2", 1, 3000}, {"3", 1, 3090}});
  EXPECT_DOUBLE_EQ(s["0"], 1);
  EXPECT_NEAR(s["1"], 0.95 / 0.98, 1e-12);
  EXPECT_NEAR(s["2"], 0.95, 1e-12);
  EXPECT_NEAR(s["3"], 0.95 / 1.03, 1e-12);
  for (auto& [gpu, scale] : s) EXPECT_LE(scale, 1);  // no run is longer than the budget
}

TEST(Calibration, RecalibrationAtCurrentScalesDoesNotDrift) {
  Scales first = ok({{"0", 1, 2850}, {"1", 1, 3090}});
  // The next round runs at those scales; the slow board has become 2 % slower.
  const double slow_now = 2850 * 0.98;
  Scales second = ok({{"0", first["0"], static_cast<long>(slow_now)}, {"1", first["1"], 2850}});
  EXPECT_DOUBLE_EQ(second["0"], 1);
  EXPECT_NEAR(second["1"], static_cast<long>(slow_now) / 3090.0, 1e-3);
}

TEST(Calibration, SeveralRunsOfAGpuAreAveraged) {
  Scales s = ok({{"0", 1, 2900}, {"0", 1, 3100}, {"1", 1, 2000}, {"1", 0.5, 1000}});
  EXPECT_NEAR(s["0"], 2000.0 / 3000, 1e-12);
  EXPECT_DOUBLE_EQ(s["1"], 1);
}

TEST(Calibration, Refusals) {
  EXPECT_EQ(error_of({}), "calibration: no runs");
  EXPECT_EQ(error_of({{"0", 1, 0}}), "calibration: GPU 0: a run with 0 steps");
  EXPECT_EQ(error_of({{"0", 3, 100}}), "calibration: GPU 0: scale 3 outside [0.5, 2]");
  EXPECT_THAT(error_of({{"0", 1, 1000}, {"1", 1, 2500}}),
              ::testing::StartsWith("calibration: GPU 1 takes 2500 steps per budget, GPU 0 1000: more than 2×"));
}

}  // namespace
}  // namespace ard
