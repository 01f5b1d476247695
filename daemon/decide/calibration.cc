// See calibration.h. A board's rate is its steps per unit of budget scale;
// steps grow with the counted budget, so rate × scale predicts the steps.
#include "daemon/decide/calibration.h"

#include <algorithm>
#include <cstdio>

namespace ard {

std::variant<std::map<std::string, double>, std::string> calibrate_scales(const std::vector<CalibrationRun>& runs) {
  if (runs.empty()) return std::string("calibration: no runs");
  std::map<std::string, std::pair<double, int>> rate_sum;  // gpu → (Σ steps/scale, n)
  for (const auto& r : runs) {
    char text[160];
    if (r.steps <= 0) {
      std::snprintf(text, sizeof text, "calibration: GPU %s: a run with %ld steps", r.gpu.c_str(), r.steps);
      return std::string(text);
    }
    if (!(r.scale >= kMinBudgetScale && r.scale <= kMaxBudgetScale)) {
      std::snprintf(text, sizeof text, "calibration: GPU %s: scale %g outside [%g, %g]", r.gpu.c_str(), r.scale,
                    kMinBudgetScale, kMaxBudgetScale);
      return std::string(text);
    }
    auto& [sum, n] = rate_sum[r.gpu];
    sum += static_cast<double>(r.steps) / r.scale;
    ++n;
  }
  std::map<std::string, double> rate;
  for (const auto& [gpu, s] : rate_sum) rate[gpu] = s.first / s.second;
  auto slowest = std::min_element(rate.begin(), rate.end(), [](auto& a, auto& b) { return a.second < b.second; });

  std::map<std::string, double> scales;
  for (const auto& [gpu, r] : rate) {
    const double scale = slowest->second / r;
    if (scale < kMinBudgetScale) {
      char text[200];
      std::snprintf(text, sizeof text,
                    "calibration: GPU %s takes %.0f steps per budget, GPU %s %.0f: more than %g× apart, "
                    "not boards of one kind",
                    gpu.c_str(), r, slowest->first.c_str(), slowest->second, 1 / kMinBudgetScale);
      return std::string(text);
    }
    scales[gpu] = scale;
  }
  return scales;
}

}  // namespace ard
