// The data step: once per daemon start, build the trainer in the worktree and
// run the harness's prepare binary on the configured inputs; its last line
// `data_dir: PATH` gives the {data_dir} of the stage commands.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "daemon/config.h"
#include "daemon/exec/process_runner.h"
#include "daemon/log.h"
#include "daemon/store/state_dir.h"
#include "daemon/store/store.h"

namespace ard {

/// The prepare command line for config, with inputs resolved against the repo.
std::string prepare_command(const Config& config);

/// Builds the worktree as it stands and runs prepare. Returns the data dir;
/// throws FatalError naming the cause (with the child's own error line).
/// With a store, each child's group is recorded there (GroupRecord) before
/// its command runs, so a restart after a SIGKILL kills a prepare left running.
std::string prepare_data(const Config& config, const std::filesystem::path& worktree, const StateDir& state,
                         ProcessRunner& runner, Log& log, Store* store = nullptr);

/// The data step of a start as the loop sees it: prepare_data on a thread of
/// its own, running until its end is handed back, and stoppable.
class DataStep {
 public:
  /// Starts prepare_data on a thread (once); then done(dir, error) is handed to post
  /// (which runs it on the caller's loop). error: what the step threw, "" when
  /// it succeeded. The store records the groups from that thread (its
  /// connection is in SQLite's serialized mode).
  void start(const Config& config, const std::filesystem::path& worktree, const StateDir& state, Log& log,
             Store& store, std::function<void(std::function<void()>)> post,
             std::function<void(const std::string& dir, const std::string& error)> done);
  /// Ends its children; its end (an error) is handed back soon after.
  void stop();
  /// Started, and its end not handed back yet.
  bool running() const { return running_; }

 private:
  std::unique_ptr<StopFlag> stop_;
  bool running_ = false;
};

}  // namespace ard
