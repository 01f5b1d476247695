// The workspace the engine's runs happen in: the user's checkout (read only,
// but for info/exclude), its worktree slots (slots.h), and the refs of the tag
// that the engine moves: the branch autoresearch/<tag> (the chain of kept
// commits) and each experiment's refs/autoresearch/<tag>/exp/<id>.
//
// A child may change what it can reach: here the engine asks what changed
// (a tamper check) and puts back what a child moved. Which candidate holds
// which slot, and when, stays the engine's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/engine/slots.h"
#include "daemon/git_repo.h"
#include "daemon/log.h"
#include "daemon/store/state_dir.h"

namespace ard {

class Workspace {
 public:
  Workspace(const Config& config, const StateDir& state, Log& log);

  /// Opens the user's checkout (config.repo) and keeps the state directory out of its status.
  void open();
  GitRepo& repo() { return *repo_; }

  /// refs/heads/autoresearch/<tag>.
  const std::string& branch_ref() const { return branch_ref_; }
  /// refs/autoresearch/<tag>/exp/<id>.
  std::string exp_ref(int64_t id) const;

  /// Checks out n slots at commit (the first named after the tag, the others
  /// <tag>+i), after removing what an older daemon's children left in the
  /// scratch directories. stopped() is asked before each checkout (they take
  /// seconds each): false when it said yes.
  bool open_slots(size_t n, const std::string& commit, const std::function<bool()>& stopped);
  std::vector<WorktreeSlot>& slots() { return slots_; }
  WorktreeSlot& slot(int i) { return slots_[i]; }
  const WorktreeSlot& slot(int i) const { return slots_[i]; }

  /// reset_slot (slots.h) of slot i to commit: "" or why it failed.
  std::string reset(int slot, const std::string& commit);
  /// Frees slot i and resets it to best, so that nothing a child left outlives
  /// it. Returns "" or the error that must stop the daemon: a reset that fails
  /// on a fault of the machine (a full disk) is logged as a warning and tried
  /// again before the slot's next use.
  std::string release(int slot, const std::string& best);

  /// What in slot i (slot_differences) and of the refs differs from what
  /// experiment id runs: its commit, with the branch at best. "" when nothing.
  std::string tamper_check(int slot, int64_t id, const std::string& commit,
                           const std::optional<std::string>& build_listing, const std::string& best);
  /// Points the branch back at best and experiment id's ref back at commit,
  /// where a child moved them (logged).
  void restore_refs(int64_t id, const std::string& commit, const std::string& best);

  /// The sandbox of a child of slot i (slot_sandbox): its scratch directory
  /// under the state directory, the data read-only.
  std::vector<std::string> sandbox(int slot, bool build, const std::string& data_dir,
                                   const std::string& command) const;

 private:
  const Config& config_;
  const StateDir& state_;
  Log& log_;
  std::string branch_ref_;
  std::unique_ptr<GitRepo> repo_;
  std::vector<WorktreeSlot> slots_;
};

}  // namespace ard
