// See promotion_round.h.
#include "daemon/engine/promotion_round.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "daemon/util/text.h"
#include "proposers/metric_goal.h"

namespace ard {

std::vector<ChainLink> chain_links(const ChainLink& base, const std::vector<std::string>& path,
                                   const std::vector<ExperimentRow>& rows) {
  std::vector<ChainLink> chain{base};
  for (const std::string& commit : path)
    for (const ExperimentRow& row : rows)
      if (!row.is_baseline && row.state == "kept" && row.commit == commit) {
        chain.push_back({row.id, commit});
        break;
      }
  return chain;
}

size_t rung_reference(const std::vector<ChainLink>& chain, const std::vector<ChangeLabelRow>& labels, int rung) {
  size_t at = 0;
  for (size_t i = 1; i < chain.size(); ++i)
    for (const ChangeLabelRow& l : labels)
      if (l.experiment_id == chain[i].experiment && l.rung == rung && l.label != "untested") at = i;
  return at;
}

std::vector<ChainLink> rung_stack(const std::vector<ChainLink>& chain, const std::vector<ChangeLabelRow>& labels,
                                  int rung) {
  const size_t from = rung_reference(chain, labels, rung);
  const size_t to = rung <= 1 ? chain.size() - 1 : rung_reference(chain, labels, rung - 1);
  if (chain.empty() || to <= from) return {};
  return {chain.begin() + static_cast<long>(from) + 1, chain.begin() + static_cast<long>(to) + 1};
}

namespace {

std::vector<int64_t> ids_of(const std::vector<ChainLink>& stack) {
  std::vector<int64_t> ids;
  for (const ChainLink& l : stack) ids.push_back(l.experiment);
  return ids;
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

std::string exp_name(int64_t id) { return "#" + std::to_string(id); }

}  // namespace

PromotionRound::PromotionRound(int64_t id, int rung, ChainLink reference, std::vector<ChainLink> stack)
    : id_(id), rung_(rung), reference_(std::move(reference)), stack_(std::move(stack)), bisection_(ids_of(stack_), rung) {
  if (rung < 1) throw std::invalid_argument("a promotion round runs at a rung above 0");
}

std::vector<RungRunWanted> PromotionRound::advance(const std::vector<TrialRow>& trials, int64_t calibration,
                                                   const KeepSettings& keep, const std::map<std::string, int>& in_flight) {
  const auto flying = [&](const std::string& commit) {
    auto it = in_flight.find(commit);
    return it == in_flight.end() ? 0 : it->second;
  };
  const auto want = [&](const ChainLink& link, int have, int need) {
    const int more = need - have - flying(link.commit);
    return more > 0 ? std::vector<RungRunWanted>{{link.experiment, link.commit, more}} : std::vector<RungRunWanted>{};
  };
  while (!done()) {
    const size_t k = *bisection_.next();
    const ChainLink& prefix = stack_[k - 1];
    const std::string what = "rung " + std::to_string(rung_) + ": " +
                             (k == 1 ? exp_name(stack_[0].experiment)
                                     : exp_name(stack_[0].experiment) + ".." + exp_name(prefix.experiment)) +
                             " (" + std::to_string(k) + " of " + std::to_string(stack_.size()) + " change(s)) against " +
                             exp_name(reference_.experiment);
    const RungRuns ref = rung_runs(trials, reference_.commit, rung_, calibration);
    const RungRuns cand = rung_runs(trials, prefix.commit, rung_, calibration);
    if (ref.failed > 0) {
      aborted_ = "the reference " + exp_name(reference_.experiment) + " failed at rung " + std::to_string(rung_) +
                 "; no change is labelled";
      lines_.push_back("promotion " + what + ": " + aborted_);
      return {};
    }
    RungEvidence e;
    e.best_mean = mean_of(ref.values);
    e.candidate_mean = mean_of(cand.values);
    e.best_n = static_cast<int>(ref.values.size());
    e.candidate_n = static_cast<int>(cand.values.size());
    e.trials = ref.trials;
    e.trials.insert(e.trials.end(), cand.trials.begin(), cand.trials.end());
    if (cand.failed > 0) {
      bisection_.record(k, false, e);
      lines_.push_back("promotion " + what + ": did not improve (a run failed at the rung)");
      continue;
    }
    std::vector<RungRunWanted> runs = want(reference_, e.best_n, kReferenceRuns);
    for (RungRunWanted& w : want(prefix, e.candidate_n, kFirstRuns)) runs.push_back(w);
    if (e.best_n < kReferenceRuns || e.candidate_n < kFirstRuns) return runs;
    const std::optional<NoiseEstimate> noise = noise_for_decisions(rung_noise(trials, rung_, calibration), 0);
    if (!noise) return want(reference_, e.best_n, e.best_n + 1);  // σ at the rung on too few df yet
    KeepSettings rule = keep;
    rule.equal_but_simpler = false;  // a stack is not simpler than its reference
    const KeepDecision d = decide_keep(
        {.incumbent = ref.values, .candidate = cand.values, .noise = noise, .confirmations_done = e.candidate_n - kFirstRuns},
        rule);
    if (d.verdict == Verdict::confirm) return want(prefix, e.candidate_n, e.candidate_n + 1);
    e.sigma = noise->sigma;
    e.delta = improvement(keep.goal, e.best_mean, e.candidate_mean);
    const bool improved = d.verdict == Verdict::keep;
    bisection_.record(k, improved, e);
    lines_.push_back("promotion " + what + ": " + (improved ? "improved" : "did not improve") + " (" + d.reason + ")");
  }
  return {};
}

std::string PromotionRound::outcome() const {
  if (!aborted_.empty()) return aborted_;
  if (!bisection_.done()) return "";
  const std::string at = " at rung " + std::to_string(rung_);
  if (bisection_.improved_prefix() == stack_.size())
    return "the stack of " + std::to_string(stack_.size()) + " change(s) improved" + at + ": each transfers";
  std::vector<std::string> transfers, bound, untested;
  for (const auto& [id, label] : labels()) {
    if (label.kind == LabelKind::kTransfers) transfers.push_back(exp_name(id));
    else if (label.kind == LabelKind::kScaleBound) bound.push_back(exp_name(id));
    else untested.push_back(exp_name(id));
  }
  std::string line = join_list(bound, 5) + " is scale-bound" + at;
  if (!transfers.empty()) line += "; " + join_list(transfers, 10) + " transfer(s)";
  if (!untested.empty()) line += "; " + join_list(untested, 10) + " untested there (measured only on top of it)";
  return line;
}

}  // namespace ard
