// The two spending caps of one tag: its total estimated cost (llm.max_cost_usd,
// over every start of the daemon: the store's spend is the starting point) and
// the HTTP calls in any 60 minutes (llm.max_calls_per_hour), so that a failing
// loop cannot make hundreds of calls a minute. Thread-safe: the proposers of
// a swarm's profiles (one chat client each) share one.
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "proposers/call_record.h"

namespace llm {

struct CapReached {
  std::string reason;  ///< one line: "LLM cost cap $5.00 reached" or "LLM call cap 60/hour reached"
  double retry_at = 0;  ///< Unix seconds; infinity for the cost cap
};

class SpendCap {
 public:
  /// max_cost_usd unset: no cost cap. spent: the tag's spend so far.
  SpendCap(std::optional<double> max_cost_usd, int max_calls_per_hour, Spend spent);

  /// Empty when a call may go out at `now` (Unix seconds).
  std::optional<CapReached> check(double now) const;
  /// check, and when no cap is reached counts a call starting at `now`, in one
  /// step: calls made at once on several threads cannot all pass the hour's cap.
  std::optional<CapReached> start_call(double now);
  /// Adds a finished call's cost.
  void add_cost(double cost_usd);
  double cost_usd() const;

 private:
  std::optional<double> max_cost_usd_;
  int max_calls_per_hour_;
  double cost_usd_;
  mutable std::deque<double> call_times_;  ///< oldest first; older than an hour dropped on check
  mutable std::mutex mutex_;               ///< guards cost_usd_ and call_times_
  std::optional<CapReached> check_locked(double now) const;
};

}  // namespace llm
