// See duration.h.
#include "daemon/duration.h"

#include <cmath>

namespace ard {

std::chrono::steady_clock::duration steady_seconds(double s) {
  if (std::isnan(s) || s <= 0) return std::chrono::steady_clock::duration::zero();
  if (s > kMaxDurationS) s = kMaxDurationS;
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace ard
