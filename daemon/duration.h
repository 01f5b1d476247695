// Seconds from the config or the clock, as a std::chrono duration, without
// overflow: a double past what the clock's 64-bit count of nanoseconds holds
// (about 292 years) would wrap to a negative duration, so a timeout of 1e10 s
// would fire at once and a wait of 1e300 s would never wait.
#pragma once

#include <chrono>

namespace ard {

/// The longest duration a timer is set for: 100 years, far inside the clock's range.
inline constexpr double kMaxDurationS = 100.0 * 365 * 86400;

/// s seconds as a steady_clock duration, clamped to [0, kMaxDurationS]; NaN is 0.
std::chrono::steady_clock::duration steady_seconds(double s);

}  // namespace ard
