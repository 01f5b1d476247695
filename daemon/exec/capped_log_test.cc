// Tests for capped_log.h: a log under its cap is written as it came; a log
// over it keeps its head and tail around a marker that counts what was dropped.
#include "daemon/exec/capped_log.h"

#include <gmock/gmock.h>
#include <sys/stat.h>

#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;

TEST(CappedLog, UnderTheCapEverythingIsKept) {
  testing::TempDir dir;
  {
    CappedLog log(dir / "a.log", 100);
    log.write("hello\n", 6);
    log.write("world\n", 6);
  }
  EXPECT_EQ(testing::read_file(dir / "a.log"), "hello\nworld\n");
  struct stat st {};
  ASSERT_EQ(stat((dir / "a.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(CappedLog, OverTheCapKeepsHeadAndTail) {
  testing::TempDir dir;
  CappedLog log(dir / "b.log", 20);
  std::string text;
  for (int i = 0; i < 100; ++i) text += static_cast<char>('a' + i % 26);
  // In uneven pieces, so the ring wraps mid-write.
  log.write(text.data(), 7);
  log.write(text.data() + 7, 50);
  log.write(text.data() + 57, 43);
  log.close();
  EXPECT_EQ(log.dropped(), 80u);
  std::string out = testing::read_file(dir / "b.log");
  EXPECT_EQ(out.substr(0, 10), text.substr(0, 10));
  EXPECT_EQ(out.substr(out.size() - 10), text.substr(90));
  EXPECT_THAT(out, HasSubstr("80 bytes of output dropped"));
  log.close();  // idempotent
}

TEST(CappedLog, AnUnwritableLogSaysWhy) {
  testing::TempDir dir;
  CappedLog log(dir / "missing/c.log", 10);
  EXPECT_THAT(log.error(), HasSubstr("missing/c.log: cannot open"));
  log.write("x", 1);  // dropped, no crash
}

}  // namespace
}  // namespace ard
