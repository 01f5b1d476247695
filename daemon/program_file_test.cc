// Tests of reading program.md: missing and empty are told apart and never
// read as an empty program.
#include "daemon/program_file.h"

#include <sys/stat.h>

#include "testing/test_util.h"

namespace ard {
namespace {

TEST(ProgramFile, ReadsAProgram) {
  testing::TempDir dir;
  testing::write_file(dir / "program.md", "# research\nmake it faster\n");
  ProgramFile p = read_program_file(dir / "program.md");
  EXPECT_TRUE(p.ok());
  EXPECT_EQ(p.content, "# research\nmake it faster\n");
  EXPECT_EQ(p.message, "");
}

TEST(ProgramFile, MissingIsNotEmpty) {
  testing::TempDir dir;
  ProgramFile p = read_program_file(dir / "program.md");
  EXPECT_EQ(p.problem, ProgramFile::Problem::missing);
  EXPECT_EQ(p.message, (dir / "program.md").string() + " is missing; waiting for it before the next proposal");
  EXPECT_EQ(p.content, "");
}

TEST(ProgramFile, EmptyOrBlankWaitsToo) {
  testing::TempDir dir;
  for (std::string text : {"", " \n\t\n"}) {
    testing::write_file(dir / "program.md", text);
    ProgramFile p = read_program_file(dir / "program.md");
    EXPECT_EQ(p.problem, ProgramFile::Problem::empty);
    EXPECT_EQ(p.message, (dir / "program.md").string() + " is empty; waiting for it before the next proposal");
  }
}

TEST(ProgramFile, ADirectoryIsUnreadable) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir / "program.md");
  ProgramFile p = read_program_file(dir / "program.md");
  EXPECT_FALSE(p.ok());
  EXPECT_NE(p.problem, ProgramFile::Problem::missing);
}

TEST(ProgramFile, ATooLargeFileIsRefusedAndAFifoDoesNotBlock) {
  testing::TempDir dir;
  testing::write_file(dir / "program.md", std::string(2000, 'x'));
  ProgramFile p = read_program_file(dir / "program.md", 1000);
  EXPECT_EQ(p.problem, ProgramFile::Problem::too_large);
  EXPECT_EQ(p.message, "program.md is 2000 bytes, over max_program_bytes = 1000: shorten it or raise max_program_bytes");
  EXPECT_TRUE(read_program_file(dir / "program.md", 2000).ok());
  ASSERT_EQ(mkfifo((dir / "fifo.md").c_str(), 0600), 0);
  EXPECT_EQ(read_program_file(dir / "fifo.md").problem, ProgramFile::Problem::unreadable);
}

}  // namespace
}  // namespace ard
