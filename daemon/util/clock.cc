// See clock.h.
#include "daemon/util/clock.h"

#include <chrono>

namespace ard {

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace ard
