// `doctor`'s Slurm check (executor = "slurm"): a tiny probe job, submitted
// with the [slurm] table's partition, account and extra arguments (no gres:
// it needs no GPU), reads a token file written into the worktrees' directory.
// It passes when the job's output holds the token: the nodes see the
// worktrees (a shared filesystem). It waits for the job (sbatch --wait), so it
// is doctor's alone; start does not queue a probe.
#pragma once

#include "daemon/cli/doctor.h"

namespace ard {

/// Skipped with executor = "local". timeout_s bounds the wait in the queue.
Check check_slurm(const Config& config, Probe& probe, double timeout_s = 300);

}  // namespace ard
