// The trainer's command line as far as the harness owns it, the counted
// training clock, and the summary block the daemon parses.
//
//   train --data DIR [--time-budget S] [--budget-scale F] [--depth-scale N]
//         [--steps N] [--eval-tokens N] [--seed N] [--check] [--dump-init DIR]
//
// --depth-scale N trains the same model N times as deep (and whatever follows
// the depth): a larger rung of a promotion ladder, where a change kept on the
// small model is tried on a larger one. The summary reports the depth that
// ran, so a run that ignored the scale is seen.
//
// --steps N replaces the time budget by a fixed step count (progress = step/N);
// otherwise progress = counted training seconds / (time budget × budget
// scale). Steps 0..10 are not counted against the budget (start-up and
// autotuning). The budget scale is the daemon's board calibration
// (daemon/decide/calibration.h): only the clock applies it, so the editable trainer,
// which reads progress and done() from the clock, cannot change it.
#pragma once

#include <chrono>
#include <string>

namespace harness {

inline constexpr double kMinBudgetScale = 0.5;  // boards of one kind differ by a few per cent
inline constexpr double kMaxBudgetScale = 2.0;
inline constexpr int kMaxDepthScale = 8;

struct RunOptions {
  std::string data_dir;          // prepared dataset (dataset.h); required unless --check
  double time_budget = 0;        // seconds; TIME_BUDGET unless overridden
  double budget_scale = 1;       // in [kMinBudgetScale, kMaxBudgetScale]; applied by TrainingClock only
  int depth_scale = 1;           // in [1, kMaxDepthScale]: the model's depth is its own times this
  long steps = 0;                // > 0: fixed step count instead of the budget
  long eval_tokens = 0;          // EVAL_TOKENS unless overridden
  unsigned long seed = 42;
  bool check = false;            // gradient/kernel self-check on a tiny config, then exit
  std::string dump_init_dir;     // write initial weights and first batches (tests/torch_twin.py)
};

/// Parses argv. Throws std::invalid_argument with a one-line message naming
/// the flag on bad input; --help prints usage and exits 0.
RunOptions parse_run_options(int argc, char** argv);

/// Counts training time, excluding the first `uncounted_steps` steps.
class TrainingClock {
 public:
  TrainingClock(const RunOptions& options, int uncounted_steps = 11);
  /// Call after step `step` (0-based) has finished on the device (synchronised).
  void step_done(long step, double step_seconds);
  double counted_seconds() const { return counted_; }
  /// In [0, 1]: by steps when --steps is set, else counted time / budget.
  double progress(long steps_done) const;
  /// True once the budget (or the step count) is used up.
  bool done(long steps_done) const;
  double remaining_seconds() const;
  /// The counted seconds this run trains: time budget × budget scale.
  double budget_seconds() const { return options_.time_budget * options_.budget_scale; }
  double total_seconds() const;  // since construction (process start proxy)

 private:
  RunOptions options_;
  int uncounted_steps_;
  double counted_ = 0;
  std::chrono::steady_clock::time_point start_;
};

struct Summary {
  double val_bpb = 0;
  double training_seconds = 0;
  double total_seconds = 0;
  double peak_vram_mb = 0;
  double mfu_percent = 0;
  double total_tokens_m = 0;
  long num_steps = 0;
  double num_params_m = 0;
  int depth = 0;
  // the values used, so overridden runs say so
  double time_budget = 0;
  double budget_scale = 1;
  int depth_scale = 1;
  long fixed_steps = 0;
  long eval_tokens = 0;
};

/// The block the daemon parses, starting with a line "---", one "key: value"
/// line each; budget_scale always (the board calibration the run was given);
/// time_budget, fixed_steps, eval_tokens and depth_scale only when they differ
/// from the constants (an overridden run says so).
std::string format_summary(const Summary& s);

/// Prints format_summary(s) to stdout and flushes, once per process: the
/// daemon takes a second block as a forgery, so a second call prints nothing
/// and returns false.
bool print_summary(const Summary& s);

}  // namespace harness
