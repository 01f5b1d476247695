// A thin RAII layer over the SQLite C API: a connection and prepared
// statements whose every return code is checked. Errors throw SqliteError
// with the SQL's own message; the store turns them into one-line failures.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ard {

class SqliteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Statement;

/// How a connection opens its file: the daemon writes (and creates);
/// readers that must never change the file (the dashboard) open read-only.
enum class OpenMode { kReadWrite, kReadOnly };

class Database {
 public:
  /// Opens (creating if needed, unless read-only) the database at path, with a
  /// busy timeout so a reader and the daemon can share it.
  explicit Database(const std::string& path, OpenMode mode = OpenMode::kReadWrite);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  /// Runs one or more statements that return no rows.
  void exec(std::string_view sql);
  Statement prepare(std::string_view sql);
  int64_t last_insert_id() const;
  sqlite3* handle() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

/// A prepared statement. Bind parameters are 1-based, as in SQLite.
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
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
  sqlite3* db_;
  sqlite3_stmt* stmt_;
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
