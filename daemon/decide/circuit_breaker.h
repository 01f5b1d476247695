// The circuit breaker: stops the daemon from proposing (and paying for LLM
// calls) while experiments only fail the same way or the machine is at
// fault. K failures in a row with the same status and the same first error
// line, or one environment fault, open it: proposing pauses until a retry
// time that backs off exponentially (up to a cap). When the pause ends one
// experiment is let through; failing the same way again pauses at once for
// twice as long, a success closes the breaker. Pure: the caller passes the
// clock, so tests drive it without waiting.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace ard {

struct BreakerConfig {
  int threshold = 3;            ///< same failures in a row that open the breaker
  double first_pause_s = 60;    ///< the first pause; each trip after doubles it
  double max_pause_s = 30 * 60; ///< the longest pause
};

struct BreakerPause {
  std::string reason;  ///< "3 experiments in a row: crash: CUDA driver version is insufficient"
  double until = 0;    ///< when the next experiment may run (the clock's seconds)
  int trips = 0;       ///< pauses in a row, 1 for the first
};

class CircuitBreaker {
 public:
  /// clock: seconds (Unix time in the daemon, anything monotone in tests).
  explicit CircuitBreaker(BreakerConfig config = {}, std::function<double()> clock = {});

  /// An experiment ended well (kept or discarded): closes the breaker.
  void record_success();
  /// An experiment failed with a final status and its error (only the first
  /// line counts: later lines carry times and addresses that differ).
  void record_failure(const std::string& status, const std::string& error);
  /// An experiment ended as final_status (experiment_state.h): kept or
  /// discarded is a success; interrupted, conflict and duplicate count for
  /// nothing (a stop, another worker's keep, a change never run); anything
  /// else is a failure with error.
  void record_end(const std::string& final_status, const std::string& error);
  /// The machine is at fault (disk full, store error, no GPU): pauses at once.
  void record_environment_fault(const std::string& reason);

  /// The pause in force now, or nullopt when an experiment may run.
  std::optional<BreakerPause> paused() const;
  /// The last pause, in force or not (what status shows after it ends too).
  const std::optional<BreakerPause>& last_pause() const { return pause_; }
  /// "paused: <reason>, retrying at HH:MM" while paused, else empty.
  std::string status_line() const;

 private:
  void trip(const std::string& reason);

  BreakerConfig config_;
  std::function<double()> clock_;
  std::string signature_;  ///< status + first error line of the current streak
  int streak_ = 0;
  int trips_ = 0;
  std::optional<BreakerPause> pause_;
};

/// The first line of text, trimmed.
std::string first_line(const std::string& text);

}  // namespace ard
