// A measured result is never lost: an experiment whose summary was stored
// (state `evaluated`) when the daemon died is finished at restart with the
// keep decision the daemon would have made, instead of being marked
// interrupted. The keep rule itself lives here so the running engine and the
// restart decide alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/keep_rule.h"
#include "daemon/store/store.h"

namespace ard {

/// The keep rule: a value is kept when there is no best yet, or when it is
/// strictly better than the best (lower, or higher under MetricGoal::kMax) by
/// at least min_improvement.
bool is_improvement(double value, std::optional<double> best, double min_improvement,
                    MetricGoal goal = MetricGoal::kMin);

/// What finish_evaluated decided for one row.
struct EvaluatedDecision {
  int64_t id = 0;
  bool kept = false;
  std::string commit;               ///< the experiment's commit
  double val_bpb = 0;
  std::optional<double> best_before;  ///< the best it was compared with
};

/// Finishes every `evaluated` experiment of tag, oldest first, as kept or
/// discarded against the best of the moment (a row kept here is the best for
/// the next). Rows in `evaluated` without a value or a commit are left for
/// the caller to mark interrupted. Returns the decisions in order; the caller
/// then moves the branch to store.best(tag)'s commit.
std::vector<EvaluatedDecision> finish_evaluated(Store& store, const std::string& tag, double min_improvement,
                                                MetricGoal goal = MetricGoal::kMin);

/// The same with the keep rule (keep_rule.h) on the runs in `trials`: the
/// row's runs and the best's under the latest calibration, σ pooled over the
/// unselected repeats (run_evidence.h), no confirmation left (a restart runs
/// none). Rows without finished runs fall back to the rule above. The reason
/// line is stored as the row's decision.
std::vector<EvaluatedDecision> finish_evaluated(Store& store, const std::string& tag, const KeepSettings& settings,
                                                double prior_sigma);

}  // namespace ard
