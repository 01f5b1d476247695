// The fixed part of the knapsack example: the instance and the search budget.
// Not editable (autoresearch.toml lists solver.cc alone), so every experiment
// solves the same instance with the same number of moves and only the search
// itself can get better.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace knapsack {

/// Moves every experiment may make, whatever it does with them.
constexpr long kMoves = 400000;

struct Item {
  int weight = 0;
  int value = 0;
};

struct Instance {
  std::vector<Item> items;
  long capacity = 0;
};

/// A strongly correlated instance (value = weight + 20 ± 10), the hard kind,
/// from a fixed linear congruential generator: the same items in every run.
inline Instance make_instance() {
  uint64_t state = 12345;
  auto next = [&state](int lo, int hi) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + static_cast<int>((state >> 33) % static_cast<uint64_t>(hi - lo + 1));
  };
  Instance in;
  long total = 0;
  for (int i = 0; i < 150; ++i) {
    Item it;
    it.weight = next(10, 100);
    it.value = it.weight + next(10, 30);
    total += it.weight;
    in.items.push_back(it);
  }
  in.capacity = total / 2;
  return in;
}

/// The LP relaxation's value (fractional greedy by value per weight): no
/// packing beats it, so value / bound is a score in (0, 1].
inline double upper_bound(const Instance& in) {
  std::vector<Item> by_ratio = in.items;
  std::sort(by_ratio.begin(), by_ratio.end(), [](const Item& a, const Item& b) {
    return static_cast<double>(a.value) / a.weight > static_cast<double>(b.value) / b.weight;
  });
  double room = static_cast<double>(in.capacity), bound = 0;
  for (const Item& it : by_ratio) {
    const double take = std::min(1.0, room / it.weight);
    bound += take * it.value;
    room -= take * it.weight;
    if (room <= 0) break;
  }
  return bound;
}

}  // namespace knapsack
