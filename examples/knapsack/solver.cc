// The knapsack example's research surface: a simulated-annealing search for
// the most valuable packing of a fixed instance (budget.h) within a fixed
// number of moves. It prints the summary block the daemon reads:
//
//   ---
//   score: 0.981234        the packing's value / the LP bound: higher is better
//   total_seconds: 0.02
//
// The constants below are what the offline proposer mutates; an LLM may
// rewrite anything in this file.
constexpr double START_TEMPERATURE = 40.0;
constexpr double END_TEMPERATURE = 0.5;
constexpr double SWAP_SHARE = 0.02;
constexpr int RESTARTS = 4;

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "budget.h"

namespace {

/// One annealing run of `moves` moves from the empty knapsack: the best value seen.
long anneal(const knapsack::Instance& in, long moves, std::mt19937_64& rng) {
  const int n = static_cast<int>(in.items.size());
  std::vector<char> packed(n, 0);
  long weight = 0, value = 0, best = 0;
  std::uniform_int_distribution<int> pick(0, n - 1);
  std::uniform_real_distribution<double> unit(0, 1);
  for (long m = 0; m < moves; ++m) {
    const double t = START_TEMPERATURE * std::pow(END_TEMPERATURE / START_TEMPERATURE, static_cast<double>(m) / moves);
    int a = pick(rng), b = -1;
    if (unit(rng) < SWAP_SHARE) {
      b = pick(rng);
      if (packed[a] == packed[b]) b = -1;
    }
    long dw = 0, dv = 0;
    for (int i : {a, b}) {
      if (i < 0) continue;
      const int sign = packed[i] ? -1 : 1;
      dw += sign * in.items[i].weight;
      dv += sign * in.items[i].value;
    }
    if (weight + dw > in.capacity) continue;
    if (dv < 0 && unit(rng) >= std::exp(dv / t)) continue;
    for (int i : {a, b})
      if (i >= 0) packed[i] = !packed[i];
    weight += dw;
    value += dv;
    if (value > best) best = value;
  }
  return best;
}

}  // namespace

int main() {
  const auto t0 = std::chrono::steady_clock::now();
  const knapsack::Instance in = knapsack::make_instance();
  std::mt19937_64 rng(std::random_device{}());
  long best = 0;
  const int restarts = RESTARTS < 1 ? 1 : RESTARTS;
  for (int r = 0; r < restarts; ++r) {
    const long v = anneal(in, knapsack::kMoves / restarts, rng);
    if (v > best) best = v;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("---\nscore: %.6f\ntotal_seconds: %.3f\n", best / knapsack::upper_bound(in), seconds);
  return 0;
}
