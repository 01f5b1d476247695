// See profiles.h.
#include "proposers/profiles.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace ard {

ProfileDraw::ProfileDraw(std::vector<double> weights) : credit_(weights.size(), 0.0) {
  set_weights(std::move(weights));
}

void ProfileDraw::set_weights(std::vector<double> weights) {
  if (weights.empty() || weights.size() != credit_.size())
    throw std::invalid_argument("ProfileDraw: one weight per profile");
  for (double w : weights)
    if (!(w > 0)) throw std::invalid_argument("ProfileDraw: weights must be > 0");
  weights_ = std::move(weights);
}

size_t ProfileDraw::next() {
  const double total = std::accumulate(weights_.begin(), weights_.end(), 0.0);
  size_t best = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    credit_[i] += weights_[i];
    if (credit_[i] > credit_[best]) best = i;
  }
  credit_[best] -= total;
  return best;
}

std::vector<double> adapted_shares(const std::vector<double>& base, const std::vector<ProfileRecord>& records,
                                   double floor) {
  const size_t n = base.size();
  if (n == 0 || records.size() != n) throw std::invalid_argument("adapted_shares: one record per profile");
  floor = std::clamp(floor, 0.0, 1.0 / static_cast<double>(n));
  double keeps = 0, hours = 0;
  for (const auto& r : records) {
    keeps += static_cast<double>(r.keeps);
    hours += r.gpu_seconds / 3600;
  }
  std::vector<double> w(base);
  if (keeps > 0 && hours > 0) {
    const double pooled = keeps / hours;
    for (size_t i = 0; i < n; ++i) {
      const double rate = (static_cast<double>(records[i].keeps) + pooled) / (records[i].gpu_seconds / 3600 + 1);
      w[i] = base[i] * rate / pooled;
    }
  }
  const double sum = std::accumulate(w.begin(), w.end(), 0.0);
  std::vector<double> shares(n);
  for (size_t i = 0; i < n; ++i) shares[i] = floor + (1 - static_cast<double>(n) * floor) * w[i] / sum;
  return shares;
}

}  // namespace ard
