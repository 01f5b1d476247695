// A Slurm job's end (slurm_executor.h's JobEnd) in run_end.h's terms, for the
// engine's live Slurm runs and for Slurm recovery at restart alike, so that a
// job is classified the same way whether the daemon saw it end or found it
// ended after a restart.
#pragma once

#include <filesystem>

#include "daemon/config.h"
#include "daemon/engine/run_end.h"
#include "daemon/slurm/slurm_executor.h"

namespace ard {

/// log: the job's log. With `slurm.build = "job"`, a failure or a timeout while
/// the log's last stage marker is the build's is a build failure. A job
/// cancelled outside the daemon, or lost to the machine (preempted, its node
/// failed past the resubmits), is stopped: not the experiment's fault. The
/// slot's tamper check is the caller's (only the live engine has the slot).
RunOutcome job_outcome(const JobEnd& end, const std::filesystem::path& log, const Config& config);

}  // namespace ard
