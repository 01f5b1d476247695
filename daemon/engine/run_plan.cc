// See run_plan.h.
#include "daemon/engine/run_plan.h"

#include <cstdio>
#include <stdexcept>

#include "daemon/decide/run_evidence.h"
#include "daemon/util/text.h"

namespace ard {

bool calibrates_boards(const Config& config) {
  if (!config.noise.calibrate || config.executor != ExecutorKind::kLocal) return false;
  for (const auto& stage : config.stages)
    if (stage.command.find("{budget_scale}") != std::string::npos) return true;
  return false;
}

namespace {

void replace_all(std::string& text, const std::string& key, const std::string& value) {
  for (size_t pos = text.find(key); pos != std::string::npos; pos = text.find(key, pos + value.size()))
    text.replace(pos, key.size(), value);
}

/// The rung's timing of a stage: the one it names, else the stage's own scaled by the rung's budget.
StageTiming timing_at(const Config& config, const RungConfig& rung, const StageConfig& stage) {
  for (const StageTiming& t : rung.stages)
    if (t.stage == stage.name) return t;
  return rung_timing(stage, config.budget_s, rung.budget_s);
}

}  // namespace

std::string substitute(const std::string& command, const std::string& data_dir, double budget_s,
                       const std::string& worktree, double budget_scale,
                       const std::map<std::string, std::string>& rung_values) {
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.4f", budget_scale);
  const std::pair<std::string, std::string> vars[] = {{"{data_dir}", data_dir},
                                                      {"{budget}", format_number(budget_s)},
                                                      {"{worktree}", worktree},
                                                      {"{budget_scale}", scale}};
  std::string out = command;
  for (const auto& [key, value] : vars) replace_all(out, key, value);
  for (const auto& [name, value] : rung_values) replace_all(out, "{" + name + "}", value);
  return out;
}

RungConfig rung_at(const Config& config, size_t rung) {
  if (rung == 0) return base_rung(config);
  if (rung >= config.rungs.size())
    throw std::out_of_range("rung " + std::to_string(rung) + ": the ladder has " + std::to_string(config.rungs.size()) +
                            " rung(s)");
  return config.rungs[rung];
}

std::map<std::string, std::string> rung_placeholders(const RungConfig& rung, size_t index) {
  std::map<std::string, std::string> out = rung.values;
  out["rung"] = std::to_string(index);
  out.emplace("depth_scale", format_number(rung.depth_scale));  // the value as written wins
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
  return build_step(config, 0, std::move(wrapper), std::move(log));
}

RunStep build_step(const Config& config, size_t rung, std::vector<std::string> wrapper, std::filesystem::path log) {
  const RungConfig r = rung_at(config, rung);
  std::string command = config.build_command;
  for (const auto& [name, value] : rung_placeholders(r, rung)) replace_all(command, "{" + name + "}", value);
  return RunStep{"build", command, std::move(wrapper), r.build_timeout_s, r.build_timeout_s, std::move(log)};
}

std::vector<RunStep> job_steps(const Config& config, const std::string& data_dir, const std::string& worktree,
                               const std::filesystem::path& log) {
  return job_steps(config, 0, data_dir, worktree, log);
}

std::vector<RunStep> job_steps(const Config& config, size_t rung, const std::string& data_dir,
                               const std::string& worktree, const std::filesystem::path& log) {
  const RungConfig r = rung_at(config, rung);
  const auto values = rung_placeholders(r, rung);
  std::vector<RunStep> steps;
  if (config.slurm.build == SlurmBuild::kJob) {  // built on the node, first; its time is not the stages'
    RunStep build = build_step(config, rung, {}, log);
    build.expected_s = 0;
    steps.push_back(std::move(build));
  }
  for (const auto& s : config.stages) {
    const StageTiming t = timing_at(config, r, s);
    steps.push_back(
        RunStep{s.name, substitute(s.command, data_dir, r.budget_s, worktree, 1, values), {}, t.timeout_s, t.expected_s, log});
  }
  return steps;
}

std::vector<RunStep> local_stages(const Config& config, const std::string& data_dir, const std::string& worktree,
                                  double budget_scale,
                                  const std::function<std::vector<std::string>(const std::string&)>& wrapper,
                                  const std::function<std::filesystem::path(const std::string&)>& log) {
  return local_stages(config, 0, data_dir, worktree, budget_scale, wrapper, log);
}

std::vector<RunStep> local_stages(const Config& config, size_t rung, const std::string& data_dir,
                                  const std::string& worktree, double budget_scale,
                                  const std::function<std::vector<std::string>(const std::string&)>& wrapper,
                                  const std::function<std::filesystem::path(const std::string&)>& log) {
  const RungConfig r = rung_at(config, rung);
  const auto values = rung_placeholders(r, rung);
  std::vector<RunStep> steps;
  for (const auto& s : config.stages) {
    const std::string command = substitute(s.command, data_dir, r.budget_s, worktree, budget_scale, values);
    const StageTiming t = timing_at(config, r, s);
    steps.push_back(RunStep{s.name, command, wrapper(command), t.timeout_s, t.expected_s, log(s.name)});
  }
  return steps;
}

}  // namespace ard
