// See noise_rounds.h.
#include "daemon/decide/noise_rounds.h"

#include <cmath>

#include "daemon/decide/run_evidence.h"

namespace ard {

NoiseRounds::NoiseRounds(std::vector<std::string> gpus, bool calibrate)
    : gpus_(std::move(gpus)), calibrate_(calibrate && gpus_.size() > 1) {
  for (const auto& g : gpus_) scales_[g] = 1;
}

void NoiseRounds::restore(const std::optional<NoiseRow>& last) {
  if (!last) return;
  last_at_ = last->created_at;
  rounds_ = 1;
  if (!calibrate_) return;
  auto stored = parse_scales(last->scales);
  bool all = true;
  for (const auto& g : gpus_) all = all && stored.count(g);
  if (!all) return;  // other GPUs than last time: calibrate again from scale 1
  for (const auto& g : gpus_) scales_[g] = stored[g];
  calibration_ = last->calibration;
}

double NoiseRounds::scale(const std::string& gpu) const {
  auto it = scales_.find(gpu);
  return it == scales_.end() ? 1 : it->second;
}

NoiseDue NoiseRounds::due(int experiments_since_round, double now, int every, double max_age_s) const {
  if (active_) return NoiseDue::not_due;
  return noise_round_due(last_at_.has_value(), experiments_since_round,
                         last_at_ ? now - *last_at_ : 0, every, static_cast<int>(gpus_.size()), max_age_s);
}

void NoiseRounds::begin(bool hold, std::string reason) {
  active_ = true;
  hold_ = hold;
  recalibrated_ = false;
  left_ = static_cast<int>(gpus_.size());
  reason_ = std::move(reason);
  runs_.clear();
}

void NoiseRounds::run_done(const std::string& gpu, double scale, std::optional<long> steps) {
  if (!active_ || left_ == 0) return;
  --left_;
  if (steps && *steps > 0) runs_.push_back({gpu, scale, *steps});
}

std::string NoiseRounds::finish(double now) {
  active_ = false;
  recalibrated_ = false;
  last_at_ = now;
  ++rounds_;
  if (!calibrate_) return "";
  if (runs_.size() < gpus_.size()) return "calibration skipped: a run of the round gave no step count";
  auto result = calibrate_scales(runs_);
  if (auto* error = std::get_if<std::string>(&result)) return "calibration failed: " + *error;
  const auto& fresh = std::get<std::map<std::string, double>>(result);
  bool moved = calibration_ == 0;  // the first calibration always applies
  for (const auto& [gpu, s] : fresh)
    if (std::fabs(s / scale(gpu) - 1) > kRecalibrateTolerance) moved = true;
  if (!moved) return "";
  for (const auto& [gpu, s] : fresh) scales_[gpu] = s;
  ++calibration_;
  recalibrated_ = true;
  return "";
}

bool NoiseRounds::wants_settle_round(const std::optional<NoiseEstimate>& measured) {
  if (!hold_ || settle_rounds_ >= kMaxSettleRounds) return false;
  if (measured && measured->df >= settle_noise_df(static_cast<int>(gpus_.size()))) return false;
  ++settle_rounds_;
  return true;
}

}  // namespace ard
