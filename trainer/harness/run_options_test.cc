// The trainer's command line, the counted clock and the summary block.
#include "harness/run_options.h"

#include <gtest/gtest.h>

#include <cmath>

#include "harness/constants.h"

namespace harness {
namespace {

RunOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "train");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_run_options(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(RunOptions, DefaultsAreTheConstants) {
  RunOptions o = parse({"--data", "/d"});
  EXPECT_EQ(o.data_dir, "/d");
  EXPECT_EQ(o.time_budget, TIME_BUDGET);
  EXPECT_EQ(o.eval_tokens, EVAL_TOKENS);
  EXPECT_EQ(o.steps, 0);
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.budget_scale, 1.0);
  EXPECT_FALSE(o.check);
  EXPECT_TRUE(o.dump_init_dir.empty());
}

TEST(RunOptions, Overrides) {
  RunOptions o = parse({"--data=/d", "--time-budget", "60", "--steps=20", "--eval-tokens", "4096",
                        "--seed", "7", "--dump-init", "/tmp/x"});
  EXPECT_EQ(o.time_budget, 60.0);
  EXPECT_EQ(o.steps, 20);
  EXPECT_EQ(o.eval_tokens, 4096);
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.dump_init_dir, "/tmp/x");
  EXPECT_TRUE(parse({"--check"}).check);  // --check needs no dataset
}

TEST(RunOptions, BadInputNamesTheFlag) {
  EXPECT_EQ(error_of({"--data", "/d", "--bogus"}), "--bogus: unknown flag (see --help)");
  EXPECT_EQ(error_of({"--data"}), "--data: missing value");
  EXPECT_EQ(error_of({"--data", "/d", "--steps", "-3"}), "--steps: must be positive, got -3");
  EXPECT_EQ(error_of({"--data", "/d", "--steps", "12x"}), "--steps: not an integer: '12x'");
  EXPECT_EQ(error_of({"--data", "/d", "--time-budget", "0"}), "--time-budget: must be positive, got 0");
  EXPECT_EQ(error_of({"--data", "/d", "--seed", "-1"}), "--seed: not a non-negative integer: '-1'");
  EXPECT_EQ(error_of({"--data", "/d", "--check=1"}), "--check: takes no value");
  EXPECT_EQ(error_of({}), "--data: required (the dataset directory prepare printed)");
  EXPECT_EQ(error_of({"--data", "/d", "--dump-init", "/x"}), "--dump-init: needs --steps N");
}

TEST(TrainingClock, FirstStepsAreNotCounted) {
  RunOptions o = parse({"--data", "/d", "--time-budget", "10"});
  TrainingClock clock(o, 2);
  clock.step_done(0, 100.0);
  clock.step_done(1, 100.0);
  EXPECT_EQ(clock.counted_seconds(), 0.0);
  EXPECT_FALSE(clock.done(2));
  clock.step_done(2, 4.0);
  EXPECT_DOUBLE_EQ(clock.progress(3), 0.4);
  EXPECT_DOUBLE_EQ(clock.remaining_seconds(), 6.0);
  clock.step_done(3, 7.0);
  EXPECT_TRUE(clock.done(4));
  EXPECT_DOUBLE_EQ(clock.progress(4), 1.0);
  EXPECT_EQ(clock.remaining_seconds(), 0.0);
  EXPECT_GE(clock.total_seconds(), 0.0);
}

TEST(RunOptions, BudgetScale) {
  EXPECT_EQ(parse({"--data", "/d", "--budget-scale", "0.9524"}).budget_scale, 0.9524);
  EXPECT_EQ(parse({"--data", "/d", "--budget-scale=0.5"}).budget_scale, 0.5);
  EXPECT_EQ(parse({"--data", "/d", "--budget-scale", "2"}).budget_scale, 2.0);
  EXPECT_EQ(error_of({"--data", "/d", "--budget-scale", "0.49"}), "--budget-scale: must be in [0.5, 2], got 0.49");
  EXPECT_EQ(error_of({"--data", "/d", "--budget-scale", "2.5"}), "--budget-scale: must be in [0.5, 2], got 2.5");
  EXPECT_EQ(error_of({"--data", "/d", "--budget-scale", "0"}), "--budget-scale: must be positive, got 0");
  EXPECT_EQ(error_of({"--data", "/d", "--budget-scale", "fast"}), "--budget-scale: not a number: 'fast'");
  EXPECT_EQ(error_of({"--data", "/d", "--budget-scale", "nan"}), "--budget-scale: must be positive, got nan");
  EXPECT_EQ(error_of({"--data", "/d", "--budget-scale"}), "--budget-scale: missing value");
}

TEST(RunOptions, DepthScale) {
  EXPECT_EQ(parse({"--data", "/d"}).depth_scale, 1);
  EXPECT_EQ(parse({"--data", "/d", "--depth-scale", "2"}).depth_scale, 2);
  EXPECT_EQ(parse({"--data", "/d", "--depth-scale=8"}).depth_scale, 8);
  EXPECT_EQ(error_of({"--data", "/d", "--depth-scale", "9"}), "--depth-scale: must be at most 8, got 9");
  EXPECT_EQ(error_of({"--data", "/d", "--depth-scale", "0"}), "--depth-scale: must be positive, got 0");
  EXPECT_EQ(error_of({"--data", "/d", "--depth-scale", "1.5"}), "--depth-scale: not an integer: '1.5'");
}

TEST(TrainingClock, BudgetScaleShortensOrLengthensTheCountedBudget) {
  RunOptions o = parse({"--data", "/d", "--time-budget", "10", "--budget-scale", "0.8"});
  TrainingClock clock(o, 0);
  EXPECT_DOUBLE_EQ(clock.budget_seconds(), 8.0);
  clock.step_done(0, 4.0);
  EXPECT_DOUBLE_EQ(clock.progress(1), 0.5);
  EXPECT_DOUBLE_EQ(clock.remaining_seconds(), 4.0);
  EXPECT_FALSE(clock.done(1));
  clock.step_done(1, 4.0);
  EXPECT_TRUE(clock.done(2));  // 8 counted seconds: done, though the nominal budget is 10

  RunOptions longer = parse({"--data", "/d", "--time-budget", "10", "--budget-scale", "1.5"});
  TrainingClock slow(longer, 0);
  slow.step_done(0, 12.0);
  EXPECT_FALSE(slow.done(1));
  EXPECT_DOUBLE_EQ(slow.progress(1), 0.8);
  slow.step_done(1, 3.0);
  EXPECT_TRUE(slow.done(2));

  // A fixed step count ignores the scale.
  RunOptions fixed = parse({"--data", "/d", "--steps", "4", "--budget-scale", "0.5"});
  TrainingClock steps(fixed, 0);
  steps.step_done(0, 1000.0);
  EXPECT_DOUBLE_EQ(steps.progress(2), 0.5);
  EXPECT_FALSE(steps.done(3));
}

TEST(TrainingClock, FixedStepsReplaceTheBudget) {
  RunOptions o = parse({"--data", "/d", "--steps", "4"});
  TrainingClock clock(o, 0);
  clock.step_done(0, 1000.0);
  EXPECT_FALSE(clock.done(1));
  EXPECT_DOUBLE_EQ(clock.progress(1), 0.25);
  EXPECT_TRUE(std::isinf(clock.remaining_seconds()));
  EXPECT_TRUE(clock.done(4));
}

TEST(Summary, IsPrintedOncePerProcess) {
  Summary s;
  s.val_bpb = 0.5;
  ::testing::internal::CaptureStdout();
  const bool first = print_summary(s);
  s.val_bpb = 0.1;
  const bool second = print_summary(s);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(first);
  EXPECT_FALSE(second);
  EXPECT_EQ(out, format_summary(Summary{.val_bpb = 0.5}));
}

TEST(Summary, FormatsTheBlockTheDaemonParses) {
  Summary s;
  s.val_bpb = 0.9979;
  s.training_seconds = 300.1;
  s.total_seconds = 325.94;
  s.peak_vram_mb = 45060.2;
  s.mfu_percent = 39.8;
  s.total_tokens_m = 499.6;
  s.num_steps = 953;
  s.num_params_m = 50.3;
  s.depth = 8;
  s.time_budget = TIME_BUDGET;
  s.eval_tokens = EVAL_TOKENS;
  EXPECT_EQ(format_summary(s),
            "---\n"
            "val_bpb:          0.997900\n"
            "training_seconds: 300.1\n"
            "total_seconds:    325.9\n"
            "peak_vram_mb:     45060.2\n"
            "mfu_percent:      39.80\n"
            "total_tokens_M:   499.6\n"
            "num_steps:        953\n"
            "num_params_M:     50.3\n"
            "depth:            8\n"
            "budget_scale:     1.0000\n");
  s.time_budget = 60;
  s.eval_tokens = 4096;
  EXPECT_NE(format_summary(s).find("\ntime_budget:      60.0\neval_tokens:      4096\n"), std::string::npos);
  s.fixed_steps = 874;
  std::string fixed = format_summary(s);
  EXPECT_NE(fixed.find("\nfixed_steps:      874\n"), std::string::npos);
  EXPECT_EQ(fixed.find("time_budget"), std::string::npos);
  s.budget_scale = 0.95238;
  EXPECT_NE(format_summary(s).find("\nbudget_scale:     0.9524\n"), std::string::npos);
  EXPECT_EQ(format_summary(s).find("depth_scale"), std::string::npos);  // 1: not said
  s.depth = 16;
  s.depth_scale = 2;
  EXPECT_NE(format_summary(s).find("\ndepth:            16\n"), std::string::npos);
  EXPECT_NE(format_summary(s).find("\ndepth_scale:      2\n"), std::string::npos);
}

}  // namespace
}  // namespace harness
