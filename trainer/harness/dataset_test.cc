// TokenShard and token_bytes: opening good datasets, naming the file on bad ones.
#include "harness/dataset.h"

#include <gtest/gtest.h>

#include "harness/test_util.h"

namespace harness {
namespace {

using testing::TempDir;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(TokenShard, MapsTokensAndIndex) {
  TempDir dir;
  testing::write_shard(dir.path(), "val", {{5, 6, 7}, {8}});
  TokenShard shard(dir.path(), "val");
  ASSERT_EQ(shard.num_docs(), 2u);
  ASSERT_EQ(shard.num_tokens(), 6u);
  EXPECT_EQ(shard.doc_begin(0), 0u);
  EXPECT_EQ(shard.doc_end(0), 4u);
  EXPECT_EQ(shard.doc_begin(1), 4u);
  EXPECT_EQ(shard.doc_end(1), 6u);
  EXPECT_EQ(shard.tokens()[0], BOS_ID);
  EXPECT_EQ(shard.tokens()[3], 7);
  EXPECT_EQ(shard.tokens()[4], BOS_ID);
  EXPECT_EQ(shard.tokens()[5], 8);
}

TEST(TokenShard, MissingBinNamesTheFile) {
  TempDir dir;
  testing::write_shard(dir.path(), "val", {{1}});
  std::filesystem::remove(dir.file("val.bin"));
  EXPECT_NE(error_of([&] { TokenShard s(dir.path(), "val"); }).find("val.bin: cannot open"), std::string::npos);
}

TEST(TokenShard, TruncatedIndexIsRejected) {
  TempDir dir;
  testing::write_shard(dir.path(), "val", {{1}});
  testing::write_text(dir.file("val.idx"), "abc");
  EXPECT_NE(error_of([&] { TokenShard s(dir.path(), "val"); }).find("val.idx: truncated index"), std::string::npos);
}

TEST(TokenShard, IndexMustCoverTheShard) {
  TempDir dir;
  testing::write_shard(dir.path(), "val", {{1, 2}});
  uint16_t extra[4] = {BOS_ID, 1, 2, 3};
  testing::write_bytes(dir.file("val.bin"), extra, sizeof extra);
  EXPECT_NE(error_of([&] { TokenShard s(dir.path(), "val"); }).find("index ends at token 3"), std::string::npos);
}

TEST(TokenShard, DocumentsMustStartWithBos) {
  TempDir dir;
  uint16_t tokens[3] = {BOS_ID, 1, 2};
  uint64_t offsets[3] = {0, 2, 3};  // the second document starts with token 2, not BOS
  testing::write_bytes(dir.file("t.bin"), tokens, sizeof tokens);
  testing::write_bytes(dir.file("t.idx"), offsets, sizeof offsets);
  EXPECT_NE(error_of([&] { TokenShard s(dir.path(), "t"); }).find("document 1 does not start with BOS"),
            std::string::npos);
}

TEST(TokenBytes, LoadsAndChecksSize) {
  TempDir dir;
  std::vector<int32_t> table(VOCAB_SIZE, 1);
  table[BOS_ID] = 0;
  testing::write_bytes(dir.file("token_bytes.bin"), table.data(), table.size() * 4);
  EXPECT_EQ(load_token_bytes(dir.path()), table);
  testing::write_bytes(dir.file("token_bytes.bin"), table.data(), 100 * 4);
  EXPECT_NE(error_of([&] { load_token_bytes(dir.path()); }).find("token_bytes.bin: expected 32768 bytes, found 400"),
            std::string::npos);
}

}  // namespace
}  // namespace harness
