// Faults of the machine rather than of an experiment: a full or read-only
// disk, an I/O error, a store another process keeps locked. They carry the
// path and its free space so the one line the user reads says what to fix,
// and a distinct type so the engine pauses on them instead of recording the
// experiment in flight as a crash.
#pragma once

#include <cstddef>
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

/// Writes kProbeBytes to a new file in dir, syncs it and removes it: the
/// fault when that fails for the machine's reason (a full disk, an I/O error,
/// a read-only file system), else nullopt. What the engine asks before it
/// blames an experiment for a failed write, and again to see whether the
/// fault has cleared. A directory that does not exist is no fault here.
std::optional<EnvironmentFault> probe_write(const std::filesystem::path& dir);
inline constexpr size_t kProbeBytes = 64 * 1024;

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
