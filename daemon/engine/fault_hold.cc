// See fault_hold.h.
#include "daemon/engine/fault_hold.h"

#include <algorithm>

#include "daemon/duration.h"
#include "daemon/util/clock.h"

namespace ard {

FaultHold::FaultHold(boost::asio::io_context& io, double first_wait_s, std::function<void()> wake,
                     std::function<double()> clock)
    : pause_(first_wait_s, 30 * 60, clock),
      timer_(io),
      wake_(std::move(wake)),
      clock_(clock ? std::move(clock) : std::function<double()>(now_seconds)) {}

std::string FaultHold::hold(const EnvironmentFault& fault) {
  if (!pause_.active()) pause_.trip(fault);  // while held, only a failed probe backs it off
  timer_.expires_after(steady_seconds(std::max(0.0, pause_.until() - clock_())));
  timer_.async_wait([this](const boost::system::error_code& err) {
    if (!err) wake_();
  });
  return pause_.status_line();
}

FaultHold::Now FaultHold::now() {
  if (!pause_.active()) return Now::kFree;
  if (clock_() < pause_.until()) return Now::kHeld;
  return pause_.check() ? Now::kCleared : Now::kProbeFailed;
}

}  // namespace ard
