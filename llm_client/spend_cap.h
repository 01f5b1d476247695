// The two spending caps of one tag: its total estimated cost (llm.max_cost_usd,
// over every start of the daemon: the store's spend is the starting point) and
// the HTTP calls in any 60 minutes (llm.max_calls_per_hour), so that a failing
// loop cannot make hundreds of calls a minute. Not thread-safe: the chat
// client guards it.
#pragma once

#include <deque>
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
  /// Counts a call starting at `now` (before it runs, so that calls made at
  /// once on several threads cannot all pass the hour's cap).
  void start_call(double now) { call_times_.push_back(now); }
  /// Adds a finished call's cost.
  void add_cost(double cost_usd) { cost_usd_ += cost_usd; }
  double cost_usd() const { return cost_usd_; }

 private:
  std::optional<double> max_cost_usd_;
  int max_calls_per_hour_;
  double cost_usd_;
  mutable std::deque<double> call_times_;  ///< oldest first; older than an hour dropped on check
};

}  // namespace llm
