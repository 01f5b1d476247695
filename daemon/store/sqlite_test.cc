// Tests of the SQLite wrapper: binding, reading back, errors, rollback;
// locks held by a second connection, a file deleted or replaced under the
// connection, a full disk (a size-limited tmpfs).
#include "daemon/store/sqlite.h"

#include <sys/mount.h>

#include <chrono>
#include <thread>
#include <sys/stat.h>

#include "testing/test_util.h"

namespace ard {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// A second connection to the same file that holds BEGIN EXCLUSIVE on its
/// own thread for hold_s seconds, as an external `sqlite3` would.
class ExclusiveHolder {
 public:
  ExclusiveHolder(const std::string& path, double hold_s) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("open");
    if (sqlite3_exec(db_, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) != SQLITE_OK)
      throw std::runtime_error("begin exclusive");
    thread_ = std::thread([this, hold_s] {
      std::this_thread::sleep_for(std::chrono::duration<double>(hold_s));
      sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
    });
  }
  ~ExclusiveHolder() {
    thread_.join();
    sqlite3_close(db_);
  }

 private:
  sqlite3* db_ = nullptr;
  std::thread thread_;
};

/// The store's settings (WAL) and a table t.
void make_table(Database& db) {
  db.prepare("PRAGMA journal_mode=WAL").step();
  db.exec("CREATE TABLE IF NOT EXISTS t(i INTEGER, b BLOB)");
}

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

TEST(Sqlite, ErrorsNameTheFile) {
  testing::TempDir dir;
  const std::string path = (dir / "results.db").string();
  testing::write_file(path, std::string(4096, 'x'));
  Database db(path);
  try {
    db.prepare("SELECT * FROM sqlite_master").step();
    FAIL() << "no throw";
  } catch (const SqliteError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": file is not a database");
    EXPECT_EQ(e.code() & 0xff, SQLITE_NOTADB);
  }
}

TEST(Sqlite, WaitsOutALockHeldLongerThanOneBusyTimeout) {
  // An external sqlite3 holding BEGIN EXCLUSIVE for 12 s outlasted the old
  // fixed 10 s busy timeout and ended the daemon; the default policy waits.
  testing::TempDir dir;
  const std::string path = (dir / "results.db").string();
  Database db(path);
  make_table(db);
  // Held a second longer than the default policy's busy timeout.
  const double held_s = BusyPolicy{}.busy_timeout_ms / 1000.0 + 1.0;
  auto t0 = std::chrono::steady_clock::now();
  {
    ExclusiveHolder holder(path, held_s);
    db.prepare("INSERT INTO t(i) VALUES(1)").run();
    EXPECT_GE(seconds_since(t0), held_s - 0.5);
  }
  auto s = db.prepare("SELECT count(*) FROM t");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.integer(0), 1);
}

TEST(Sqlite, TransactionWaitsOutALockThenCommits) {
  testing::TempDir dir;
  const std::string path = (dir / "results.db").string();
  Database db(path, {100, 30});
  make_table(db);
  {
    ExclusiveHolder holder(path, 1.0);
    Transaction t(db);
    db.prepare("INSERT INTO t(i) VALUES(7)").run();
    t.commit();
  }
  auto s = db.prepare("SELECT i FROM t");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.integer(0), 7);
}

TEST(Sqlite, ALockPastTheBoundIsAnEnvironmentFaultNamingTheFile) {
  testing::TempDir dir;
  const std::string path = (dir / "results.db").string();
  Database db(path, {50, 0.5});
  make_table(db);
  ExclusiveHolder holder(path, 3);
  auto t0 = std::chrono::steady_clock::now();
  try {
    db.prepare("INSERT INTO t(i) VALUES(1)").run();
    FAIL() << "no throw";
  } catch (const EnvironmentFault& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_EQ(std::string(e.what()).rfind(path + ": database is locked", 0), 0u) << e.what();
  }
  EXPECT_LT(seconds_since(t0), 2.9);
}

TEST(Sqlite, CheckWritableWaitsOnlyTheBusyTimeoutAndNamesTheFile) {
  testing::TempDir dir;
  const std::string path = (dir / "results.db").string();
  Database db(path, {200, 60});  // a long retry bound, which check_writable does not use
  make_table(db);
  db.check_writable();  // free: takes the lock and gives it back
  db.prepare("INSERT INTO t(i) VALUES(1)").run();
  ExclusiveHolder holder(path, 2);
  auto t0 = std::chrono::steady_clock::now();
  try {
    db.check_writable();
    FAIL() << "no throw";
  } catch (const EnvironmentFault& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_EQ(std::string(e.what()).rfind(path + ": cannot take the write lock: database is locked", 0), 0u)
        << e.what();
  }
  EXPECT_LT(seconds_since(t0), 1.5);
}

TEST(Sqlite, AReplacedFileIsNeverWrittenTo) {
  testing::TempDir dir;
  const std::string path = (dir / "results.db").string();
  Database db(path);
  make_table(db);
  db.prepare("INSERT INTO t(i) VALUES(1)").run();
  EXPECT_FALSE(db.file_problem());
  { Database other((dir / "other.db").string()); other.exec("CREATE TABLE x(y)"); }
  std::filesystem::rename(dir / "other.db", path);
  const std::string other_bytes = testing::read_file(path);
  const std::string wal_bytes = testing::read_file(path + "-wal");
  auto problem = db.file_problem();
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem, path + " was replaced by another file while the daemon had it open");
  EXPECT_THROW(db.prepare("INSERT INTO t(i) VALUES(2)").run(), DatabaseFileLost);
  EXPECT_THROW(Transaction t(db), DatabaseFileLost);
  // Neither the new file nor the WAL beside it (which the next opener would
  // replay onto the new file) got a byte.
  EXPECT_EQ(testing::read_file(path), other_bytes);
  EXPECT_EQ(testing::read_file(path + "-wal"), wal_bytes);
}

TEST(Sqlite, ADeletedFileIsNeverWrittenTo) {
  testing::TempDir dir;
  const std::string path = (dir / "results.db").string();
  Database db(path);
  make_table(db);
  db.prepare("INSERT INTO t(i) VALUES(1)").run();
  std::filesystem::remove(path);
  auto problem = db.file_problem();
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem, path + " was deleted while the daemon had it open");
  try {
    db.prepare("INSERT INTO t(i) VALUES(2)").run();
    FAIL() << "no throw";
  } catch (const DatabaseFileLost& e) {
    EXPECT_NE(std::string(e.what()).find(path + " was deleted"), std::string::npos) << e.what();
  }
  // Reading what is still open is harmless and allowed.
  auto s = db.prepare("SELECT count(*) FROM t");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.integer(0), 1);
}

/// A 1 MiB tmpfs mounted for the test; skips the test where mounting is not allowed.
class SmallTmpfs {
 public:
  SmallTmpfs() {
    std::filesystem::create_directories(dir_.path() / "mnt");
    mounted_ = mount("tmpfs", (dir_.path() / "mnt").c_str(), "tmpfs", 0, "size=1m") == 0;
  }
  ~SmallTmpfs() {
    if (mounted_) umount2((dir_.path() / "mnt").c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  std::filesystem::path path() const { return dir_.path() / "mnt"; }

 private:
  testing::TempDir dir_;
  bool mounted_ = false;
};

TEST(Sqlite, AFullDiskIsAnEnvironmentFaultWithThePathAndFreeSpace) {
  SmallTmpfs fs;
  if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs CAP_SYS_ADMIN)";
  const std::string path = (fs.path() / "results.db").string();
  Database db(path);
  make_table(db);
  try {
    for (int i = 0; i < 1000; ++i)
      db.prepare("INSERT INTO t(i, b) VALUES(?, randomblob(65536))").bind(1, i).run();
    FAIL() << "1000 x 64 KiB fit in 1 MiB";
  } catch (const EnvironmentFault& e) {
    EXPECT_EQ(e.path(), path);
    ASSERT_TRUE(e.free_bytes());
    EXPECT_LT(*e.free_bytes(), 128u * 1024);
    EXPECT_NE(std::string(e.what()).find(path + ": database or disk is full"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(" free)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ard
