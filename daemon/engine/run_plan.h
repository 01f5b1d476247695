// The steps of the Runs the engine hands its executors (run.h), as values
// built from the config: the build; the stages on a GPU, each command with its
// placeholders filled and behind the slot's sandbox; a Slurm job's steps; the
// children's environment on a GPU; the trial's purpose; the logs' names.
//
// Which candidate runs where and when is the engine's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/engine/run.h"

namespace ard {

/// Whether the engine calibrates its boards (noise_rounds.h): `noise.calibrate`,
/// a stage that passes {budget_scale} on, and the local executor. A Slurm
/// worker is a job slot whose jobs land on any node, so a scale per worker
/// would calibrate nothing; there every run gets scale 1.
bool calibrates_boards(const Config& config);

/// Replaces {data_dir}, {budget}, {worktree} and {budget_scale} (the board
/// calibration, noise_rounds.h) in a stage command, then each {name} of
/// rung_values (rung_placeholders).
std::string substitute(const std::string& command, const std::string& data_dir, double budget_s,
                       const std::string& worktree, double budget_scale = 1,
                       const std::map<std::string, std::string>& rung_values = {});

/// The rung of index `rung` (Config::rungs): rung 0 is always base_rung(config),
/// the experiment as the config gives it now. Throws std::out_of_range past the ladder.
RungConfig rung_at(const Config& config, size_t rung);

/// The placeholders a rung's build and stage commands receive besides
/// substitute's own: {rung} (its index), {depth_scale} (the rung's, "1" where
/// it gives none, rung 0 included) and each of its values, as written.
std::map<std::string, std::string> rung_placeholders(const RungConfig& rung, size_t index);

/// A child's environment on gpu: env with CUDA_VISIBLE_DEVICES=gpu in place
/// of any it had; env as it is for a worker that sets no device (gpu "").
std::vector<std::string> child_env(const std::vector<std::string>& env, const std::string& gpu);

/// A trial's purpose (run_evidence.h): the repeat's or confirmation's own,
/// else reapplied for a change re-applied onto a newer best, else candidate.
std::string trial_purpose(const std::string& own, int reapplies);

/// A step's log file name: "<experiment>[-r<reapplies>][-c<confirmations>][-<purpose><repeat>]-<step>.log",
/// where the best's n-th repeat run (repeat n > 0) names its purpose too.
std::string log_file_name(int64_t experiment, int repeat, int reapplies, int confirmations, const std::string& purpose,
                          const std::string& step);

/// The build: build_command behind wrapper, build_timeout_s (also its expected time), into log.
/// At rung 0: build_command with rung 0's placeholders filled.
RunStep build_step(const Config& config, std::vector<std::string> wrapper, std::filesystem::path log);
/// The build at a rung: build_command with the rung's placeholders filled, the rung's build timeout.
RunStep build_step(const Config& config, size_t rung, std::vector<std::string> wrapper, std::filesystem::path log);

/// A Slurm job's steps, all into one log and unwrapped (the node confines
/// them): with slurm.build = "job" the build first (its time is not the
/// stages'), then every stage with {data_dir}, {budget} and {worktree} filled
/// ({budget_scale} is 1: a job lands on any node).
std::vector<RunStep> job_steps(const Config& config, const std::string& data_dir, const std::string& worktree,
                               const std::filesystem::path& log);
/// The same at a rung: its budget for {budget}, its placeholders, its build and stage timings.
std::vector<RunStep> job_steps(const Config& config, size_t rung, const std::string& data_dir,
                               const std::string& worktree, const std::filesystem::path& log);

/// The local stages in order, each command filled for worktree and the
/// board's budget_scale; wrapper(command) gives its sandbox, log(stage name)
/// its log file.
std::vector<RunStep> local_stages(const Config& config, const std::string& data_dir, const std::string& worktree,
                                  double budget_scale,
                                  const std::function<std::vector<std::string>(const std::string&)>& wrapper,
                                  const std::function<std::filesystem::path(const std::string&)>& log);
/// The same at a rung: its budget for {budget}, its placeholders, its stages' timings.
/// The overload without a rung is rung 0.
std::vector<RunStep> local_stages(const Config& config, size_t rung, const std::string& data_dir,
                                  const std::string& worktree, double budget_scale,
                                  const std::function<std::vector<std::string>(const std::string&)>& wrapper,
                                  const std::function<std::filesystem::path(const std::string&)>& log);

}  // namespace ard
