// See slots.h.
#include "daemon/engine/slots.h"

#include "daemon/exec/sandbox.h"
#include "daemon/exec/slot_files.h"
#include "daemon/util/text.h"

namespace ard {

int free_slot(const std::vector<WorktreeSlot>& slots) {
  for (size_t i = 0; i < slots.size(); ++i)
    if (!slots[i].holder) return static_cast<int>(i);
  return -1;
}

std::filesystem::path build_output(const WorktreeSlot& slot, const std::string& build_dir) {
  const std::filesystem::path out = slot.path / build_dir;
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(out, ec))) std::filesystem::create_directory(out, ec);
  return out;
}

std::string reset_slot(WorktreeSlot& slot, GitRepo& main, const std::string& commit, const std::string& build_dir,
                       Log& log) {
  const SlotKeep keep = slot.discard_build ? SlotKeep{} : SlotKeep{{build_dir}};
  if (slot.repo) {  // none: its re-creation failed before (a full disk); it is tried again
    try {
      slot.repo->checkout_detached(commit, keep);
      slot.discard_build = false;
      return "";
    } catch (const GitError& e) {
      // Files equal to the commit: git's own metadata (HEAD, the index) could not be written, a
      // fault of the machine (a full disk under .git) that deleting the slot would not mend.
      std::vector<std::string> left;
      try {
        left = slot.repo->differences(commit, keep);
      } catch (const std::exception&) {
        left = {"."};
      }
      if (left.empty()) return e.what();
      log(std::string("slot ") + slot.path.filename().string() + " cannot be made clean (" + e.what() +
          "): deleted and created again");
    }
  }
  try {
    slot.repo.reset();
    slot.repo = main.recreate_worktree(slot.path.filename().string(), slot.path, commit);
    slot.discard_build = false;
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::vector<std::string> slot_differences(const WorktreeSlot& slot, const std::string& commit,
                                          const std::string& build_dir,
                                          const std::optional<std::string>& build_listing) {
  std::vector<std::string> bad = slot.repo->differences(commit, SlotKeep{{build_dir}});
  if (build_listing && stat_listing(slot.path / build_dir) != *build_listing)
    bad.push_back(build_dir + " (changed after the build)");
  if (slot.repo->head() != commit) bad.push_back("HEAD (moved to " + short_commit(slot.repo->head()) + ")");
  return bad;
}

std::optional<EnvironmentFault> slot_fault(const WorktreeSlot& slot, const std::filesystem::path& repo) {
  if (auto fault = probe_write(slot.path)) return fault;
  return probe_write(repo / ".git");
}

std::vector<std::string> slot_sandbox(const WorktreeSlot& slot, const SandboxConfig& sandbox,
                                      const std::filesystem::path& scratch, const std::string& build_dir, bool build,
                                      const std::string& data_dir, const std::string& command) {
  if (sandbox.mode != SandboxMode::kBwrap) return {};
  SandboxSpec box;
  box.worktree = slot.path;
  box.scratch = scratch;
  std::filesystem::create_directories(box.scratch);
  // Both are tmpfs mounts of the sandbox: capped, empty at every start, gone when the child ends.
  box.tmp_bytes = static_cast<uint64_t>(sandbox.tmp_mb) << 20;
  box.scratch_bytes = static_cast<uint64_t>(sandbox.scratch_mb) << 20;
  for (const auto& p : sandbox.read_only) box.system_read_only.push_back(p);
  if (!build) {
    // The build is the only writer of its output: a stage runs what was built, and cannot leave
    // a binary for the next experiment. The tamper check before the stage saw a real directory.
    box.read_only.push_back(build_output(slot, build_dir));
  }
  if (!data_dir.empty()) box.read_only.push_back(data_dir);
  box.devices = nvidia_devices();
  box.network = sandbox.network;
  return sandbox_wrapper(box, command);
}

}  // namespace ard
