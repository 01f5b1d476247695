// Tests of daemon/util/: the text helpers, the file reader and the clock.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/util/clock.h"
#include "daemon/util/file.h"
#include "daemon/util/text.h"

namespace ard {
namespace {

TEST(Text, FirstNonblankLineSkipsBlankLinesAndKeepsTheLineAsItIs) {
  EXPECT_EQ(first_nonblank_line("\n  \t\n  error: x  \nnext"), "  error: x  ");
  EXPECT_EQ(first_nonblank_line(" \n\t\n"), "");
  EXPECT_EQ(first_nonblank_line(""), "");
}

TEST(Text, FlattenToOneLineTurnsLineBreaksIntoSpacesAndDropsTrailingOnes) {
  EXPECT_EQ(flatten_to_one_line("a\r\nb\nc \n"), "a  b c");
  EXPECT_EQ(flatten_to_one_line(""), "");
}

TEST(Text, ShortCommitAndFormatNumber) {
  EXPECT_EQ(short_commit("0123456789abcdef"), "0123456");
  EXPECT_EQ(short_commit("abc"), "abc");
  EXPECT_EQ(format_number(300), "300");
  EXPECT_EQ(format_number(0.9812345678), "0.981235");
}

TEST(Text, FormatFixedAndSigned) {
  EXPECT_EQ(format_fixed(0.95, 6), "0.950000");
  EXPECT_EQ(format_fixed(87.27, 1), "87.3");
  EXPECT_EQ(format_signed(0.01, 6), "+0.010000");
  EXPECT_EQ(format_signed(-0.002, 6), "-0.002000");
}

TEST(Text, JoinListCutsAfterMaxItems) {
  EXPECT_EQ(join_list({"a", "b", "c"}, 5), "a, b, c");
  EXPECT_EQ(join_list({"a", "b", "c"}, 2), "a, b, ...");
  EXPECT_EQ(join_list({}, 2), "");
}

TEST(File, ReadFileReturnsTheBytesOrNothing) {
  auto dir = std::filesystem::temp_directory_path() / ("ard_util_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "f", std::ios::binary);
    out << std::string("a\0b\n", 4);
  }
  EXPECT_EQ(read_file(dir / "f"), std::string("a\0b\n", 4));
  EXPECT_EQ(read_file(dir / "missing"), std::nullopt);
  EXPECT_EQ(read_file(dir), std::nullopt);  // a directory is not a readable file
  std::filesystem::remove_all(dir);
}

TEST(Clock, NowSecondsIsUnixTime) {
  const double now = now_seconds();
  EXPECT_GT(now, 1.7e9);  // after 2023
  EXPECT_LT(now, 4.1e9);  // before 2100
}

}  // namespace
}  // namespace ard
