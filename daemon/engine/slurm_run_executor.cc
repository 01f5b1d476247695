// See slurm_run_executor.h.
#include "daemon/engine/slurm_run_executor.h"

#include <boost/asio/post.hpp>

#include "daemon/slurm/job_outcome.h"

namespace ard {

SlurmRunExecutor::SlurmRunExecutor(boost::asio::io_context& io, const Config& config, std::vector<std::string> env,
                                   Log& log, const std::filesystem::path& dir)
    : io_(io),
      config_(config),
      scripts_dir_(dir),
      client_(std::make_unique<SlurmClient>(io, std::move(env), dir)),
      jobs_(
          io, config.slurm, *client_, log,
          [this](int64_t key, const std::string& job, const std::string& node) {
            on_job(static_cast<uint64_t>(key), job, node);
          },
          [this](int64_t key, const JobEnd& end) { on_end(static_cast<uint64_t>(key), end); }) {}

void SlurmRunExecutor::start(const Run& run, RunCallbacks callbacks) {
  const uint64_t key = ++next_key_;
  runs_[key] = InFlight{run, std::move(callbacks)};
  InFlight& f = runs_[key];
  try {
    if (std::string t = f.callbacks.check_slot(); !t.empty()) {
      RunEnd end;
      end.kind = RunEnd::Kind::kTampered;
      end.detail = "before the Slurm job: " + t;
      // The end is reported from the loop: start() never calls back into its caller's ended.
      boost::asio::post(io_, [this, key, end] { finish(key, end); });
      return;
    }
    SlurmRun job;
    job.key = static_cast<int64_t>(key);
    job.name = run.name;
    job.worktree = run.worktree;
    double expected = 0;
    for (const auto& s : run.stages) {
      job.stages.push_back({s.name, s.command});
      job.timeout_s += s.timeout_s;
      expected += s.expected_s;
    }
    job.log = run.stages.front().log;
    job.script = scripts_dir_ / (run.name + ".sh");
    job.title = run.title;
    f.callbacks.step_started(0, RunStep{"job", "", {}, job.timeout_s, expected, job.log});
    std::error_code ec;
    std::filesystem::remove(job.log, ec);
    starting_ = true;
    jobs_.submit(job);
    starting_ = false;
  } catch (...) {
    starting_ = false;
    runs_.erase(key);  // a callback threw before the job was submitted: no end will come
    throw;
  }
}

void SlurmRunExecutor::on_job(uint64_t key, const std::string& job_id, const std::string& node) {
  auto it = runs_.find(key);
  if (it != runs_.end()) it->second.callbacks.job(job_id, node);
}

void SlurmRunExecutor::on_end(uint64_t key, const JobEnd& end) {
  if (starting_) {  // start() never calls back into its caller's ended
    boost::asio::post(io_, [this, key, end] { on_end(key, end); });
    return;
  }
  auto it = runs_.find(key);
  if (it == runs_.end()) return;
  InFlight& f = it->second;
  const auto& log = f.run.stages.front().log;
  try {
    if (!end.node.empty()) f.callbacks.job(end.job_id, end.node);
    RunOutcome o = job_outcome(end, log, config_);
    if (o.exit == RunOutcome::Exit::kSucceeded) o.tampered = f.callbacks.check_slot();
    const RunEnd run_end = classify_end(o, log, f.run.end_settings);
    RunCallbacks callbacks = std::move(f.callbacks);
    runs_.erase(it);
    callbacks.ended(run_end);
    if (end.kind == JobEnd::Kind::kSubmitFailed) callbacks.fatal(end.error);
  } catch (...) {
    runs_.erase(key);  // a callback threw: the run is over, its end unreported (the caller recovers)
    throw;
  }
}

void SlurmRunExecutor::finish(uint64_t key, const RunEnd& end) {
  auto it = runs_.find(key);
  RunCallbacks callbacks = std::move(it->second.callbacks);
  runs_.erase(it);
  callbacks.ended(end);
}

}  // namespace ard
