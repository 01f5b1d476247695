// Tests of read_program_file: the limit, a file that is not a regular file, a missing one.
#include "daemon/program_file.h"

#include <sys/stat.h>

#include "testing/test_util.h"

namespace ard {
namespace {

TEST(ProgramFile, ReadsUpToTheLimit) {
  testing::TempDir dir;
  testing::write_file(dir / "program.md", std::string(100, 'x'));
  auto r = read_program_file(dir / "program.md", 100);
  ASSERT_TRUE(r.content) << r.error;
  EXPECT_EQ(r.content->size(), 100u);
  EXPECT_EQ(r.error, "");
}

TEST(ProgramFile, RefusesAFileOverTheLimitNamingTheKey) {
  testing::TempDir dir;
  testing::write_file(dir / "program.md", std::string(101, 'x'));
  auto r = read_program_file(dir / "program.md", 100);
  EXPECT_FALSE(r.content);
  EXPECT_FALSE(r.missing);
  EXPECT_EQ(r.error, "program.md is 101 bytes, over max_program_bytes = 100: shorten it or raise max_program_bytes");
}

TEST(ProgramFile, MissingAndFifo) {
  testing::TempDir dir;
  auto missing = read_program_file(dir / "program.md", 100);
  EXPECT_TRUE(missing.missing);
  EXPECT_FALSE(missing.content);
  ASSERT_EQ(mkfifo((dir / "fifo.md").c_str(), 0600), 0);
  auto fifo = read_program_file(dir / "fifo.md", 100);  // returns at once: no writer needed
  EXPECT_FALSE(fifo.content);
  EXPECT_EQ(fifo.error, (dir / "fifo.md").string() + " is not a regular file");
}

}  // namespace
}  // namespace ard
