// Promotion to larger scales: whether a kept change found at rung 0 (the
// experiment as configured) still helps at a larger rung (config.h,
// RungConfig), as values the engine applies. No I/O.
//
// A promotion round runs the current best against the rung's best (the last
// best promoted to that rung; at first the original base), both repeated as
// the keep rule needs, with σ measured at that rung, and decided by the keep
// rule (keep_rule.h): kept means the stack improved at the rung. The stack is
// the ordered list of kept changes c1..cm from the rung's best (exclusive) to
// the current best (inclusive); prefix k is the kept commit of ck, so every
// comparison runs a commit the chain already has (no new build of a change).
//
// The Bisection (below) plans the round's comparisons, each "prefix k
// against the rung's best", and labels every change of the stack:
//
//   state       comparison asked     result         next
//   whole       prefix m             improved       done: c1..cm transfers
//                                    not, m = 1     done: c1 scale_bound
//                                    not, m > 1     search(lo 0, hi m)
//   search      prefix (lo+hi)/2     improved       lo = mid
//               (while hi > lo + 1)  not            hi = mid
//   search      none (hi = lo + 1)   -              done: c1..c_lo transfers,
//                                                   c_hi scale_bound,
//                                                   c_hi+1..cm untested
//
// The search holds "prefix lo improved (lo = 0: the rung's best itself) and
// prefix hi did not", so c_hi is a change whose addition ended the
// improvement: the first change of the stack that does not transfer. The
// changes after it were only measured in stacks that hold it, so nothing is
// known of them (untested); a later round, after the revert of c_hi
// (promote.on_fail = "revert") or from prefix lo as the rung's new best,
// tests them. Cost: 1 comparison when the stack improves, else at most
// 1 + ⌈log2 m⌉ (m = 8: 4; m = 5, the default promote.every: 4).
//
// Every label carries its evidence (Label): the means, the runs' counts, σ,
// Δ and the trials of the comparison that decided it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/noise.h"
#include "daemon/decide/summary.h"
#include "daemon/store/store.h"

namespace ard {

/// The metric of every finished (status ok) run of commit at rung under
/// calibration, oldest first, with their trial ids.
struct RungRuns {
  std::vector<double> values;
  std::vector<int64_t> trials;
  int failed = 0;  ///< its ended runs at the rung that gave no result (crash, timeout, tampered, ...)
};
RungRuns rung_runs(const std::vector<TrialRow>& trials, const std::string& commit, int rung, int64_t calibration);

/// σ at a rung: pooled over the groups of finished runs of one commit at that
/// rung under one calibration (calibration >= min_calibration). Every run at a
/// rung above 0 counts: no decision selected it. nullopt with no group of two.
std::optional<NoiseEstimate> rung_noise(const std::vector<TrialRow>& trials, int rung, int64_t min_calibration);

/// Why a promotion round is due now, or "" when none is: at least one kept
/// change since the last round, and either `every` of them or a round
/// `requested` (on demand), while the GPU time spent at rungs above 0 is
/// under max_share of all of it (promote.max_share). every < 1 is taken as 1.
std::string promotion_due(int kept_since_last_round, int every, double gpu_seconds_at_rungs,
                          double gpu_seconds_total, double max_share, bool requested = false);

/// The size a run reports in its summary (keys `depth`, `num_params_M`);
/// nullopt where the summary lacks the key.
struct ModelSize {
  std::optional<double> depth;
  std::optional<double> num_params_m;
};

/// The size a summary reports (keys depth and num_params_M), and the same
/// read from a summary stored as JSON (Summary::to_json; "" or not JSON: none).
ModelSize model_size(const Summary& summary);
ModelSize model_size(const std::string& summary_json);

/// Why a run at a rung is `tampered` (never a result), or "": its depth must
/// be the rung-0 run's depth × depth_scale (either whole number next to it
/// when that is not whole), and its parameters must grow (not shrink at
/// depth_scale 1). A missing or non-finite size on either side is a reason too.
std::string rung_size_check(const ModelSize& rung0, const ModelSize& rung, double depth_scale);

/// A change's standing at one rung.
enum class LabelKind { kTransfers, kScaleBound, kUntested };

/// "transfers", "scale_bound", "untested".
const char* to_string(LabelKind kind);
/// The kind of a word to_string gives; nullopt for any other.
std::optional<LabelKind> parse_label_kind(const std::string& word);

/// One comparison at a rung of a stack prefix against the rung's best: what
/// the keep rule decided it on.
struct RungEvidence {
  double best_mean = 0;       ///< the rung's best's mean metric at the rung
  double candidate_mean = 0;  ///< the prefix's mean metric at the rung
  int best_n = 0;             ///< finished runs of each
  int candidate_n = 0;
  double sigma = 0;           ///< σ at the rung the decision used
  double delta = 0;           ///< the improvement (keep_rule.h): positive is better
  std::vector<int64_t> trials;  ///< the trial ids of every run above

  bool operator==(const RungEvidence&) const = default;
};

/// A change's label at a rung with the evidence that made it (none for untested).
struct Label {
  LabelKind kind = LabelKind::kUntested;
  int rung = 0;
  std::optional<RungEvidence> evidence;

  bool operator==(const Label&) const = default;
};

/// The evidence as one JSON object {"best_mean", "candidate_mean", "best_n",
/// "candidate_n", "sigma", "delta", "trials"}; "{}" for none.
std::string evidence_json(const std::optional<RungEvidence>& evidence);
/// evidence_json read back: nullopt for "{}" or "". Throws std::invalid_argument
/// naming the field when the text is not such an object.
std::optional<RungEvidence> parse_evidence_json(const std::string& json);

/// The plan of one promotion round at one rung over a stack of m >= 1 kept
/// changes (the table at the top of this file).
class Bisection {
 public:
  /// stack: the changes (experiment ids) from the rung's best, exclusive, to
  /// the current best, inclusive, oldest first. Throws std::invalid_argument
  /// when it is empty.
  Bisection(std::vector<int64_t> stack, int rung);

  /// The prefix length to compare against the rung's best next (1..m), or
  /// nullopt once the labels are final.
  std::optional<size_t> next() const;

  /// The result of comparing prefix next() against the rung's best.
  /// Throws std::logic_error when done() or when prefix is not next().
  void record(size_t prefix, bool improved, const RungEvidence& evidence);

  bool done() const { return !next(); }
  int comparisons() const { return comparisons_; }

  /// Once done: each change of the stack with its label, in the stack's
  /// order. Throws std::logic_error before.
  std::vector<std::pair<int64_t, Label>> labels() const;

  /// Once done: the longest prefix that improved (0: none), the rung's next best.
  size_t improved_prefix() const { return lo_; }

  /// The most comparisons a round over m changes costs: 1 + ⌈log2 m⌉ (1 for m = 1).
  static int max_comparisons(size_t m);

 private:
  std::vector<int64_t> stack_;
  int rung_;
  bool whole_done_ = false;
  size_t lo_ = 0, hi_ = 0;  ///< prefix lo improved (0: the best itself), prefix hi did not
  std::optional<RungEvidence> lo_evidence_, hi_evidence_;
  int comparisons_ = 0;
};

}  // namespace ard
