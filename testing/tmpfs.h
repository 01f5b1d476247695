// A size-limited tmpfs for disk-full tests: mounted on a directory of the
// test's temp dir, filled to the last byte on demand, emptied again, and
// unmounted when destroyed. Mounting needs root (or CAP_SYS_ADMIN); where it
// is refused, mounted() is false and the test skips, saying why.
#pragma once

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace ard::testing {

class SmallTmpfs {
 public:
  /// Mounts a tmpfs of size_bytes at dir (created if needed).
  SmallTmpfs(const std::filesystem::path& dir, size_t size_bytes) : dir_(dir) {
    std::filesystem::create_directories(dir);
    std::string opts = "size=" + std::to_string(size_bytes) + ",mode=0700";
    if (mount("tmpfs", dir.c_str(), "tmpfs", 0, opts.c_str()) == 0) mounted_ = true;
    else why_ = std::string("cannot mount a tmpfs at ") + dir.string() + ": " + strerror(errno);
  }
  ~SmallTmpfs() {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& why_not() const { return why_; }

  /// Writes a filler file until the file system refuses (ENOSPC): no byte is left.
  void fill() {
    std::ofstream out(filler(), std::ios::binary | std::ios::trunc);
    const std::string block(64 * 1024, 'x');
    while (out.write(block.data(), block.size())) {
    }
    out.clear();
    const std::string byte(1, 'x');
    while (out.write(byte.data(), 1).flush()) {
    }
  }
  /// Removes the filler: the space is back.
  void clear() { std::filesystem::remove(filler()); }

 private:
  std::filesystem::path filler() const { return dir_ / ".filler"; }
  std::filesystem::path dir_;
  bool mounted_ = false;
  std::string why_;
};

}  // namespace ard::testing
