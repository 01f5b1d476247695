// What a start settles of the sessions before it, in the store, before
// anything runs: a killed daemon's session, trials, child groups and LLM
// calls are closed; a measured result gets the decision it would have had
// (evaluated_reconcile.h); every other unfinished experiment ends as
// `interrupted` (its orphaned group killed), or is deleted when it was only
// waiting for a proposal; and the plan of what runs again (resume.h).
// The branch and the best are settle_tag's (tag_base.h).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "daemon/decide/keep_rule.h"
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

}  // namespace ard
