// See spend_cap.h.
#include "llm_client/spend_cap.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace llm {
namespace {
constexpr double kHour = 3600;
}

SpendCap::SpendCap(std::optional<double> max_cost_usd, int max_calls_per_hour, Spend spent)
    : max_cost_usd_(max_cost_usd), max_calls_per_hour_(max_calls_per_hour), cost_usd_(spent.cost_usd) {
  std::sort(spent.call_times.begin(), spent.call_times.end());
  call_times_.assign(spent.call_times.begin(), spent.call_times.end());
}

std::optional<CapReached> SpendCap::check(double now) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return check_locked(now);
}

std::optional<CapReached> SpendCap::start_call(double now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto cap = check_locked(now)) return cap;
  call_times_.push_back(now);
  return std::nullopt;
}

void SpendCap::add_cost(double cost_usd) {
  std::lock_guard<std::mutex> lock(mutex_);
  cost_usd_ += cost_usd;
}

double SpendCap::cost_usd() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cost_usd_;
}

std::optional<CapReached> SpendCap::check_locked(double now) const {
  if (max_cost_usd_ && cost_usd_ >= *max_cost_usd_) {
    char reason[96];
    std::snprintf(reason, sizeof reason, "LLM cost cap $%.2f reached", *max_cost_usd_);
    return CapReached{reason, std::numeric_limits<double>::infinity()};
  }
  while (!call_times_.empty() && call_times_.front() <= now - kHour) call_times_.pop_front();
  if (static_cast<int>(call_times_.size()) >= max_calls_per_hour_)
    return CapReached{"LLM call cap " + std::to_string(max_calls_per_hour_) + "/hour reached",
                      call_times_.front() + kHour};
  return std::nullopt;
}

}  // namespace llm
