// See evaluated_reconcile.h.
#include "daemon/store/evaluated_reconcile.h"

#include <algorithm>
#include <sstream>

#include "daemon/decide/run_evidence.h"

namespace ard {

bool is_improvement(double value, std::optional<double> best, double min_improvement, MetricGoal goal) {
  return !best || (is_better(goal, value, *best) && improvement(goal, *best, value) >= min_improvement);
}

std::vector<EvaluatedDecision> finish_evaluated(Store& store, const std::string& tag, double min_improvement,
                                                MetricGoal goal) {
  std::vector<EvaluatedDecision> out;
  auto best_row = store.best(tag);
  std::optional<double> best = best_row ? best_row->val_bpb : std::nullopt;
  for (const auto& r : store.experiments(tag)) {
    if (r.state != to_string(ExperimentState::kEvaluated) || !r.val_bpb || r.commit.empty()) continue;
    EvaluatedDecision d{r.id, is_improvement(*r.val_bpb, best, min_improvement, goal), r.commit, *r.val_bpb, best};
    std::ostringstream what;
    what << "val_bpb " << *r.val_bpb;
    if (best) what << " vs best " << *best;
    if (d.kept) {
      store.finish(r.id, status::kKept, "", r.log_tail);
      best = r.val_bpb;
    } else {
      store.finish(r.id, status::kDiscarded, what.str() + " is no improvement (decided at restart)", r.log_tail);
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<EvaluatedDecision> finish_evaluated(Store& store, const std::string& tag, const KeepSettings& settings,
                                                double prior_sigma) {
  std::vector<EvaluatedDecision> out;
  const std::vector<TrialRow> trials = store.trials(tag);
  int64_t calibration = 0;
  for (const auto& t : trials) calibration = std::max(calibration, t.calibration);
  const auto noise = noise_for_decisions(measured_noise(trials, calibration > 0 ? 1 : 0), prior_sigma);
  KeepSettings last_look = settings;
  last_look.max_confirmations = 0;
  auto best_row = store.best(tag);
  for (const auto& r : store.experiments(tag)) {
    if (r.state != to_string(ExperimentState::kEvaluated) || !r.val_bpb || r.commit.empty()) continue;
    KeepInput in;
    in.candidate = runs_of(trials, r.commit, calibration);
    if (best_row) in.incumbent = runs_of(trials, best_row->commit, calibration);
    if (in.candidate.empty() || (best_row && in.incumbent.empty())) {
      // No runs under one calibration to compare: strictly better decides.
      const std::optional<double> best = best_row ? best_row->val_bpb : std::nullopt;
      in.incumbent = best ? std::vector<double>{*best} : std::vector<double>{};
      in.candidate = {*r.val_bpb};
      in.noise.reset();
    } else {
      in.noise = noise;
    }
    const DiffLines lines = count_diff_lines(r.diff);
    in.lines_added = lines.added;
    in.lines_removed = lines.removed;
    const KeepDecision k = decide_keep(in, last_look);
    const bool kept = k.verdict == Verdict::keep;
    const double mean = spread_of(in.candidate).mean;
    EvaluatedDecision d{r.id, kept, r.commit, mean, best_row ? best_row->val_bpb : std::nullopt};
    store.set_decision(r.id, k.reason + " (decided at restart)", mean);
    if (kept) {
      store.finish(r.id, status::kKept, "", r.log_tail);
      best_row = store.experiment(r.id);
    } else {
      store.finish(r.id, status::kDiscarded, k.reason + " (decided at restart)", r.log_tail);
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace ard
