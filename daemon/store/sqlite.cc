// See sqlite.h.
#include "daemon/store/sqlite.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace ard {
namespace {

/// Creates the database file (and narrows it and its WAL files) to 0600 before
/// SQLite opens it: SQLite gives the WAL and shared-memory files the database's mode.
void make_owner_only(const std::string& path) {
  if (path.empty() || path == ":memory:" || path.starts_with("file:")) return;
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || fchmod(fd, 0600) != 0) {
    std::string why = strerror(errno);
    if (fd >= 0) close(fd);
    throw SqliteError(path + ": cannot open: " + why);
  }
  close(fd);
  for (const char* suffix : {"-wal", "-shm", "-journal"}) chmod((path + suffix).c_str(), 0600);  // absent: ENOENT, fine
}

}  // namespace

double busy_backoff(int attempt) {
  double s = std::min(2.0, 0.05 * static_cast<double>(1 << std::min(attempt, 6)));
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
  return s;
}

Database::Database(const std::string& path, OpenMode mode, BusyPolicy busy) : path_(path), busy_(busy) {
  if (mode != OpenMode::kReadOnly) make_owner_only(path);
  int flags = mode == OpenMode::kReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    if (auto fault = classify_sqlite(rc, path_, "cannot open: " + msg)) throw *fault;
    throw SqliteError(path_ + ": cannot open: " + msg, rc);
  }
  sqlite3_extended_result_codes(db_, 1);
  // Readers (status) and the writer (the daemon) wait for each other instead of failing.
  sqlite3_busy_timeout(db_, busy_.busy_timeout_ms);
}

Database::~Database() { sqlite3_close(db_); }

void Database::fail(int rc, std::string_view message) const {
  std::string msg = message.empty() ? std::string(db_ ? sqlite3_errmsg(db_) : "out of memory") : std::string(message);
  if (auto fault = classify_sqlite(rc, path_, msg)) throw *fault;
  throw SqliteError(path_ + ": " + msg, rc);
}

std::optional<std::string> Database::file_problem() {
  // The unix VFS compares the open file's inode with the one at its path.
  // Before the first statement the file is not open yet: nothing to compare.
  int moved = 0;
  if (sqlite3_file_control(db_, "main", SQLITE_FCNTL_HAS_MOVED, &moved) != SQLITE_OK || !moved)
    return std::nullopt;
  struct stat st {};
  if (stat(path_.c_str(), &st) != 0) return path_ + " was deleted while the daemon had it open";
  return path_ + " was replaced by another file while the daemon had it open";
}

void Database::require_same_file() {
  if (auto problem = file_problem()) throw DatabaseFileLost(*problem + "; stopping so nothing is written to the lost file");
}

void Database::check_writable() {
  require_same_file();
  char* err = nullptr;
  int rc = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, &err);
  std::string why = err ? err : "";
  sqlite3_free(err);
  if (rc != SQLITE_OK) {
    bool locked = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
    fail(rc, "cannot take the write lock: " + why +
                 (locked ? " (another process holds it for more than " + std::to_string(busy_.busy_timeout_ms / 1000) +
                               " s)"
                         : ""));
  }
  sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Database::exec(std::string_view sql) {
  std::string s(sql);
  // Every exec here changes the database or its transaction state.
  require_same_file();
  std::string err_text;
  int rc = retry_busy([&] {
    char* err = nullptr;
    int r = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
    err_text = err ? err : "";
    sqlite3_free(err);
    return r;
  });
  if (rc != SQLITE_OK) fail(rc, err_text);
}

Statement Database::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = retry_busy([&] {
    sqlite3_finalize(stmt);
    stmt = nullptr;
    return sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  });
  if (rc != SQLITE_OK) fail(rc);
  return Statement(this, stmt);
}

int64_t Database::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(other.stmt_), stepped_(other.stepped_) {
  other.stmt_ = nullptr;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, long long value) {
  if (int rc = sqlite3_bind_int64(stmt_, index, value); rc != SQLITE_OK) db_->fail(rc);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (int rc = sqlite3_bind_double(stmt_, index, value); rc != SQLITE_OK) db_->fail(rc);
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  if (int rc = sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
      rc != SQLITE_OK)
    db_->fail(rc);
  return *this;
}

Statement& Statement::bind_null(int index) {
  if (int rc = sqlite3_bind_null(stmt_, index); rc != SQLITE_OK) db_->fail(rc);
  return *this;
}

bool Statement::step() {
  if (!stepped_ && !sqlite3_stmt_readonly(stmt_)) db_->require_same_file();
  int rc;
  if (stepped_) {
    rc = sqlite3_step(stmt_);
  } else {
    // Nothing was returned yet, so a statement that met a lock can start over.
    rc = db_->retry_busy([&] {
      int r = sqlite3_step(stmt_);
      if ((r & 0xff) == SQLITE_BUSY || (r & 0xff) == SQLITE_LOCKED) sqlite3_reset(stmt_);
      return r;
    });
  }
  if (rc == SQLITE_ROW) {
    stepped_ = true;
    return true;
  }
  if (rc == SQLITE_DONE) return false;
  db_->fail(rc);
}

void Statement::run() {
  while (step()) {
  }
}

bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::text(int column) const {
  const unsigned char* p = sqlite3_column_text(stmt_, column);
  if (!p) return {};
  return std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, column));
}

std::optional<double> Statement::opt_real(int column) const {
  if (is_null(column)) return std::nullopt;
  return real(column);
}

std::optional<int64_t> Statement::opt_integer(int column) const {
  if (is_null(column)) return std::nullopt;
  return integer(column);
}

Transaction::Transaction(Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!done_) {
    // Not through exec: a rollback must run even on a lost file, and must not throw.
    sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace ard
