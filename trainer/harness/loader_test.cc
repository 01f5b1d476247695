// PackedLoader invariants on a real shard: BOS-aligned full rows, every fitted
// document exactly once, crops only at row ends, epochs, the last batch.
#include "harness/loader.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "harness/test_util.h"

namespace harness {
namespace {

using testing::TempDir;

// Document d is BOS followed by len_d copies of token d+1, so a row can be
// parsed back into (document, tokens taken) segments.
std::vector<std::vector<uint16_t>> make_docs(const std::vector<size_t>& lengths) {
  std::vector<std::vector<uint16_t>> docs;
  for (size_t d = 0; d < lengths.size(); ++d) docs.emplace_back(lengths[d], static_cast<uint16_t>(d + 1));
  return docs;
}

struct Segment {
  size_t doc;
  size_t tokens;  // including the BOS
};

std::vector<Segment> parse_row(const uint16_t* row, size_t n) {
  std::vector<Segment> segs;
  for (size_t i = 0; i < n; ++i) {
    if (row[i] == BOS_ID) {
      size_t doc = i + 1 < n && row[i + 1] != BOS_ID ? row[i + 1] - 1u : SIZE_MAX;
      segs.push_back({doc, 1});
    } else {
      EXPECT_FALSE(segs.empty()) << "row does not start with BOS";
      if (segs.empty()) return segs;
      EXPECT_EQ(row[i], segs.back().doc + 1) << "tokens of two documents interleaved";
      ++segs.back().tokens;
    }
  }
  return segs;
}

TEST(PackedLoader, RowsAreFullBosAlignedAndUseEachFittedDocumentOnce) {
  std::mt19937 rng(7);
  std::vector<size_t> lengths;
  for (int i = 0; i < 400; ++i) lengths.push_back(1 + rng() % 20);  // tokens after BOS; rows of 32
  TempDir dir;
  testing::write_shard(dir.path(), "val", make_docs(lengths));
  TokenShard shard(dir.path(), "val");

  LoaderOptions o;
  o.batch_rows = 3;
  o.seq_len = 31;  // rows of 32
  o.buffer_docs = 16;
  o.cycle = false;
  PackedLoader loader(shard, o);

  std::map<size_t, size_t> taken;  // doc -> tokens taken (with BOS)
  size_t batches = 0, cropped = 0, bos_only = 0;
  bool saw_last = false;
  for (Batch b = loader.next(); b.rows != nullptr; b = loader.next()) {
    ASSERT_FALSE(saw_last) << "a batch after the one marked last";
    saw_last = b.last;
    ++batches;
    EXPECT_EQ(b.batch_rows, 3);
    EXPECT_EQ(b.seq_len, 31);
    EXPECT_EQ(b.epoch, 1);
    for (int r = 0; r < 3; ++r) {
      const uint16_t* row = b.rows + r * 32;
      ASSERT_EQ(row[0], BOS_ID);
      std::vector<Segment> segs = parse_row(row, 32);
      size_t total = 0;
      for (size_t i = 0; i < segs.size(); ++i) {
        const Segment& s = segs[i];
        total += s.tokens;
        if (s.doc == SIZE_MAX) {  // a crop to one token: just the BOS, only at the row's end
          EXPECT_EQ(i + 1, segs.size());
          ++cropped;
          ++bos_only;
          continue;
        }
        EXPECT_EQ(taken.count(s.doc), 0u) << "document " << s.doc << " used twice";
        taken[s.doc] = s.tokens;
        const size_t full = lengths[s.doc] + 1;
        EXPECT_LE(s.tokens, full);
        if (s.tokens < full) {
          ++cropped;
          EXPECT_EQ(i + 1, segs.size()) << "a cropped document that does not end the row";
        }
      }
      EXPECT_EQ(total, 32u);  // no padding
    }
  }
  EXPECT_TRUE(saw_last);
  EXPECT_GT(batches, 20u);
  EXPECT_GT(cropped, 0u);
  // Nearly all tokens are used: only crop remainders and the tail are dropped.
  size_t used = 0, all = 0;
  for (auto& [d, t] : taken) used += t;
  for (size_t len : lengths) all += len + 1;
  EXPECT_EQ(used + bos_only, batches * 3 * 32);
  EXPECT_GT(static_cast<double>(used) / all, 0.9);
  // After the end the loader keeps answering "no more".
  EXPECT_EQ(loader.next().rows, nullptr);
}

TEST(PackedLoader, RequeuedCropsLoseNoToken) {
  std::mt19937 rng(11);
  std::vector<size_t> lengths;
  for (int i = 0; i < 300; ++i) lengths.push_back(1 + rng() % 90);  // many longer than a row of 32
  TempDir dir;
  testing::write_shard(dir.path(), "val", make_docs(lengths));
  TokenShard shard(dir.path(), "val");
  LoaderOptions o{2, 31, 16, false, true};
  PackedLoader loader(shard, o);
  std::vector<size_t> seen(lengths.size(), 0);  // document tokens seen (not BOS)
  size_t batches = 0;
  for (Batch b = loader.next(); b.rows != nullptr; b = loader.next()) {
    ++batches;
    for (int r = 0; r < 2; ++r) {
      const uint16_t* row = b.rows + r * 32;
      ASSERT_EQ(row[0], BOS_ID);
      for (int i = 0; i < 32; ++i)
        if (row[i] != BOS_ID) ++seen[row[i] - 1];
    }
  }
  size_t all = 0, got = 0, incomplete = 0;
  for (size_t d = 0; d < lengths.size(); ++d) {
    EXPECT_LE(seen[d], lengths[d]);
    all += lengths[d];
    got += seen[d];
    incomplete += seen[d] < lengths[d];
  }
  // Only what the last, incomplete batch would have held is missing.
  EXPECT_LE(all - got, 2u * 32);
  EXPECT_LE(incomplete, 40u);
  EXPECT_GT(batches, 100u);
}

TEST(PackedLoader, ValidationOrderIsFixed) {
  TempDir dir;
  std::vector<size_t> lengths;
  for (int i = 0; i < 100; ++i) lengths.push_back(1 + (i * 37) % 23);
  testing::write_shard(dir.path(), "val", make_docs(lengths));
  TokenShard shard(dir.path(), "val");
  LoaderOptions o{2, 15, 8, false};
  auto run = [&] {
    PackedLoader loader(shard, o);
    std::vector<uint16_t> all;
    for (Batch b = loader.next(); b.rows; b = loader.next()) all.insert(all.end(), b.rows, b.rows + 2 * 16);
    return all;
  };
  std::vector<uint16_t> first = run();
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first, run());
}

TEST(PackedLoader, TrainingCyclesAndReportsEpochs) {
  TempDir dir;
  testing::write_shard(dir.path(), "train", make_docs({7, 7, 7, 7}));  // 4 rows of 8 per epoch
  TokenShard shard(dir.path(), "train");
  LoaderOptions o{2, 7, 1000, true};
  PackedLoader loader(shard, o);
  std::vector<int> epochs;
  for (int i = 0; i < 5; ++i) {
    Batch b = loader.next();
    ASSERT_NE(b.rows, nullptr);
    EXPECT_FALSE(b.last);
    epochs.push_back(b.epoch);
  }
  EXPECT_EQ(epochs, (std::vector<int>{1, 1, 2, 2, 3}));
}

int allocations = 0, releases = 0;

TEST(PackedLoader, UsesTheGivenAllocatorForTwoBuffers) {
  TempDir dir;
  testing::write_shard(dir.path(), "train", make_docs({3, 3}));
  TokenShard shard(dir.path(), "train");
  HostAllocator counting{[](size_t bytes) {
                           ++allocations;
                           return malloc_allocator().allocate(bytes);
                         },
                         [](void* p) {
                           ++releases;
                           malloc_allocator().release(p);
                         }};
  {
    PackedLoader loader(shard, LoaderOptions{1, 3, 10, true}, counting);
    EXPECT_NE(loader.next().rows, nullptr);
  }
  EXPECT_EQ(allocations, 2);
  EXPECT_EQ(releases, 2);
}

TEST(PackedLoader, ShardTooShortForOneBatchEndsAtOnce) {
  TempDir dir;
  testing::write_shard(dir.path(), "val", make_docs({3}));
  TokenShard shard(dir.path(), "val");
  PackedLoader loader(shard, LoaderOptions{4, 15, 10, false});
  Batch b = loader.next();
  EXPECT_EQ(b.rows, nullptr);
  EXPECT_TRUE(b.last);
}

}  // namespace
}  // namespace harness
