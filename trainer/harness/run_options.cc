// The trainer's harness-owned command line, the counted training clock and the
// summary block.
#include "harness/run_options.h"

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <stdexcept>

#include "harness/constants.h"

namespace harness {
namespace {

constexpr const char* kUsage =
    "usage: train --data DIR [--time-budget S] [--budget-scale F] [--depth-scale N] [--steps N]\n"
    "             [--eval-tokens N] [--seed N] [--check] [--dump-init DIR]\n"
    "  --data DIR        prepared dataset directory (the last line of prepare's output)\n"
    "  --time-budget S   seconds of counted training (default 300)\n"
    "  --budget-scale F  the board's calibration: train budget × F seconds (default 1, 0.5 to 2)\n"
    "  --depth-scale N   the model N times as deep: a larger rung (default 1, 1 to 8)\n"
    "  --steps N         run exactly N steps instead of the time budget\n"
    "  --eval-tokens N   validation target tokens for val_bpb (default 2097152)\n"
    "  --seed N          random seed (default 42)\n"
    "  --check           gradient/kernel self-check on a tiny config, then exit\n"
    "  --dump-init DIR   write initial weights and batches (needs --steps)\n";

[[noreturn]] void bad(const std::string& flag, const std::string& cause) {
  throw std::invalid_argument(flag + ": " + cause);
}

long parse_positive_long(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) bad(flag, "not an integer: '" + text + "'");
  if (v <= 0) bad(flag, "must be positive, got " + text);
  return static_cast<long>(v);
}

double parse_positive_double(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0) bad(flag, "not a number: '" + text + "'");
  if (!(v > 0) || v == std::numeric_limits<double>::infinity()) bad(flag, "must be positive, got " + text);
  return v;
}

unsigned long parse_seed(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || *end != '\0' || errno != 0)
    bad(flag, "not a non-negative integer: '" + text + "'");
  return static_cast<unsigned long>(v);
}

}  // namespace

RunOptions parse_run_options(int argc, char** argv) {
  RunOptions o;
  o.time_budget = TIME_BUDGET;
  o.eval_tokens = EVAL_TOKENS;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_inline_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline_value = true;
    }
    auto take_value = [&]() -> std::string {
      if (has_inline_value) return value;
      if (i + 1 >= argc) bad(arg, "missing value");
      return argv[++i];
    };
    auto no_value = [&] {
      if (has_inline_value) bad(arg, "takes no value");
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (arg == "--data") {
      o.data_dir = take_value();
      if (o.data_dir.empty()) bad(arg, "empty path");
    } else if (arg == "--time-budget") {
      o.time_budget = parse_positive_double(arg, take_value());
    } else if (arg == "--budget-scale") {
      const std::string text = take_value();
      o.budget_scale = parse_positive_double(arg, text);
      if (o.budget_scale < kMinBudgetScale || o.budget_scale > kMaxBudgetScale)
        bad(arg, "must be in [0.5, 2], got " + text);
    } else if (arg == "--depth-scale") {
      const std::string text = take_value();
      const long scale = parse_positive_long(arg, text);
      if (scale > kMaxDepthScale) bad(arg, "must be at most " + std::to_string(kMaxDepthScale) + ", got " + text);
      o.depth_scale = static_cast<int>(scale);
    } else if (arg == "--steps") {
      o.steps = parse_positive_long(arg, take_value());
    } else if (arg == "--eval-tokens") {
      o.eval_tokens = parse_positive_long(arg, take_value());
    } else if (arg == "--seed") {
      o.seed = parse_seed(arg, take_value());
    } else if (arg == "--check") {
      no_value();
      o.check = true;
    } else if (arg == "--dump-init") {
      o.dump_init_dir = take_value();
      if (o.dump_init_dir.empty()) bad(arg, "empty path");
    } else {
      bad(arg, "unknown flag (see --help)");
    }
  }
  if (o.data_dir.empty() && !o.check) bad("--data", "required (the dataset directory prepare printed)");
  if (!o.dump_init_dir.empty() && o.steps == 0) bad("--dump-init", "needs --steps N");
  return o;
}

TrainingClock::TrainingClock(const RunOptions& options, int uncounted_steps)
    : options_(options), uncounted_steps_(uncounted_steps), start_(std::chrono::steady_clock::now()) {}

void TrainingClock::step_done(long step, double step_seconds) {
  if (step >= uncounted_steps_) counted_ += step_seconds;
}

double TrainingClock::progress(long steps_done) const {
  double p = options_.steps > 0 ? static_cast<double>(steps_done) / static_cast<double>(options_.steps)
                                : counted_ / budget_seconds();
  return p < 0 ? 0 : (p > 1 ? 1 : p);
}

bool TrainingClock::done(long steps_done) const {
  if (options_.steps > 0) return steps_done >= options_.steps;
  return counted_ >= budget_seconds();
}

double TrainingClock::remaining_seconds() const {
  if (options_.steps > 0) return std::numeric_limits<double>::infinity();
  double left = budget_seconds() - counted_;
  return left > 0 ? left : 0;
}

double TrainingClock::total_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string format_summary(const Summary& s) {
  std::string out = "---\n";
  char line[128];
  auto add = [&](const char* key, const char* fmt, auto value) {
    char text[64];
    std::snprintf(text, sizeof text, fmt, value);
    std::snprintf(line, sizeof line, "%-18s%s\n", (std::string(key) + ":").c_str(), text);
    out += line;
  };
  add("val_bpb", "%.6f", s.val_bpb);
  add("training_seconds", "%.1f", s.training_seconds);
  add("total_seconds", "%.1f", s.total_seconds);
  add("peak_vram_mb", "%.1f", s.peak_vram_mb);
  add("mfu_percent", "%.2f", s.mfu_percent);
  add("total_tokens_M", "%.1f", s.total_tokens_m);
  add("num_steps", "%ld", s.num_steps);
  add("num_params_M", "%.1f", s.num_params_m);
  add("depth", "%d", s.depth);
  add("budget_scale", "%.4f", s.budget_scale);
  if (s.fixed_steps > 0) add("fixed_steps", "%ld", s.fixed_steps);
  else if (s.time_budget != TIME_BUDGET) add("time_budget", "%.1f", s.time_budget);
  if (s.eval_tokens != EVAL_TOKENS) add("eval_tokens", "%ld", s.eval_tokens);
  if (s.depth_scale != 1) add("depth_scale", "%d", s.depth_scale);
  return out;
}

bool print_summary(const Summary& s) {
  static std::atomic<bool> printed{false};
  if (printed.exchange(true)) return false;
  std::fputs(format_summary(s).c_str(), stdout);
  std::fflush(stdout);
  return true;
}

}  // namespace harness
