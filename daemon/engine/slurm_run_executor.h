// The Slurm executor behind the Executor seam (executor = "slurm"): a run's
// steps as one Slurm job (slurm_executor.h), its id and node reported as soon
// as they are known, its end read as the local stages' exits are
// (job_outcome, then classify_end). The slot is checked before the job is
// submitted and after it passed, as the local executor checks it around its
// stages. A run's steps are the job's stages in order (with
// `slurm.build = "job"`, the build first); their logs are the job's one log.
#pragma once

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <map>
#include <memory>

#include "daemon/config.h"
#include "daemon/engine/executor.h"
#include "daemon/log.h"
#include "daemon/slurm/slurm_client.h"
#include "daemon/slurm/slurm_executor.h"

namespace ard {

class SlurmRunExecutor : public Executor {
 public:
  /// Its own Slurm client runs sbatch, squeue and scancel with env (slurm_env)
  /// and dir as its scratch directory; the job scripts are written to dir too (Run::name + ".sh").
  SlurmRunExecutor(boost::asio::io_context& io, const Config& config, std::vector<std::string> env, Log& log,
                   const std::filesystem::path& dir);
  /// Reports one step, "job", with the stages' timeouts and expected seconds
  /// added up (the deadline counts from the submission); a slot that differs
  /// from the commit ends the run tampered ("before the Slurm job: <why>")
  /// without a job. A job sbatch refused ends the run, then calls fatal.
  void start(const Run& run, RunCallbacks callbacks) override;
  /// Cancels every job; each ends stopped once Slurm says it ended.
  void stop_all() override { jobs_.stop_all(); }
  size_t active() const override { return runs_.size(); }

 private:
  struct InFlight {
    Run run;
    RunCallbacks callbacks;
  };
  void on_job(uint64_t key, const std::string& job_id, const std::string& node);
  void on_end(uint64_t key, const JobEnd& end);
  /// Forgets the run, then reports its end.
  void finish(uint64_t key, const RunEnd& end);

  boost::asio::io_context& io_;
  const Config& config_;
  std::filesystem::path scripts_dir_;
  std::unique_ptr<SlurmClient> client_;  ///< before jobs_, which uses it until it is gone
  SlurmExecutor jobs_;
  std::map<uint64_t, InFlight> runs_;
  uint64_t next_key_ = 0;
  bool starting_ = false;  ///< inside start(): an end that comes now (a script that cannot be written) is posted
};

}  // namespace ard
