// Tests of summary parsing on the block docs/CONTRACTS.md specifies.
#include "daemon/decide/summary.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ard {
namespace {

const std::vector<std::string> kKeys = {"val_bpb", "peak_vram_mb", "training_seconds", "num_steps"};

TEST(Summary, ParsesTheContractBlock) {
  auto p = parse_summary(
      "step 1 loss 3.2\n---\nval_bpb:          0.997900\ntraining_seconds: 300.1\n"
      "peak_vram_mb:     45060.2\nmfu_percent:      39.80\nnum_steps:        953\n",
      kKeys);
  EXPECT_EQ(p.tampered, "");
  ASSERT_TRUE(p.summary);
  const Summary& s = *p.summary;
  EXPECT_DOUBLE_EQ(s.values.at("val_bpb"), 0.9979);
  EXPECT_DOUBLE_EQ(s.values.at("peak_vram_mb"), 45060.2);
  EXPECT_DOUBLE_EQ(s.values.at("num_steps"), 953);
  EXPECT_EQ(s.values.count("mfu_percent"), 0u);  // not asked for
  EXPECT_EQ(s.to_json(), R"({"num_steps":953.0,"peak_vram_mb":45060.2,"training_seconds":300.1,"val_bpb":0.9979})");
}

TEST(Summary, ASecondBlockBeforeOrAfterTheRealOneIsAForgery) {
  EXPECT_EQ(parse_summary("---\nval_bpb: 2.0\n---\nval_bpb: 1.0\n", kKeys).tampered,
            "2 summary blocks in the output (the harness prints one)");
  EXPECT_FALSE(parse_summary("---\nval_bpb: 2.0\nlog\n---\nval_bpb: 0.1\n", kKeys).summary);
  // A `---` with no wanted key after it is no block: progress separators are fine.
  auto p = parse_summary("---\nepoch 1\n---\nval_bpb: 1.0\n", kKeys);
  EXPECT_EQ(p.tampered, "");
  EXPECT_DOUBLE_EQ(p.summary->values.at("val_bpb"), 1.0);
  EXPECT_EQ(parse_summary("---\nval_bpb: 1.0\nval_bpb: 0.5\n", kKeys).tampered, "the summary gives val_bpb twice");
}

TEST(Summary, OnlyDecimalNumbersAreValues) {
  EXPECT_EQ(parse_summary("---\nval_bpb: 0x1p-3\n", kKeys).tampered, "val_bpb: '0x1p-3' is not a decimal number");
  EXPECT_EQ(parse_summary("---\nval_bpb: fast\n", kKeys).tampered, "val_bpb: 'fast' is not a decimal number");
  EXPECT_EQ(parse_summary("---\nval_bpb: 1,5\n", kKeys).tampered, "val_bpb: '1,5' is not a decimal number");
  EXPECT_EQ(parse_summary("---\nval_bpb: 1e999\n", kKeys).tampered, "val_bpb: '1e999' is out of a double's range");
  for (const char* ok : {"0.5", "+0.5", ".5", "0.50", "5e-1", "0.05E1"}) {
    auto p = parse_summary(std::string("---\nval_bpb: ") + ok + "\n", kKeys);
    EXPECT_EQ(p.tampered, "") << ok;
    ASSERT_TRUE(p.summary) << ok;
    EXPECT_DOUBLE_EQ(p.summary->values.at("val_bpb"), 0.5) << ok;
  }
}

TEST(Summary, EachMetricMustBeInItsDocumentedRange) {
  EXPECT_EQ(parse_summary("---\nval_bpb: -5\n", kKeys).tampered, "val_bpb -5 is outside its range (0, 20)");
  EXPECT_EQ(parse_summary("---\nval_bpb: 0\n", kKeys).tampered, "val_bpb 0 is outside its range (0, 20)");
  EXPECT_EQ(parse_summary("---\nval_bpb: 20\n", kKeys).tampered, "val_bpb 20 is outside its range (0, 20)");
  EXPECT_EQ(parse_summary("---\nval_bpb: 1\npeak_vram_mb: -1\n", kKeys).tampered,
            "peak_vram_mb -1 is outside its range [0, 1e+07]");
  EXPECT_EQ(parse_summary("---\nval_bpb: 1\nnum_steps: 9.5\n", kKeys).tampered,
            "num_steps 9.5 is outside its range [0, 1e+12] of whole numbers");
  EXPECT_EQ(parse_summary("---\nval_bpb: 19.99\n", kKeys).tampered, "");
  EXPECT_DOUBLE_EQ(parse_summary("---\nval_bpb: 5.\n", kKeys).summary->values.at("val_bpb"), 5);
  EXPECT_EQ(parse_summary("---\nloss: -3\n", {"loss"}).tampered, "");  // no documented range: any finite number
  EXPECT_TRUE(summary_range("val_bpb"));
  EXPECT_FALSE(summary_range("loss"));
}

TEST(Summary, NanIsKeptSoTheDaemonCanCallItACrash) {
  auto p = parse_summary("---\nval_bpb: nan\n", kKeys);
  EXPECT_EQ(p.tampered, "");
  ASSERT_TRUE(p.summary);
  EXPECT_TRUE(std::isnan(p.summary->values.at("val_bpb")));
  EXPECT_EQ(p.summary->to_json(), R"({"val_bpb":"nan"})");
  EXPECT_TRUE(std::isinf(parse_summary("---\nval_bpb: -inf\n", kKeys).summary->values.at("val_bpb")));
}

TEST(Summary, NoBlockOrNoWantedKeyIsNoSummary) {
  for (const char* text : {"", "val_bpb: 1.0\n", "---\nother: 1\n"}) {
    auto p = parse_summary(text, kKeys);
    EXPECT_FALSE(p.summary) << text;
    EXPECT_EQ(p.tampered, "") << text;
  }
}

TEST(Summary, FindsTheFailLine) {
  EXPECT_EQ(fail_line("step 1\nFAIL: loss is NaN at step 12\nmore\n"), "FAIL: loss is NaN at step 12");
  EXPECT_EQ(fail_line("all good\n"), "");
  EXPECT_EQ(tampered_reason(fail_line("FAIL: tampered: causality: changing the tokens after position 5\n")),
            "causality: changing the tokens after position 5");
  EXPECT_EQ(tampered_reason("FAIL: loss is NaN at step 12"), std::nullopt);
}

TEST(Summary, TrialFiguresFromItsKeys) {
  Summary s;
  s.values = {{"val_bpb", 0.98}, {"training_seconds", 300.5}, {"num_steps", 1200}, {"total_tokens_M", 2.5}};
  const TrialFigures f = trial_figures(s);
  EXPECT_EQ(f.training_seconds, 300.5);
  EXPECT_EQ(f.steps, 1200);
  EXPECT_EQ(f.tokens, 2.5e6);
  EXPECT_FALSE(f.peak_vram_mb);
  EXPECT_FALSE(trial_figures(Summary{}).steps);
}

}  // namespace
}  // namespace ard
