// val_bpb on hand-computed examples.
#include "harness/eval.h"

#include <gtest/gtest.h>

#include <cmath>

#include "harness/constants.h"
#include "harness/test_util.h"

namespace harness {
namespace {

std::vector<int32_t> table_of_ones() {
  std::vector<int32_t> t(VOCAB_SIZE, 1);
  for (int id = NUM_LEARNED_TOKENS; id < VOCAB_SIZE; ++id) t[id] = 0;
  return t;
}

TEST(BpbMeter, ExcludesZeroByteTargetsFromBothSums) {
  std::vector<int32_t> table = table_of_ones();
  table[65] = 2;
  BpbMeter m(table);
  const float losses[3] = {1.0f, 2.0f, 3.0f};
  const uint16_t targets[3] = {10, 65, BOS_ID};
  m.add(losses, targets, 3);
  EXPECT_DOUBLE_EQ(m.nats(), 3.0);  // the BOS's 3.0 is not counted
  EXPECT_EQ(m.bytes(), 3);
  EXPECT_EQ(m.tokens(), 3);
  EXPECT_DOUBLE_EQ(m.bpb(), 3.0 / (3.0 * std::log(2.0)));
}

TEST(BpbMeter, NoBytesIsNaN) {
  BpbMeter m(table_of_ones());
  EXPECT_TRUE(std::isnan(m.bpb()));
  const float loss = 1.0f;
  const uint16_t bos = BOS_ID;
  m.add(&loss, &bos, 1);
  EXPECT_TRUE(std::isnan(m.bpb()));
}

TEST(BpbMeter, RejectsIdsOutsideTheTable) {
  BpbMeter m(std::vector<int32_t>(10, 1));
  const float loss = 1.0f;
  const uint16_t id = 10;
  EXPECT_THROW(m.add(&loss, &id, 1), std::out_of_range);
}

// Loss of each target = its id / 10, so the sums can be done by hand.
void losses_from_ids(const uint16_t* rows, int b, int t, float* out) {
  for (int r = 0; r < b; ++r)
    for (int i = 0; i < t; ++i) out[r * t + i] = rows[r * (t + 1) + i + 1] / 10.0f;
}

constexpr ValidationPacking kEvery = ValidationPacking::kEveryToken;

TEST(EvaluateBpb, SumsWholeBatchesInShardOrder) {
  testing::TempDir dir;
  // Two documents of exactly one row each (BOS + 4 tokens, T = 4).
  testing::write_shard(dir.path(), "val", {{10, 11, 12, 13}, {20, 21, 22, 23}});
  TokenShard val(dir.path(), "val");
  std::vector<int32_t> table = table_of_ones();
  table[10] = 3;
  const double ln2 = std::log(2.0);
  // One batch: targets 10..13, nats 1.0+1.1+1.2+1.3 = 4.6, bytes 3+1+1+1 = 6.
  for (ValidationPacking packing : {ValidationPacking::kReference, kEvery}) {
    EXPECT_NEAR(evaluate_bpb(val, table, 3, 1, 4, losses_from_ids, packing), 4.6 / (6 * ln2), 1e-6);
    // Two batches: + 2.0+2.1+2.2+2.3 = 8.6 nats, + 4 bytes.
    EXPECT_NEAR(evaluate_bpb(val, table, 8, 1, 4, losses_from_ids, packing), 13.2 / (10 * ln2), 1e-6);
  }
  // A third batch: every-token packing has none; the reference's reads the shard again.
  EXPECT_THROW(evaluate_bpb(val, table, 9, 1, 4, losses_from_ids, kEvery), std::runtime_error);
  EXPECT_NEAR(evaluate_bpb(val, table, 9, 1, 4, losses_from_ids), (13.2 + 4.6) / (16 * ln2), 1e-6);
}

TEST(EvaluateBpb, DocumentsLongerThanARowAreScoredWhole) {
  testing::TempDir dir;
  testing::write_shard(dir.path(), "val", {{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}});
  TokenShard val(dir.path(), "val");
  // Every token: rows of 5: BOS 10 11 12 13 | BOS 14 15 16 17 | (BOS 18 19 cannot fill a row).
  const double expected = (1.0 + 1.1 + 1.2 + 1.3 + 1.4 + 1.5 + 1.6 + 1.7) / (8 * std::log(2.0));
  EXPECT_NEAR(evaluate_bpb(val, table_of_ones(), 8, 1, 4, losses_from_ids, kEvery), expected, 1e-6);
  EXPECT_THROW(evaluate_bpb(val, table_of_ones(), 9, 1, 4, losses_from_ids, kEvery), std::runtime_error);
}

TEST(EvaluateBpb, ReferencePackingDropsCropRestsAndReadsTheShardAgain) {
  testing::TempDir dir;
  testing::write_shard(dir.path(), "val", {{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}});
  TokenShard val(dir.path(), "val");
  // Rows of 5: BOS 10 11 12 13 (the rest 14..19 dropped), then the document again.
  const double expected = 2 * (1.0 + 1.1 + 1.2 + 1.3) / (8 * std::log(2.0));
  EXPECT_NEAR(evaluate_bpb(val, table_of_ones(), 8, 1, 4, losses_from_ids), expected, 1e-6);
}

TEST(EvaluateBpb, BosInsideARowIsNotScored) {
  testing::TempDir dir;
  // Rows of 5: BOS 10 11 BOS 12 (documents of 3 and 2 tokens fill it exactly).
  testing::write_shard(dir.path(), "val", {{10, 11}, {12}});
  TokenShard val(dir.path(), "val");
  // targets 10 11 BOS 12: nats 1.0 + 1.1 + 1.2, bytes 3 (BOS skipped).
  double bpb = evaluate_bpb(val, table_of_ones(), 4, 1, 4, losses_from_ids);
  EXPECT_NEAR(bpb, 3.3 / (3 * std::log(2.0)), 1e-6);
}

}  // namespace
}  // namespace harness
