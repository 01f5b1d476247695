// See transfer_rule.h. Numbers print with the summary block's 6 decimals, so
// the means and Δ in a line agree with `show`.
#include "daemon/decide/transfer_rule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "daemon/decide/run_evidence.h"
#include "daemon/util/text.h"

namespace ard {
namespace {

constexpr double kBound = 1;             // |λ| at which a change is decided: odds of e to 1
constexpr double kLastLook = 0;          // λ a change needs at its last run to transfer: the likelier answer
constexpr size_t kWindow = 2;            // changes on either side of ck that its λ weighs
constexpr double kSpread = 0.3;          // a change's gain at the rung: g or 0, give or take 0.3·g

/// One change as the chain model sees it: its mean and runs at the rung (in
/// keep_rule.h's sign) and its gain there under either answer.
struct Link {
  double mean = 0;  ///< improvement(goal, 0, mean of its runs): higher is better
  int n = 0;
  double g = 0;      ///< the gain if it transfers (0 if it is scale-bound)
  double var_g = 0;  ///< of g's measurement at rung 0
  double var = 0;    ///< of the gain at the rung under either answer: var_g + (kSpread·g)²
};

double log_sum_exp(double a, double b) {
  if (a == -std::numeric_limits<double>::infinity()) return b;
  if (b == -std::numeric_limits<double>::infinity()) return a;
  const double hi = std::max(a, b);
  return hi + std::log(std::exp(a - hi) + std::exp(b - hi));
}

/// log P(the means of links[lo..hi] | the answers, the mean of links[lo-1]):
/// a Kalman filter along the chain; bit j - lo of transfers says whether
/// change j transfers. Constant terms are left out (they cancel in λ).
double chain_log_likelihood(const std::vector<Link>& links, size_t lo, size_t hi, unsigned transfers, double sigma2) {
  double mean = links[lo - 1].mean, var = sigma2 / links[lo - 1].n, log_likelihood = 0;
  for (size_t j = lo; j <= hi; ++j) {
    const bool t = (transfers >> (j - lo)) & 1u;
    const double predicted = mean + (t ? links[j].g : 0.0);
    const double predicted_var = var + links[j].var;
    const double total_var = predicted_var + sigma2 / links[j].n;
    const double residual = links[j].mean - predicted;
    log_likelihood -= 0.5 * (std::log(total_var) + residual * residual / total_var);
    const double gain = predicted_var / total_var;
    mean = predicted + gain * residual;
    var = (1 - gain) * predicted_var;
  }
  return log_likelihood;
}

/// λ of change k over links[lo-1..hi] (lo <= k <= hi).
double chain_lambda(const std::vector<Link>& links, size_t lo, size_t hi, size_t k, double sigma2) {
  double transfers = -std::numeric_limits<double>::infinity(), bound = transfers;
  const unsigned count = 1u << (hi - lo + 1);
  for (unsigned answers = 0; answers < count; ++answers) {
    const double ll = chain_log_likelihood(links, lo, hi, answers, sigma2);
    if ((answers >> (k - lo)) & 1u) transfers = log_sum_exp(transfers, ll);
    else bound = log_sum_exp(bound, ll);
  }
  return transfers - bound;
}

/// σ² as the rule uses it: σ at the rung rests on few df, so a run's spread
/// around a mean is a Student t's, whose variance is σ²·df/(df − 2).
double t_variance(const NoiseEstimate& noise) {
  const double df = noise.df > 2 ? noise.df : 3;
  return noise.sigma * noise.sigma * df / (df - 2);
}

TransferDecision scale_bound(std::string reason) {
  TransferDecision d;
  d.reason = "scale-bound: " + std::move(reason);
  return d;
}

}  // namespace

const char* to_string(TransferVerdict verdict) {
  switch (verdict) {
    case TransferVerdict::transfers: return "transfers";
    case TransferVerdict::scale_bound: return "scale_bound";
    case TransferVerdict::run_again: return "run_again";
  }
  return "?";
}

std::vector<GainAtRung0> shrink_gains(const std::vector<GainAtRung0>& gains) {
  std::vector<GainAtRung0> out = gains;
  std::vector<size_t> known;
  for (size_t i = 0; i < gains.size(); ++i)
    if (gains[i].gain && std::isfinite(*gains[i].gain) && std::isfinite(gains[i].variance) && gains[i].variance >= 0)
      known.push_back(i);
  if (known.size() < 3) return out;
  const double n = static_cast<double>(known.size());
  double mean = 0, mean_var = 0, spread = 0;
  for (size_t i : known) mean += *gains[i].gain / n, mean_var += gains[i].variance / n;
  for (size_t i : known) spread += (*gains[i].gain - mean) * (*gains[i].gain - mean) / (n - 1);
  const double tau2 = std::max(0.0, spread - mean_var);  // how much the true gains differ
  for (size_t i : known) {
    const double var = gains[i].variance;
    const double w = tau2 + var > 0 ? tau2 / (tau2 + var) : 1.0;
    out[i].gain = mean + w * (*gains[i].gain - mean);
    out[i].variance = w * var + (1 - w) * (1 - w) * spread / n;
  }
  return out;
}

std::vector<TransferDecision> decide_transfers(const TransferInput& input, const TransferSettings& settings) {
  if (input.gains.size() + 1 != input.runs.size())
    throw std::invalid_argument("the transfer rule needs one gain at rung 0 per change of the chain");
  const size_t m = input.gains.size();
  std::vector<TransferDecision> out(m);
  const double sigma = input.noise.sigma;
  if (!(sigma > 0) || !std::isfinite(sigma)) {
    for (TransferDecision& d : out) d = scale_bound("σ at the rung is not a positive number");
    return out;
  }
  const double sigma2 = t_variance(input.noise);
  const std::vector<GainAtRung0> gains = shrink_gains(input.gains);
  std::vector<Spread> spreads;
  std::vector<Link> links;
  for (size_t i = 0; i <= m; ++i) {
    spreads.push_back(spread_of(input.runs[i]));
    Link l{improvement(settings.goal, 0.0, spreads.back().mean), spreads.back().n};
    if (i > 0) {
      const GainAtRung0& gain = gains[i - 1];
      const double rung0 = gain.gain.value_or(0);
      l.g = gain.gain && std::isfinite(rung0) && rung0 > sigma ? rung0 : sigma;
      l.var_g = gain.gain && std::isfinite(gain.variance) ? std::max(0.0, gain.variance) : 0.0;
      l.var = l.var_g + kSpread * kSpread * l.g * l.g;
    }
    links.push_back(l);
  }
  // The chain in parts, split at commits with no finished run: change k's runs are links[k].
  for (size_t a = 0; a <= m;) {
    if (links[a].n == 0) {
      if (a > 0) out[a - 1] = scale_bound("no finished run at the rung");
      if (a < m) out[a] = scale_bound("the commit before it has no finished run at the rung");
      ++a;
      continue;
    }
    size_t b = a;
    while (b < m && links[b + 1].n > 0) ++b;
    for (size_t k = a + 1; k <= b; ++k) {
      const size_t lo = std::max(a + 1, k > kWindow ? k - kWindow : 0), hi = std::min(b, k + kWindow);
      TransferDecision& d = out[k - 1];
      d.lambda = chain_lambda(links, lo, hi, k, sigma2);
      d.delta = links[k].mean - links[k - 1].mean;
      d.g = links[k].g;
      const GainAtRung0 &gain = gains[k - 1], &measured = input.gains[k - 1];
      const bool known = gain.gain && std::isfinite(*gain.gain);
      const bool shrunk = known && *gain.gain != *measured.gain;
      const std::string g =
          known ? "g = " + format_fixed(d.g, 6) + " ± " + format_fixed(std::sqrt(links[k].var_g), 6) +
                      ", its gain at rung 0" + (d.g > *gain.gain ? " floored at σ" : "") +
                      (shrunk ? " (" + format_fixed(*measured.gain, 6) + " ± " +
                                    format_fixed(std::sqrt(std::max(0.0, measured.variance)), 6) +
                                    " as measured, drawn toward the round's mean)"
                              : "")
                : "g = σ = " + format_fixed(d.g, 6) + ", its gain at rung 0 unknown";
      const std::string numbers =
          "mean " + format_fixed(spreads[k].mean, 6) + " (n=" + std::to_string(links[k].n) + ") against " +
          format_fixed(spreads[k - 1].mean, 6) + " (n=" + std::to_string(links[k - 1].n) + ") before it: Δ = " +
          format_signed(d.delta, 6) + "; " + g + "; σ = " + format_fixed(sigma, 6) + " (df " +
          std::to_string(input.noise.df) + ", taken ×" + format_fixed(std::sqrt(sigma2) / sigma, 2) +
          " for its df); λ over c" + std::to_string(lo - 1) + "..c" + std::to_string(hi) + " = " +
          format_signed(d.lambda, 2);
      if (d.lambda >= kBound) {
        d.verdict = TransferVerdict::transfers;
        d.reason = "transfers: " + numbers + " ≥ +1";
      } else if (d.lambda <= -kBound) {
        d.verdict = TransferVerdict::scale_bound;
        d.reason = "scale-bound: " + numbers + " ≤ −1";
      } else if (links[k].n < settings.max_runs) {
        d.verdict = TransferVerdict::run_again;
        d.reason = "run again: " + numbers + ", between −1 and +1";
      } else {
        const bool transfers = d.lambda >= kLastLook;
        d.verdict = transfers ? TransferVerdict::transfers : TransferVerdict::scale_bound;
        d.reason = std::string(transfers ? "transfers: " : "scale-bound: ") + numbers + " at the change's last run (n=" +
                   std::to_string(links[k].n) + "): " + (transfers ? "≥ 0, the likelier" : "< 0, the likelier");
      }
    }
    a = b + 1;
  }
  return out;
}

}  // namespace ard
