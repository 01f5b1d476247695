// The simulated world of the simulated trainer (sim_trainer.h: `autoresearchd
// demo` and the fake trainer's simulation mode) and of decision_sim, so that
// the decision benchmark can move from the policy simulation to the daemon
// driving the simulated trainer without changing what a run produces:
//
//   steps   = floor(budget_s × scale × speed / step_cost)
//   val_bpb = a + b·steps − effect + N(0, σ)
//
// The normal draw comes from a seed (Box-Muller over splitmix64, so it is the
// same on every platform) derived from the run's content and a nonce.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string_view>

namespace ard::sim_board {

struct World {
  double a = 0.642;        ///< val_bpb intercept
  double b = 1.15e-4;      ///< val_bpb per step: > 0 data-limited (the pinned corpus), < 0 compute-limited
  double sigma = 0.0015;   ///< run-to-run noise
  double step_cost = 0.1;  ///< seconds per step at speed 1
};

/// Whole steps that fit the budget on a board of this speed.
inline long steps(double budget_s, double scale, double speed, double step_cost) {
  return static_cast<long>(std::floor(budget_s * scale * speed / step_cost));
}

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// FNV-1a of the content, mixed with the nonce.
inline uint64_t run_seed(std::string_view content, uint64_t nonce) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : content) h = (h ^ c) * 1099511628211ULL;
  uint64_t state = h ^ (nonce * 0x9e3779b97f4a7c15ULL);
  return splitmix64(state);
}

/// A standard normal draw from the seed.
inline double normal(uint64_t seed) {
  uint64_t state = seed;
  const double u1 = (static_cast<double>(splitmix64(state) >> 11) + 0.5) / 9007199254740992.0;
  const double u2 = static_cast<double>(splitmix64(state) >> 11) / 9007199254740992.0;
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

/// A run's val_bpb: the world's line at these steps, less the effect, plus noise.
inline double val_bpb(const World& w, long steps, double effect, uint64_t seed) {
  return w.a + w.b * static_cast<double>(steps) - effect + w.sigma * normal(seed);
}

}  // namespace ard::sim_board
