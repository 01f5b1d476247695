// See transfer_rule.h. Numbers print with the summary block's 6 decimals, so
// a hand check from `show` agrees.
#include "daemon/decide/transfer_rule.h"

#include <cmath>

#include "daemon/decide/run_evidence.h"
#include "daemon/util/text.h"

namespace ard {
namespace {

constexpr double kBound = 1;      // |λ| at which the test stops: odds of e to 1
constexpr double kLastLook = 0.5;  // λ a change needs at its last run to transfer: in doubt, scale-bound

}  // namespace

const char* to_string(TransferVerdict verdict) {
  switch (verdict) {
    case TransferVerdict::transfers: return "transfers";
    case TransferVerdict::scale_bound: return "scale_bound";
    case TransferVerdict::run_again: return "run_again";
  }
  return "?";
}

TransferDecision decide_transfer(const TransferInput& input, const TransferSettings& settings) {
  TransferDecision d;
  const Spread before = spread_of(input.before), change = spread_of(input.change);
  if (before.n == 0 || change.n == 0) {
    d.reason = before.n == 0 ? "scale-bound: the commit before it has no finished run at the rung"
                             : "scale-bound: no finished run at the rung";
    return d;
  }
  const double sigma = input.noise.sigma;
  if (!(sigma > 0) || !std::isfinite(sigma)) {
    d.reason = "scale-bound: σ at the rung is not a positive number";
    return d;
  }
  d.delta = improvement(settings.goal, before.mean, change.mean);
  const double rung0 = input.gain_at_rung0.value_or(0);
  const double g = std::isfinite(rung0) && rung0 > sigma ? rung0 : sigma;
  const double var = sigma * sigma * (1.0 / before.n + 1.0 / change.n);
  const double lambda = (d.delta * g - g * g / 2) / var;
  d.g = g;
  d.lambda = lambda;
  const bool known = input.gain_at_rung0 && std::isfinite(*input.gain_at_rung0);
  const std::string gain = known ? "g = " + format_fixed(g, 6) + ", its gain at rung 0" + (g > rung0 ? " floored at σ" : "")
                                 : "g = σ = " + format_fixed(g, 6) + ", its gain at rung 0 unknown";
  const std::string numbers = "mean " + format_fixed(change.mean, 6) + " (n=" + std::to_string(change.n) + ") against " +
                              format_fixed(before.mean, 6) + " (n=" + std::to_string(before.n) +
                              ") before it: Δ = " + format_signed(d.delta, 6) + "; " + gain + "; σ = " +
                              format_fixed(sigma, 6) + " (df " + std::to_string(input.noise.df) +
                              "); λ = (Δ·g − g²/2)/(σ²·(1/" + std::to_string(before.n) + "+1/" +
                              std::to_string(change.n) + ")) = " + format_signed(lambda, 2);
  if (lambda >= kBound) {
    d.verdict = TransferVerdict::transfers;
    d.reason = "transfers: " + numbers + " ≥ +1";
  } else if (lambda <= -kBound) {
    d.verdict = TransferVerdict::scale_bound;
    d.reason = "scale-bound: " + numbers + " ≤ −1";
  } else if (change.n < settings.max_runs) {
    d.verdict = TransferVerdict::run_again;
    d.reason = "run again: " + numbers + ", between −1 and +1";
  } else {
    const bool transfers = lambda >= kLastLook;
    d.verdict = transfers ? TransferVerdict::transfers : TransferVerdict::scale_bound;
    d.reason = std::string(transfers ? "transfers: " : "scale-bound: ") + numbers + " at the change's last run (n=" +
               std::to_string(change.n) + "): " + (transfers ? "≥ +0.5" : "< +0.5, in doubt scale-bound");
  }
  return d;
}

}  // namespace ard
