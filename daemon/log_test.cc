// Tests of the daemon log's file: appended lines, readable by its owner only.
#include "daemon/log.h"

#include <sys/stat.h>

#include "testing/test_util.h"

namespace ard {
namespace {

TEST(Log, AppendsToAFileOnlyItsOwnerCanRead) {
  testing::TempDir dir;
  testing::write_file(dir / "daemon.log", "earlier\n");
  chmod((dir / "daemon.log").c_str(), 0644);  // as an older daemon left it
  {
    Log log(dir / "daemon.log", false);
    log("started");
  }
  std::string text = testing::read_file(dir / "daemon.log");
  EXPECT_EQ(text.rfind("earlier\n", 0), 0u);
  EXPECT_NE(text.find(" started\n"), std::string::npos);
  struct stat st;
  ASSERT_EQ(stat((dir / "daemon.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace ard
