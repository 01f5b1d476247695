// The metric's direction (`summary.goal`): whether a lower value of the metric
// is better ("min", the default: val_bpb, a loss) or a higher one ("max": a
// score, an accuracy). Every comparison of two metric values that asks "which
// is better" goes through improvement(), so the keep rule, the judge, the
// plots, the prompt and the research memory agree on the sign: an improvement
// is positive under either goal.
#pragma once

#include <string>

namespace ard {

enum class MetricGoal { kMin, kMax };

/// The metric as reports name it (`summary.metric`) and which way is better.
struct MetricSpec {
  std::string name = "val_bpb";
  MetricGoal goal = MetricGoal::kMin;
};

/// The config's word: "min" or "max".
const char* to_string(MetricGoal goal);

/// How much better `candidate` is than `incumbent`: incumbent − candidate
/// under kMin, candidate − incumbent under kMax. Positive: better.
double improvement(MetricGoal goal, double incumbent, double candidate);

/// True when `value` is strictly better than `than` (improvement > 0).
bool is_better(MetricGoal goal, double value, double than);

/// "lower" or "higher": the word for a better value ("lower is better").
const char* better_word(MetricGoal goal);

/// "lowers" or "raises": what a kept change does to the metric.
const char* improve_verb(MetricGoal goal);

}  // namespace ard
