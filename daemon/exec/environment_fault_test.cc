// Tests of the environment-fault classification: which errno values and
// SQLite codes are the machine's fault, and the line a fault prints.
#include "daemon/exec/environment_fault.h"

#include <gmock/gmock.h>
#include <sqlite3.h>
#include <string.h>

#include "testing/test_util.h"
#include "testing/tmpfs.h"

namespace ard {
namespace {

TEST(EnvironmentFault, ClassifiesErrno) {
  testing::TempDir dir;
  for (int err : {ENOSPC, EDQUOT, EIO, EROFS}) {
    auto f = classify_errno(err, dir / "logs/1-train.log");
    ASSERT_TRUE(f) << err;
    EXPECT_EQ(f->path(), dir / "logs/1-train.log");
    ASSERT_TRUE(f->free_bytes());  // read from the nearest existing parent
  }
  EXPECT_FALSE(classify_errno(ENOENT, dir.path()));
  EXPECT_FALSE(classify_errno(EINVAL, dir.path()));
}

TEST(EnvironmentFault, ClassifiesSqliteCodes) {
  for (int code : {SQLITE_FULL, SQLITE_IOERR_WRITE, SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_BUSY,
                   SQLITE_LOCKED, SQLITE_BUSY_SNAPSHOT})
    EXPECT_TRUE(is_environment_sqlite(code)) << code;
  for (int code : {SQLITE_NOTADB, SQLITE_CORRUPT, SQLITE_ERROR, SQLITE_CONSTRAINT})
    EXPECT_FALSE(is_environment_sqlite(code)) << code;
}

TEST(EnvironmentFault, ItsLineNamesThePathAndTheFreeSpace) {
  EnvironmentFault f("/state/results.db", uint64_t{3} * 1024 * 1024, "database or disk is full");
  EXPECT_EQ(std::string(f.what()), "/state/results.db: database or disk is full (3.0 MiB free)");
  EnvironmentFault unknown("/x", std::nullopt, "I/O error");
  EXPECT_EQ(std::string(unknown.what()), "/x: I/O error (free space unknown)");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
}

TEST(EnvironmentFault, AProbeWriteFindsAFullDiskAndSeesItCleared) {
  testing::TempDir dir;
  EXPECT_FALSE(probe_write(dir.path()));
  testing::SmallTmpfs disk(dir / "small", 1 << 20);
  if (!disk.mounted()) GTEST_SKIP() << disk.why_not();
  EXPECT_FALSE(probe_write(dir / "small"));
  disk.fill();
  auto fault = probe_write(dir / "small");
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->path(), dir / "small");
  EXPECT_EQ(fault->message(), strerror(ENOSPC));
  EXPECT_THAT(fault->what(), ::testing::HasSubstr("(0 B free)"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir / "small"), {}), 1);  // the probe is gone
  disk.clear();
  EXPECT_FALSE(probe_write(dir / "small"));
}

}  // namespace
}  // namespace ard
