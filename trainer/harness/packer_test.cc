// Best-fit packing decisions on document lengths, checked by hand.
#include "harness/packer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

namespace harness {
namespace {

using Row3 = std::vector<std::tuple<size_t, size_t, size_t>>;  // (doc, length, offset)

Row3 row3(RowPacker& p) {
  std::vector<RowPiece> pieces;
  int e = 0;
  EXPECT_TRUE(p.next_row(pieces, e));
  Row3 out;
  for (auto& piece : pieces) out.push_back({piece.doc, piece.length, piece.offset});
  return out;
}

std::vector<std::pair<size_t, size_t>> row(RowPacker& p, int* epoch = nullptr) {
  std::vector<RowPiece> pieces;
  int e = 0;
  EXPECT_TRUE(p.next_row(pieces, e));
  if (epoch) *epoch = e;
  std::vector<std::pair<size_t, size_t>> out;
  for (auto& piece : pieces) out.push_back({piece.doc, piece.length});
  return out;
}

using Row = std::vector<std::pair<size_t, size_t>>;

TEST(RowPacker, PlacesLargestFittingDocumentFirst) {
  // lengths 5, 3, 4, row of 8: 5 then 3 fill the first row exactly.
  RowPacker p({5, 3, 4}, 8, 3, /*cycle=*/false);
  EXPECT_EQ(row(p), (Row{{0, 5}, {1, 3}}));
  std::vector<RowPiece> pieces;
  int epoch = 0;
  EXPECT_FALSE(p.next_row(pieces, epoch));  // 4 tokens left cannot fill a row of 8
}

TEST(RowPacker, CropsShortestWhenNothingFits) {
  RowPacker p({12, 10, 3}, 8, 3, false);
  // 3 fits first, then 5 tokens left: nothing fits, the shortest (10) is cropped.
  EXPECT_EQ(row(p), (Row{{2, 3}, {1, 5}}));
  EXPECT_EQ(row(p), (Row{{0, 8}}));
}

TEST(RowPacker, RequeuedCropsKeepTheRestWithABos) {
  RowPacker p({12, 10, 3}, 8, 3, false, /*requeue_crops=*/true);
  EXPECT_EQ(row3(p), (Row3{{2, 3, 0}, {1, 5, 0}}));  // doc 1 cropped after 5 tokens: 5 remain
  EXPECT_EQ(row3(p), (Row3{{1, 6, 5}, {0, 2, 0}}));  // BOS + doc 1's last 5; doc 0 cropped after 2
  EXPECT_EQ(row3(p), (Row3{{0, 8, 2}}));             // BOS + doc 0's tokens 2..8; 3 remain
  std::vector<RowPiece> pieces;
  int epoch = 0;
  EXPECT_FALSE(p.next_row(pieces, epoch));  // BOS + 3 cannot fill a row
  EXPECT_EQ(count_rows({12, 10, 3}, 8, 3, true), 3u);
}

TEST(RowPacker, OldestFirstAmongEqualLengths) {
  RowPacker p({2, 2, 2, 2}, 4, 4, false);
  EXPECT_EQ(row(p), (Row{{0, 2}, {1, 2}}));
  EXPECT_EQ(row(p), (Row{{2, 2}, {3, 2}}));
}

TEST(RowPacker, BufferLimitsTheChoice) {
  // With a buffer of one, documents are taken strictly in order.
  RowPacker p({3, 5, 5}, 8, 1, false);
  EXPECT_EQ(row(p), (Row{{0, 3}, {1, 5}}));
  // With a buffer of three the largest fitting (5) goes first.
  RowPacker q({3, 4, 5}, 8, 3, false);
  EXPECT_EQ(row(q), (Row{{2, 5}, {0, 3}}));
}

TEST(RowPacker, RefillsInChunksBelowTheBuffer) {
  // A buffer of 1 topped up one document at a time: doc 1 is all there is for the last 2 tokens.
  RowPacker one({6, 6, 2}, 8, 1, false);
  EXPECT_EQ(row(one), (Row{{0, 6}, {1, 2}}));
  // Topped up 3 at a time (as the reference adds its tokenizer's batches): doc 2 is buffered too.
  RowPacker chunked({6, 6, 2}, 8, 1, false, false, /*refill_docs=*/3);
  EXPECT_EQ(row(chunked), (Row{{0, 6}, {2, 2}}));
  EXPECT_THROW(RowPacker({6}, 8, 1, false, false, 0), std::invalid_argument);
}

TEST(RowPacker, ARefillChunkEndsAtTheEndOfTheShard) {
  // Chunks of 2 over 3 documents: {0, 1}, then {2} (the shard ends), then {0, 1} of epoch 2.
  RowPacker p({4, 4, 4}, 4, 2, /*cycle=*/true, false, 2);
  int epoch = 0;
  const int want_epochs[] = {1, 1, 1, 2, 2};
  const size_t want_docs[] = {0, 1, 2, 0, 1};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(row(p, &epoch), (Row{{want_docs[i], 4}}));
    EXPECT_EQ(epoch, want_epochs[i]);
  }
}

// The reference trainer's loader, transcribed on lengths as plainly as it is written: a list
// in arrival order, refilled 128 documents at a time (a chunk ends at the end of the shard)
// while it holds fewer than 1000; the first longest document that fits, else the first
// shortest is cropped. Returns the (doc, length) pieces of `rows` rows.
std::vector<std::pair<size_t, size_t>> reference_pieces(const std::vector<size_t>& lengths, size_t row_len,
                                                        long rows) {
  std::vector<size_t> buffer;  // document ids
  size_t cursor = 0;
  std::vector<std::pair<size_t, size_t>> out;
  for (long r = 0; r < rows; ++r)
    for (size_t pos = 0; pos < row_len;) {
      while (buffer.size() < 1000) {
        if (cursor == lengths.size()) cursor = 0;
        for (size_t end = std::min(cursor + 128, lengths.size()); cursor < end; ++cursor) buffer.push_back(cursor);
      }
      const size_t remaining = row_len - pos;
      long best = -1;
      for (size_t i = 0; i < buffer.size(); ++i)
        if (lengths[buffer[i]] <= remaining && (best < 0 || lengths[buffer[i]] > lengths[buffer[best]])) best = long(i);
      if (best < 0) {
        best = 0;
        for (size_t i = 1; i < buffer.size(); ++i)
          if (lengths[buffer[i]] < lengths[buffer[best]]) best = long(i);
      }
      const size_t doc = buffer[best], taken = std::min(lengths[doc], remaining);
      out.push_back({doc, taken});
      pos += taken;
      buffer.erase(buffer.begin() + best);
    }
  return out;
}

TEST(RowPacker, MatchesTheReferenceLoaderOverEpochs) {
  std::mt19937 rng(7);
  std::vector<size_t> lengths(3000);
  for (auto& len : lengths) len = 1 + (rng() % 4 == 0 ? rng() % 900 : rng() % 120);  // some longer than a row
  const size_t row_len = 257;
  const long rows = 3000;  // about 2.5 passes over the documents
  RowPacker p(lengths, row_len, 1000, /*cycle=*/true, false, /*refill_docs=*/128);
  std::vector<std::pair<size_t, size_t>> ours;
  std::vector<RowPiece> pieces;
  int epoch = 0;
  for (long r = 0; r < rows; ++r) {
    ASSERT_TRUE(p.next_row(pieces, epoch));
    for (auto& piece : pieces) ours.push_back({piece.doc, piece.length});
  }
  EXPECT_GE(epoch, 2);
  EXPECT_EQ(ours, reference_pieces(lengths, row_len, rows));
}

TEST(RowPacker, CyclingCountsEpochs) {
  RowPacker p({4, 4}, 4, 1, /*cycle=*/true);
  int epoch = 0;
  EXPECT_EQ(row(p, &epoch), (Row{{0, 4}}));
  EXPECT_EQ(epoch, 1);
  EXPECT_EQ(row(p, &epoch), (Row{{1, 4}}));
  EXPECT_EQ(epoch, 1);
  EXPECT_EQ(row(p, &epoch), (Row{{0, 4}}));
  EXPECT_EQ(epoch, 2);
}

TEST(RowPacker, CountRowsMatchesAWalk) {
  std::vector<size_t> lengths = {7, 1, 9, 3, 3, 2, 8, 5, 5, 6, 1, 1};
  // Rows by hand: [7,1] [3,3,2] [8] [6,1,1] [5, 3 of 5] [8 of 9]; the rest is dropped.
  EXPECT_EQ(count_rows(lengths, 8, 4), 6u);
}

TEST(RowPacker, RejectsEmptyInput) {
  EXPECT_THROW(RowPacker({}, 8, 4, false), std::invalid_argument);
  EXPECT_THROW(RowPacker({0}, 8, 4, false), std::invalid_argument);
}

}  // namespace
}  // namespace harness
