// See doctor.h. The checks only look: none of them writes outside a scratch
// directory of its own, so doctor is safe beside a running daemon.
#include "daemon/cli/doctor.h"

#include "daemon/exec/sandbox.h"
#include "daemon/slurm/slurm_client.h"

#include "daemon/exec/environment_fault.h"

#include <stdlib.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>
#include <sstream>

#include "daemon/data/data_inputs.h"
#include "llm_client/http_post.h"
#include "llm_client/llm_config.h"

namespace ard {
namespace {

namespace fs = std::filesystem;

constexpr double kGB = 1e9;
/// Room a start needs in the state directory: the worktree, the trainer's
/// build (~0.5 GB), logs and results.db.
constexpr double kStateNeed = 2 * kGB;
/// Room for a dataset in the cache when the inputs are already there.
constexpr double kDatasetNeed = 2 * kGB;
/// Room for one fetched shard: a C4 shard is ~0.3 GB of gzip and ~0.5 GB of
/// uint16 tokens once prepared (~260 M tokens of the 8192-token BPE).
constexpr double kShardNeed = 1 * kGB;

Check ok(std::string name, std::string line) { return {std::move(name), Check::State::kOk, true, std::move(line), ""}; }
Check failed(std::string name, std::string line, std::string fix, bool needed = true) {
  return {std::move(name), Check::State::kFailed, needed, std::move(line), std::move(fix)};
}
Check skipped(std::string name, std::string line) {
  return {std::move(name), Check::State::kSkipped, false, std::move(line), ""};
}
Check warning(std::string name, std::string line, std::string fix) {
  return {std::move(name), Check::State::kWarning, false, std::move(line), std::move(fix)};
}

/// The binary the default build makes from trainer/train.cu: it needs CUDA and a GPU.
constexpr const char* kCudaTrainer = "build/trainer/train";

bool gpu_off(const Config& c) { return c.preflight_gpu == "off"; }

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string gb(double bytes) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f GB", bytes / kGB);
  return buf;
}

/// "3.25.1" from "cmake version 3.25.1"; the first dotted number in text.
std::string first_version(const std::string& text) {
  static const std::regex re(R"((\d+)\.(\d+)(\.\d+)*)");
  std::smatch m;
  return std::regex_search(text, m, re) ? m.str(0) : "";
}

bool at_least(const std::string& version, int major, int minor) {
  int a = 0, b = 0;
  if (sscanf(version.c_str(), "%d.%d", &a, &b) != 2) return false;
  return a > major || (a == major && b >= minor);
}

/// A tool's version check: `tool --version`, at least major.minor.
Check tool_check(const std::string& name, const std::string& command, int major, int minor, bool needed,
                 const std::string& install, Probe& probe) {
  if (!needed) return skipped(name, "not used by build.command");
  Probe::Result r = probe.run(command);
  if (r.code == 127) return failed(name, name + " is not on PATH", install);
  if (r.code != 0) return failed(name, "`" + command + "` failed: " + r.last_line(), install);
  std::string v = first_version(r.output);
  if (!at_least(v, major, minor))
    return failed(name, name + " " + (v.empty() ? "(unknown version)" : v) + " is older than " +
                            std::to_string(major) + "." + std::to_string(minor),
                  install);
  return ok(name, name + " " + v);
}

Check disk_check(const std::string& name, const std::string& what, const fs::path& dir, double need,
                 const std::string& fix) {
  double free = static_cast<double>(free_bytes(dir).value_or(0));
  std::string line = what + " " + dir.string() + ": " + gb(free) + " free, needs " + gb(need);
  if (free < need) return failed(name, line, fix);
  return ok(name, line);
}

}  // namespace

std::string Check::text() const {
  const char* mark = state == State::kOk       ? "\u2713"
                     : state == State::kFailed ? "\u2717"
                     : state == State::kWarning ? "!"
                                                : "-";
  std::string t = std::string(mark) + " " + name + ": " + line;
  if (state == State::kWarning && !fix.empty()) t += "; fix: " + fix;
  if (state == State::kFailed) {
    if (!fix.empty()) t += "; fix: " + fix;
    if (!needed) t += " (advisory: nothing configured needs it)";
  }
  return t;
}

// SLURM_CONF is passed on, so the Slurm probe asks the cluster the daemon would.
Probe::Probe(const Config& config, ProcessRunner& runner)
    : runner_(runner), env_(slurm_env(scrubbed_env(config.env_pass))) {
  std::string tmpl = (fs::temp_directory_path() / "autoresearchd-doctor-XXXXXX").string();
  if (mkdtemp(tmpl.data())) scratch_ = tmpl;
}

Probe::~Probe() {
  std::error_code ec;
  if (!scratch_.empty()) fs::remove_all(scratch_, ec);
}

std::string Probe::Result::last_line() const {
  std::istringstream in(output);
  std::string last;
  for (std::string l; std::getline(in, l);)
    if (l.find_first_not_of(" \t\r") != std::string::npos) last = l;
  return last.empty() ? "exit code " + std::to_string(code) + ", no output" : last;
}

Probe::Result Probe::run(const std::string& command, double timeout_s) {
  Result r;
  if (scratch_.empty()) {
    r.output = "cannot create a scratch directory in " + fs::temp_directory_path().string();
    return r;
  }
  ProcessSpec spec{command, scratch_, env_, scratch_ / ("probe-" + std::to_string(++count_) + ".log"), timeout_s};
  ProcessResult p = runner_.run(spec, nullptr);
  r.output = file_tail(spec.log, 20, 4096);
  if (p.end == ProcessResult::End::kExited) r.code = p.code;
  else if (p.end == ProcessResult::End::kTimedOut) r.output += "\ndid not answer within " + std::to_string(static_cast<int>(timeout_s)) + " s";
  else if (!p.error.empty()) r.output += "\n" + p.error;
  else r.output += "\n" + p.describe();
  return r;
}

Check check_gpu(const Config& config, Probe& probe) {
  const std::string off_fix = "or set preflight.gpu = \"off\" in autoresearch.toml if the stages need no GPU";
  if (gpu_off(config)) {
    for (const auto& st : config.stages)
      if (st.command.find(kCudaTrainer) != std::string::npos)
        return warning("gpu",
                       "not checked (preflight.gpu = \"off\"), but stage \"" + st.name + "\" runs " + kCudaTrainer +
                           ", the CUDA trainer, which needs a GPU",
                       "set preflight.gpu = \"nvidia-smi\" on a GPU machine, or give [[stage]] commands that need no GPU");
    return skipped("gpu", "not checked (preflight.gpu = \"off\")");
  }
  if (config.preflight_gpu != "nvidia-smi") {
    Probe::Result r = probe.run(config.preflight_gpu);
    if (r.code != 0)
      return failed("gpu", "`" + config.preflight_gpu + "` (preflight.gpu) failed: " + r.last_line(),
                    "make the GPU usable, " + off_fix);
    return ok("gpu", "`" + config.preflight_gpu + "` (preflight.gpu) passed");
  }
  Probe::Result r = probe.run("nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader");
  if (r.code == 127)
    return failed("gpu", "no GPU visible: nvidia-smi not found (no NVIDIA driver)",
                  "install the NVIDIA driver on a machine with a Hopper GPU (H100/H200), " + off_fix);
  if (r.code != 0)
    return failed("gpu", "no GPU visible: nvidia-smi failed: " + r.last_line(),
                  "check the NVIDIA driver (`nvidia-smi` must list the GPU), " + off_fix);
  std::istringstream in(r.output);
  std::vector<std::string> names;
  std::string driver;
  for (std::string l; std::getline(in, l);) {
    // "0, NVIDIA H200, 570.86.15"
    size_t a = l.find(", "), b = l.rfind(", ");
    if (a == std::string::npos || b == a) continue;
    names.push_back(l.substr(a + 2, b - a - 2));
    driver = l.substr(b + 2);
  }
  if (names.empty())
    return failed("gpu", "no GPU visible: nvidia-smi lists none", "check CUDA_VISIBLE_DEVICES and the driver, " + off_fix);
  return ok("gpu", std::to_string(names.size()) + " GPU" + (names.size() > 1 ? "s" : "") + " (" + names.front() +
                       (names.size() > 1 ? ", ..." : "") + "), driver " + driver);
}

Check check_nvcc(const Config& config, Probe& probe) {
  if (gpu_off(config)) return skipped("nvcc", "not checked (preflight.gpu = \"off\")");
  Probe::Result r = probe.run("nvcc --version");
  if (r.code == 127) {
    bool installed = fs::exists("/usr/local/cuda/bin/nvcc");
    return failed("nvcc", "nvcc is not on PATH" + std::string(installed ? " (/usr/local/cuda/bin/nvcc exists)" : ""),
                  installed ? "export PATH=/usr/local/cuda/bin:$PATH (scripts/start.sh does this)"
                            : "install the CUDA 13 toolkit into /usr/local/cuda");
  }
  if (r.code != 0) return failed("nvcc", "`nvcc --version` failed: " + r.last_line(), "check the CUDA toolkit");
  static const std::regex release_re(R"(release (\d+\.\d+))");
  std::smatch m;
  std::string v = std::regex_search(r.output, m, release_re) ? m.str(1) : "";
  // sm_90a (the attention kernels' warpgroup products) needs CUDA 12.0 or later.
  if (!at_least(v, 12, 0))
    return failed("nvcc", "CUDA " + (v.empty() ? std::string("(unknown version)") : v) +
                              " cannot build sm_90a (needs 12.0 or later)",
                  "install the CUDA 13 toolkit into /usr/local/cuda");
  return ok("nvcc", "CUDA " + v);
}

Check check_cmake(const Config& config, Probe& probe) {
  return tool_check("cmake", "cmake --version", 3, 22, lower(config.build_command).find("cmake") != std::string::npos,
                    "apt-get install cmake (scripts/setup.sh does)", probe);
}

Check check_ninja(const Config& config, Probe& probe) {
  return tool_check("ninja", "ninja --version", 1, 10, lower(config.build_command).find("ninja") != std::string::npos,
                    "apt-get install ninja-build (scripts/setup.sh does)", probe);
}


Check check_cache_disk(const Config& config) {
  if (!config.data.enabled) return skipped("disk", "data cache not used (data.enabled = false)");
  double need = kDatasetNeed;
  std::string why = "";
  if (config.data.fetch && unreadable_input(config)) {
    try {
      FetchPlan plan = data_fetch_plan(config);
      int pending = 0;
      for (const auto* files : {&plan.train, &plan.val})
        for (const auto& f : *files) pending += is_whole(f.dest) ? 0 : 1;
      need += pending * kShardNeed;
    } catch (const ConfigError&) {
      need += config.data.shards * kShardNeed;  // check_data names the problem
    }
  }
  return disk_check("disk", "data cache (data.cache)", expand_home(config.data.cache), need,
                    "free space there, or point data.cache at a larger disk");
}

Check check_state_disk(const Config& config) {
  return disk_check("disk", "state (worktree, trainer build, logs)", config.repo / ".autoresearchd", kStateNeed,
                    "free space on that disk");
}

Check check_data(const Config& config, double head_timeout_s) {
  if (!config.data.enabled) return skipped("data", "the data step is off (data.enabled = false)");
  auto bad = unreadable_input(config);
  if (!bad)
    return ok("data", std::to_string(config.data.train.size()) + " train and " + std::to_string(config.data.val.size()) +
                          " val input(s) readable (data.train, data.val)");
  if (!config.data.fetch)
    return failed("data", *bad,
                  "put the file there, set data.train and data.val to your own files, or set data.fetch = true to "
                  "download the default corpus");
  FetchPlan plan;
  try {
    plan = data_fetch_plan(config);
  } catch (const ConfigError& e) {
    return failed("data", e.what(), "fix the source list or data.sources / data.shards");
  }
  size_t total = plan.train.size() + plan.val.size(), whole = 0;
  for (const auto* files : {&plan.train, &plan.val})
    for (const auto& f : *files) whole += is_whole(f.dest) ? 1 : 0;
  fs::path dir = plan.train.front().dest.parent_path();
  if (whole == total)
    return ok("data", *bad + "; using the " + std::to_string(total) + " fetched files in " + dir.string());
  std::string line = *bad + "; start fetches " + std::to_string(total - whole) + " of " + std::to_string(total) +
                     " files of " + sources_path(config).string() + " (data.fetch) into " + dir.string();
  // The first file still to fetch: can its server be reached, and how big is it?
  const SourceFile* first = nullptr;
  for (const auto* files : {&plan.train, &plan.val})
    for (const auto& f : *files)
      if (!first && !is_whole(f.dest)) first = &f;
  HeadResult head = head_url(first->url, head_timeout_s);
  if (!head.reached)
    return failed("data", line + ", but HEAD " + first->url + " failed: " + head.error,
                  "check the network (or set https_proxy), point data.sources at a reachable mirror, or set "
                  "data.train and data.val to local files");
  if (head.status >= 400 && head.status != 405 && head.status != 501)  // 405, 501: HEAD itself not served
    return failed("data", line + ", but HEAD " + first->url + " answered HTTP " + std::to_string(head.status),
                  "check the URL in the source list (data.sources), or point data.sources at a mirror");
  if (head.length && head.status < 300)
    line += "; the first, " + first->dest.filename().string() + ", is " + human_bytes(*head.length);
  return ok("data", line);
}

Check check_sandbox(const Config& config) {
  if (config.sandbox.mode == SandboxMode::kOff)
    return skipped("sandbox", "off ([sandbox] mode = \"off\"): builds and stages run unconfined");
  // The probe `start` runs (sandbox_start_refusal): what fails here makes start refuse.
  if (auto why = sandbox_unavailable()) return failed("sandbox", *why, "");
  return ok("sandbox", "bwrap creates the sandbox's namespaces");
}

namespace {

/// The words a shell command line runs by name: the first word of each simple command
/// (split at ;, &, | and newlines), past VAR=value assignments; words with a / are paths
/// (bound or in the worktree) and are left out, as are the shell's own words.
std::vector<std::string> command_names(const std::string& command) {
  static const std::vector<std::string> shell_words = {"cd", "exec", "export", "set", "test", "[", "true", "false",
                                                       "echo", "if", "then", "else", "fi", "for", "do", "done",
                                                       "while", "case", "esac", "{", "}", "(", ")", "!", "time"};
  std::vector<std::string> names;
  std::string segment;
  auto flush = [&] {
    std::istringstream words(segment);
    std::string w;
    while (words >> w && w.find('=') != std::string::npos && w.find('/') == std::string::npos) {
    }
    if (!w.empty() && w.find('/') == std::string::npos && w.find('{') == std::string::npos &&
        std::find(shell_words.begin(), shell_words.end(), w) == shell_words.end() &&
        std::find(names.begin(), names.end(), w) == names.end())
      names.push_back(w);
    segment.clear();
  };
  for (char ch : command) {
    if (ch == ';' || ch == '&' || ch == '|' || ch == '\n' || ch == '(' || ch == ')') flush();
    else segment += ch;
  }
  flush();
  return names;
}

}  // namespace

Check check_sandbox_tools(const Config& config) {
  if (config.sandbox.mode == SandboxMode::kOff) return skipped("sandbox tools", "not checked ([sandbox] mode = \"off\")");
  // The children's PATH (env.pass), as the daemon passes it.
  const char* path_env = std::find(config.env_pass.begin(), config.env_pass.end(), "PATH") != config.env_pass.end()
                             ? getenv("PATH")
                             : nullptr;
  std::vector<fs::path> dirs;
  std::istringstream path_list(path_env ? path_env : "");
  for (std::string d; std::getline(path_list, d, ':');)
    if (!d.empty() && d[0] == '/') dirs.push_back(d);
  std::vector<std::string> tools = command_names(config.build_command);
  for (const auto& st : config.stages)
    for (const auto& n : command_names(st.command))
      if (std::find(tools.begin(), tools.end(), n) == tools.end()) tools.push_back(n);
  for (const char* t : {"nvcc", "cmake", "ninja"})
    if ((std::string(t) != "nvcc" || !gpu_off(config)) && std::find(tools.begin(), tools.end(), t) == tools.end())
      tools.push_back(t);
  std::vector<std::string> differs;
  for (const auto& tool : tools) {
    std::optional<fs::path> first, shown;
    for (const auto& d : dirs) {
      std::error_code ec;
      const fs::path candidate = d / tool;
      if (!fs::is_regular_file(candidate, ec) || access(candidate.c_str(), X_OK) != 0) continue;
      if (!first) first = candidate;
      if (sandbox_shows(candidate, config.sandbox.read_only)) {
        shown = candidate;
        break;
      }
    }
    if (!first) continue;  // not on PATH at all: the tool's own check, or the build, says so
    if (!shown)
      return failed("sandbox tools",
                    "`" + tool + "` is on PATH only as " + first->string() + ", which the sandbox does not show",
                    "add " + first->parent_path().string() + " (or the directory of its install) to [sandbox] "
                    "read_only in autoresearch.toml");
    if (*shown != *first) differs.push_back("`" + tool + "` runs as " + shown->string() + ", not " + first->string());
  }
  if (!differs.empty()) {
    std::string line = "inside the sandbox ";
    for (size_t i = 0; i < differs.size(); ++i) line += (i ? "; " : "") + differs[i];
    return failed("sandbox tools", line + " (that directory is not shown)",
                  "add the directory to [sandbox] read_only if the builds and stages need that one", false);
  }
  return ok("sandbox tools", std::to_string(tools.size()) + " tool(s) the commands run are visible in the sandbox");
}

Check check_llm_key(const Config& config) {
  if (config.proposer_kind != "llm") return skipped("llm key", "no LLM used (proposer.kind = \"" + config.proposer_kind + "\")");
  llm::LlmConfig c;
  try {
    c = llm::parse_llm_config(config.llm);
  } catch (const ConfigError& e) {
    return failed("llm key", e.what(), "fix the [llm] table (docs/llm.md)");
  }
  if (c.api_key_env.empty()) return ok("llm key", "none sent (llm.api_key_env = \"\")");
  const char* key = getenv(c.api_key_env.c_str());
  if (!key || !*key)
    return failed("llm key", "$" + c.api_key_env + " is not set (llm.api_key_env)",
                  "export " + c.api_key_env + "=<your key> before start, or name another variable in llm.api_key_env");
  return ok("llm key", "$" + c.api_key_env + " is set");
}

Check check_llm_server(const Config& config) {
  if (config.proposer_kind != "llm") return skipped("llm server", "no LLM used");
  llm::LlmConfig c;
  try {
    c = llm::parse_llm_config(config.llm);
  } catch (const ConfigError&) {
    return skipped("llm server", "not asked: the [llm] table is invalid");
  }
  const char* key = c.api_key_env.empty() ? "" : getenv(c.api_key_env.c_str());
  if (!key || (!c.api_key_env.empty() && !*key)) return skipped("llm server", "not asked: no key");
  bool anthropic = c.protocol == llm::Protocol::kAnthropic;
  llm::HttpRequest req;
  req.url = c.base_url + (anthropic ? "/v1/models" : "/models");
  req.connect_timeout_s = c.connect_timeout_s;
  req.total_timeout_s = std::min(c.timeout_s, 30.0);
  req.headers = {"Accept: application/json"};
  if (*key) req.headers.push_back(anthropic ? std::string("x-api-key: ") + key : std::string("Authorization: Bearer ") + key);
  if (anthropic) req.headers.push_back("anthropic-version: " + c.anthropic_version);
  llm::HttpResponse r = llm::http_get(req);
  std::string where = "GET " + req.url;
  if (r.transport != llm::HttpResponse::Transport::kOk)
    return failed("llm server", where + ": " + r.transport_error,
                  "check llm.base_url and the network (https_proxy); a local server must be running");
  if (r.status == 401 || r.status == 403)
    return failed("llm server", where + ": HTTP " + std::to_string(r.status) + ": the key was refused",
                  "check the key in $" + c.api_key_env);
  if (r.status >= 500)
    return failed("llm server", where + ": HTTP " + std::to_string(r.status), "the provider is failing; try later");
  return ok("llm server", std::string(llm::protocol_name(c.protocol)) + " at " + c.base_url + " answers (" + where +
                              ": HTTP " + std::to_string(r.status) + "), model " + c.model);
}

std::vector<Check> run_checks(const Config& config, ProcessRunner& runner) {
  Probe probe(config, runner);
  return {check_gpu(config, probe),   check_nvcc(config, probe),   check_cmake(config, probe),
          check_ninja(config, probe), check_cache_disk(config),    check_state_disk(config),
          check_data(config),         check_sandbox(config),        check_sandbox_tools(config),
          check_llm_key(config),      check_llm_server(config)};
}

int print_checks(const std::vector<Check>& checks, std::ostream& out) {
  int code = 0;
  for (const auto& c : checks) {
    out << c.text() << "\n";
    if (c.blocks()) code = 1;
  }
  return code;
}

}  // namespace ard
