// Faults of the machine rather than of an experiment: a full or read-only
// disk, an I/O error, a store another process keeps locked. They carry the
// path and its free space so the one line the user reads says what to fix,
// and a distinct type so the engine pauses on them instead of recording the
// experiment in flight as a crash.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace ard {

class EnvironmentFault : public std::runtime_error {
 public:
  /// message: the cause, without the path ("No space left on device").
  EnvironmentFault(std::filesystem::path path, std::optional<uint64_t> free_bytes, std::string message);
  const std::filesystem::path& path() const { return path_; }
  /// Free bytes on the path's file system when the fault was seen; nullopt
  /// when even that could not be read.
  std::optional<uint64_t> free_bytes() const { return free_bytes_; }
  const std::string& message() const { return message_; }

 private:
  std::filesystem::path path_;
  std::optional<uint64_t> free_bytes_;
  std::string message_;
};

/// Bytes available to this user on the file system holding path (or its
/// nearest existing parent); nullopt when statvfs fails.
std::optional<uint64_t> free_bytes(const std::filesystem::path& path);

/// "12.0 MiB", "512 B": for the fault's line.
std::string format_bytes(uint64_t bytes);

/// True for the errno values that are the machine's fault: ENOSPC, EDQUOT,
/// EIO, EROFS, ENOMEM, EMFILE, ENFILE.
bool is_environment_errno(int err);

/// The fault for errno err at path, or nullopt when err is not the machine's fault.
std::optional<EnvironmentFault> classify_errno(int err, const std::filesystem::path& path);

/// True for the SQLite result codes (primary or extended) that are the
/// machine's fault: SQLITE_FULL, SQLITE_IOERR*, SQLITE_READONLY*,
/// SQLITE_CANTOPEN*, SQLITE_NOMEM, SQLITE_BUSY* and SQLITE_LOCKED* (once the
/// retries are spent). A corrupt file or one that is not a database is not:
/// waiting does not mend it.
bool is_environment_sqlite(int code);

/// The fault for a SQLite error on the database at path, or nullopt.
std::optional<EnvironmentFault> classify_sqlite(int code, const std::filesystem::path& path,
                                                const std::string& message);

}  // namespace ard
