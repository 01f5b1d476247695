// SHA-256, for prepare's content-hash cache key and meta.json's input hashes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace harness {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::string hex();  // finishes; call once

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

/// Hex SHA-256 of a file's bytes. Throws InputError if unreadable.
std::string sha256_file(const std::string& path);

}  // namespace harness
