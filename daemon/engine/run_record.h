// What the store records of one run while its executor reports it: the
// process group of the step that runs (on the experiment's row, or on a row
// of its own for a repeat run of the best, whose row is no experiment in
// flight), the step and its deadline, and a Slurm job and its node. So a
// restart after kill -9 finds every group to kill and every job to adopt, and
// status shows where each experiment is.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "daemon/engine/run.h"
#include "daemon/store/store.h"

namespace ard {

class RunRecord {
 public:
  /// experiment: the run's row; repeat: a repeat run of the best (its row is
  /// left as it is); what: the description a repeat's group is recorded with;
  /// build: the run is a build (the row's state reads building, else running).
  RunRecord(Store& store, int64_t experiment, bool repeat, std::string what, bool build)
      : store_(&store), experiment_(experiment), repeat_(repeat), what_(std::move(what)), build_(build) {}

  /// A step's group started (its leader held at the gate, so its start time is readable).
  void group_started(pid_t pgid);
  /// Step index (of the run's steps) starts now: the group before it is gone.
  void step_started(size_t index, const RunStep& step);
  /// A Slurm job was submitted (node "") or began on node; trial: the run's trial row, 0: none yet.
  void job(int64_t trial, const std::string& job, const std::string& node, const std::string& log);
  /// The run ended: no group of it is left.
  void ended();

 private:
  void group_gone();

  Store* store_;
  int64_t experiment_;
  bool repeat_;
  std::string what_;
  bool build_;
  int64_t group_record_ = 0;  ///< a repeat's process_groups row while its group lives
};

}  // namespace ard
