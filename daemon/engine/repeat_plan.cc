// See repeat_plan.h.
#include "daemon/engine/repeat_plan.h"

#include "daemon/decide/keep_rule.h"
#include "daemon/decide/run_evidence.h"
#include "daemon/engine/run_plan.h"
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

RepeatRuns::RepeatRuns(const Config& config, std::vector<std::string> gpus)
    : config_(config), gpus_(std::move(gpus)), rounds_(gpus_, calibrates_boards(config)) {}

Candidate RepeatRuns::run_of_best(const std::string& purpose, const std::string& gpu, bool in_round,
                                  const BestRun& best) {
  return {.experiment = best.id, .repeat = ++next_repeat_, .parent = best.commit, .commit = best.commit,
          .description = purpose + " run of #" + std::to_string(best.id), .purpose = purpose, .pin_gpu = gpu,
          .in_round = in_round};
}

std::vector<Candidate> RepeatRuns::begin_round(bool hold, const std::string& reason, const BestRun& best,
                                               const std::map<int64_t, Candidate>& in_flight) {
  rounds_.begin(hold, reason);
  std::vector<Candidate> runs;
  for (const auto& gpu : gpus_) {
    bool covered = false;  // the baseline is the first GPU's run of the start round
    for (const auto& [key, c] : in_flight) covered = covered || (c.baseline && c.in_round && c.pin_gpu == gpu);
    if (!covered) runs.push_back(run_of_best(purpose::kNoise, gpu, true, best));
  }
  return runs;
}

void RepeatRuns::run_done(Candidate& c, std::optional<long> steps) {
  if (!std::exchange(c.in_round, false)) return;
  rounds_.run_done(c.run_gpu, rounds_.scale(c.run_gpu), steps);
}

std::string RepeatRuns::due(const BestRun& best, double now) const {
  if (!config_.noise.rounds || rounds_.active() || !best.id) return "";
  return round_due(rounds_, since_round_, now, config_.noise.every, config_.noise.max_age_s);
}

std::optional<RoundEnd> RepeatRuns::end_if_complete(const std::vector<TrialRow>& trials, double now) {
  if (!rounds_.complete()) return std::nullopt;
  RoundEnd end = end_round(rounds_, trials, now);
  if (end.next_round.empty()) since_round_ = 0;
  return end;
}

std::vector<Candidate> RepeatRuns::incumbent_runs(const std::vector<TrialRow>& trials, const BestRun& best,
                                                  const std::map<int64_t, Candidate>& in_flight) {
  std::vector<Candidate> runs;
  if (!config_.noise.rounds || !best.id) return runs;
  std::vector<std::string> used = gpus_of(trials, best.commit, rounds_.calibration());
  for (const auto& [key, c] : in_flight)
    if (c.repeat && c.commit == best.commit) used.push_back(c.pin_gpu);  // on its way
  for (const auto& gpu : incumbent_rerun_gpus(gpus_, used))
    runs.push_back(run_of_best(purpose::kIncumbent, gpu, false, best));
  return runs;
}

bool RepeatRuns::incumbent_pending(const std::map<int64_t, Candidate>& in_flight, const std::string& best) {
  for (const auto& [key, c] : in_flight)
    if (c.repeat && c.purpose == purpose::kIncumbent && c.commit == best) return true;
  return false;
}

std::optional<NoiseEstimate> RepeatRuns::decision_noise(const std::vector<TrialRow>& trials) const {
  return noise_status(trials, rounds_.noise_from(), config_.noise.prior_sigma, config_.noise.z).used;
}

}  // namespace ard
