// A restart after a daemon that ran Slurm jobs was killed: the jobs of trials
// it left open, found by their recorded ids (whatever the executor is now). With `slurm.on_restart = "adopt"` they
// are followed to their end; with "cancel" they are cancelled (scancel) and
// followed until Slurm lets them go. A job that ended with every stage passed
// (while the daemon was down, or since) has its summary recorded: the
// experiment becomes `evaluated` and its trial `ok`, so reconcile's
// finish_evaluated gives it the keep decision the daemon would have made. Its end is
// classified as the live engine classifies it (job_outcome.h, run_end.h): a
// failed job finishes its experiment (crash, timeout, tampered, build_fail); an
// interrupted one is left for reconcile to mark interrupted. The jobs run in worktree slots
// that the restart checks out afresh, so start waits for them (on an event
// loop of its own, the executor's timers, no blocking wait).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/store/store.h"

namespace ard {

/// Runs before reconcile. env: the environment for Slurm's commands;
/// scratch: where their output is captured and job scripts live.
void recover_slurm_jobs(const Config& config, Store& store, const std::vector<std::string>& env,
                        const std::filesystem::path& scratch, Log& log);

}  // namespace ard
