// See noise.h.
#include "daemon/noise.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ard {

std::optional<NoiseEstimate> pooled_noise(const std::vector<std::vector<double>>& groups) {
  double squares = 0;
  int df = 0;
  for (const auto& group : groups) {
    double sum = 0;
    int n = 0;
    for (double v : group)
      if (std::isfinite(v)) sum += v, ++n;
    if (n < 2) continue;
    const double mean = sum / n;
    for (double v : group)
      if (std::isfinite(v)) squares += (v - mean) * (v - mean);
    df += n - 1;
  }
  if (df == 0) return std::nullopt;
  return NoiseEstimate{std::sqrt(squares / df), df, false};
}

std::optional<NoiseEstimate> noise_for_decisions(const std::optional<NoiseEstimate>& measured,
                                                 double prior_sigma, int min_df) {
  if (measured && measured->df >= min_df) return measured;
  if (prior_sigma > 0) return NoiseEstimate{prior_sigma, 0, true};
  return std::nullopt;
}

NoiseDue noise_round_due(bool measured_before, int experiments_since_round, double round_age_s, int every, int gpus,
                         double max_age_s) {
  if (!measured_before) return NoiseDue::never_measured;
  if (every > 0 && experiments_since_round >= every * std::max(gpus, 1)) return NoiseDue::every_experiments;
  if (max_age_s > 0 && round_age_s >= max_age_s) return NoiseDue::too_old;
  return NoiseDue::not_due;
}

std::string describe(NoiseDue due, int experiments_since_round, double round_age_s) {
  char text[96];
  switch (due) {
    case NoiseDue::not_due: return "";
    case NoiseDue::never_measured: return "never measured";
    case NoiseDue::every_experiments:
      std::snprintf(text, sizeof text, "%d experiments since the last round", experiments_since_round);
      return text;
    case NoiseDue::too_old:
      std::snprintf(text, sizeof text, "the estimate is %.1f h old", round_age_s / 3600);
      return text;
  }
  return "";
}

}  // namespace ard
