// Test helpers shared by the harness tests: a temporary directory removed on
// destruction, and a writer for small dataset directories.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/constants.h"

namespace harness::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "harness_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_bytes(const std::string& path, const void* data, size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline void write_text(const std::string& path, const std::string& text) {
  write_bytes(path, text.data(), text.size());
}

/// Writes <dir>/<name>.bin and .idx for documents given WITHOUT their BOS;
/// the BOS is prepended as prepare does.
inline void write_shard(const std::string& dir, const std::string& name,
                        const std::vector<std::vector<uint16_t>>& docs) {
  std::vector<uint16_t> tokens;
  std::vector<uint64_t> offsets;
  for (const auto& d : docs) {
    offsets.push_back(tokens.size());
    tokens.push_back(BOS_ID);
    tokens.insert(tokens.end(), d.begin(), d.end());
  }
  offsets.push_back(tokens.size());
  write_bytes(dir + "/" + name + ".bin", tokens.data(), tokens.size() * sizeof(uint16_t));
  write_bytes(dir + "/" + name + ".idx", offsets.data(), offsets.size() * sizeof(uint64_t));
}

}  // namespace harness::testing
