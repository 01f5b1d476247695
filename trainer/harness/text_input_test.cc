// Document readers over plain and compressed files, and their errors.
#include "harness/text_input.h"

#include <gtest/gtest.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include "harness/test_util.h"

namespace harness {
namespace {

using testing::TempDir;

struct Doc {
  std::string text;
  size_t line;
  bool operator==(const Doc& o) const { return text == o.text && line == o.line; }
};

std::vector<Doc> read_all(const std::string& path, const std::string& field = "text") {
  std::vector<Doc> docs;
  read_documents(path, field, [&](std::string&& t, size_t line) { docs.push_back({t, line}); });
  return docs;
}

std::string error_of(const std::string& path) {
  try {
    read_all(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string gzip(const std::string& s) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, s.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
  z.avail_in = static_cast<uInt>(s.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string xz(const std::string& s) {
  std::string out(lzma_stream_buffer_bound(s.size()), '\0');
  size_t pos = 0;
  EXPECT_EQ(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t*>(s.data()),
                                    s.size(), reinterpret_cast<uint8_t*>(out.data()), &pos, out.size()),
            LZMA_OK);
  out.resize(pos);
  return out;
}

std::string zstd(const std::string& s) {
  std::string out(ZSTD_compressBound(s.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), s.data(), s.size(), 3));
  return out;
}

const std::string kJsonl =
    "{\"text\": \"first doc\", \"source\": \"a\"}\n"
    "\n"
    "{\"text\": \"second\\nline \\u00e9\"}\n"
    "{\"text\": \"\"}\n"
    "{\"source\": \"x\", \"text\": \"last, no newline\"}";
const std::vector<Doc> kJsonlDocs = {{"first doc", 1}, {"second\nline \xC3\xA9", 3}, {"last, no newline", 5}};

TEST(ReadDocuments, JsonLinesPlainAndCompressedAgree) {
  TempDir dir;
  testing::write_text(dir.file("a.jsonl"), kJsonl);
  testing::write_text(dir.file("a.jsonl.gz"), gzip(kJsonl));
  testing::write_text(dir.file("a.jsonl.xz"), xz(kJsonl));
  testing::write_text(dir.file("a.jsonl.zst"), zstd(kJsonl));
  for (const char* name : {"a.jsonl", "a.jsonl.gz", "a.jsonl.xz", "a.jsonl.zst"}) EXPECT_EQ(read_all(dir.file(name)), kJsonlDocs) << name;
  InputCounts c = read_documents(dir.file("a.jsonl.xz"), "text", [](std::string&&, size_t) {});
  EXPECT_EQ(c.documents, 3u);
  EXPECT_EQ(c.empty_skipped, 1u);
}

TEST(ReadDocuments, LargeCompressedFileStreamsAcrossBuffers) {
  TempDir dir;
  std::string big;
  for (int i = 0; i < 60000; ++i) big += "{\"text\": \"document number " + std::to_string(i) + " with some padding text\"}\n";
  testing::write_text(dir.file("big.jsonl.zst"), zstd(big));
  testing::write_text(dir.file("big.jsonl.gz"), gzip(big) + gzip(big));  // concatenated members
  std::vector<Doc> z = read_all(dir.file("big.jsonl.zst"));
  ASSERT_EQ(z.size(), 60000u);
  EXPECT_EQ(z[59999].text, "document number 59999 with some padding text");
  EXPECT_EQ(read_all(dir.file("big.jsonl.gz")).size(), 120000u);
}

TEST(ReadDocuments, TextFilesSplitAtBlankLines) {
  TempDir dir;
  testing::write_text(dir.file("t.txt"), "para one\r\nstill one\n\n  \n\npara two\n\n\nthree");
  EXPECT_EQ(read_all(dir.file("t.txt")), (std::vector<Doc>{{"para one\nstill one", 1}, {"para two", 6}, {"three", 9}}));
}

TEST(ReadDocuments, ConfigurableField) {
  TempDir dir;
  testing::write_text(dir.file("c.jsonl"), "{\"content\": \"x\", \"text\": 3}\n");
  EXPECT_EQ(read_all(dir.file("c.jsonl"), "content"), (std::vector<Doc>{{"x", 1}}));
}

TEST(ReadDocuments, BadInputNamesFileAndLine) {
  TempDir dir;
  const std::string f = dir.file("bad.jsonl");
  EXPECT_EQ(error_of(dir.file("missing.jsonl")), dir.file("missing.jsonl") + ": cannot open: No such file or directory");
  testing::write_text(f, "{\"text\": \"ok\"}\n{\"txt\": \"typo\"}\n");
  EXPECT_EQ(error_of(f), f + ":2: no \"text\" field");
  testing::write_text(f, "{\"text\": \"ok\"}\n\n{\"text\": [1]}\n");
  EXPECT_EQ(error_of(f), f + ":3: \"text\" is not a string");
  testing::write_text(f, "{\"text\": \"ok\"\n");
  EXPECT_EQ(error_of(f), f + ":1: invalid JSON at column 14: expected '}'");
  testing::write_text(f, "{\"text\": \"ok\"}\n{\"text\": \"bad \xC3\x28 byte\"}\n");
  EXPECT_EQ(error_of(f), f + ":2: invalid UTF-8 at byte 4 of the document");
  testing::write_text(dir.file("t.txt"), "fine\n\nbad \xFF\n");
  EXPECT_EQ(error_of(dir.file("t.txt")), dir.file("t.txt") + ":3: invalid UTF-8 at byte 4 of the document");
  testing::write_text(dir.file("x.csv"), "a,b\n");
  EXPECT_EQ(error_of(dir.file("x.csv")),
            dir.file("x.csv") + ": unknown input type (expected .jsonl or .txt, optionally .xz, .gz or .zst)");
  std::string truncated = xz(kJsonl);
  truncated.resize(truncated.size() / 2);
  testing::write_text(dir.file("t.jsonl.xz"), truncated);
  EXPECT_NE(error_of(dir.file("t.jsonl.xz")).find("t.jsonl.xz: cannot decompress"), std::string::npos);
  std::string ztrunc = zstd(kJsonl);
  ztrunc.resize(ztrunc.size() - 4);
  testing::write_text(dir.file("t.jsonl.zst"), ztrunc);
  EXPECT_NE(error_of(dir.file("t.jsonl.zst")).find("t.jsonl.zst: cannot decompress"), std::string::npos);
}

}  // namespace
}  // namespace harness
