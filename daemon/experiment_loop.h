// The experiment loop: reconcile what a previous daemon left, prepare the
// data, run the baseline, then forever: propose -> apply -> commit -> build ->
// stages -> parse -> keep or reset. Each step is written to the store before
// the next begins, and the branch tip is always the best kept commit between
// experiments, so a daemon killed anywhere restarts into a consistent state.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "proposers/editable.h"
#include "daemon/git_repo.h"
#include "daemon/log.h"
#include "daemon/process_runner.h"
#include "proposers/proposer.h"
#include "daemon/state_dir.h"
#include "daemon/store.h"

namespace ard {

/// Replaces {data_dir}, {budget} and {worktree} in a stage command.
std::string substitute(const std::string& command, const std::string& data_dir, double budget_s,
                       const std::string& worktree);

/// The compiler's error lines from a build log (or its tail when none match).
std::string compiler_errors(const std::string& log);

class ExperimentLoop {
 public:
  ExperimentLoop(const Config& config, const StateDir& state, Store& store, ProcessRunner& runner,
                 Proposer& proposer, Log& log, const std::atomic<bool>& stop);

  /// Runs until stop is set. Throws FatalError for what the loop cannot go on from.
  void run();

 private:
  struct Fix {  ///< a build failure the next proposal is asked to fix
    int64_t of = 0;
    int round = 0;
    std::vector<EditableFile> files;  ///< the editable files as the failed commit had them
  };

  void reconcile();
  void run_baseline();
  void run_experiment();
  /// Build, stages, summary, keep or reset. The experiment is committed at commit.
  /// fix_round: which fix of a build failure this experiment is (0: none).
  void evaluate(int64_t id, const std::string& commit, bool baseline, int fix_round);
  /// Ends an experiment that did not improve or failed: record, then reset.
  void fail(int64_t id, const std::string& final_status, const std::string& error, const std::string& log_tail,
            const std::string& failure_detail = "");
  /// Runs one child for experiment id, recording its group while it runs.
  ProcessResult run_child(int64_t id, const std::string& command, double timeout_s,
                          const std::filesystem::path& log);
  /// Non-empty: the files outside the editable paths that differ from the base.
  std::string tamper_check();
  std::string read_program(std::string& hash);
  std::vector<HistoryEntry> history(int64_t exclude_id);
  void wait(double seconds);

  const Config& config_;
  const StateDir& state_;
  Store& store_;
  ProcessRunner& runner_;
  Proposer& proposer_;
  Log& log_;
  const std::atomic<bool>& stop_;
  EditablePaths editable_;
  std::vector<std::string> env_;

  std::unique_ptr<GitRepo> repo_;      ///< the user's checkout (read only, but for info/exclude)
  std::unique_ptr<GitRepo> worktree_;  ///< .autoresearchd/worktrees/<tag>
  std::string base_commit_;
  std::string best_commit_;
  std::optional<double> best_val_;
  std::string data_dir_;
  int64_t session_ = 0;
  std::optional<Failure> last_failure_;
  std::optional<Fix> fix_;
  std::optional<int64_t> pending_;  ///< a proposing experiment still waiting for a proposal
  std::string last_wait_message_;
};

}  // namespace ard
