// Board calibration: the budget scale per GPU that makes the incumbent take
// the same number of training steps on every board.
//
// Boards of one kind differ in speed by a few per cent; on a data-limited
// corpus val_bpb moves with the step count, so an uncalibrated comparison
// hands the win to whichever board is faster or slower. The trainer's harness
// scales its time budget by `--budget-scale F` (trainer/harness/run_options.h);
// this file turns the incumbent's step counts into those factors.
//
// The target is the slowest board at scale 1: every board then takes the steps
// the slowest one takes in the configured budget. So no run is longer than
// budget_s (the stage timeouts and expected ends derived from it stay true),
// faster boards finish sooner instead of idling, and repeated calibrations
// cannot drift, because the target is anchored to scale 1 rather than to the
// scales of the moment.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

namespace ard {

/// One calibration run: the incumbent on one GPU at a given scale.
struct CalibrationRun {
  std::string gpu;
  double scale = 1;  ///< the budget scale the run was given
  long steps = 0;    ///< num_steps from its summary
};

inline constexpr double kMinBudgetScale = 0.5;  ///< the harness's accepted range
inline constexpr double kMaxBudgetScale = 2.0;

/// gpu → scale, or a one-line error: no runs, a run with steps <= 0 or a scale
/// outside [kMinBudgetScale, kMaxBudgetScale], or a board so much faster than
/// the slowest that its scale would fall below kMinBudgetScale. Several runs of
/// one GPU are averaged (steps per unit of scale). One GPU gets 1.
std::variant<std::map<std::string, double>, std::string> calibrate_scales(const std::vector<CalibrationRun>& runs);

}  // namespace ard
