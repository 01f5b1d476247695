// The environment pause: while a fault of the machine is in force (a full
// disk, an I/O error, a store another process keeps locked), the engine
// starts nothing, neither a proposal nor a build nor a stage, and the
// experiment the fault met runs again afterwards. The pause retries with a
// back-off (doubling up to a cap) and ends when a probe write to the faulting
// directory succeeds. Also: how a child's failure is told to be the machine's
// (its log could not be written, or a probe write next to it fails).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "daemon/exec/environment_fault.h"
#include "daemon/exec/process_runner.h"
#include "daemon/util/clock.h"

namespace ard {

class FaultPause {
 public:
  /// first_wait_s: the first retry's wait; each further one doubles, up to
  /// max_wait_s. clock: Unix seconds (now_seconds when empty).
  explicit FaultPause(double first_wait_s, double max_wait_s = 30 * 60, std::function<double()> clock = {});

  /// A fault was seen: the pause starts, or (while in force) backs off again.
  void trip(const EnvironmentFault& fault);
  bool active() const { return fault_.has_value(); }
  /// When the next check is due (the clock's seconds); only while active.
  double until() const { return until_; }
  const std::optional<EnvironmentFault>& fault() const { return fault_; }

  /// Probes the fault's directory (the path itself when it is one, else its
  /// parent). True when the write succeeds: the pause ends. False when it
  /// fails: the pause backs off again, with the fault of this probe.
  bool check();

  /// "paused: <path>: <cause> (<free> free), retrying at HH:MM" while active, else "".
  std::string status_line() const;

 private:
  double first_wait_s_;
  double max_wait_s_;
  std::function<double()> clock_;
  std::optional<EnvironmentFault> fault_;
  double until_ = 0;
  int trips_ = 0;
};

/// The directory a fault's path is probed in: the path when it is a
/// directory, else its parent.
std::filesystem::path probe_dir(const std::filesystem::path& path);

/// Why a child's end is the machine's fault: its log (at log) could not be
/// written, or, when it failed, a probe write to one of dirs fails. nullopt:
/// whatever happened is the child's own doing.
std::optional<EnvironmentFault> child_fault(const ProcessResult& r, const std::filesystem::path& log,
                                            const std::vector<std::filesystem::path>& dirs);

}  // namespace ard
