// One promotion round at one rung, as a value the engine drives
// (decide/promotion.h says what a round is). The round is a function of the
// trials, so a round cut short by a stop or a SIGKILL resumes at the next
// start by replaying its finished runs from the store: a comparison whose runs
// are there decides at once.
//
// The round runs every commit of the chain from the rung's reference c0 to
// the best cm at the rung, kFirstRuns times each (all at once: several GPUs
// take them side by side), and labels each change ck by the transfer rule
// (transfer_rule.h: does ck keep, over c(k-1), the gain it had at rung 0?)
// with σ measured at that rung. The rule weighs ck's runs with its
// neighbours' along the chain, so a change it cannot decide yet runs again,
// as often as keep.confirmations allows up to kMaxConfirmations, while the
// share has room, and the labels come together when no change wants another
// run. While σ at the rung rests on fewer than
// kMinNoiseDf degrees of freedom, the reference runs again until its own runs
// would give them. The round's headline is cm against c0: how much the whole
// stack gained at the rung.
//
// Why a label for each change and not one for the stack as a whole: a
// stack that improves says nothing of each change in it. With a scale-bound
// change among four that transfer, the stack still improves by three
// changes' worth, and every change in it would be labelled transfers
// (scripts/bench_promotion.sh: 89 % of the scale-bound changes were, before).
//
// The ladder's state lives in the labels (change_labels): a rung's reference
// is the last change of the chain labelled at that rung (transfers or
// scale_bound: with promote.on_fail = "label" the chain keeps a scale-bound
// change, so later changes are measured on top of it), else the base. The
// stack of a round at rung 1 is every kept change after rung 1's reference;
// at rung r > 1 the changes after rung r's reference up to rung r-1's.
//
// A change with a run that failed at the rung (crash, timeout, tampered) is
// scale-bound; a reference that fails there ends the round without labels.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/decide/keep_rule.h"
#include "daemon/decide/promotion.h"
#include "daemon/store/store.h"

namespace ard {

/// A commit of the tag's chain with its experiment: the base (the baseline's
/// experiment) or a kept change.
struct ChainLink {
  int64_t experiment = 0;
  std::string commit;
  bool operator==(const ChainLink&) const = default;
};

/// The chain as links, base first: path is the commits from the base
/// (exclusive) to the best (inclusive) along first parents (GitRepo::
/// first_parent_path); each is matched to the kept experiment of that commit
/// among rows. A commit no kept row has (a commit made outside the daemon) is
/// left out.
std::vector<ChainLink> chain_links(const ChainLink& base, const std::vector<std::string>& path,
                                   const std::vector<ExperimentRow>& rows);

/// The index in chain (base first) of rung's reference: the last link
/// labelled transfers or scale_bound at rung in labels, 0 (the base) if none.
size_t rung_reference(const std::vector<ChainLink>& chain, const std::vector<ChangeLabelRow>& labels, int rung);

/// What a round at rung would promote: the links after rung's reference up
/// to the best (rung 1) or to rung-1's reference (rung > 1); empty: nothing.
std::vector<ChainLink> rung_stack(const std::vector<ChainLink>& chain, const std::vector<ChangeLabelRow>& labels,
                                  int rung);

/// The runs at rung that a round over reference and the first j changes of
/// stack still needs before its labels, for the share it is planned within:
/// kFirstRuns of each commit and the reference's runs σ at the rung still
/// needs for kMinNoiseDf, less what each commit has run at the rung under
/// calibration (a reference that a round before ran needs none).
/// Confirmations are not counted: they run only while the share has room
/// (PromotionRound::advance's confirmation_room).
double runs_expected(const ChainLink& reference, const std::vector<ChainLink>& stack, size_t j,
                     const std::vector<TrialRow>& trials, int rung, int64_t calibration);

/// The GPU seconds a run at rung is expected to take: a rung-0 run's mean
/// training seconds scaled by the budgets; 0 without a finished rung-0 run.
double rung_run_seconds(const std::vector<TrialRow>& trials, const std::vector<double>& rung_budgets_s, int rung);

/// Whether `runs` more runs at rung keep the GPU time at rungs above 0 within
/// max_share of all of it.
bool share_allows(const std::vector<TrialRow>& trials, const std::vector<double>& rung_budgets_s, int rung,
                  double max_share, int runs = 1);

/// How many confirmation runs at rung the share has room for now, after
/// first runs for the `waiting` kept changes that no round has taken yet (on a
/// busy night every change gets a label on fewer runs, rather than some on
/// more); kMaxRoom at most.
inline constexpr int kMaxRoom = 64;
int confirmation_room(const std::vector<TrialRow>& trials, const std::vector<double>& rung_budgets_s, int rung,
                      double max_share, int waiting);

/// The kept changes of rows that wait for a round at rung: not labelled
/// there (labels: current_change_labels) and not in the stack of the round
/// in progress.
int kept_changes_waiting(const std::vector<ExperimentRow>& rows, const std::vector<ChangeLabelRow>& labels, int rung,
                         const std::vector<ChainLink>& in_round);

/// What plan_round decides from: the tag's chain, labels and trials, and the
/// round asked for or left in progress (open).
struct RoundPlanInput {
  std::vector<ChainLink> chain;         ///< chain_links: the base, then the kept changes to the best
  std::vector<ChangeLabelRow> labels;   ///< the last label of every change at every rung
  std::vector<TrialRow> trials;         ///< the tag's trials, every rung
  std::vector<double> rung_budgets_s;   ///< each rung's budget, rung 0 first
  int every = 5;                        ///< promote.every: kept changes that make a round at rung 1
  double max_share = 0.25;              ///< promote.max_share
  std::optional<PromotionRoundRow> open;  ///< a round asked for (not started) or in progress (started)
  /// Why the proposer has nothing to run now, with nothing else left to run
  /// at rung 0 ("" otherwise): the GPUs would idle, so a round is due with
  /// one kept change, as if asked for.
  std::string proposer_waits;
  int64_t calibration = 0;              ///< the boards' (rung runs under it count)
};

/// The round to start now: its rung, reference, stack and the reason logged.
struct RoundPlan {
  int rung = 1;
  ChainLink reference;
  std::vector<ChainLink> stack;
  std::string why;
};

/// The round to start now, or nullopt. The lowest rung above 0 with a stack
/// that is due (promotion_due: `every` kept changes at rung 1, one at higher
/// rungs, or asked for, or the proposer waits) and whose runs keep the night within max_share. A run
/// at a rung is expected to take a rung-0 run's mean GPU time (training
/// seconds) scaled by the budgets; when the whole stack does not fit, the
/// round takes its oldest changes that do. A round in progress (open and
/// started) is resumed at its rung with what fits now, one change at least.
std::optional<RoundPlan> plan_round(const RoundPlanInput& in);

/// Runs at the rung a round wants of one commit, beyond those in flight.
struct RungRunWanted {
  int64_t experiment = 0;
  std::string commit;
  int runs = 0;
  bool operator==(const RungRunWanted&) const = default;
};

class PromotionRound {
 public:
  inline static constexpr int kFirstRuns = 1;  ///< runs of each commit at the rung before its comparison
  /// Confirmations of a change at most (keep.confirmations, if fewer): a third
  /// run settles a few more doubts (transfer_rule.h) where the share has room.
  inline static constexpr int kMaxConfirmations = 2;

  /// Throws std::invalid_argument when stack is empty or rung < 1.
  PromotionRound(int64_t id, int rung, ChainLink reference, std::vector<ChainLink> stack);

  /// The round over the tag's trials: once every commit has the runs the round
  /// asked of it and no change wants another, every change is labelled in
  /// order (one line each added to take_lines()) and the round is done().
  /// Returns the runs wanted now, less
  /// those in flight (runs at the rung started and not ended, by commit).
  /// calibration: the boards' (runs under it count, at the rung and, for
  /// the gain each change had at rung 0, there). keep: its goal and
  /// confirmations. confirmation_room: how many confirmation runs the share
  /// has room for now (share_allows); the changes most in doubt (λ nearest 0)
  /// get them, the others take the likelier answer on the runs they have, so
  /// a round never waits on the share.
  std::vector<RungRunWanted> advance(const std::vector<TrialRow>& trials, int64_t calibration,
                                     const KeepSettings& keep, const std::map<std::string, int>& in_flight,
                                     int confirmation_room = 1 << 20);

  bool done() const { return !aborted_.empty() || labels_.size() == stack_.size(); }
  /// Why the round ended without labels ("" while it has not).
  const std::string& aborted() const { return aborted_; }
  /// The changes labelled so far, in the stack's order (all of them once done and not aborted).
  const std::vector<std::pair<int64_t, Label>>& labels() const { return labels_; }
  /// One line per comparison decided, taken (each is logged once).
  std::vector<std::string> take_lines() { return std::exchange(lines_, {}); }
  /// One line on the round's end: the stack's gain at the rung, what transfers, what is scale-bound.
  std::string outcome() const;

  int64_t id() const { return id_; }
  int rung() const { return rung_; }
  const ChainLink& reference() const { return reference_; }
  const std::vector<ChainLink>& stack() const { return stack_; }

 private:
  int64_t id_;
  int rung_;
  ChainLink reference_;
  std::vector<ChainLink> stack_;
  std::vector<int> extra_;  ///< by stack index: confirmation runs asked of the change
  int reference_extra_ = 0;  ///< runs of the reference asked beyond kFirstRuns (σ on too few df)
  std::vector<std::pair<int64_t, Label>> labels_;
  std::optional<RungEvidence> headline_;  ///< the stack against the reference, once every comparison is in
  std::string aborted_;
  std::vector<std::string> lines_;
};

}  // namespace ard
