// See job_outcome.h.
#include "daemon/slurm/job_outcome.h"

#include "daemon/exec/process_runner.h"
#include "daemon/slurm/slurm_client.h"

namespace ard {

RunOutcome job_outcome(const JobEnd& end, const std::filesystem::path& log, const Config& config) {
  using Exit = RunOutcome::Exit;
  RunOutcome o;
  o.last_stage = config.stages.empty() ? "" : config.stages.back().name;
  o.what = end.error;
  const bool in_build = (end.kind == JobEnd::Kind::kFailed || end.kind == JobEnd::Kind::kTimedOut) &&
                        config.slurm.build == SlurmBuild::kJob && last_job_stage(file_tail(log, 400, 65536)) == "build";
  switch (end.kind) {
    case JobEnd::Kind::kCompleted: o.exit = Exit::kSucceeded; break;
    case JobEnd::Kind::kTimedOut:
      o.exit = Exit::kTimedOut;
      if (in_build) o.build = true, o.what = "build timed out: " + end.error;
      break;
    case JobEnd::Kind::kFailed:
      o.exit = Exit::kFailed;
      if (in_build) o.build = true, o.what = "build failed (exit code " + std::to_string(end.exit_code) + ")";
      break;
    case JobEnd::Kind::kStopped:
    case JobEnd::Kind::kCancelled:
    case JobEnd::Kind::kEnvironment:
    case JobEnd::Kind::kSubmitFailed: o.exit = Exit::kStopped; break;
  }
  return o;
}

}  // namespace ard
