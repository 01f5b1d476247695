// See slurm_executor.h.
#include "daemon/slurm/slurm_executor.h"

#include <boost/asio/post.hpp>
#include <chrono>
#include <fstream>
#include <sstream>

#include "daemon/duration.h"
#include "daemon/util/clock.h"
#include "daemon/util/file.h"

namespace ard {

namespace {

void write_atomically(const std::filesystem::path& p, const std::string& text) {
  auto tmp = p;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::filesystem::permissions(tmp, std::filesystem::perms::owner_all);
  std::filesystem::rename(tmp, p);
}

}  // namespace

std::vector<std::string> slurm_workers(int n) {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back("slurm:" + std::to_string(i));
  return out;
}

std::filesystem::path exit_file_of(const std::filesystem::path& log) {
  auto p = log;
  p.replace_extension(".exit");
  return p;
}

SlurmExecutor::SlurmExecutor(boost::asio::io_context& io, const SlurmConfig& config, SlurmClient& client, Log& log,
                             OnJob on_job, OnEnd on_end)
    : io_(io),
      config_(config),
      client_(client),
      log_(log),
      on_job_(std::move(on_job)),
      on_end_(std::move(on_end)),
      timer_(io) {}

void SlurmExecutor::submit(const SlurmRun& run) {
  Job job;
  job.run = run;
  jobs_[run.key] = job;
  JobScriptSpec script{run.title, run.worktree, run.stages, exit_file_of(run.log)};
  try {
    std::filesystem::create_directories(run.script.parent_path());
    write_atomically(run.script, job_script(script));
  } catch (const std::exception& e) {
    return finish(run.key, {JobEnd::Kind::kSubmitFailed, "", 0, "", std::string("cannot write the job script: ") + e.what()});
  }
  sbatch(run.key);
}

void SlurmExecutor::adopt(const SlurmRun& run, const std::string& job_id) {
  Job job;
  job.run = run;
  job.id = job_id;
  job.restarts = -1;  // its requeues so far are not news
  jobs_[run.key] = job;
  schedule_poll();
}

void SlurmExecutor::sbatch(int64_t key) {
  const Job& job = jobs_.at(key);
  std::error_code ec;
  std::filesystem::remove(exit_file_of(job.run.log), ec);  // a resubmission's old one
  SubmitSpec spec{job.run.name, job.run.script, job.run.log, job.run.worktree, time_limit_minutes(job.run.timeout_s)};
  client_.submit(spec, config_, [this, key](std::optional<std::string> id, const std::string& error) {
    auto it = jobs_.find(key);
    if (it == jobs_.end()) return;
    Job& job = it->second;
    if (!id) return finish(key, {JobEnd::Kind::kSubmitFailed, "", 0, "", error});
    job.id = *id;
    log_("#" + std::to_string(key) + " Slurm job " + job.id + " submitted (" + job.run.name + ")");
    on_job_(key, job.id, "");
    if (job.stop_requested) cancel(job);
    schedule_poll();
  });
}

void SlurmExecutor::stop(int64_t key) {
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return;
  request_stop(it->second);
}

void SlurmExecutor::stop_all() {
  for (auto& [key, job] : jobs_) request_stop(job);
}

void SlurmExecutor::request_stop(Job& job) {
  if (job.stop_requested) return;
  job.stop_requested = true;
  job.stop_at = now_seconds();
  if (!job.id.empty()) cancel(job);
}

void SlurmExecutor::cancel(Job& job) {
  if (job.cancel_sent) return;
  job.cancel_sent = true;
  log_("#" + std::to_string(job.run.key) + " scancel " + job.id);
  client_.cancel({job.id}, [this, key = job.run.key](const CommandReply& r) {
    if (!r.ok) log_("#" + std::to_string(key) + " scancel failed (" + r.describe + "): " +
                    r.output.substr(0, r.output.find('\n')));
    schedule_poll();
  });
}

void SlurmExecutor::schedule_poll() {
  if (poll_scheduled_ || polling_ || jobs_.empty()) return;
  poll_scheduled_ = true;
  timer_.expires_after(steady_seconds(config_.poll_s));
  timer_.async_wait([this](const boost::system::error_code& e) {
    poll_scheduled_ = false;
    if (!e) poll();
  });
}

void SlurmExecutor::poll() {
  give_up_unconfirmed_stops();
  std::vector<std::string> ids;
  for (const auto& [key, job] : jobs_)
    if (!job.id.empty()) ids.push_back(job.id);
  if (ids.empty()) return schedule_poll();
  polling_ = true;
  client_.query(ids, [this](const JobQuery& q, const CommandReply& r) {
    polling_ = false;
    on_query(q, r);
    schedule_poll();
  });
}

void SlurmExecutor::on_query(const JobQuery& q, const CommandReply& reply) {
  if (q.known.empty() && q.gone.empty()) {
    std::string line = reply.output.substr(0, reply.output.find('\n'));
    if (line != last_query_error_) log_("warning: cannot read the Slurm jobs' states (" + reply.describe + "): " + line);
    last_query_error_ = line;
    return;
  }
  last_query_error_.clear();
  std::vector<int64_t> keys;
  for (const auto& [key, job] : jobs_) keys.push_back(key);
  for (int64_t key : keys) {
    auto it = jobs_.find(key);
    if (it == jobs_.end() || it->second.id.empty()) continue;
    Job& job = it->second;
    if (auto k = q.known.find(job.id); k != q.known.end()) follow(job, k->second);
    else if (q.gone.count(job.id)) ended(job, std::nullopt);
  }
}

void SlurmExecutor::follow(Job& job, const SlurmJobInfo& info) {
  const std::string who = "#" + std::to_string(job.run.key) + " Slurm job " + job.id;
  if (job.restarts < 0) job.restarts = info.restarts;
  if (info.restarts > job.restarts) {
    job.restarts = info.restarts;
    job.running_since = 0;
    log_(who + " was requeued (restart " + std::to_string(info.restarts) + "); followed through its new run");
  }
  if (is_ended(info.state)) return ended(job, info);
  if (info.state == SlurmState::kRequeued || info.state == SlurmState::kPending) {
    job.running_since = 0;
    return;
  }
  if (info.state != SlurmState::kRunning) return;
  if (job.running_since == 0) {
    job.running_since = now_seconds();
    if (info.node != job.node) {
      job.node = info.node;
      log_(who + " running on " + info.node);
      on_job_(job.run.key, job.id, info.node);
    }
  }
  if (job.run.timeout_s > 0 && !job.timed_out && now_seconds() - job.running_since > job.run.timeout_s) {
    job.timed_out = true;
    log_(who + " ran past its timeout of " + std::to_string(static_cast<int>(job.run.timeout_s)) + " s");
    cancel(job);
  }
}

void SlurmExecutor::ended(Job& job, const std::optional<SlurmJobInfo>& info) {
  const int64_t key = job.run.key;
  auto exit = parse_job_exit_file(read_file(exit_file_of(job.run.log)).value_or(""));
  JobEnd end;
  end.job_id = job.id;
  end.node = exit ? exit->node : info ? info->node : job.node;
  const SlurmState state = info ? info->state : SlurmState::kUnknown;
  const std::string what = info ? std::string(slurm_state_name(state)) : "gone from the queue";
  // An exit file from a job that ended by itself: every stage ran (a cancel
  // that came after it changes nothing).
  const bool ran_out = exit && !exit->signalled &&
                       (state == SlurmState::kCompleted || state == SlurmState::kFailed || !info);
  // A job the daemon cancelled (a stop, its timeout) that had started: Slurm
  // may call it ended while its script still cleans up; its exit file says
  // when nothing of it is left.
  const bool started = !job.node.empty() || job.running_since > 0 || (info && !info->node.empty());
  if (job.cancel_sent && !exit && started) {
    const double now = now_seconds();
    if (job.ended_at == 0) {
      job.ended_at = now;
      log_("#" + std::to_string(key) + " Slurm job " + job.id + " " + what + "; waiting up to " +
           std::to_string(static_cast<int>(exit_file_wait_s_)) + " s for its exit file " +
           exit_file_of(job.run.log).string() + " (written once its processes are gone)");
    }
    if (now - job.ended_at < exit_file_wait_s_) return;
    log_("warning: #" + std::to_string(key) + " Slurm job " + job.id + " wrote no exit file " +
         std::to_string(static_cast<int>(exit_file_wait_s_)) + " s after it ended: a process of it may be left on " +
         (job.node.empty() ? std::string("its node") : job.node));
  }
  if (job.stop_requested && !ran_out) {
    end.kind = JobEnd::Kind::kStopped;
    end.error = "stopped: Slurm job " + job.id + " cancelled";
  } else if (ran_out) {
    end.kind = exit->code == 0 ? JobEnd::Kind::kCompleted : JobEnd::Kind::kFailed;
    end.exit_code = exit->code;
    end.error = exit->code == 0 ? "" : "Slurm job " + job.id + " failed: exit code " + std::to_string(exit->code);
  } else if (job.timed_out || state == SlurmState::kTimeout || state == SlurmState::kDeadline) {
    end.kind = JobEnd::Kind::kTimedOut;
    end.error = "Slurm job " + job.id + (job.timed_out ? " ran past its timeout of " +
                                                             std::to_string(static_cast<int>(job.run.timeout_s)) +
                                                             " s and was cancelled"
                                                       : " reached its time limit (" + what + ")");
  } else if (state == SlurmState::kFailed) {
    end.kind = JobEnd::Kind::kFailed;
    end.exit_code = info->exit_code;
    end.error = "Slurm job " + job.id + " failed (exit code " + std::to_string(info->exit_code) + ")";
  } else if (state == SlurmState::kCancelled) {
    end.kind = JobEnd::Kind::kCancelled;
    end.error = "Slurm job " + job.id + " was cancelled outside the daemon";
  } else {
    // Preempted, a failed node, or gone without an exit file: the machine's fault.
    if (job.resubmits < config_.max_resubmits && (!info || is_environment_end(state))) {
      ++job.resubmits;
      log_("#" + std::to_string(key) + " Slurm job " + job.id + " " + what + "; submitted again (" +
           std::to_string(job.resubmits) + " of " + std::to_string(config_.max_resubmits) + ")");
      job.id.clear();
      job.running_since = 0;
      job.restarts = 0;
      job.cancel_sent = false;
      return sbatch(key);
    }
    end.kind = JobEnd::Kind::kEnvironment;
    end.error = "Slurm job " + job.id + " " + what + (job.resubmits ? " after " + std::to_string(job.resubmits) +
                                                                          " resubmission(s)" : "");
  }
  finish(key, end);
}

void SlurmExecutor::give_up_unconfirmed_stops() {
  std::vector<int64_t> late;
  for (const auto& [key, job] : jobs_)
    if (job.stop_requested && now_seconds() - job.stop_at > stop_confirm_s_) late.push_back(key);
  for (int64_t key : late) {
    const Job& job = jobs_.at(key);
    const std::string id = job.id.empty() ? "(sbatch had not answered)" : job.id;
    log_("warning: #" + std::to_string(key) + " Slurm job " + id + " not confirmed ended " +
         std::to_string(static_cast<int>(stop_confirm_s_)) + " s after scancel; given up (check squeue)");
    finish(key, {JobEnd::Kind::kStopped, job.id, 0, job.node,
                 "stopped: Slurm job " + id + " cancelled, its end not confirmed"});
  }
}

void SlurmExecutor::finish(int64_t key, JobEnd end) {
  jobs_.erase(key);
  // Asynchronously, so a caller inside submit() never sees its own callback.
  boost::asio::post(io_, [this, key, end] { on_end_(key, end); });
}

}  // namespace ard
