// See promotion_round.h.
#include "daemon/engine/promotion_round.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <utility>

#include "daemon/decide/run_evidence.h"
#include "daemon/decide/transfer_rule.h"
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

double runs_expected(const ChainLink& reference, const std::vector<ChainLink>& stack, size_t j,
                     const std::vector<TrialRow>& trials, int rung, int64_t calibration) {
  double expected = 0;
  for (size_t i = 0; i <= std::min(j, stack.size()); ++i) {
    const ChainLink& link = i == 0 ? reference : stack[i - 1];
    const double have = static_cast<double>(rung_runs(trials, link.commit, rung, calibration).values.size());
    expected += std::max(0.0, PromotionRound::kFirstRuns - have);
  }
  const std::optional<NoiseEstimate> noise = rung_noise(trials, rung, calibration);
  return expected + std::max(0, kMinNoiseDf - (noise ? noise->df : 0));
}

double rung_run_seconds(const std::vector<TrialRow>& trials, const std::vector<double>& rung_budgets_s, int rung) {
  double run0_s = 0;
  int runs0 = 0;
  for (const TrialRow& t : trials)
    if (t.rung == 0 && t.status == "ok" && t.training_seconds) run0_s += *t.training_seconds, ++runs0;
  const auto r = static_cast<size_t>(rung);
  if (!runs0 || rung_budgets_s.empty() || !(rung_budgets_s[0] > 0) || r >= rung_budgets_s.size()) return 0;
  return run0_s / runs0 * rung_budgets_s[r] / rung_budgets_s[0];
}

bool share_allows(const std::vector<TrialRow>& trials, const std::vector<double>& rung_budgets_s, int rung,
                  double max_share, int runs) {
  const RunTime time = run_time(trials);
  const double run_s = rung_run_seconds(trials, rung_budgets_s, rung) * std::max(1, runs);
  return time.total_s + run_s > 0 && (time.rung_s + run_s) / (time.total_s + run_s) <= max_share;
}

int confirmation_room(const std::vector<TrialRow>& trials, const std::vector<double>& rung_budgets_s, int rung,
                      double max_share, int waiting) {
  int room = 0;
  while (room < kMaxRoom && share_allows(trials, rung_budgets_s, rung, max_share, waiting + room + 1)) ++room;
  return room;
}

int kept_changes_waiting(const std::vector<ExperimentRow>& rows, const std::vector<ChangeLabelRow>& labels, int rung,
                         const std::vector<ChainLink>& in_round) {
  std::set<int64_t> taken;
  for (const ChangeLabelRow& l : labels)
    if (l.rung == rung && l.label != "untested") taken.insert(l.experiment_id);
  for (const ChainLink& l : in_round) taken.insert(l.experiment);
  int waiting = 0;
  for (const ExperimentRow& row : rows) waiting += !row.is_baseline && row.state == "kept" && !taken.count(row.id);
  return waiting;
}

std::optional<RoundPlan> plan_round(const RoundPlanInput& in) {
  const RunTime time = run_time(in.trials);
  const bool resume = in.open && in.open->started_at;
  for (size_t rung = 1; rung < in.rung_budgets_s.size(); ++rung) {
    const int r = static_cast<int>(rung);
    std::vector<ChainLink> stack = rung_stack(in.chain, in.labels, r);
    if (stack.empty() || (resume && in.open->rung != r)) continue;
    const ChainLink reference = in.chain[rung_reference(in.chain, in.labels, r)];
    const double run_s = rung_run_seconds(in.trials, in.rung_budgets_s, r);
    std::string why;
    size_t take = stack.size();
    for (; take >= 1; --take) {
      const double round_s = run_s * runs_expected(reference, stack, take, in.trials, r, in.calibration);
      const bool idle = !in.open && !in.proposer_waits.empty();
      why = promotion_due(static_cast<int>(stack.size()), rung == 1 ? in.every : 1, time.rung_s, time.total_s,
                          in.max_share, in.open.has_value() || idle, round_s,
                          idle ? "the proposer waits (" + in.proposer_waits + "), so the idle GPUs take a round"
                               : "a round was requested");
      if (!why.empty()) break;
    }
    // A resumed round goes on with what fits now (its finished runs cost nothing more), one change at least.
    if (resume) why = in.open->reason + " (resumed)";
    else if (take < stack.size() && !why.empty())
      why += "; the oldest " + std::to_string(take) + " of " + std::to_string(stack.size()) + " fit the share now";
    if (why.empty()) continue;
    stack.resize(std::max<size_t>(take, 1));
    return RoundPlan{r, reference, std::move(stack), why};
  }
  return std::nullopt;
}

namespace {

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

std::string exp_name(int64_t id) { return "#" + std::to_string(id); }

/// The evidence of runs of candidate against runs of reference (σ and Δ set by the caller).
RungEvidence evidence_of(const RungRuns& reference, const RungRuns& candidate) {
  RungEvidence e;
  e.best_mean = mean_of(reference.values);
  e.candidate_mean = mean_of(candidate.values);
  e.best_n = static_cast<int>(reference.values.size());
  e.candidate_n = static_cast<int>(candidate.values.size());
  e.trials = reference.trials;
  e.trials.insert(e.trials.end(), candidate.trials.begin(), candidate.trials.end());
  return e;
}

/// The change's improvement at rung 0 over the commit before it (keep_rule.h's
/// sign), from their rung-0 runs under calibration, and the variance of that
/// measurement by σ at rung 0 (measured, else sigma_fallback); no gain when
/// either commit has no run there.
GainAtRung0 rung0_gain(const std::vector<TrialRow>& trials, const std::string& before, const std::string& change,
                       int64_t calibration, MetricGoal goal, double sigma_fallback) {
  const RungRuns b = rung_runs(trials, before, 0, calibration), c = rung_runs(trials, change, 0, calibration);
  if (b.values.empty() || c.values.empty()) return {};
  const std::optional<NoiseEstimate> measured = measured_noise(trials, calibration);
  const double sigma0 = measured ? measured->sigma : sigma_fallback;
  return {improvement(goal, mean_of(b.values), mean_of(c.values)),
          sigma0 * sigma0 * (1.0 / static_cast<double>(b.values.size()) + 1.0 / static_cast<double>(c.values.size()))};
}

}  // namespace

PromotionRound::PromotionRound(int64_t id, int rung, ChainLink reference, std::vector<ChainLink> stack)
    : id_(id), rung_(rung), reference_(std::move(reference)), stack_(std::move(stack)), extra_(stack_.size(), 0) {
  if (stack_.empty()) throw std::invalid_argument("a promotion round needs at least one kept change");
  if (rung < 1) throw std::invalid_argument("a promotion round runs at a rung above 0");
}

std::vector<RungRunWanted> PromotionRound::advance(const std::vector<TrialRow>& trials, int64_t calibration,
                                                   const KeepSettings& keep, const std::map<std::string, int>& in_flight,
                                                   int confirmation_room) {
  if (done()) return {};
  // c0 (the reference), c1..cm (the stack): their runs at the rung, and the runs each needs now.
  std::vector<const ChainLink*> chain{&reference_};
  for (const ChainLink& l : stack_) chain.push_back(&l);
  std::vector<RungRuns> runs;
  for (const ChainLink* l : chain) runs.push_back(rung_runs(trials, l->commit, rung_, calibration));
  const auto needed = [&](size_t i) { return kFirstRuns + (i > 0 ? extra_[i - 1] : reference_extra_); };
  const auto wanted = [&]() {
    std::vector<RungRunWanted> out;
    for (size_t i = 0; i < chain.size(); ++i) {
      auto fly = in_flight.find(chain[i]->commit);
      const int more = needed(i) - static_cast<int>(runs[i].values.size()) - runs[i].failed -
                       (fly == in_flight.end() ? 0 : fly->second);
      if (more > 0 && !(i > 0 && runs[i].failed > 0)) out.push_back({chain[i]->experiment, chain[i]->commit, more});
    }
    return out;
  };
  if (runs[0].failed > 0) {
    aborted_ = "the reference " + exp_name(reference_.experiment) + " failed at rung " + std::to_string(rung_) +
               "; no change is labelled";
    lines_.push_back("promotion at rung " + std::to_string(rung_) + ": " + aborted_);
    return {};
  }
  bool compares = false;  // a change and the commit before it both without a failed run
  for (size_t k = 1; k < chain.size(); ++k) compares |= runs[k].failed == 0 && runs[k - 1].failed == 0;
  const std::optional<NoiseEstimate> noise = noise_for_decisions(rung_noise(trials, rung_, calibration), 0);
  if (compares && !noise) {
    // σ at the rung on too few df yet: the reference runs until its own runs would give them, beside the first runs.
    const auto now = rung_noise(trials, rung_, calibration);
    const int missing = kMinNoiseDf - (now ? now->df : 0);
    const int have = std::max(1, static_cast<int>(runs[0].values.size()));  // n runs of it give n − 1 df
    reference_extra_ = std::max(reference_extra_, have + missing - kFirstRuns);
    return wanted();
  }
  // Every commit's first runs (and the confirmations asked), but for a change that failed at the rung.
  for (size_t i = 0; i < chain.size(); ++i)
    if (runs[i].failed == 0 && static_cast<int>(runs[i].values.size()) < needed(i)) return wanted();
  // As many confirmations as the keep rule's, up to kMaxConfirmations, and no more at once than
  // confirmation_room: the changes most in doubt (λ nearest 0) first, the others decided as they are.
  TransferSettings rule, now;
  rule.max_runs = kFirstRuns + std::clamp(keep.max_confirmations, 0, kMaxConfirmations);
  rule.goal = now.goal = keep.goal;
  now.max_runs = 0;  // every change at its last look
  // The chain in parts split at changes that failed at the rung: the commit after one starts the next part.
  std::vector<std::optional<TransferDecision>> decided(chain.size()), as_is(chain.size());
  for (size_t a = 0; compares && a < chain.size();) {
    if (runs[a].failed > 0) {
      ++a;
      continue;
    }
    size_t b = a;
    while (b + 1 < chain.size() && runs[b + 1].failed == 0) ++b;
    TransferInput in{.runs = {runs[a].values}, .gains = {}, .noise = *noise};
    for (size_t k = a + 1; k <= b; ++k) {
      in.runs.push_back(runs[k].values);
      in.gains.push_back(rung0_gain(trials, chain[k - 1]->commit, chain[k]->commit, calibration, keep.goal, noise->sigma));
    }
    const std::vector<TransferDecision> ds = decide_transfers(in, rule), last = decide_transfers(in, now);
    for (size_t k = a + 1; k <= b; ++k) decided[k] = ds[k - a - 1], as_is[k] = last[k - a - 1];
    a = b + 1;  // failed (labelled below), or past the end
  }
  std::vector<size_t> doubts;
  for (size_t k = 1; k < chain.size(); ++k)
    if (decided[k] && decided[k]->verdict == TransferVerdict::run_again) doubts.push_back(k);
  std::stable_sort(doubts.begin(), doubts.end(),
                   [&](size_t x, size_t y) { return std::abs(decided[x]->lambda) < std::abs(decided[y]->lambda); });
  bool again = false;
  for (size_t i = 0; i < doubts.size(); ++i) {
    const size_t k = doubts[i];
    if (static_cast<int>(i) < confirmation_room) {
      extra_[k - 1] = static_cast<int>(runs[k].values.size()) - kFirstRuns + 1;
      again = true;
    } else {
      decided[k] = as_is[k];
      decided[k]->reason += " (no room in promote.max_share for another run)";
    }
  }
  // A run moves its neighbours' λ: the labels come together, once no change wants another run.
  if (again) return wanted();
  for (size_t k = 1; k < chain.size(); ++k) {
    const std::string what = "promotion at rung " + std::to_string(rung_) + ": " + exp_name(chain[k]->experiment) +
                             " against " + exp_name(chain[k - 1]->experiment);
    RungEvidence e = evidence_of(runs[k - 1], runs[k]);
    if (runs[k].failed > 0) {
      labels_.emplace_back(chain[k]->experiment, Label{LabelKind::kScaleBound, rung_, e});
      lines_.push_back(what + ": scale-bound (a run failed at the rung)");
    } else if (runs[k - 1].failed > 0) {  // nothing to compare with: ck was only measured on top of a change that fails
      labels_.emplace_back(chain[k]->experiment, Label{LabelKind::kUntested, rung_, std::nullopt});
      lines_.push_back(what + ": untested (the change before it failed at the rung)");
    } else {
      const TransferDecision& d = *decided[k];
      e.sigma = noise->sigma;
      e.delta = d.delta;
      e.gain_at_rung0 = d.g;
      e.lambda = d.lambda;
      const bool transfers = d.verdict == TransferVerdict::transfers;
      labels_.emplace_back(chain[k]->experiment,
                           Label{transfers ? LabelKind::kTransfers : LabelKind::kScaleBound, rung_, e});
      lines_.push_back(what + ": " + d.reason);
    }
  }
  RungEvidence whole = evidence_of(runs.front(), runs.back());
  whole.delta = improvement(keep.goal, whole.best_mean, whole.candidate_mean);
  headline_ = whole;
  return {};
}

std::string PromotionRound::outcome() const {
  if (!aborted_.empty()) return aborted_;
  if (!done() || !headline_) return "";
  std::vector<std::string> transfers, bound, untested;
  for (const auto& [id, label] : labels_)
    (label.kind == LabelKind::kTransfers ? transfers : label.kind == LabelKind::kScaleBound ? bound : untested)
        .push_back(exp_name(id));
  std::string line = "the stack of " + std::to_string(stack_.size()) + " change(s) " +
                     (headline_->delta > 0 ? "gained " : "lost ") + format_number(std::abs(headline_->delta)) +
                     " at rung " + std::to_string(rung_);
  if (!transfers.empty()) line += "; " + join_list(transfers, 10) + " transfer(s)";
  if (!bound.empty()) line += "; " + join_list(bound, 10) + " scale-bound";
  if (!untested.empty()) line += "; " + join_list(untested, 10) + " untested (on top of a change that fails there)";
  return line;
}

}  // namespace ard
