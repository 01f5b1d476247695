// See circuit_breaker.h.
#include "daemon/decide/circuit_breaker.h"

#include <algorithm>
#include <cmath>

#include "daemon/log.h"
#include "daemon/store/experiment_state.h"
#include "daemon/util/clock.h"

namespace ard {

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  size_t b = line.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  size_t e = line.find_last_not_of(" \t\r");
  return line.substr(b, e - b + 1);
}

CircuitBreaker::CircuitBreaker(BreakerConfig config, std::function<double()> clock)
    : config_(config), clock_(clock ? std::move(clock) : std::function<double()>(now_seconds)) {}

void CircuitBreaker::record_end(const std::string& final_status, const std::string& error) {
  auto is = [&](ExperimentState s) { return final_status == to_string(s); };
  if (is(ExperimentState::kKept) || is(ExperimentState::kDiscarded)) return record_success();
  if (is(ExperimentState::kInterrupted) || is(ExperimentState::kConflict) || is(ExperimentState::kDuplicate)) return;
  record_failure(final_status, error);
}

void CircuitBreaker::record_success() {
  streak_ = 0;
  trips_ = 0;
  signature_.clear();
  pause_.reset();
}

void CircuitBreaker::record_failure(const std::string& status, const std::string& error) {
  std::string signature = status + ": " + first_line(error);
  if (signature == signature_) {
    ++streak_;
  } else {
    // A new way of failing: whatever the last pause was about has changed.
    signature_ = signature;
    streak_ = 1;
    trips_ = 0;
  }
  // After a pause, the experiment let through failing the same way trips again at once.
  if (streak_ >= config_.threshold || trips_ > 0)
    trip(std::to_string(streak_) + " experiments in a row failed the same way: " + signature_);
}

void CircuitBreaker::record_environment_fault(const std::string& reason) {
  signature_ = "environment: " + first_line(reason);
  streak_ = 0;
  trip(first_line(reason));
}

void CircuitBreaker::trip(const std::string& reason) {
  ++trips_;
  double pause = std::min(config_.max_pause_s, config_.first_pause_s * std::pow(2.0, trips_ - 1));
  pause_ = BreakerPause{reason, clock_() + pause, trips_};
}

std::optional<BreakerPause> CircuitBreaker::paused() const {
  if (pause_ && clock_() < pause_->until) return pause_;
  return std::nullopt;
}

std::string CircuitBreaker::status_line() const {
  auto p = paused();
  if (!p) return {};
  return "paused: " + p->reason + ", retrying at " + format_time(p->until).substr(11, 5);
}

}  // namespace ard
