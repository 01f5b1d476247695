// See noise.h.
#include "daemon/decide/noise.h"

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

namespace {

/// The continued fraction of the regularized incomplete beta function
/// (modified Lentz), which converges quickly for x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  auto guard = [](double v) { return std::fabs(v) < kTiny ? kTiny : v; };
  double c = 1, d = 1 / guard(1 - (a + b) * x / (a + 1)), h = d;
  for (int m = 1; m <= 500; ++m) {
    const double even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    d = 1 / guard(1 + even * d);
    c = guard(1 + even / c);
    h *= d * c;
    const double odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 / guard(1 + odd * d);
    c = guard(1 + odd / c);
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < kEps) break;
  }
  return h;
}

/// I_x(a, b), the regularized incomplete beta function.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                                b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

}  // namespace

double student_t_cdf(double t, int df) {
  const double nu = df;
  const double tail = 0.5 * incomplete_beta(nu / 2, 0.5, nu / (nu + t * t));  // P(T > |t|)
  return t > 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, int df) {
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  double lo = 0, hi = 1;
  while (student_t_cdf(hi, df) < p && hi < 1e12) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double keep_margin(double z, const NoiseEstimate& noise) {
  if (noise.from_prior || noise.df <= 0 || noise.df > 1000) return z;
  const double level = 0.5 * std::erfc(-z / std::sqrt(2.0));  // Φ(z)
  return student_t_quantile(level, noise.df);
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
