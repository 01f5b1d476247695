// Tests of the SQLite wrapper: binding, reading back, errors, rollback.
#include "daemon/sqlite.h"

#include <sys/stat.h>

#include "testing/test_util.h"

namespace ard {
namespace {

TEST(Sqlite, DatabaseAndWalOnlyItsOwnerCanRead) {
  testing::TempDir dir;
  const std::string path = (dir / "results.db").string();
  testing::write_file(path, "");
  chmod(path.c_str(), 0644);  // as an older daemon left it
  Database db(path);
  db.exec("PRAGMA journal_mode=WAL; CREATE TABLE t(x); INSERT INTO t VALUES (1);");
  for (const std::string& p : {path, path + "-wal"}) {
    struct stat st;
    ASSERT_EQ(stat(p.c_str(), &st), 0) << p;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << p;
  }
}

TEST(Sqlite, BindsAndReadsEveryType) {
  testing::TempDir dir;
  Database db((dir / "t.db").string());
  db.exec("CREATE TABLE t(i INTEGER, r REAL, s TEXT, n TEXT)");
  db.prepare("INSERT INTO t VALUES(?,?,?,?)")
      .bind(1, int64_t{42}).bind(2, 1.5).bind(3, "hé\nllo").bind(4, std::optional<std::string>{}).run();
  auto s = db.prepare("SELECT i, r, s, n FROM t");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.integer(0), 42);
  EXPECT_DOUBLE_EQ(s.real(1), 1.5);
  EXPECT_EQ(s.text(2), "hé\nllo");
  EXPECT_TRUE(s.is_null(3));
  EXPECT_FALSE(s.opt_real(3).has_value());
  EXPECT_FALSE(s.step());
}

TEST(Sqlite, BadSqlThrowsWithSqliteMessage) {
  testing::TempDir dir;
  Database db((dir / "t.db").string());
  try {
    db.exec("CREATE TABLE (x");
    FAIL() << "no throw";
  } catch (const SqliteError& e) {
    EXPECT_NE(std::string(e.what()).find("syntax error"), std::string::npos) << e.what();
  }
  EXPECT_THROW(db.prepare("SELECT * FROM missing"), SqliteError);
}

TEST(Sqlite, UncommittedTransactionRollsBack) {
  testing::TempDir dir;
  Database db((dir / "t.db").string());
  db.exec("CREATE TABLE t(i INTEGER)");
  {
    Transaction t(db);
    db.exec("INSERT INTO t VALUES(1)");
  }
  {
    Transaction t(db);
    db.exec("INSERT INTO t VALUES(2)");
    t.commit();
  }
  auto s = db.prepare("SELECT group_concat(i) FROM t");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.text(0), "2");
}

}  // namespace
}  // namespace ard
