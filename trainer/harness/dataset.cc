// Opens a prepared dataset read-only: memory-maps a token shard, reads and
// checks its document index, and reads the token_bytes table.
#include "harness/dataset.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "harness/constants.h"

namespace harness {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& cause) {
  throw std::runtime_error(path + ": " + cause);
}

// Reads a whole small file (an index or a table) into memory.
std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(path, "read error");
  return bytes;
}

}  // namespace

TokenShard::TokenShard(const std::string& dir, const std::string& name) {
  const std::string bin_path = dir + "/" + name + ".bin";
  const std::string idx_path = dir + "/" + name + ".idx";

  std::vector<char> idx = read_file(idx_path);
  if (idx.size() % sizeof(uint64_t) != 0 || idx.size() < 2 * sizeof(uint64_t))
    fail(idx_path, "truncated index (" + std::to_string(idx.size()) + " bytes)");
  offsets_.resize(idx.size() / sizeof(uint64_t));
  std::memcpy(offsets_.data(), idx.data(), idx.size());

  int fd = ::open(bin_path.c_str(), O_RDONLY);
  if (fd < 0) fail(bin_path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail(bin_path, std::string("cannot stat: ") + std::strerror(errno));
  }
  map_bytes_ = static_cast<size_t>(st.st_size);
  if (map_bytes_ % sizeof(uint16_t) != 0 || map_bytes_ == 0) {
    ::close(fd);
    fail(bin_path, "truncated shard (" + std::to_string(map_bytes_) + " bytes)");
  }
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    fail(bin_path, std::string("cannot map: ") + std::strerror(errno));
  }
  tokens_ = static_cast<const uint16_t*>(map_);
  num_tokens_ = map_bytes_ / sizeof(uint16_t);

  // The index must cover the shard exactly, in order, with a BOS at every
  // document start: a loader trusting a bad index would pack garbage rows.
  auto bad = [&](const std::string& cause) {
    ::munmap(map_, map_bytes_);
    map_ = nullptr;
    fail(idx_path, cause);
  };
  if (offsets_.front() != 0) bad("first document does not start at token 0");
  if (offsets_.back() != num_tokens_)
    bad("index ends at token " + std::to_string(offsets_.back()) + " but " + bin_path + " has " +
        std::to_string(num_tokens_) + " tokens");
  for (size_t d = 0; d + 1 < offsets_.size(); ++d) {
    if (offsets_[d + 1] <= offsets_[d]) bad("document " + std::to_string(d) + " is empty or out of order");
    if (tokens_[offsets_[d]] != BOS_ID) bad("document " + std::to_string(d) + " does not start with BOS");
  }
}

TokenShard::~TokenShard() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
}

std::vector<int32_t> load_token_bytes(const std::string& dir) {
  const std::string path = dir + "/token_bytes.bin";
  std::vector<char> bytes = read_file(path);
  if (bytes.size() != VOCAB_SIZE * sizeof(int32_t))
    fail(path, "expected " + std::to_string(VOCAB_SIZE * sizeof(int32_t)) + " bytes, found " +
                   std::to_string(bytes.size()));
  std::vector<int32_t> table(VOCAB_SIZE);
  std::memcpy(table.data(), bytes.data(), bytes.size());
  for (int id = 0; id < VOCAB_SIZE; ++id)
    if (table[id] < 0) fail(path, "negative byte length for token " + std::to_string(id));
  return table;
}

}  // namespace harness
