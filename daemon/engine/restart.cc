// See restart.h.
#include "daemon/engine/restart.h"

#include <unistd.h>

#include "daemon/exec/process_groups.h"
#include "daemon/exec/process_runner.h"
#include "daemon/store/evaluated_reconcile.h"
#include "daemon/slurm/slurm_recovery.h"
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

std::optional<Candidate> take_up(const Resume& r, Store& store, GitRepo& repo, const std::string& exp_ref,
                                 const std::function<void(const std::string&)>& log) {
  const std::string id = "#" + std::to_string(r.id);
  auto row = store.experiment(r.id);
  if (!row || !repo.has_commit(row->commit)) {
    log(id + " stays interrupted: its commit is not in the repo");
    return std::nullopt;
  }
  store.resume(r.id);
  repo.set_ref(exp_ref, row->commit, "autoresearchd: resumed");
  log(id + " resumed (" + r.why + "; " + std::to_string(row->resumes + 1) + " of at most " +
      std::to_string(kMaxResumes) + "): " +
      (r.runs > 0 && r.last_value ? "the judge rules on its " + std::to_string(r.runs) + " finished run(s) again"
                                  : "it runs again from " + short_commit(row->commit)));
  return Candidate{.experiment = r.id, .parent = row->parent_commit, .commit = row->commit,
                   .description = row->description, .fix_round = r.fix_round,
                   .reapplies = row->reapplied_from.empty() ? 0 : 1, .confirmations = std::max(0, r.runs - 1)};
}

StartPoint settle_start(Store& store, GitRepo& repo, const Config& config, const std::filesystem::path& state_root,
                        const std::vector<std::string>& slurm_env, bool rebase, Log& log) {
  recover_slurm_jobs(config, store, slurm_env, state_root / "slurm", log);
  const auto log_line = [&log](const std::string& line) { log(line); };
  StartPoint start;
  SettleSettings settle{config.tag, config.metric, keep_settings(config), config.noise.prior_sigma, state_root};
  start.resumes = settle_last_sessions(store, settle, log_line);
  start.chain = settle_tag(repo, store, config.tag, rebase, log_line);
  return start;
}

int64_t open_session(Store& store, const Config& config, const std::string& best, const std::string& proposer,
                     const std::vector<std::string>& gpus, const std::function<void(const std::string&)>& log) {
  const int64_t session = store.begin_session(config.tag, getpid());
  std::string gpu_list;
  for (const auto& gpu : gpus) gpu_list += (gpu_list.empty() ? "" : ",") + gpu;
  store.set_session_gpus(session, gpu_list);
  log("session " + std::to_string(session) + ": tag " + config.tag + ", branch autoresearch/" + config.tag + ", best " +
      short_commit(best) + ", proposer " + proposer + ", " +
      (gpus.front().empty() ? std::string("one worker (no GPU id)")
                            : std::to_string(gpus.size()) + " GPU worker(s): " + gpu_list));
  return session;
}

}  // namespace ard
