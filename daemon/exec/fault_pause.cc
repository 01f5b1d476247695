// See fault_pause.h.
#include "daemon/exec/fault_pause.h"

#include <algorithm>
#include <cmath>

#include "daemon/log.h"
#include "daemon/util/clock.h"

namespace ard {

FaultPause::FaultPause(double first_wait_s, double max_wait_s, std::function<double()> clock)
    : first_wait_s_(std::max(first_wait_s, 0.1)),
      max_wait_s_(max_wait_s),
      clock_(clock ? std::move(clock) : std::function<double()>(now_seconds)) {}

void FaultPause::trip(const EnvironmentFault& fault) {
  fault_ = fault;
  ++trips_;
  until_ = clock_() + std::min(max_wait_s_, first_wait_s_ * std::pow(2.0, trips_ - 1));
}

bool FaultPause::check() {
  if (!fault_) return true;
  if (auto again = probe_write(probe_dir(fault_->path()))) {
    trip(*again);
    return false;
  }
  fault_.reset();
  trips_ = 0;
  return true;
}

std::string FaultPause::status_line() const {
  if (!fault_) return {};
  return "paused: " + std::string(fault_->what()) + ", retrying at " + format_time(until_).substr(11, 5);
}

std::filesystem::path probe_dir(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return path;
  return path.parent_path();
}

std::optional<EnvironmentFault> child_fault(const ProcessResult& r, const std::filesystem::path& log,
                                            const std::vector<std::filesystem::path>& dirs) {
  if (r.ok() && r.log_error.empty()) return std::nullopt;
  for (const auto& dir : dirs)
    if (auto fault = probe_write(dir)) return fault;
  if (r.log_error.empty()) return std::nullopt;
  // The log lost output, though the disk takes writes again: the run is not to be judged by it.
  std::string cause = r.log_error;
  if (cause.starts_with(log.string() + ": ")) cause = cause.substr(log.string().size() + 2);
  return EnvironmentFault(log, free_bytes(log), cause);
}

}  // namespace ard
