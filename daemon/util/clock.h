// The wall clock as the store records it: Unix seconds with a fraction. One
// definition, so that the store, the breaker, the fault pause and Slurm read
// the same clock without including each other.
#pragma once

namespace ard {

/// Seconds since the Unix epoch, from the system clock.
double now_seconds();

}  // namespace ard
