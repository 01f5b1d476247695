// See decision_report.h.
#include "daemon/decide/decision_report.h"

#include <cstdio>
#include <sstream>

#include "daemon/decide/run_evidence.h"

namespace ard {

namespace {
std::string format(const char* fmt, auto... args) {
  char text[256];
  std::snprintf(text, sizeof text, fmt, args...);
  return text;
}
}  // namespace

std::string render_noise_status(Store& store, const std::string& tag, double now, const NoiseSettings& settings) {
  const auto trials = store.trials(tag);
  const auto last = store.last_noise_estimate(tag);
  std::ostringstream os;
  if (last) {
    // σ as the next decision uses it: every repeat so far, not only the round's.
    const NoiseStatus noise = noise_status(trials, last->calibration > 0 ? 1 : 0, settings.prior_sigma, settings.z);
    os << "noise: " << describe(noise);
    os << format("; last round %.0f min ago (%s)\n", (now - last->created_at) / 60, last->reason.c_str());
    if (last->scales.find(',') != std::string::npos)
      os << "budget scales: " << last->scales << " (calibration " << last->calibration << ")\n";
  } else if (!trials.empty()) {
    os << "noise: no round yet; " << describe(noise_status(trials, 0, settings.prior_sigma, settings.z)) << "\n";
  }
  const RunTime t = run_time(trials);
  if (t.total_s > 0) {
    os << format("repeats and calibration: %.1f%% of GPU time", 100 * t.repeat_share());
    std::string parts;
    for (const char* p : {purpose::kConfirm, purpose::kIncumbent, purpose::kNoise}) {
      auto it = t.by_purpose.find(p);
      if (it != t.by_purpose.end()) parts += (parts.empty() ? "" : ", ") + format("%s %.0f s", p, it->second);
    }
    os << (parts.empty() ? "" : " (" + parts + ")") << "\n";
  }
  return os.str();
}

std::string mean_spread(const std::vector<TrialRow>& trials, const ExperimentRow& row) {
  std::vector<double> values;
  for (const auto& t : trials)
    if (t.experiment_id == row.id && t.commit == row.commit && t.rung == 0 && t.status == "ok" && t.val_bpb)
      values.push_back(*t.val_bpb);
  const Spread s = spread_of(values);
  if (s.n == 0) return "-";
  return format("%.6f ± %.6f (%d)", s.mean, s.spread, s.n);
}

std::string render_runs(Store& store, const ExperimentRow& row) {
  std::ostringstream os;
  const std::string decision = store.decision(row.id);
  if (!decision.empty()) os << "decision:     " << decision << "\n";
  const auto runs = store.experiment_trials(row.id);
  if (runs.empty()) return os.str();
  os << "runs:         " << mean_spread(runs, row) << "\n";
  for (const auto& t : runs) {
    os << format("  %-10s gpu %-3s scale %.4f (calibration %lld)", t.purpose.c_str(), t.gpu.c_str(), t.budget_scale,
                 static_cast<long long>(t.calibration));
    if (t.rung > 0) os << format(" rung %d", t.rung);
    if (t.num_steps) os << format(" steps %lld", static_cast<long long>(*t.num_steps));
    if (t.tokens) os << format(" tokens %.0f", *t.tokens);
    if (t.val_bpb) os << format(" val_bpb %.6f", *t.val_bpb);
    os << " " << (t.status.empty() ? "running" : t.status) << " " << t.commit.substr(0, 7) << "\n";
  }
  return os.str();
}

}  // namespace ard
