// See run_plan.h.
#include "daemon/engine/run_plan.h"

#include <cstdio>

#include "daemon/decide/run_evidence.h"
#include "daemon/util/text.h"

namespace ard {

bool calibrates_boards(const Config& config) {
  if (!config.noise.calibrate || config.executor != ExecutorKind::kLocal) return false;
  for (const auto& stage : config.stages)
    if (stage.command.find("{budget_scale}") != std::string::npos) return true;
  return false;
}

std::string substitute(const std::string& command, const std::string& data_dir, double budget_s,
                       const std::string& worktree, double budget_scale) {
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.4f", budget_scale);
  const std::pair<std::string, std::string> vars[] = {{"{data_dir}", data_dir},
                                                      {"{budget}", format_number(budget_s)},
                                                      {"{worktree}", worktree},
                                                      {"{budget_scale}", scale}};
  std::string out = command;
  for (const auto& [key, value] : vars) {
    for (size_t pos = out.find(key); pos != std::string::npos; pos = out.find(key, pos + value.size()))
      out.replace(pos, key.size(), value);
  }
  return out;
}

std::vector<std::string> child_env(const std::vector<std::string>& env, const std::string& gpu) {
  if (gpu.empty()) return env;
  std::vector<std::string> out;
  for (const auto& e : env)
    if (e.rfind("CUDA_VISIBLE_DEVICES=", 0) != 0) out.push_back(e);
  out.push_back("CUDA_VISIBLE_DEVICES=" + gpu);
  return out;
}

std::string trial_purpose(const std::string& own, int reapplies) {
  return !own.empty() ? own : reapplies ? purpose::kReapplied : purpose::kCandidate;
}

std::string log_file_name(int64_t experiment, int repeat, int reapplies, int confirmations, const std::string& purpose,
                          const std::string& step) {
  std::string run = reapplies ? "-r" + std::to_string(reapplies) : "";
  if (confirmations) run += "-c" + std::to_string(confirmations);
  if (repeat) run += "-" + purpose + std::to_string(repeat);
  return std::to_string(experiment) + run + "-" + step + ".log";
}

RunStep build_step(const Config& config, std::vector<std::string> wrapper, std::filesystem::path log) {
  return RunStep{"build", config.build_command, std::move(wrapper), config.build_timeout_s, config.build_timeout_s,
                 std::move(log)};
}

std::vector<RunStep> job_steps(const Config& config, const std::string& data_dir, const std::string& worktree,
                               const std::filesystem::path& log) {
  std::vector<RunStep> steps;
  if (config.slurm.build == SlurmBuild::kJob)  // built on the node, first; its time is not the stages'
    steps.push_back(RunStep{"build", config.build_command, {}, config.build_timeout_s, 0, log});
  for (const auto& s : config.stages)
    steps.push_back(
        RunStep{s.name, substitute(s.command, data_dir, config.budget_s, worktree), {}, s.timeout_s, s.expected_s, log});
  return steps;
}

std::vector<RunStep> local_stages(const Config& config, const std::string& data_dir, const std::string& worktree,
                                  double budget_scale,
                                  const std::function<std::vector<std::string>(const std::string&)>& wrapper,
                                  const std::function<std::filesystem::path(const std::string&)>& log) {
  std::vector<RunStep> steps;
  for (const auto& s : config.stages) {
    const std::string command = substitute(s.command, data_dir, config.budget_s, worktree, budget_scale);
    steps.push_back(RunStep{s.name, command, wrapper(command), s.timeout_s, s.expected_s, log(s.name)});
  }
  return steps;
}

}  // namespace ard
