// See slurm_recovery.h.
#include "daemon/slurm/slurm_recovery.h"

#include <boost/asio/io_context.hpp>
#include <map>

#include "daemon/engine/run_end.h"
#include "daemon/exec/process_runner.h"
#include "daemon/slurm/job_outcome.h"
#include "daemon/slurm/slurm_client.h"
#include "daemon/slurm/slurm_executor.h"
#include "daemon/util/text.h"

namespace ard {

namespace {

double total_timeout(const Config& config) {
  double t = 0;
  for (const auto& s : config.stages) t += s.timeout_s;
  return t;
}

}  // namespace

void recover_slurm_jobs(const Config& config, Store& store, const std::vector<std::string>& env,
                        const std::filesystem::path& scratch, Log& log) {
  std::vector<TrialRow> open = store.open_slurm_trials();
  if (open.empty()) return;
  const bool adopt = config.slurm.on_restart == SlurmOnRestart::kAdopt;
  boost::asio::io_context io;
  SlurmClient client(io, env, scratch);
  std::map<int64_t, TrialRow> by_key;
  auto on_job = [&](int64_t key, const std::string& job, const std::string& node) {
    const TrialRow& t = by_key.at(key);
    if (node.empty()) store.set_trial_job(t.id, job, t.slurm_log);  // a resubmission's new id
    else store.set_trial_node(t.id, node);
  };
  auto on_end = [&](int64_t key, const JobEnd& end) {
    const TrialRow& t = by_key.at(key);
    const std::string who = "reconcile: #" + std::to_string(t.experiment_id) + " Slurm job " + end.job_id;
    if (!end.node.empty()) store.set_trial_node(t.id, end.node);
    // Classified as the live engine classifies a job's end (job_outcome.h, run_end.h); only the
    // slot's tamper check is missing, since the restart checks every slot out afresh.
    const RunEnd e = classify_end(job_outcome(end, t.slurm_log, config), t.slurm_log,
                                  EndSettings{config.metric, config.summary_keys});
    switch (e.kind) {
      case RunEnd::Kind::kOk: {
        auto value_of = [&](const char* k) -> std::optional<double> {
          auto f = e.summary->values.find(k);
          if (f == e.summary->values.end()) return std::nullopt;
          return f->second;
        };
        store.set_metrics(t.experiment_id,
                          RunMetrics{e.value, value_of("peak_vram_mb"), value_of("training_seconds"), e.summary->to_json()});
        store.end_trial(t.id, "ok", value_of("training_seconds"), e.value, e.summary->to_json());
        log(who + " ended: " + config.metric + " " + format_number(e.value) + " recorded");
        return;
      }
      case RunEnd::Kind::kStopped:
      case RunEnd::Kind::kMachineFault:  // cancelled, lost: reconcile marks the experiment interrupted
        store.end_trial(t.id, status::kInterrupted, std::nullopt, std::nullopt, "");
        log(who + ": " + e.detail);
        return;
      default: {  // crash, timeout, tampered, build_fail: the experiment is finished
        const char* s = final_status(e.kind);
        store.end_trial(t.id, s, std::nullopt, std::nullopt, "");
        store.finish(t.experiment_id, s, e.detail, e.log_tail);
        log(who + ": " + s + ": " + e.detail);
        return;
      }
    }
  };
  SlurmConfig slurm = config.slurm;
  slurm.max_resubmits = 0;  // an adopted job that is lost is interrupted: the restart does not rebuild its script
  SlurmExecutor executor(io, slurm, client, log, on_job, on_end);
  for (const auto& t : open) {
    SlurmRun run;
    run.key = t.experiment_id;
    run.name = "adopted";
    run.log = t.slurm_log;
    run.timeout_s = total_timeout(config);
    by_key[run.key] = t;
    executor.adopt(run, t.slurm_job_id);
    log("reconcile: #" + std::to_string(t.experiment_id) + " Slurm job " + t.slurm_job_id + (adopt ? " adopted" : " to be cancelled"));
    if (!adopt) executor.stop(run.key);
  }
  io.run();
}

}  // namespace ard
