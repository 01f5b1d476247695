// See judge.h. The reason lines are the ones the store and `show` have always
// carried (decision_rule in run_evidence.h reads them back), so a line changes
// here only together with its reader.
#include "daemon/engine/judge.h"

#include <iomanip>
#include <sstream>

#include "daemon/decide/run_evidence.h"
#include "daemon/util/text.h"

namespace ard {
namespace {

Ruling defer(const std::string& why) { return {Action::defer, "", std::nullopt, "deferred: " + why}; }

/// A candidate made against an older best: its runs only screen it against
/// that best's (Δ > 0: better under the goal), and the keep rule decides on the runs of its
/// change re-applied onto the best of now.
Ruling stale_screen(const Evidence& e, const std::vector<double>& incumbent, MetricGoal goal) {
  const double mean = spread_of(e.runs).mean;
  const Spread parent = spread_of(incumbent);
  const double delta = improvement(goal, parent.mean, mean);
  std::ostringstream why;
  why << std::fixed << std::setprecision(6) << "mean " << mean << " (n=" << e.runs.size() << ") on the older best "
      << short_commit(e.parent) << ", whose mean is " << parent.mean << " (n=" << parent.n << "): Δ = " << std::showpos
      << delta;
  if (delta <= 0) return {Action::discard, "", mean, "discarded: " + why.str() + " ≤ 0"};
  if (e.reapplies_done >= kMaxReapplies)
    return {Action::discard, "", mean,
            "discarded: " + why.str() + " > 0, but its change was re-applied " + std::to_string(e.reapplies_done) +
                " times already (at most " + std::to_string(kMaxReapplies) + "): given up"};
  return {Action::reapply, "", mean, "re-applied: " + why.str() + " > 0"};
}

}  // namespace

const char* to_string(Action action) {
  switch (action) {
    case Action::keep: return "keep";
    case Action::discard: return "discard";
    case Action::confirm: return "confirm";
    case Action::remeasure: return "remeasure";
    case Action::reapply: return "reapply";
    case Action::defer: return "defer";
  }
  return "?";
}

Ruling judge(const Evidence& e, const KeepSettings& settings) {
  if (e.baseline) return {Action::keep, "", e.value, "kept: the baseline, " + e.metric + " " + format_number(e.value)};

  const bool stale = e.parent != e.best;
  if (e.baseline_pending) return defer("the baseline is not measured yet");
  if (e.round_holds) return defer("a noise round holds candidates back until it ends");
  // The best's mean rests on kMinIncumbentRuns runs before anything is measured against it.
  if (!stale && e.incumbent_pending)
    return defer("the best's re-runs are on their way (its mean rests on " + std::to_string(kMinIncumbentRuns) +
                 " runs before anything is measured against it)");

  if (e.runs.empty())
    return {Action::remeasure, "", std::nullopt, "was measured under an older board calibration; it runs again"};

  const std::vector<double>& incumbent = e.parent_runs.empty() ? e.best_runs : e.parent_runs;
  if (stale) return stale_screen(e, incumbent, settings.goal);

  KeepInput in;
  in.incumbent = incumbent;
  in.candidate = e.runs;
  in.noise = e.noise;
  in.lines_added = e.lines_added;
  in.lines_removed = e.lines_removed;
  in.confirmations_done = e.confirmations_done;
  const KeepDecision d = decide_keep(in, settings);
  const double mean = spread_of(e.runs).mean;
  switch (d.verdict) {
    case Verdict::keep: return {Action::keep, "", mean, d.reason};
    case Verdict::discard: return {Action::discard, "", mean, d.reason};
    case Verdict::confirm: return {Action::confirm, confirmation_gpu(e.gpus, e.run_gpus), mean, d.reason};
  }
  return {Action::discard, "", mean, d.reason};
}

Evidence recorded_evidence(const std::vector<TrialRow>& trials, int64_t calibration, const std::string& commit,
                           const std::string& parent, const std::string& best, const std::string& diff) {
  Evidence e;
  e.parent = parent;
  e.best = best;
  e.runs = runs_of(trials, commit, calibration);
  e.parent_runs = runs_of(trials, parent, calibration);
  e.best_runs = runs_of(trials, best, calibration);
  e.run_gpus = gpus_of(trials, commit, calibration);
  const DiffLines lines = count_diff_lines(diff);
  e.lines_added = lines.added;
  e.lines_removed = lines.removed;
  return e;
}

}  // namespace ard
