// See metric_goal.h.
#include "proposers/metric_goal.h"

namespace ard {

const char* to_string(MetricGoal goal) { return goal == MetricGoal::kMax ? "max" : "min"; }

double improvement(MetricGoal goal, double incumbent, double candidate) {
  return goal == MetricGoal::kMax ? candidate - incumbent : incumbent - candidate;
}

bool is_better(MetricGoal goal, double value, double than) { return improvement(goal, than, value) > 0; }

const char* better_word(MetricGoal goal) { return goal == MetricGoal::kMax ? "higher" : "lower"; }

const char* improve_verb(MetricGoal goal) { return goal == MetricGoal::kMax ? "raises" : "lowers"; }

}  // namespace ard
