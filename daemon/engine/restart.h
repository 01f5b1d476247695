// What a start settles of the sessions before it, in the store, before
// anything runs: a killed daemon's session, trials, child groups and LLM
// calls are closed; a measured result gets the decision it would have had
// (evaluated_reconcile.h); every other unfinished experiment ends as
// `interrupted` (its orphaned group killed), or is deleted when it was only
// waiting for a proposal; and the plan of what runs again (resume.h), each
// taken up as a candidate once the loop begins.
// The branch and the best are settle_tag's (tag_base.h).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "daemon/decide/keep_rule.h"
#include "daemon/config.h"
#include "daemon/engine/candidate.h"
#include "daemon/engine/tag_base.h"
#include "daemon/git_repo.h"
#include "daemon/log.h"
#include "daemon/engine/resume.h"
#include "daemon/store/store.h"

namespace ard {

/// What settle_last_sessions needs of the config.
struct SettleSettings {
  std::string tag;
  std::string metric;      ///< the metric's name, for the log lines
  KeepSettings keep;       ///< the keep rule a measured result is decided by
  double prior_sigma = 0;  ///< noise.prior_sigma
  std::filesystem::path state_root;  ///< where a group recorded before leader start times must run to be killed
};

/// Settles the store as above; every step is one line to `log` (the
/// daemon.log's `reconcile: ...` lines). Returns what the last session
/// left interrupted that runs again (resume.h).
std::vector<Resume> settle_last_sessions(Store& store, const SettleSettings& settings,
                                         const std::function<void(const std::string&)>& log);

/// What the tag's last session leaves interrupted that the next start runs
/// again (plan_resumes); nothing before the first session.
ResumePlan last_session_resumes(Store& store, const std::string& tag);

/// Takes r up again: its row resumed in the store, its ref (exp_ref) back at
/// its commit, and the candidate it becomes (logged: it runs again from its
/// commit, or the judge rules on its finished runs again). nullopt, logged:
/// its commit is not in repo, and it stays interrupted.
std::optional<Candidate> take_up(const Resume& r, Store& store, GitRepo& repo, const std::string& exp_ref,
                                 const std::function<void(const std::string&)>& log);

/// Where a start begins, settled before anything runs.
struct StartPoint {
  std::vector<Resume> resumes;  ///< the interrupted experiments to take up (take_up), oldest first
  TagChain chain;               ///< the tag's base and best (settle_tag)
};

/// Settles the sessions before this one: a killed daemon's Slurm jobs first
/// (adopted or cancelled and their results recorded, whatever the executor is
/// now: recover_slurm_jobs, with slurm_env its client's environment), then
/// their rows (settle_last_sessions), then the tag (settle_tag, rebased onto
/// HEAD with rebase); each step logged.
StartPoint settle_start(Store& store, GitRepo& repo, const Config& config, const std::filesystem::path& state_root,
                        const std::vector<std::string>& slurm_env, bool rebase, Log& log);

/// Opens this session's row with the workers' GPUs (gpus; one "": a worker
/// that sets no device), logs its first line, and returns its id.
int64_t open_session(Store& store, const Config& config, const std::string& best, const std::string& proposer,
                     const std::vector<std::string>& gpus, const std::function<void(const std::string&)>& log);

}  // namespace ard
