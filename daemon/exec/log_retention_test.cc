// Tests of prune_logs: old logs go, recent ones and non-files stay.
#include "daemon/exec/log_retention.h"

#include "testing/test_util.h"

namespace ard {
namespace {

namespace fs = std::filesystem;

TEST(LogRetention, DeletesOnlyLogsOlderThanKeepDays) {
  testing::TempDir dir;
  const auto now = fs::file_time_type::clock::now();
  for (const char* n : {"1-train.log", "2-train.log", "3-check.log"}) testing::write_file(dir / n, "x");
  fs::last_write_time(dir / "1-train.log", now - std::chrono::hours(24 * 31));
  fs::last_write_time(dir / "2-train.log", now - std::chrono::hours(24 * 29));
  fs::create_directory(dir / "old-dir");
  fs::last_write_time(dir / "old-dir", now - std::chrono::hours(24 * 100));
  fs::create_symlink(dir / "1-train.log", dir / "link.log");

  EXPECT_TRUE(prune_logs(dir.path(), 0, now).empty());  // 0 keeps everything
  EXPECT_TRUE(fs::exists(dir / "1-train.log"));

  auto removed = prune_logs(dir.path(), 30, now);
  EXPECT_EQ(removed, std::vector<fs::path>{dir / "1-train.log"});
  EXPECT_FALSE(fs::exists(dir / "1-train.log"));
  EXPECT_TRUE(fs::exists(dir / "2-train.log"));
  EXPECT_TRUE(fs::exists(dir / "3-check.log"));
  EXPECT_TRUE(fs::exists(dir / "old-dir"));
  EXPECT_TRUE(fs::is_symlink(dir / "link.log"));

  EXPECT_EQ(prune_logs(dir.path(), 0.5, now + std::chrono::hours(24)).size(), 2u);
  EXPECT_TRUE(prune_logs(dir / "missing", 30, now).empty());
}

}  // namespace
}  // namespace ard
