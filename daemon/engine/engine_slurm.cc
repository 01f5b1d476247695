// The engine's Slurm executor (executor = "slurm"): an experiment's stages,
// after its local build, as one Slurm job (slurm_executor.h). Engine members,
// kept out of engine.cc: the job is submitted where a local worker would start
// its first stage, its id goes to the store as soon as sbatch returns, and its
// end comes back here, where it is read as the local stages' exits are.
#include <filesystem>

#include "daemon/engine/engine.h"
#include "daemon/slurm/job_outcome.h"
#include "daemon/slurm/slurm_executor.h"
#include "daemon/util/clock.h"

namespace ard {

void Engine::open_slurm() {
  slurm_client_ = std::make_unique<SlurmClient>(io_, slurm_env(env_), state_.root / "slurm");
  slurm_ = std::make_unique<SlurmExecutor>(
      io_, config_.slurm, *slurm_client_, log_,
      [this](int64_t id, const std::string& job, const std::string& node) { on_job_id(id, job, node); },
      [this](int64_t id, const JobEnd& end) { on_job_end(id, end); });
}

void Engine::start_job(Candidate& c) {
  if (std::string t = tamper_check(c); !t.empty()) return fail(c, status::kTampered, "before the Slurm job: " + t, "");
  SlurmRun run;
  run.key = c.id;
  run.name = "ard-" + config_.tag + "-" + std::to_string(c.id) + "-t" + std::to_string(c.trial);
  run.worktree = slots_[c.slot].path;
  double expected = 0;
  if (config_.slurm.build == SlurmBuild::kJob) {  // built on the node, first
    run.stages.push_back({"build", config_.build_command});
    run.timeout_s += config_.build_timeout_s;
  }
  for (const auto& s : config_.stages) {
    run.stages.push_back({s.name, substitute(s.command, data_dir_, config_.budget_s, run.worktree.string())});
    run.timeout_s += s.timeout_s;
    expected += s.expected_s;
  }
  run.log = log_path(c, "job");
  run.script = state_.root / "slurm" / (run.name + ".sh");
  run.title = "experiment " + std::to_string(c.id) + ", trial " + std::to_string(c.trial) + ", commit " + c.commit;
  double now = now_seconds();
  // The deadline counts from the submission; the queue's wait is not the experiment's.
  store_.set_stage(c.id, ExperimentState::kRunning, "job", now, now + run.timeout_s, now + expected);
  std::error_code ec;
  std::filesystem::remove(run.log, ec);
  slurm_->submit(run);
}

void Engine::built_in_job(Candidate& c) {
  c.phase = Phase::kBuilt;
  store_.set_state(c.id, ExperimentState::kBuilt);
  schedule_pump();
}

void Engine::on_job_id(int64_t id, const std::string& job, const std::string& node) {
  Candidate* c = find(id);
  if (!c || !c->trial) return;
  if (node.empty()) store_.set_trial_job(c->trial, job, log_path(*c, "job").string());
  else store_.set_trial_node(c->trial, node);
}

void Engine::on_job_end(int64_t id, const JobEnd& end) {
  Candidate* c = find(id);
  if (!c) return;
  const auto log = log_path(*c, "job");
  if (!end.node.empty() && c->trial) store_.set_trial_node(c->trial, end.node);
  RunOutcome o = job_outcome(end, log, config_);
  if (o.exit == RunOutcome::Exit::kSucceeded) o.tampered = tamper_check(*c);
  end_run(*c, classify_end(o, log, end_settings()));
  if (end.kind == JobEnd::Kind::kSubmitFailed) fatal(end.error);
}

}  // namespace ard
