// Tests of summary parsing on the block docs/CONTRACTS.md specifies.
#include "daemon/summary.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ard {
namespace {

const std::vector<std::string> kKeys = {"val_bpb", "peak_vram_mb", "training_seconds", "num_steps"};

TEST(Summary, ParsesTheContractBlock) {
  auto s = parse_summary(
      "step 1 loss 3.2\n---\nval_bpb:          0.997900\ntraining_seconds: 300.1\n"
      "peak_vram_mb:     45060.2\nmfu_percent:      39.80\nnum_steps:        953\n",
      kKeys);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->values.at("val_bpb"), 0.9979);
  EXPECT_DOUBLE_EQ(s->values.at("peak_vram_mb"), 45060.2);
  EXPECT_DOUBLE_EQ(s->values.at("num_steps"), 953);
  EXPECT_EQ(s->values.count("mfu_percent"), 0u);  // not asked for
  EXPECT_EQ(s->to_json(), R"({"num_steps":953.0,"peak_vram_mb":45060.2,"training_seconds":300.1,"val_bpb":0.9979})");
}

TEST(Summary, TheLastBlockWins) {
  auto s = parse_summary("---\nval_bpb: 2.0\n---\nval_bpb: 1.0\n", kKeys);
  EXPECT_DOUBLE_EQ(s->values.at("val_bpb"), 1.0);
}

TEST(Summary, NanIsKeptSoTheDaemonCanRejectIt) {
  auto s = parse_summary("---\nval_bpb: nan\n", kKeys);
  ASSERT_TRUE(s);
  EXPECT_TRUE(std::isnan(s->values.at("val_bpb")));
  EXPECT_EQ(s->to_json(), R"({"val_bpb":"nan"})");
}

TEST(Summary, NoBlockOrNoWantedKeyIsNoSummary) {
  EXPECT_FALSE(parse_summary("", kKeys));
  EXPECT_FALSE(parse_summary("val_bpb: 1.0\n", kKeys));
  EXPECT_FALSE(parse_summary("---\nother: 1\n", kKeys));
  EXPECT_FALSE(parse_summary("---\nval_bpb: fast\n", kKeys));
}

TEST(Summary, FindsTheFailLine) {
  EXPECT_EQ(fail_line("step 1\nFAIL: loss is NaN at step 12\nmore\n"), "FAIL: loss is NaN at step 12");
  EXPECT_EQ(fail_line("all good\n"), "");
  EXPECT_EQ(tampered_reason(fail_line("FAIL: tampered: causality: changing the tokens after position 5\n")),
            "causality: changing the tokens after position 5");
  EXPECT_EQ(tampered_reason("FAIL: loss is NaN at step 12"), std::nullopt);
}

}  // namespace
}  // namespace ard
