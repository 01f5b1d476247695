// A worktree slot: a checkout of the user's repository where a candidate is
// built and trained, and what the engine asks of one: reset it to a commit
// (deleted and created again where that fails), how it differs from the
// commit it must hold, its build output, the sandbox its children run in,
// and whether a fault of the machine lies under it.
//
// Which candidate holds which slot, and when a slot is reset, is the
// engine's; these are values in, values out.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/exec/environment_fault.h"
#include "daemon/git_repo.h"
#include "daemon/log.h"

namespace ard {

struct WorktreeSlot {
  std::filesystem::path path;
  /// The worktree; null after its re-creation failed (a full disk): the next reset tries again.
  std::unique_ptr<GitRepo> repo;
  int64_t holder = 0;          ///< the key of the candidate that holds it; 0: free
  bool discard_build = false;  ///< a tampered experiment ran here: its build directory goes at the next reset
};

/// The first slot that no candidate holds; -1 when every one is held.
int free_slot(const std::vector<WorktreeSlot>& slots);

/// The slot's build directory (build_dir under its path), created empty where
/// the build made none, so that a stage's sandbox binds a real directory.
std::filesystem::path build_output(const WorktreeSlot& slot, const std::string& build_dir);

/// Makes slot equal to commit (GitRepo::checkout_detached, build_dir kept
/// unless slot.discard_build); where that fails and files still differ, the
/// slot is deleted and created again from main (logged). Returns "" (and
/// clears discard_build), or why even that failed: a fault of the machine
/// (metadata that cannot be written with the files right) is never mended by
/// deleting the slot, so it is returned at once.
std::string reset_slot(WorktreeSlot& slot, GitRepo& main, const std::string& commit, const std::string& build_dir,
                       Log& log);

/// What in the slot differs from commit, each a path or a short phrase: its
/// files by content (build_dir aside), build_dir against build_listing
/// (stat_listing as the build left it; unset: not checked), and HEAD. Empty
/// when the slot holds commit.
std::vector<std::string> slot_differences(const WorktreeSlot& slot, const std::string& commit,
                                          const std::string& build_dir,
                                          const std::optional<std::string>& build_listing);

/// A fault of the machine where a slot's reset writes: the slot's disk, or
/// the repository's .git (repo: the user's checkout).
std::optional<EnvironmentFault> slot_fault(const WorktreeSlot& slot, const std::filesystem::path& repo);

/// The bubblewrap command line that confines a child of the slot, ending in
/// `--` (empty with sandbox.mode = "off"): the slot and its scratch directory
/// (created) writable, the data read-only, the build directory writable for the
/// build alone, the GPUs' device nodes bound in.
std::vector<std::string> slot_sandbox(const WorktreeSlot& slot, const SandboxConfig& sandbox,
                                      const std::filesystem::path& scratch, const std::string& build_dir, bool build,
                                      const std::string& data_dir, const std::string& command);

}  // namespace ard
