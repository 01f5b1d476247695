// See workspace.h.
#include "daemon/engine/workspace.h"

#include "daemon/exec/slot_files.h"
#include "daemon/util/text.h"

namespace ard {

Workspace::Workspace(const Config& config, const StateDir& state, Log& log)
    : config_(config), state_(state), log_(log), branch_ref_("refs/heads/autoresearch/" + config.tag) {}

void Workspace::open() {
  repo_ = std::make_unique<GitRepo>(config_.repo);
  repo_->exclude("/.autoresearchd/");
}

std::string Workspace::exp_ref(int64_t id) const {
  return "refs/autoresearch/" + config_.tag + "/exp/" + std::to_string(id);
}

bool Workspace::open_slots(size_t n, const std::string& commit, const std::function<bool()>& stopped) {
  // What an older daemon's children left in the scratch directories goes (they are tmpfs mounts now).
  if (std::string e = remove_tree_nofollow(state_.root / "scratch"); !e.empty()) log_("warning: scratch: " + e);
  for (size_t i = 0; i < n; ++i) {
    if (stopped()) return false;
    std::string name = i == 0 ? config_.tag : config_.tag + "+" + std::to_string(i);
    auto path = state_.root / "worktrees" / name;
    // Checking out the best also drops whatever an interrupted experiment left.
    slots_.push_back({path, repo_->open_detached_worktree(name, path, commit, SlotKeep{{config_.build_dir}}), 0});
  }
  return true;
}

std::string Workspace::reset(int slot, const std::string& commit) {
  return reset_slot(slots_[slot], *repo_, commit, config_.build_dir, log_);
}

std::string Workspace::release(int slot, const std::string& best) {
  slots_[slot].holder = 0;
  std::string e = reset(slot, best);
  if (e.empty()) return "";
  if (slot_fault(slots_[slot], config_.repo)) {
    log_("warning: cannot reset a worktree to the best yet: " + e);
    return "";
  }
  return "cannot reset a worktree to the best: " + e;
}

std::string Workspace::tamper_check(int slot, int64_t id, const std::string& commit,
                                    const std::optional<std::string>& build_listing, const std::string& best) {
  std::vector<std::string> bad = slot_differences(slots_[slot], commit, config_.build_dir, build_listing);
  if (repo_->ref_target(branch_ref_) != best) bad.push_back("autoresearch/" + config_.tag + " (moved)");
  if (repo_->ref_target(exp_ref(id)) != commit) bad.push_back(exp_ref(id) + " (moved)");
  if (bad.empty()) return "";
  return "the worktree differs from the experiment's commit: " + join_list(bad, 10);
}

void Workspace::restore_refs(int64_t id, const std::string& commit, const std::string& best) {
  try {
    if (repo_->ref_target(branch_ref_) != best) {
      repo_->set_ref(branch_ref_, best, "autoresearchd: put back after a tampered experiment");
      log_("autoresearch/" + config_.tag + " was moved by #" + std::to_string(id) + "; put back at " +
           short_commit(best));
    }
    if (!commit.empty() && repo_->ref_target(exp_ref(id)) != commit)
      repo_->set_ref(exp_ref(id), commit, "autoresearchd: put back after a tampered experiment");
  } catch (const GitError& e) {
    log_(std::string("warning: cannot put a moved ref back: ") + e.what());
  }
}

std::vector<std::string> Workspace::sandbox(int slot, bool build, const std::string& data_dir,
                                            const std::string& command) const {
  return slot_sandbox(slots_[slot], config_.sandbox, state_.root / "scratch" / std::to_string(slot), config_.build_dir,
                      build, data_dir, command);
}

}  // namespace ard
