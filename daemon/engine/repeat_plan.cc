// See repeat_plan.h.
#include "daemon/engine/repeat_plan.h"

#include "daemon/decide/keep_rule.h"
#include "daemon/decide/run_evidence.h"
#include "daemon/util/text.h"

namespace ard {

std::vector<std::string> incumbent_rerun_gpus(const std::vector<std::string>& gpus, std::vector<std::string> used) {
  std::vector<std::string> out;
  for (int k = incumbent_reruns_wanted(static_cast<int>(used.size())); k > 0; --k) {
    const std::string gpu = confirmation_gpu(gpus, used);
    used.push_back(gpu);
    out.push_back(gpu);
  }
  return out;
}

std::string round_due(const NoiseRounds& rounds, int experiments_since_round, double now, int every,
                      double max_age_s) {
  const NoiseDue due = rounds.due(experiments_since_round, now, every, max_age_s);
  if (due == NoiseDue::not_due) return "";
  const double age = rounds.last_round_at() ? now - *rounds.last_round_at() : 0;
  return describe(due, experiments_since_round, age);
}

std::optional<double> best_mean(const std::vector<TrialRow>& trials, const std::string& best, int64_t calibration) {
  const std::vector<double> runs = runs_of(trials, best, calibration);
  if (runs.empty()) return std::nullopt;
  return spread_of(runs).mean;
}

RoundEnd end_round(NoiseRounds& rounds, const std::vector<TrialRow>& trials, double now) {
  RoundEnd end;
  end.warning = rounds.finish(now);
  const auto measured = measured_noise(trials, rounds.noise_from());
  end.row.created_at = now;
  if (measured) end.row.sigma = measured->sigma, end.row.df = measured->df;
  end.row.calibration = rounds.calibration();
  end.row.scales = format_scales(rounds.scales());
  end.row.reason = rounds.reason() + (end.warning.empty() ? "" : "; " + end.warning);
  if (rounds.recalibrated()) {
    end.log_line = "boards calibrated (calibration " + std::to_string(rounds.calibration()) + "): budget scales " +
                   end.row.scales;
    end.next_round = "recalibrated";  // the best is measured under the new scales before anything else
  } else if (rounds.wants_settle_round(measured)) {
    end.next_round = "σ rests on df " + std::to_string(measured ? measured->df : 0) + ": another round";
  } else {
    end.log_line = "noise round done: " +
                   (measured ? "σ = " + format_number(measured->sigma) + " (df " + std::to_string(measured->df) + ")"
                             : std::string("σ not yet known")) +
                   (rounds.calibrates() ? ", budget scales " + end.row.scales : "");
  }
  return end;
}

}  // namespace ard
