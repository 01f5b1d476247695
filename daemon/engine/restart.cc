// See restart.h.
#include "daemon/engine/restart.h"

#include "daemon/exec/process_groups.h"
#include "daemon/exec/process_runner.h"
#include "daemon/store/evaluated_reconcile.h"
#include "daemon/store/experiment_state.h"
#include "daemon/util/text.h"

namespace ard {

std::vector<Resume> settle_last_sessions(Store& store, const SettleSettings& s,
                                         const std::function<void(const std::string&)>& log) {
  // A killed daemon's experiments end when it was last known to run, not now.
  const std::optional<double> alive = store.dead_sessions_alive_at();
  if (int n = store.close_dead_sessions()) log("reconcile: closed " + std::to_string(n) + " session(s) of a killed daemon");
  store.close_open_trials(alive);
  for (const auto& line : kill_recorded_groups(store)) log("reconcile: " + line);
  // A measured result is never lost: an `evaluated` row gets the decision it would have had.
  for (const auto& d : finish_evaluated(store, s.tag, s.keep, s.prior_sigma))
    log("reconcile: #" + std::to_string(d.id) + " was measured (" + s.metric + " " + format_number(d.val_bpb) +
        ") when the daemon stopped: " + (d.kept ? "kept" : "discarded"));
  if (int calls = store.close_started_calls())
    log("reconcile: " + std::to_string(calls) + " LLM call(s) in flight when the daemon was killed: interrupted "
        "(their rows count toward the caps)");
  for (const auto& r : store.unfinished()) {
    if (store.delete_if_empty(r.id)) {  // was only waiting for a proposal
      log("#" + std::to_string(r.id) + " removed at restart: it had no proposal and no LLM call; its id stays unused");
      continue;
    }
    bool killed = false;
    if (r.pgid && r.pgid_start)
      killed = kill_recorded_group(static_cast<pid_t>(*r.pgid), *r.pgid_start) == RecordedGroup::killed;
    else if (r.pgid)  // recorded before leader start times were
      killed = kill_orphan_group(static_cast<pid_t>(*r.pgid), s.state_root);
    if (killed)
      log("reconcile: killed orphaned process group " + std::to_string(*r.pgid) + " of #" + std::to_string(r.id));
    const std::string where =
        r.state + (r.stage.empty() || r.state == to_string(ExperimentState::kProposing) ? "" : " (stage " + r.stage + ")");
    store.finish(r.id, status::kInterrupted, "the daemon stopped while the experiment was " + where, r.log_tail, alive);
    log("reconcile: #" + std::to_string(r.id) + " marked interrupted (was " + where + ")");
  }
  // What the last session left interrupted (stopped, or killed above) runs again once the pipeline begins.
  ResumePlan plan = last_session_resumes(store, s.tag);
  for (const auto& line : plan.left) log("reconcile: " + line);
  return std::move(plan.resume);
}

ResumePlan last_session_resumes(Store& store, const std::string& tag) {
  const auto sessions = store.sessions(tag);
  if (sessions.empty()) return {};
  return plan_resumes(store.experiments(tag), store.trials(tag), sessions.back().started_at);
}

}  // namespace ard
