// A fault of the machine held on the loop: the pause's state and back-off
// (FaultPause, exec/fault_pause.h) with the timer that wakes the loop when
// its retry is due. Nothing starts while it holds; what starts again once it
// clears, and what status shows meanwhile, is the engine's.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <optional>
#include <string>

#include "daemon/exec/fault_pause.h"

namespace ard {

class FaultHold {
 public:
  /// first_wait_s: the first retry's wait (FaultPause). wake: run on io's loop
  /// when a retry is due. clock: Unix seconds (now_seconds when empty).
  FaultHold(boost::asio::io_context& io, double first_wait_s, std::function<void()> wake,
            std::function<double()> clock = {});

  /// A fault was met: the pause starts (a fault met by several handlers at
  /// once pauses once), and wake runs when its retry is due. Returns the line
  /// status shows ("paused: <path>: <cause> ..., retrying at HH:MM").
  std::string hold(const EnvironmentFault& fault);

  enum class Now {
    kFree,         ///< no fault is held
    kHeld,         ///< its retry is not due yet
    kProbeFailed,  ///< its retry was due and the probe failed: fault() is the new fault, held again by hold()
    kCleared,      ///< its retry was due and the probe succeeded: nothing is held any more
  };
  /// Where the fault stands now; at its retry time the fault's directory is probed (FaultPause::check).
  Now now();
  bool active() const { return pause_.active(); }
  const std::optional<EnvironmentFault>& fault() const { return pause_.fault(); }
  /// No wake any more (the daemon stops).
  void cancel() { timer_.cancel(); }

 private:
  FaultPause pause_;
  boost::asio::steady_timer timer_;
  std::function<void()> wake_;
  std::function<double()> clock_;
};

}  // namespace ard
