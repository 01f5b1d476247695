// An open-addressing map from byte strings to a small value, for prepare's two
// hot tables (chunk counts, the encoder's chunk cache): keys live in one arena
// and a lookup touches one slot, where node-based maps chase pointers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

template <class V>
class FlatStringMap {
 public:
  FlatStringMap() { slots_.resize(1 << 12); }

  /// The value for `key`, inserted as V{} when absent.
  V& operator[](std::string_view key) {
    const uint64_t h = hash(key);
    size_t i = h & (slots_.size() - 1);
    for (;; i = (i + 1) & (slots_.size() - 1)) {
      Slot& s = slots_[i];
      if (s.hash == 0) break;
      if (s.hash == h && s.length == key.size() && std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0)
        return s.value;
    }
    if (2 * (size_ + 1) > slots_.size()) {
      grow();
      return (*this)[key];
    }
    Slot& s = slots_[i];
    s.hash = h;
    s.offset = arena_.size();
    s.length = static_cast<uint32_t>(key.size());
    s.value = V{};
    arena_.append(key.data(), key.size());
    ++size_;
    return s.value;
  }

  /// The value for `key`, or nullptr.
  const V* find(std::string_view key) const {
    const uint64_t h = hash(key);
    for (size_t i = h & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.hash == 0) return nullptr;
      if (s.hash == h && s.length == key.size() && std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0)
        return &s.value;
    }
  }

  size_t size() const { return size_; }
  void clear() {
    slots_.assign(1 << 12, Slot{});
    arena_.clear();
    size_ = 0;
  }

  template <class F>
  void for_each(F&& f) const {  // f(std::string_view key, const V& value)
    for (const Slot& s : slots_)
      if (s.hash != 0) f(std::string_view(arena_.data() + s.offset, s.length), s.value);
  }

 private:
  struct Slot {
    uint64_t hash = 0;  // 0: empty (hash() never returns 0)
    uint64_t offset = 0;
    uint32_t length = 0;
    V value{};
  };

  static uint64_t hash(std::string_view s) {
    // FNV-1a over 8-byte words, then a final mix: fast for short chunks.
    uint64_t h = 0xcbf29ce484222325ull ^ s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = (h ^ w) * 0x100000001b3ull;
      h ^= h >> 29;
    }
    uint64_t tail = 0;
    if (s.size() > i) std::memcpy(&tail, s.data() + i, s.size() - i);
    h = (h ^ tail) * 0x100000001b3ull;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h | 1;
  }

  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old) {
      if (s.hash == 0) continue;
      size_t i = s.hash & (slots_.size() - 1);
      while (slots_[i].hash != 0) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::string arena_;
  size_t size_ = 0;
};

}  // namespace harness
