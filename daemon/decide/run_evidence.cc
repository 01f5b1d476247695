// See run_evidence.h.
#include "daemon/decide/run_evidence.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace ard {

bool is_repeat(const std::string& p) { return p == purpose::kConfirm || p == purpose::kIncumbent || p == purpose::kNoise; }

namespace {
/// A finished run of commit under calibration, at rung 0: a run at a larger rung is another
/// model's, whose metric and noise are not the experiment's.
bool counts(const TrialRow& t, const std::string& commit, int64_t calibration) {
  return t.status == "ok" && t.val_bpb && std::isfinite(*t.val_bpb) && t.commit == commit &&
         t.calibration == calibration && t.rung == 0;
}
/// Runs whose value no decision selected: a kept candidate's runs are low by
/// the very selection that kept it, and a confirmed one's first run sat in the
/// confirmation band, so their spread is not the noise.
bool unselected(const std::string& p) {
  return p == purpose::kBaseline || p == purpose::kNoise || p == purpose::kIncumbent;
}
}  // namespace

std::vector<double> runs_of(const std::vector<TrialRow>& trials, const std::string& commit, int64_t calibration) {
  std::vector<double> out;
  for (const auto& t : trials)
    if (counts(t, commit, calibration)) out.push_back(*t.val_bpb);
  return out;
}

std::vector<std::string> gpus_of(const std::vector<TrialRow>& trials, const std::string& commit, int64_t calibration) {
  std::vector<std::string> out;
  for (const auto& t : trials)
    if (counts(t, commit, calibration)) out.push_back(t.gpu);
  return out;
}

std::optional<NoiseEstimate> measured_noise(const std::vector<TrialRow>& trials, int64_t min_calibration) {
  std::map<std::pair<std::string, int64_t>, std::vector<double>> groups;
  for (const auto& t : trials)
    if (t.calibration >= min_calibration && unselected(t.purpose) && counts(t, t.commit, t.calibration))
      groups[{t.commit, t.calibration}].push_back(*t.val_bpb);
  std::vector<std::vector<double>> values;
  for (auto& [key, v] : groups) values.push_back(std::move(v));
  return pooled_noise(values);
}

NoiseStatus noise_status(const std::vector<TrialRow>& trials, int64_t min_calibration, double prior_sigma, double z) {
  NoiseStatus s;
  s.measured = measured_noise(trials, min_calibration);
  s.used = noise_for_decisions(s.measured, prior_sigma);
  if (s.used) s.margin = keep_margin(z, *s.used);
  return s;
}

std::string describe(const NoiseStatus& noise) {
  char text[320];
  if (noise.used && !noise.used->from_prior) {
    std::snprintf(text, sizeof text, "σ = %.6f (measured, df %d): usable; kept at Δ ≥ %.2f·σΔ", noise.used->sigma,
                  noise.used->df, noise.margin);
  } else if (noise.used) {
    char so_far[96] = "";
    if (noise.measured)
      std::snprintf(so_far, sizeof so_far, " (measured so far: %.6f on df %d)", noise.measured->sigma,
                    noise.measured->df);
    std::snprintf(text, sizeof text, "σ = %.6f from noise.prior_sigma%s: usable; kept at Δ ≥ %.2f·σΔ",
                  noise.used->sigma, so_far, noise.margin);
  } else if (noise.measured) {
    std::snprintf(text, sizeof text,
                  "σ not usable yet: %.6f on df %d (decisions need df %d or noise.prior_sigma); candidates are "
                  "confirmed, then strictly better decides",
                  noise.measured->sigma, noise.measured->df, kMinNoiseDf);
  } else {
    std::snprintf(text, sizeof text,
                  "σ not usable yet: no commit has two runs; candidates are confirmed, then strictly better decides");
  }
  return text;
}

std::string decision_rule(const std::string& reason) {
  auto has = [&](const char* s) { return reason.find(s) != std::string::npos; };
  if (reason.rfind("kept: the baseline", 0) == 0) return "baseline";
  if (has("equal but simpler")) return "equal but simpler";
  if (has("on the older best")) return "stale screen";
  if (has("σ not yet known"))
    return has("strictly lower") ? "strictly lower" : has("strictly higher") ? "strictly higher" : "σ unknown";
  if (has("σ from noise.prior_sigma")) return "σ prior";
  if (has("σ measured")) return "σ measured";
  return "";
}

DiffLines count_diff_lines(const std::string& diff) {
  DiffLines d;
  std::istringstream in(diff);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("+++", 0) == 0 || line.rfind("---", 0) == 0) continue;
    if (!line.empty() && line[0] == '+') ++d.added;
    else if (!line.empty() && line[0] == '-') ++d.removed;
  }
  return d;
}

RunTime run_time(const std::vector<TrialRow>& trials) {
  RunTime r;
  for (const auto& t : trials) {
    if (!t.ended_at) continue;
    const double s = t.training_seconds ? *t.training_seconds : std::max(0.0, *t.ended_at - t.started_at);
    r.total_s += s;
    r.by_purpose[t.purpose] += s;
    if (is_repeat(t.purpose)) r.repeat_s += s;
    if (t.rung > 0) r.rung_s += s;
  }
  return r;
}

Spread spread_of(const std::vector<double>& values) {
  Spread s;
  double sum = 0;
  for (double v : values)
    if (std::isfinite(v)) sum += v, ++s.n;
  if (s.n == 0) return s;
  s.mean = sum / s.n;
  double ss = 0;
  for (double v : values)
    if (std::isfinite(v)) ss += (v - s.mean) * (v - s.mean);
  s.spread = s.n > 1 ? std::sqrt(ss / (s.n - 1)) : 0;
  return s;
}

std::string format_scales(const std::map<std::string, double>& scales) {
  std::string out;
  for (const auto& [gpu, scale] : scales) {
    char text[64];
    std::snprintf(text, sizeof text, "%s=%.4f", gpu.c_str(), scale);
    out += (out.empty() ? "" : ",") + std::string(text);
  }
  return out;
}

std::map<std::string, double> parse_scales(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    char* end = nullptr;
    const double v = std::strtod(item.c_str() + eq + 1, &end);
    if (end && *end == '\0' && v > 0) out[item.substr(0, eq)] = v;
  }
  return out;
}

}  // namespace ard
