// A thin RAII layer over the SQLite C API: a connection and prepared
// statements whose every return code is checked. Every error names the
// database file. A lock held by another process (SQLITE_BUSY, SQLITE_LOCKED)
// is waited out with a bounded backoff; past the bound, and for a full disk,
// an I/O error or a read-only file, the error is an EnvironmentFault; other
// errors throw SqliteError. No statement writes to a file that was deleted or
// replaced under the open connection: that throws DatabaseFileLost.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "daemon/exec/environment_fault.h"
#include "daemon/fatal_error.h"

namespace ard {

class SqliteError : public std::runtime_error {
 public:
  explicit SqliteError(const std::string& what, int code = SQLITE_ERROR)
      : std::runtime_error(what), code_(code) {}
  /// SQLite's extended result code.
  int code() const { return code_; }

 private:
  int code_;
};

/// The database file was deleted or replaced while the connection was open:
/// writing on would write into a file nobody will read again.
class DatabaseFileLost : public FatalError {
 public:
  using FatalError::FatalError;
};

/// How long a statement waits for a lock another connection holds.
struct BusyPolicy {
  /// SQLite's own wait inside one attempt.
  int busy_timeout_ms = 5000;
  /// The whole wait over all attempts, backing off between them, before the
  /// lock becomes an EnvironmentFault.
  double max_wait_s = 120;
};

class Statement;

/// How a connection opens its file: the daemon writes (and creates);
/// readers that must never change the file (the dashboard) open read-only.
enum class OpenMode { kReadWrite, kReadOnly };

class Database {
 public:
  /// Opens (creating if needed) the database at path, with a busy timeout so
  /// a reader and the daemon can share it.
  explicit Database(const std::string& path, BusyPolicy busy = {}) : Database(path, OpenMode::kReadWrite, busy) {}
  /// The same, read-only (no create, no write) when mode says so.
  Database(const std::string& path, OpenMode mode, BusyPolicy busy = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  /// Runs one or more statements that return no rows.
  void exec(std::string_view sql);
  Statement prepare(std::string_view sql);
  int64_t last_insert_id() const;
  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

  /// Why the file at path() is no longer the file this connection has open
  /// ("deleted", "replaced by another file"), or nullopt while it is. Writes
  /// check it themselves; the daemon also calls it periodically.
  std::optional<std::string> file_problem();
  /// Throws DatabaseFileLost when file_problem() has one.
  void require_same_file();
  /// Takes the write lock and gives it back, waiting no longer than the busy
  /// timeout (no retries): a file another process keeps locked, or one that
  /// cannot be written, throws an EnvironmentFault naming it. What `start`
  /// asks before it reports the daemon started.
  void check_writable();

  /// Throws the error for SQLite result code rc: an EnvironmentFault or a
  /// SqliteError, both naming the file.
  [[noreturn]] void fail(int rc, std::string_view message = {}) const;

  /// Runs attempt() (which returns a SQLite result code) again while it
  /// reports a lock held elsewhere, backing off, for at most the policy's
  /// max_wait_s; returns the last code.
  template <typename Attempt>
  int retry_busy(Attempt attempt);

 private:
  std::string path_;
  BusyPolicy busy_;
  sqlite3* db_ = nullptr;
};

/// Sleeps the backoff after the given failed attempt (0-based): 50 ms,
/// doubling, at most 2 s. Returns the seconds slept.
double busy_backoff(int attempt);

template <typename Attempt>
int Database::retry_busy(Attempt attempt) {
  // SQLite offers no event for "the other connection released its lock"; its
  // busy handler itself sleeps and retries. This loop only extends that wait
  // past one busy timeout, with a bound, so a long external transaction does
  // not end the daemon.
  const auto start = std::chrono::steady_clock::now();
  for (int n = 0;; ++n) {
    int rc = attempt();
    int primary = rc & 0xff;
    if (primary != SQLITE_BUSY && primary != SQLITE_LOCKED) return rc;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= busy_.max_wait_s)
      return rc;
    busy_backoff(n);
  }
}

/// A prepared statement. Bind parameters are 1-based, as in SQLite.
class Statement {
 public:
  Statement(Database* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept;
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, long long value);
  Statement& bind(int index, int value) { return bind(index, static_cast<long long>(value)); }
  Statement& bind(int index, long value) { return bind(index, static_cast<long long>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  Statement& bind_null(int index);
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  /// Steps once: true when a row is available, false when done.
  bool step();
  /// Steps to completion, for statements that return no rows.
  void run();

  bool is_null(int column) const;
  int64_t integer(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  std::optional<double> opt_real(int column) const;
  std::optional<int64_t> opt_integer(int column) const;

 private:
  Database* db_;
  sqlite3_stmt* stmt_;
  bool stepped_ = false;  ///< a row was returned: a lock error then is not retried
};

/// BEGIN IMMEDIATE ... COMMIT; rolls back when destroyed uncommitted.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  void commit();

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace ard
