// BPE training with incremental pair counts, and tiktoken-rule encoding.
#include "harness/bpe.h"

#include <limits>
#include <queue>
#include <stdexcept>
#include <unordered_set>

namespace harness {
namespace {

using Pair = uint64_t;  // (left << 32) | right
inline Pair make_pair_key(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }
inline uint32_t left_of(Pair p) { return static_cast<uint32_t>(p >> 32); }
inline uint32_t right_of(Pair p) { return static_cast<uint32_t>(p); }

struct HeapEntry {
  int64_t count;
  Pair pair;
  // priority_queue puts the "largest" on top: higher count, then smaller pair.
  bool operator<(const HeapEntry& o) const { return count != o.count ? count < o.count : pair > o.pair; }
};

// The chunks as flat id sequences, merged in place.
struct Words {
  std::vector<uint32_t> ids;
  std::vector<size_t> begin;
  std::vector<uint32_t> length;
  std::vector<int64_t> count;
};

}  // namespace

BpeTraining train_bpe(const std::vector<std::pair<std::string, uint64_t>>& chunks, size_t num_tokens) {
  BpeTraining out;
  out.tokens.reserve(num_tokens);
  for (int b = 0; b < 256; ++b) out.tokens.emplace_back(1, static_cast<char>(b));
  std::unordered_set<std::string, StringHash, std::equal_to<>> known(out.tokens.begin(), out.tokens.end());

  Words w;
  for (const auto& [bytes, n] : chunks) {
    if (bytes.size() < 2 || n == 0) continue;  // no pair inside
    w.begin.push_back(w.ids.size());
    w.length.push_back(static_cast<uint32_t>(bytes.size()));
    w.count.push_back(static_cast<int64_t>(n));
    for (unsigned char c : bytes) w.ids.push_back(c);
  }

  std::unordered_map<Pair, int64_t> counts;
  std::unordered_map<Pair, std::vector<uint32_t>> where;  // words that may contain the pair
  counts.reserve(1 << 20);
  where.reserve(1 << 20);
  for (uint32_t i = 0; i < w.begin.size(); ++i) {
    const uint32_t* t = &w.ids[w.begin[i]];
    for (uint32_t k = 0; k + 1 < w.length[i]; ++k) {
      Pair p = make_pair_key(t[k], t[k + 1]);
      counts[p] += w.count[i];
      auto& list = where[p];
      if (list.empty() || list.back() != i) list.push_back(i);
    }
  }
  std::priority_queue<HeapEntry> heap;
  for (const auto& [p, c] : counts) heap.push({c, p});

  std::vector<uint32_t> old_ids, new_ids;
  std::vector<char> old_merged, new_merged;
  std::vector<Pair> grown;
  std::unordered_set<Pair> banned;
  while (out.tokens.size() < num_tokens && !heap.empty()) {
    const HeapEntry top = heap.top();
    heap.pop();
    auto it = counts.find(top.pair);
    const int64_t current = it == counts.end() ? 0 : it->second;
    if (current != top.count) {  // stale entry: re-queue at its true count
      if (current > 0) heap.push({current, top.pair});
      continue;
    }
    if (current <= 0 || banned.count(top.pair)) continue;
    const uint32_t a = left_of(top.pair), b = right_of(top.pair);
    std::string joined = out.tokens[a] + out.tokens[b];
    if (known.count(joined)) {
      banned.insert(top.pair);
      ++out.skipped_duplicates;
      continue;
    }
    const uint32_t m = static_cast<uint32_t>(out.tokens.size());
    known.insert(joined);
    out.tokens.push_back(std::move(joined));

    std::vector<uint32_t> affected = std::move(where[top.pair]);
    where.erase(top.pair);
    grown.clear();
    for (uint32_t wi : affected) {
      uint32_t* t = &w.ids[w.begin[wi]];
      const uint32_t n = w.length[wi];
      const int64_t c = w.count[wi];
      old_ids.assign(t, t + n);
      old_merged.assign(n, 0);
      new_ids.clear();
      new_merged.clear();
      for (uint32_t k = 0; k < n;) {
        if (k + 1 < n && old_ids[k] == a && old_ids[k + 1] == b) {
          old_merged[k] = old_merged[k + 1] = 1;
          new_ids.push_back(m);
          new_merged.push_back(1);
          k += 2;
        } else {
          new_ids.push_back(old_ids[k]);
          new_merged.push_back(0);
          k += 1;
        }
      }
      if (new_ids.size() == n) continue;  // a stale listing: the pair is gone from this word
      // Pairs touching a merged token disappear; pairs touching the new token appear.
      for (uint32_t k = 0; k + 1 < n; ++k)
        if (old_merged[k] || old_merged[k + 1]) counts[make_pair_key(old_ids[k], old_ids[k + 1])] -= c;
      for (size_t k = 0; k + 1 < new_ids.size(); ++k) {
        if (!(new_merged[k] || new_merged[k + 1])) continue;
        Pair p = make_pair_key(new_ids[k], new_ids[k + 1]);
        if ((counts[p] += c) == c) grown.push_back(p);
        auto& list = where[p];
        if (list.empty() || list.back() != wi) list.push_back(wi);
      }
      std::copy(new_ids.begin(), new_ids.end(), t);
      w.length[wi] = static_cast<uint32_t>(new_ids.size());
    }
    counts.erase(top.pair);
    for (Pair p : grown) heap.push({counts[p], p});
  }
  return out;
}

BpeEncoder::BpeEncoder(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {
  if (tokens_.size() < 256 || tokens_.size() > 65535) throw std::invalid_argument("bpe: token count out of range");
  size_t size = 1;
  while (size < 4 * tokens_.size()) size <<= 1;
  slots_.assign(size, UINT32_MAX);
  mask_ = size - 1;
  for (uint32_t r = 0; r < tokens_.size(); ++r) {
    if (tokens_[r].empty()) throw std::invalid_argument("bpe: empty token " + std::to_string(r));
    size_t i = StringHash{}(tokens_[r]) & mask_;
    for (; slots_[i] != UINT32_MAX; i = (i + 1) & mask_)
      if (tokens_[slots_[i]] == tokens_[r]) throw std::invalid_argument("bpe: duplicate token " + std::to_string(r));
    slots_[i] = r;
  }
  for (int b = 0; b < 256; ++b)
    if (rank(std::string(1, static_cast<char>(b))) == UINT32_MAX)
      throw std::invalid_argument("bpe: byte " + std::to_string(b) + " is not a token");
}

uint32_t BpeEncoder::rank(std::string_view bytes) const {
  for (size_t i = StringHash{}(bytes) & mask_;; i = (i + 1) & mask_) {
    const uint32_t id = slots_[i];
    if (id == UINT32_MAX || tokens_[id] == bytes) return id;
  }
}

void BpeEncoder::encode_chunk(std::string_view chunk, std::vector<uint16_t>& out) const {
  if (chunk.empty()) return;
  if (uint32_t whole = rank(chunk); whole != UINT32_MAX) {
    out.push_back(static_cast<uint16_t>(whole));
    return;
  }
  // parts[i] = start of part i; pair_rank[i] = rank of parts i and i+1 joined.
  thread_local std::vector<size_t> parts;
  thread_local std::vector<uint32_t> pair_rank;
  const size_t n = chunk.size();
  parts.resize(n + 1);
  for (size_t i = 0; i <= n; ++i) parts[i] = i;
  pair_rank.assign(n, UINT32_MAX);
  auto joined_rank = [&](size_t i) -> uint32_t {  // parts i and i+1 joined
    if (i + 2 >= parts.size()) return UINT32_MAX;
    return rank(chunk.substr(parts[i], parts[i + 2] - parts[i]));
  };
  for (size_t i = 0; i + 1 < n; ++i) pair_rank[i] = joined_rank(i);
  for (;;) {
    uint32_t best = UINT32_MAX;
    size_t at = 0;
    const size_t num_pairs = parts.size() - 2;
    for (size_t i = 0; i < num_pairs; ++i)
      if (pair_rank[i] < best) {
        best = pair_rank[i];
        at = i;
      }
    if (best == UINT32_MAX) break;
    parts.erase(parts.begin() + static_cast<long>(at) + 1);
    pair_rank.erase(pair_rank.begin() + static_cast<long>(at) + 1);
    pair_rank[at] = joined_rank(at);
    if (at > 0) pair_rank[at - 1] = joined_rank(at - 1);
  }
  for (size_t i = 0; i + 1 < parts.size(); ++i)
    out.push_back(static_cast<uint16_t>(rank(chunk.substr(parts[i], parts[i + 1] - parts[i]))));
}

}  // namespace harness
