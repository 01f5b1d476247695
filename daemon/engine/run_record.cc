// See run_record.h.
#include "daemon/engine/run_record.h"

#include <utility>

#include "daemon/exec/process_groups.h"
#include "daemon/util/clock.h"

namespace ard {

void RunRecord::group_started(pid_t pgid) {
  const std::optional<int64_t> start = process_start_time(pgid);
  if (repeat_) group_record_ = store_->add_process_group(pgid, start.value_or(0), what_);
  else if (start) store_->set_pgid(experiment_, pgid, *start);
  else store_->set_pgid(experiment_, pgid);
}

void RunRecord::step_started(size_t index, const RunStep& step) {
  if (index > 0) group_gone();
  if (repeat_) return;
  const double now = now_seconds();
  store_->set_stage(experiment_, build_ ? ExperimentState::kBuilding : ExperimentState::kRunning, step.name, now,
                    now + step.timeout_s, now + step.expected_s);
}

void RunRecord::job(int64_t trial, const std::string& job, const std::string& node, const std::string& log) {
  if (!trial) return;
  if (node.empty()) store_->set_trial_job(trial, job, log);
  else store_->set_trial_node(trial, node);
}

void RunRecord::ended() { group_gone(); }

void RunRecord::group_gone() {
  if (!repeat_) store_->set_pgid(experiment_, std::nullopt);
  if (group_record_) store_->end_process_group(std::exchange(group_record_, 0));
}

}  // namespace ard
