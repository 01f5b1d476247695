// See slurm_recovery.h.
#include "daemon/slurm/slurm_recovery.h"

#include <boost/asio/io_context.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "daemon/decide/summary.h"
#include "daemon/exec/process_runner.h"
#include "daemon/slurm/slurm_client.h"
#include "daemon/slurm/slurm_executor.h"
#include "daemon/util/text.h"

namespace ard {

namespace {

/// The metric and the other figures from a finished job's log; an error line
/// when it printed no usable summary.
std::optional<RunMetrics> read_metrics(const Config& config, const std::filesystem::path& log, std::string& error) {
  SummaryParse parsed = parse_summary(file_tail(log, std::numeric_limits<size_t>::max(), size_t{1} << 30),
                                      config.summary_keys);
  if (!parsed.tampered.empty()) {
    error = "the Slurm job's summary cannot be believed: " + parsed.tampered;
    return std::nullopt;
  }
  const std::optional<Summary>& summary = parsed.summary;
  if (!summary) {
    error = "the Slurm job printed no summary block";
    return std::nullopt;
  }
  auto it = summary->values.find(config.metric);
  if (it == summary->values.end() || !std::isfinite(it->second)) {
    error = "the Slurm job's summary has no finite " + config.metric;
    return std::nullopt;
  }
  auto value_of = [&](const char* key) -> std::optional<double> {
    auto f = summary->values.find(key);
    if (f == summary->values.end()) return std::nullopt;
    return f->second;
  };
  return RunMetrics{it->second, value_of("peak_vram_mb"), value_of("training_seconds"), summary->to_json()};
}

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
  const bool adopt = config.slurm.on_restart == "adopt";
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
    std::string tail = file_tail(t.slurm_log);
    switch (end.kind) {
      case JobEnd::Kind::kCompleted: {
        std::string error;
        if (auto m = read_metrics(config, t.slurm_log, error)) {
          store.set_metrics(t.experiment_id, *m);
          store.end_trial(t.id, "ok", m->training_seconds, m->val_bpb, m->summary_json);
          log(who + " ended: " + config.metric + " " + format_number(m->val_bpb) + " recorded");
        } else {
          store.end_trial(t.id, status::kCrash, std::nullopt, std::nullopt, "");
          store.finish(t.experiment_id, status::kCrash, error, tail);
          log(who + ": " + error);
        }
        return;
      }
      case JobEnd::Kind::kFailed:
      case JobEnd::Kind::kTimedOut: {
        const char* s = end.kind == JobEnd::Kind::kFailed ? status::kCrash : status::kTimeout;
        store.end_trial(t.id, s, std::nullopt, std::nullopt, "");
        store.finish(t.experiment_id, s, end.error, tail);
        log(who + ": " + s + ": " + end.error);
        return;
      }
      default:  // cancelled, lost: reconcile marks the experiment interrupted
        store.end_trial(t.id, status::kInterrupted, std::nullopt, std::nullopt, "");
        log(who + ": " + end.error);
        return;
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
