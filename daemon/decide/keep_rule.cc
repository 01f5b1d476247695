// See keep_rule.h. The numbers in the reasons are printed with the precision
// the summary block has (6 decimals), so a hand check from `show` agrees.
#include "daemon/decide/keep_rule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "daemon/config.h"

namespace ard {
namespace {

struct Runs {
  double mean = 0;
  int n = 0;
};

Runs summarize(const std::vector<double>& values) {
  Runs r;
  double sum = 0;
  for (double v : values)
    if (std::isfinite(v)) sum += v, ++r.n;
  if (r.n > 0) r.mean = sum / r.n;
  return r;
}

std::string format(const char* fmt, auto... args) {
  char text[512];
  std::snprintf(text, sizeof text, fmt, args...);
  return text;
}

/// "mean 0.981200 (n=2) against the incumbent's 0.985000 (n=3): Δ = 0.003800"
std::string comparison(const Runs& c, const Runs& i, double delta) {
  return format("mean %.6f (n=%d) against the incumbent's %.6f (n=%d): Δ = %+.6f", c.mean, c.n, i.mean, i.n, delta);
}

/// "σΔ = 0.001500·√(1/3+1/2) = 0.001369 (σ measured, df 12)"
std::string sigma_delta_text(const NoiseEstimate& noise, const Runs& c, const Runs& i, double sigma_delta, double z) {
  std::string source = noise.from_prior ? "σ from noise.prior_sigma"
                                        : format("σ measured, df %d; keep margin t(df %d) = %.2f for z = %.2f",
                                                 noise.df, noise.df, keep_margin(z, noise), z);
  return format("σΔ = %.6f·√(1/%d+1/%d) = %.6f (%s)", noise.sigma, i.n, c.n, sigma_delta, source.c_str());
}

}  // namespace

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::keep: return "keep";
    case Verdict::discard: return "discard";
    case Verdict::confirm: return "confirm";
  }
  return "?";
}

int incumbent_reruns_wanted(int incumbent_runs) { return std::max(0, kMinIncumbentRuns - incumbent_runs); }

std::string confirmation_gpu(const std::vector<std::string>& gpus, const std::vector<std::string>& candidate_gpus) {
  std::string best;
  long best_uses = -1;
  for (const auto& gpu : gpus) {
    const long uses = std::count(candidate_gpus.begin(), candidate_gpus.end(), gpu);
    if (best_uses < 0 || uses < best_uses) best = gpu, best_uses = uses;
  }
  return best;
}

KeepSettings keep_settings(const Config& config) {
  KeepSettings s;
  s.z = config.noise.z;
  s.min_improvement = config.min_improvement;
  s.equal_but_simpler = config.keep.equal_but_simpler;
  s.max_confirmations = config.keep.confirmations;
  s.goal = config.goal;
  return s;
}

std::optional<double> delta_sigma(const std::string& decision) {
  // "mean %.6f (n=%d) against the incumbent's %.6f (n=%d): Δ = %+.6f" (comparison),
  // then σ: "σΔ = %.6f·√" (sigma_delta_text) or "|Δ| ≤ σ = %.6f" (equal but simpler).
  // Δ is read as printed, so its sign is the goal's the line was decided under.
  const size_t at = decision.find("mean ");
  if (at == std::string::npos) return std::nullopt;
  double candidate = 0, incumbent = 0, delta = 0, sigma = 0;
  int n_candidate = 0, n_incumbent = 0;
  if (std::sscanf(decision.c_str() + at, "mean %lf (n=%d) against the incumbent's %lf (n=%d): Δ = %lf", &candidate,
                  &n_candidate, &incumbent, &n_incumbent, &delta) != 5)
    return std::nullopt;
  // σΔ's own line is "σΔ = σ·√(...)"; the margins' "2.00·σΔ = X" are not σ.
  bool have_sigma = false;
  const std::string lead = "σΔ = ", root = "·√";
  for (size_t s = decision.find(lead, at); s != std::string::npos && !have_sigma; s = decision.find(lead, s + 1)) {
    int used = 0;
    const char* number = decision.c_str() + s + lead.size();
    if (std::sscanf(number, "%lf%n", &sigma, &used) == 1 && std::strncmp(number + used, root.c_str(), root.size()) == 0)
      have_sigma = true;
  }
  if (size_t s = decision.find("|Δ| ≤ σ = ", at); s != std::string::npos && !have_sigma)
    have_sigma = std::sscanf(decision.c_str() + s + std::strlen("|Δ| ≤ σ = "), "%lf", &sigma) == 1;
  if (!have_sigma || !(sigma > 0) || !std::isfinite(candidate) || !std::isfinite(incumbent) || !std::isfinite(delta))
    return std::nullopt;
  return delta / sigma;
}

KeepDecision decide_keep(const KeepInput& input, const KeepSettings& settings) {
  const Runs inc = summarize(input.incumbent);
  const Runs cand = summarize(input.candidate);
  if (cand.n == 0) return {Verdict::discard, "discarded: the candidate has no finite value of the metric"};
  if (inc.n == 0) return {Verdict::keep, format("kept: mean %.6f (n=%d), nothing to beat yet", cand.mean, cand.n)};

  const double delta = improvement(settings.goal, inc.mean, cand.mean);  // > 0: the candidate is better
  const bool confirmations_left = input.confirmations_done < settings.max_confirmations;
  const std::string run_no = format("run %d of at most %d", input.confirmations_done + 2, settings.max_confirmations + 1);

  if (!input.noise) {
    if (confirmations_left) return {Verdict::confirm, "confirm: σ not yet known; " + comparison(cand, inc, delta) + "; " + run_no};
    const bool better = delta > 0 && delta >= settings.min_improvement;
    return {better ? Verdict::keep : Verdict::discard,
            format("%s: σ not yet known after %d confirmation(s), so strictly %s by min_improvement %.6f decides; ",
                   better ? "kept" : "discarded", input.confirmations_done, better_word(settings.goal),
                   settings.min_improvement) +
                comparison(cand, inc, delta)};
  }

  const NoiseEstimate& noise = *input.noise;
  const double sigma_delta = noise.sigma * std::sqrt(1.0 / inc.n + 1.0 / cand.n);
  const double k = ard::keep_margin(settings.z, noise);  // z, or Student's t for a σ measured on few df
  const double keep_margin = k * sigma_delta;
  const double discard_margin = settings.discard_below * sigma_delta;
  const std::string cmp = comparison(cand, inc, delta);
  const std::string sd = sigma_delta_text(noise, cand, inc, sigma_delta, settings.z);

  if (delta > 0 && delta >= keep_margin && delta >= settings.min_improvement)
    return {Verdict::keep, format("kept: %s ≥ %.2f·σΔ = %.6f and ≥ min_improvement %.6f; ", cmp.c_str(), k,
                                  keep_margin, settings.min_improvement) + sd};

  if (settings.equal_but_simpler && input.lines_removed > input.lines_added && std::fabs(delta) <= noise.sigma)
    return {Verdict::keep, format("kept (equal but simpler): %s, |Δ| ≤ σ = %.6f, and the diff removes %d lines, adds %d",
                                  cmp.c_str(), noise.sigma, input.lines_removed, input.lines_added)};

  if (delta < discard_margin)
    return {Verdict::discard, format("discarded: %s < %.2f·σΔ = %.6f; ", cmp.c_str(), settings.discard_below,
                                     discard_margin) + sd};

  const double needed = std::max(keep_margin, settings.min_improvement);
  if (confirmations_left)
    return {Verdict::confirm, format("confirm: %s is between %.2f·σΔ = %.6f and the keep margin %.6f; ",
                                     cmp.c_str(), settings.discard_below, discard_margin, needed) + run_no + "; " + sd};
  return {Verdict::discard, format("discarded (not confirmed after %d run(s)): %s < the keep margin %.6f "
                                   "(%.2f·σΔ = %.6f, min_improvement %.6f); ",
                                   cand.n, cmp.c_str(), needed, k, keep_margin, settings.min_improvement) + sd};
}

}  // namespace ard
