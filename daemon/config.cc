// See config.h. Each table is read through a KeyReader that remembers the keys
// it consumed, so whatever is left over is reported as unknown by its full name.
#include "daemon/config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <git2.h>

#include "daemon/git_repo.h"
#include "llm_client/llm_config.h"
#include "proposers/editable.h"
#include "proposers/offline_proposer.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace ard {

namespace {

/// The value of a key that names one of a few choices, as its enum; the
/// error names the key, the choices and what was given.
template <class E>
E parse_choice(const std::string& key, const std::string& value,
               std::initializer_list<std::pair<const char*, E>> choices) {
  std::string expected;
  size_t i = 0;
  for (const auto& [word, e] : choices) {
    if (value == word) return e;
    expected += std::string(i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + "\"" + word + "\"";
    ++i;
  }
  throw ConfigError(key + ": expected " + expected + ", got \"" + value + "\"");
}

}  // namespace

const char* to_string(ExecutorKind kind) { return kind == ExecutorKind::kSlurm ? "slurm" : "local"; }
const char* to_string(SandboxMode mode) { return mode == SandboxMode::kOff ? "off" : "bwrap"; }
const char* to_string(SlurmBuild build) { return build == SlurmBuild::kJob ? "job" : "local"; }
const char* to_string(SlurmOnRestart on_restart) { return on_restart == SlurmOnRestart::kCancel ? "cancel" : "adopt"; }
const char* to_string(PromoteOnFail on_fail) { return on_fail == PromoteOnFail::kRevert ? "revert" : "label"; }

namespace {

/// The longest duration a key may give: 1e7 s (about 115 days).
constexpr double kMaxDurationKeyS = 1e7;

class KeyReader {
 public:
  KeyReader(const toml::table& table, std::string prefix) : table_(table), prefix_(std::move(prefix)) {}

  std::string name(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "." + key; }

  const toml::node* get(const std::string& key) {
    seen_.insert(key);
    return table_.get(key);
  }

  void string(const std::string& key, std::string& out, bool allow_empty = false) {
    const toml::node* n = get(key);
    if (!n) return;
    if (!n->is_string()) throw ConfigError(name(key) + ": expected a string");
    out = n->as_string()->get();
    if (!allow_empty && out.empty()) throw ConfigError(name(key) + ": must not be empty");
  }

  /// Every number has a maximum: a value past it is refused, never clamped.
  void number(const std::string& key, double& out, double min, bool min_inclusive, double max) {
    const toml::node* n = get(key);
    if (!n) return;
    double v;
    if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
    else if (n->is_floating_point()) v = n->as_floating_point()->get();
    else throw ConfigError(name(key) + ": expected a number");
    if (!std::isfinite(v) || v < min || (!min_inclusive && v == min) || v > max)
      throw ConfigError(name(key) + ": must be " + (min_inclusive ? ">= " : "> ") + fmt(min) + " and <= " + fmt(max) +
                        ", got " + fmt(v));
    out = v;
  }

  void integer(const std::string& key, int& out, int min, int max) {
    const toml::node* n = get(key);
    if (!n) return;
    if (!n->is_integer()) throw ConfigError(name(key) + ": expected an integer");
    int64_t v = n->as_integer()->get();
    if (v < min || v > max)
      throw ConfigError(name(key) + ": must be " + std::to_string(min) + " to " + std::to_string(max) + ", got " +
                        std::to_string(v));
    out = static_cast<int>(v);
  }

  void boolean(const std::string& key, bool& out) {
    const toml::node* n = get(key);
    if (!n) return;
    if (!n->is_boolean()) throw ConfigError(name(key) + ": expected true or false");
    out = n->as_boolean()->get();
  }

  void strings(const std::string& key, std::vector<std::string>& out, bool allow_empty_list = false) {
    const toml::node* n = get(key);
    if (!n) return;
    const toml::array* a = n->as_array();
    if (!a) throw ConfigError(name(key) + ": expected an array of strings");
    std::vector<std::string> v;
    for (const toml::node& e : *a) {
      if (!e.is_string() || e.as_string()->get().empty())
        throw ConfigError(name(key) + ": expected an array of non-empty strings");
      v.push_back(e.as_string()->get());
    }
    if (v.empty() && !allow_empty_list) throw ConfigError(name(key) + ": must not be empty");
    out = std::move(v);
  }

  const toml::table* table(const std::string& key) {
    const toml::node* n = get(key);
    if (!n) return nullptr;
    if (!n->is_table()) throw ConfigError(name(key) + ": expected a table [" + name(key) + "]");
    return n->as_table();
  }

  /// Throws for the first key nobody read.
  void reject_unknown() const {
    for (const auto& [k, v] : table_)
      if (!seen_.count(std::string(k.str()))) throw ConfigError(name(std::string(k.str())) + ": unknown key");
  }

 private:
  static std::string fmt(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }
  const toml::table& table_;
  std::string prefix_;
  std::set<std::string> seen_;
};

void check_relative_glob(const std::string& key, const std::string& glob) {
  // ".git" itself, not ".gitignore": a protected file is refused by check_editable_globs with its reason.
  if (glob.front() == '/' || glob.find("..") != std::string::npos || glob == ".git" || glob.rfind(".git/", 0) == 0)
    throw ConfigError(key + ": '" + glob + "' must be a path inside the repo");
}

/// The editable globs against the files the repo tracks: a glob that matches a
/// tracked build file or harness file is refused. A repo that is not a git
/// repository yet has no tracked files (start reports that itself).
void check_globs_against_tracked(const Config& c) {
  std::vector<std::string> tracked;
  try {
    GitLibrary git;
    tracked = GitRepo(c.repo).tracked_files();
  } catch (const GitError&) {
    return;
  }
  if (std::string why = check_editable_globs(c.editable, tracked); !why.empty()) throw ConfigError(why);
}

/// The [[proposer.profile]] tables, after [proposer], [llm] and [offline] are read: each
/// profile's kind is proposer.kind unless it names one; an llm profile's model, provider and
/// temperature go over [llm], and the result is checked as [llm] is.
std::vector<ProfileConfig> parse_profiles(const toml::array& tables, const Config& c) {
  if (c.proposer_kind == "scripted") throw ConfigError("proposer.profile: profiles need proposer.kind llm or offline");
  std::vector<ProfileConfig> out;
  std::set<std::string> names;
  for (size_t i = 0; i < tables.size(); ++i) {
    KeyReader r(*tables.get(i)->as_table(), "proposer.profile[" + std::to_string(i + 1) + "]");
    ProfileConfig p;
    r.string("name", p.name);
    r.number("weight", p.weight, 0, false, 1e6);
    r.string("addendum", p.addendum, true);
    r.string("kind", p.kind);
    std::string model, provider;
    double temperature = -1;
    r.string("model", model);
    r.string("provider", provider);
    r.number("temperature", temperature, 0, true, 2);
    r.reject_unknown();
    static const std::regex name_re("[A-Za-z0-9_][A-Za-z0-9_.-]{0,39}");
    if (!std::regex_match(p.name, name_re))
      throw ConfigError(r.name("name") + ": '" + p.name + "' is not a profile name (letters, digits, '_', '.', '-'; at most 40)");
    if (!names.insert(p.name).second) throw ConfigError(r.name("name") + ": duplicate profile '" + p.name + "'");
    if (p.kind.empty()) p.kind = c.proposer_kind;
    if (p.kind != "llm" && p.kind != "offline")
      throw ConfigError(r.name("kind") + ": must be \"llm\" or \"offline\", got \"" + p.kind + "\"");
    if (p.kind == "offline" && (!model.empty() || !provider.empty() || temperature >= 0))
      throw ConfigError(r.name("model") + ": an offline profile asks no model");
    if (p.kind == "llm") {
      if (!c.has_llm) throw ConfigError(r.name("kind") + ": \"llm\" needs an [llm] table");
      p.llm = c.llm;
      if (!model.empty()) p.llm.insert_or_assign("model", model);
      if (!provider.empty()) p.llm.insert_or_assign("provider", provider);
      if (temperature >= 0) p.llm.insert_or_assign("temperature", temperature);
      try {
        llm::parse_llm_config(p.llm);
      } catch (const ConfigError& e) {
        throw ConfigError("proposer.profile '" + p.name + "': " + e.what());
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

/// The placeholders run_plan fills whatever the rung: a rung's value may not take their names.
bool reserved_placeholder(const std::string& name) {
  return name == "data_dir" || name == "budget" || name == "worktree" || name == "budget_scale" || name == "rung";
}

/// A per-stage table of seconds (`timeout_s = { train = 1400 }`) of a rung
/// over the timings derived for it; each key must name a stage.
void read_stage_seconds(KeyReader& r, const std::string& key, std::vector<StageTiming>& timings, bool timeout) {
  const toml::table* t = r.table(key);
  if (!t) return;
  for (const auto& [k, v] : *t) {
    const std::string stage(k.str());
    const std::string name = r.name(key) + "." + stage;
    auto it = std::find_if(timings.begin(), timings.end(), [&](const StageTiming& s) { return s.stage == stage; });
    if (it == timings.end()) throw ConfigError(name + ": no stage is named '" + stage + "'");
    double seconds;
    if (v.is_integer()) seconds = static_cast<double>(v.as_integer()->get());
    else if (v.is_floating_point()) seconds = v.as_floating_point()->get();
    else throw ConfigError(name + ": expected a number of seconds");
    if (!std::isfinite(seconds) || seconds <= 0 || seconds > kMaxDurationKeyS)
      throw ConfigError(name + ": must be > 0 and <= " + std::to_string(static_cast<int64_t>(kMaxDurationKeyS)));
    (timeout ? it->timeout_s : it->expected_s) = seconds;
  }
}

/// The [[rung]] tables, after the budget, the build and the stages are read: rungs 1..n.
std::vector<RungConfig> parse_rungs(const toml::array& tables, const Config& c) {
  std::vector<RungConfig> out;
  std::set<std::string> names = {"base"};
  double previous_budget_s = c.budget_s;
  for (size_t i = 0; i < tables.size(); ++i) {
    KeyReader r(*tables.get(i)->as_table(), "rung[" + std::to_string(i + 1) + "]");
    RungConfig rung;
    r.string("name", rung.name);
    rung.budget_s = 2 * previous_budget_s;
    r.number("budget_s", rung.budget_s, 0, false, kMaxDurationKeyS);
    rung.build_timeout_s = c.build_timeout_s;
    r.number("build_timeout_s", rung.build_timeout_s, 0, false, kMaxDurationKeyS);
    for (const StageConfig& stage : c.stages) rung.stages.push_back(rung_timing(stage, c.budget_s, rung.budget_s));
    read_stage_seconds(r, "timeout_s", rung.stages, true);
    read_stage_seconds(r, "expected_s", rung.stages, false);
    if (const toml::table* values = r.table("values")) {
      static const std::regex value_name_re("[A-Za-z_][A-Za-z0-9_]{0,63}");
      // The value goes into /bin/sh commands as it is: no character the shell reads.
      static const std::regex value_re("[A-Za-z0-9_.,:=+/-]{1,256}");
      for (const auto& [k, v] : *values) {
        const std::string key(k.str());
        const std::string name = r.name("values") + "." + key;
        if (!std::regex_match(key, value_name_re)) throw ConfigError(name + ": not a placeholder name (letters, digits, '_')");
        if (reserved_placeholder(key)) throw ConfigError(name + ": {" + key + "} is filled by the daemon itself");
        std::string value;
        if (v.is_string()) value = v.as_string()->get();
        else if (v.is_integer()) value = std::to_string(v.as_integer()->get());
        else if (v.is_floating_point()) {
          std::ostringstream os;
          os << v.as_floating_point()->get();
          value = os.str();
        } else throw ConfigError(name + ": expected a string or a number");
        if (!std::regex_match(value, value_re))
          throw ConfigError(name + ": '" + value + "' must be 1 to 256 of letters, digits and _ . , : = + / -");
        rung.values[key] = value;
      }
    }
    r.reject_unknown();
    static const std::regex rung_name_re("[A-Za-z0-9_][A-Za-z0-9_.-]{0,39}");
    if (rung.name.empty()) throw ConfigError(r.name("name") + ": missing");
    if (!std::regex_match(rung.name, rung_name_re))
      throw ConfigError(r.name("name") + ": '" + rung.name + "' is not a rung name (letters, digits, '_', '.', '-'; at most 40)");
    if (!names.insert(rung.name).second)
      throw ConfigError(r.name("name") + ": '" + rung.name + "' names another rung (rung 0 is \"base\")");
    if (auto it = rung.values.find("depth_scale"); it != rung.values.end()) {
      const std::string name = r.name("values") + ".depth_scale";
      size_t used = 0;
      double scale = 0;
      try {
        scale = std::stod(it->second, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != it->second.size() || !std::isfinite(scale)) throw ConfigError(name + ": expected a number, got '" + it->second + "'");
      if (scale < 1 || scale > 64) throw ConfigError(name + ": must be >= 1 and <= 64 (a rung is a larger scale), got " + it->second);
      rung.depth_scale = scale;
    }
    previous_budget_s = rung.budget_s;
    out.push_back(std::move(rung));
  }
  return out;
}

}  // namespace

void validate_tag(const std::string& tag) {
  static const std::regex tag_re("[A-Za-z0-9_][A-Za-z0-9._-]*");
  if (!std::regex_match(tag, tag_re) || tag.size() > 64 || tag.find("..") != std::string::npos ||
      tag.ends_with(".lock"))
    throw ConfigError("tag: '" + tag + "' is not a valid tag (letters, digits, '.', '_', '-')");
  // The character set leaves git's own rules (no trailing '.', ...) to git.
  git_libgit2_init();
  int valid = 0;
  int rc = git_reference_name_is_valid(&valid, ("refs/heads/autoresearch/" + tag).c_str());
  git_libgit2_shutdown();
  if (rc != 0 || !valid)
    throw ConfigError("tag: '" + tag + "' cannot name the branch autoresearch/" + tag +
                      " (git's ref rules: no trailing '.', no '..', no '.lock' suffix)");
}

std::vector<StageConfig> default_stages(double budget_s, double startup_s) {
  return {
      {"check", "build/trainer/train --check", 300, 60},
      {"train", "build/trainer/train --data {data_dir} --time-budget {budget} --budget-scale {budget_scale} --depth-scale {depth_scale}",
       2 * budget_s + startup_s, budget_s + startup_s},
  };
}

StageTiming rung_timing(const StageConfig& stage, double base_budget_s, double budget_s) {
  const double factor = base_budget_s > 0 ? std::max(1.0, budget_s / base_budget_s) : 1.0;
  return StageTiming{stage.name, stage.timeout_s * factor, stage.expected_s * factor};
}

RungConfig base_rung(const Config& config) {
  RungConfig rung;
  rung.name = "base";
  rung.budget_s = config.budget_s;
  rung.build_timeout_s = config.build_timeout_s;
  for (const StageConfig& stage : config.stages) rung.stages.push_back({stage.name, stage.timeout_s, stage.expected_s});
  return rung;
}

std::vector<RungConfig> default_rungs(const Config& config) {
  // A trainer whose commands never receive {depth_scale} cannot run a larger
  // model: every promotion run of it would be the same size, so tampered.
  bool scales = config.build_command.find("{depth_scale}") != std::string::npos;
  for (const StageConfig& stage : config.stages) scales = scales || stage.command.find("{depth_scale}") != std::string::npos;
  if (!scales) return {base_rung(config)};
  RungConfig twice;
  twice.name = "2x";
  twice.budget_s = 2 * config.budget_s;
  twice.depth_scale = 2;
  twice.values = {{"depth_scale", "2"}};
  twice.build_timeout_s = config.build_timeout_s;
  for (const StageConfig& stage : config.stages) twice.stages.push_back(rung_timing(stage, config.budget_s, twice.budget_s));
  return {base_rung(config), twice};
}

bool is_loopback_address(const std::string& address) {
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, address.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

void validate_serve(const ServeConfig& serve) {
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, serve.bind.c_str(), &v4) != 1 && inet_pton(AF_INET6, serve.bind.c_str(), &v6) != 1)
    throw ConfigError("serve.bind: '" + serve.bind + "' is not an IPv4 or IPv6 address");
  if (serve.port < 0 || serve.port > 65535)  // 0 (command line only): any free port
    throw ConfigError("serve.port: must be 1 to 65535, got " + std::to_string(serve.port));
  if (!serve.token.empty() && serve.token.size() < 16)
    throw ConfigError("serve.token: must be at least 16 characters");
  for (char ch : serve.token)
    if (ch <= ' ' || ch == ';' || ch == ',' || ch == '"' || ch == '\\' || ch == 127)
      throw ConfigError("serve.token: only printable characters without spaces, quotes, ';', ',' or '\\'");
  if (serve.token.empty() && !is_loopback_address(serve.bind))
    throw ConfigError("serve.token: required to serve on " + serve.bind + ", which is not a loopback address");
  if (serve.token.empty() && serve.allow_actions)
    throw ConfigError("serve.token: required when serve.allow_actions = true");
}

std::string expand_home(const std::string& path) {
  if (path == "~" || path.rfind("~/", 0) == 0) {
    const char* home = getenv("HOME");
    return std::string(home ? home : "") + path.substr(1);
  }
  return path;
}

Config parse_config(const std::string& toml_text, const std::filesystem::path& repo,
                    const std::string& source_name, const std::filesystem::path& key_base) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << source_name << ":" << e.source().begin.line << ": " << e.description();
    throw ConfigError(os.str());
  }

  Config c;
  c.repo = repo;
  KeyReader top(root, "");
  std::string repo_key;
  top.string("repo", repo_key);
  if (!repo_key.empty()) {
    c.repo = std::filesystem::path(expand_home(repo_key));
    if (c.repo.is_relative()) c.repo = (key_base.empty() ? repo : key_base) / c.repo;
  }
  c.repo = std::filesystem::absolute(c.repo);
  c.repo = c.repo.lexically_normal();
  if (c.repo.has_filename() == false) c.repo = c.repo.parent_path();

  top.string("tag", c.tag);
  validate_tag(c.tag);
  top.strings("editable", c.editable);
  for (const auto& g : c.editable) check_relative_glob("editable", g);
  if (std::string why = check_editable_globs(c.editable, {}); !why.empty()) throw ConfigError(why);
  top.string("program", c.program);
  double max_program_bytes = static_cast<double>(c.max_program_bytes);
  top.number("max_program_bytes", max_program_bytes, 1, true, 1e9);
  if (max_program_bytes != std::floor(max_program_bytes) || max_program_bytes > 1e9)
    throw ConfigError("max_program_bytes: expected a whole number of bytes up to 1e9");
  c.max_program_bytes = static_cast<int64_t>(max_program_bytes);
  top.number("budget_s", c.budget_s, 0, false, kMaxDurationKeyS);
  top.number("startup_s", c.startup_s, 0, true, kMaxDurationKeyS);
  top.number("min_improvement", c.min_improvement, 0, true, 20);
  top.integer("max_fix_attempts", c.max_fix_attempts, 0, 20);
  top.number("retry_wait_s", c.retry_wait_s, 0, false, 86400);
  if (const toml::node* n = top.get("gpus")) {
    if (n->is_string()) {
      if (n->as_string()->get() != "auto") throw ConfigError("gpus: expected \"auto\" or a list of GPU ids");
    } else if (const toml::array* a = n->as_array(); a && !a->empty()) {
      std::set<std::string> seen;
      for (const toml::node& e : *a) {
        std::string id;
        if (e.is_integer() && e.as_integer()->get() >= 0) id = std::to_string(e.as_integer()->get());
        else if (e.is_string() && !e.as_string()->get().empty()) id = e.as_string()->get();
        else throw ConfigError("gpus: expected \"auto\" or a list of GPU ids (integers >= 0 or strings)");
        if (id.find_first_of(", \t\n") != std::string::npos) throw ConfigError("gpus: bad GPU id '" + id + "'");
        if (!seen.insert(id).second) throw ConfigError("gpus: GPU " + id + " is listed twice");
        c.gpus.push_back(id);
      }
    } else {
      throw ConfigError("gpus: expected \"auto\" or a non-empty list of GPU ids");
    }
  }
  top.integer("lookahead", c.lookahead, 0, kMaxLookahead);
  top.integer("max_builds", c.max_builds, 1, 64);

  if (const toml::table* t = top.table("build")) {
    KeyReader r(*t, "build");
    r.string("command", c.build_command);
    r.number("timeout_s", c.build_timeout_s, 0, false, kMaxDurationKeyS);
    r.string("dir", c.build_dir);
    r.reject_unknown();
    if (c.build_dir.find_first_of("/\\") != std::string::npos || c.build_dir == "." || c.build_dir == ".." ||
        c.build_dir == ".git" || c.build_dir.find_first_of(std::string("\0", 1)) != std::string::npos)
      throw ConfigError("build.dir: '" + c.build_dir + "' must be one directory name in the worktree's root");
  }

  if (const toml::node* n = top.get("stage")) {
    const toml::array* a = n->as_array();
    if (!a || !a->is_array_of_tables() || a->empty())
      throw ConfigError("stage: expected one or more [[stage]] tables");
    std::set<std::string> names;
    for (size_t i = 0; i < a->size(); ++i) {
      KeyReader r(*a->get(i)->as_table(), "stage[" + std::to_string(i + 1) + "]");
      StageConfig s;
      r.string("name", s.name);
      r.string("command", s.command);
      s.timeout_s = 2 * c.budget_s + c.startup_s;
      r.number("timeout_s", s.timeout_s, 0, false, kMaxDurationKeyS);
      s.expected_s = s.timeout_s;
      r.number("expected_s", s.expected_s, 0, false, kMaxDurationKeyS);
      r.reject_unknown();
      if (s.name.empty()) throw ConfigError(r.name("name") + ": missing");
      if (s.command.empty()) throw ConfigError(r.name("command") + ": missing");
      // The name becomes part of a log file's name (<id>-<name>.log) and of the status lines.
      static const std::regex stage_name_re("[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}");
      if (!std::regex_match(s.name, stage_name_re))
        throw ConfigError(r.name("name") + ": '" + s.name +
                          "' is not a stage name (letters, digits, '_', '.', '-'; no '/'; at most 64)");
      if (!names.insert(s.name).second) throw ConfigError(r.name("name") + ": duplicate stage '" + s.name + "'");
      c.stages.push_back(std::move(s));
    }
  } else {
    c.stages = default_stages(c.budget_s, c.startup_s);
  }

  if (const toml::node* n = top.get("rung")) {
    const toml::array* a = n->as_array();
    if (!a || !a->is_array_of_tables() || a->empty()) throw ConfigError("rung: expected one or more [[rung]] tables");
    c.rungs = {base_rung(c)};
    for (RungConfig& rung : parse_rungs(*a, c)) c.rungs.push_back(std::move(rung));
  } else {
    c.rungs = default_rungs(c);
  }

  if (const toml::table* t = top.table("promote")) {
    KeyReader r(*t, "promote");
    r.integer("every", c.promote.every, 1, 1000000);
    r.number("max_share", c.promote.max_share, 0, true, 1);  // 0: no rounds
    std::string on_fail = to_string(c.promote.on_fail);
    r.string("on_fail", on_fail);
    c.promote.on_fail =
        parse_choice<PromoteOnFail>("promote.on_fail", on_fail, {{"label", PromoteOnFail::kLabel}, {"revert", PromoteOnFail::kRevert}});
    r.integer("gpus", c.promote.gpus, 0, 4096);
    r.reject_unknown();
  }

  if (const toml::table* t = top.table("summary")) {
    KeyReader r(*t, "summary");
    r.string("metric", c.metric);
    std::string goal = to_string(c.goal);
    r.string("goal", goal);
    c.goal = parse_choice<MetricGoal>("summary.goal", goal, {{"min", MetricGoal::kMin}, {"max", MetricGoal::kMax}});
    r.strings("keys", c.summary_keys);
    r.reject_unknown();
  }
  if (std::find(c.summary_keys.begin(), c.summary_keys.end(), c.metric) == c.summary_keys.end())
    throw ConfigError("summary.metric: '" + c.metric + "' is not one of summary.keys");

  if (const toml::table* t = top.table("data")) {
    KeyReader r(*t, "data");
    r.boolean("enabled", c.data.enabled);
    r.string("prepare", c.data.prepare);
    r.strings("train", c.data.train);
    r.strings("val", c.data.val);
    r.string("field", c.data.field);
    r.string("cache", c.data.cache);
    r.number("timeout_s", c.data.timeout_s, 0, false, kMaxDurationKeyS);
    r.boolean("fetch", c.data.fetch);
    r.string("sources", c.data.sources);
    r.integer("shards", c.data.shards, 1, 100000);
    r.reject_unknown();
  }

  if (const toml::table* t = top.table("preflight")) {
    KeyReader r(*t, "preflight");
    r.string("gpu", c.preflight_gpu);
    r.reject_unknown();
  }

  if (const toml::table* t = top.table("noise")) {
    KeyReader r(*t, "noise");
    r.integer("every", c.noise.every, 1, 1000000);
    r.number("max_age_s", c.noise.max_age_s, 0, true, 1e8);
    r.number("z", c.noise.z, 0, false, 1e6);
    r.number("prior_sigma", c.noise.prior_sigma, 0, true, 20);
    r.boolean("calibrate", c.noise.calibrate);
    r.boolean("rounds", c.noise.rounds);
    r.reject_unknown();
    if (c.noise.z > 6) {
      std::ostringstream os;
      os << "noise.z: must be <= 6 (a margin of more than 6 sigma keeps nothing), got " << c.noise.z;
      throw ConfigError(os.str());
    }
  }

  if (const toml::table* t = top.table("keep")) {
    KeyReader r(*t, "keep");
    r.boolean("equal_but_simpler", c.keep.equal_but_simpler);
    r.integer("confirmations", c.keep.confirmations, 0, 1000000);
    r.reject_unknown();
    if (c.keep.confirmations > 5)
      throw ConfigError("keep.confirmations: must be <= 5, got " + std::to_string(c.keep.confirmations));
  }

  if (const toml::table* t = top.table("dedup")) {
    KeyReader r(*t, "dedup");
    r.number("threshold", c.dedup.threshold, 0, false, 1);
    r.reject_unknown();
  }

  if (const toml::table* t = top.table("env")) {
    KeyReader r(*t, "env");
    r.strings("pass", c.env_pass, true);
    r.reject_unknown();
    static const std::regex var_re("[A-Za-z_][A-Za-z0-9_]*");
    for (const auto& v : c.env_pass)
      if (!std::regex_match(v, var_re)) throw ConfigError("env.pass: '" + v + "' is not a variable name");
  }

  if (const toml::table* t = top.table("serve")) {
    KeyReader r(*t, "serve");
    r.boolean("enabled", c.serve.enabled);
    r.string("bind", c.serve.bind);
    r.integer("port", c.serve.port, 1, 65535);
    r.string("token", c.serve.token);
    r.boolean("allow_actions", c.serve.allow_actions);
    r.reject_unknown();
    validate_serve(c.serve);
  }

  if (const toml::node* n = root.get("sandbox"); n && !n->is_table())
    throw ConfigError("sandbox: expected a table: [sandbox] with mode = \"bwrap\" or \"off\"");
  if (const toml::table* t = top.table("sandbox")) {
    KeyReader r(*t, "sandbox");
    std::string mode = to_string(c.sandbox.mode);
    r.string("mode", mode);
    c.sandbox.mode = parse_choice<SandboxMode>("sandbox.mode", mode, {{"bwrap", SandboxMode::kBwrap}, {"off", SandboxMode::kOff}});
    r.boolean("network", c.sandbox.network);
    r.integer("tmp_mb", c.sandbox.tmp_mb, 1, 1024 * 1024);
    r.integer("scratch_mb", c.sandbox.scratch_mb, 1, 1024 * 1024);
    r.strings("read_only", c.sandbox.read_only, true);
    r.reject_unknown();
    for (std::string& p : c.sandbox.read_only) {
      p = expand_home(p);
      if (p.empty() || p[0] != '/')
        throw ConfigError("sandbox.read_only: expected absolute paths (or ~/...), got \"" + p + "\"");
      if (p == "/") throw ConfigError("sandbox.read_only: \"/\" would show the child every file; name the directories it needs");
    }
  }

  std::string executor = to_string(c.executor);
  top.string("executor", executor);
  c.executor = parse_choice<ExecutorKind>("executor", executor, {{"local", ExecutorKind::kLocal}, {"slurm", ExecutorKind::kSlurm}});
  if (const toml::table* t = top.table("slurm")) {
    KeyReader r(*t, "slurm");
    r.string("partition", c.slurm.partition, true);
    r.string("account", c.slurm.account, true);
    r.string("gres", c.slurm.gres, true);
    r.integer("max_jobs", c.slurm.max_jobs, 1, 4096);
    r.strings("extra_args", c.slurm.extra_args, true);
    std::string on_restart = to_string(c.slurm.on_restart), build = to_string(c.slurm.build);
    r.string("on_restart", on_restart);
    r.number("poll_s", c.slurm.poll_s, 0, false, 3600);
    r.integer("max_resubmits", c.slurm.max_resubmits, 0, 100);
    r.string("build", build);
    r.reject_unknown();
    c.slurm.build = parse_choice<SlurmBuild>("slurm.build", build, {{"local", SlurmBuild::kLocal}, {"job", SlurmBuild::kJob}});
    c.slurm.on_restart = parse_choice<SlurmOnRestart>("slurm.on_restart", on_restart,
                                                      {{"adopt", SlurmOnRestart::kAdopt}, {"cancel", SlurmOnRestart::kCancel}});
  }

  // The workers: one per GPU listed (none listed: "auto", counted at start), or the Slurm jobs.
  const int workers = c.executor == ExecutorKind::kSlurm ? c.slurm.max_jobs : static_cast<int>(c.gpus.size());
  if (c.promote.gpus > 0 && (c.executor == ExecutorKind::kSlurm || !c.gpus.empty()) && c.promote.gpus >= workers)
    throw ConfigError("promote.gpus: " + std::to_string(c.promote.gpus) + " reserved of " + std::to_string(workers) +
                      (c.executor == ExecutorKind::kSlurm ? " Slurm job slot(s) (slurm.max_jobs)" : " GPU(s)") +
                      " leaves none for rung 0");

  if (const toml::table* t = top.table("logs")) {
    KeyReader r(*t, "logs");
    r.number("keep_days", c.logs.keep_days, 0, true, 36500);
    r.reject_unknown();
  }

  const toml::array* profiles = nullptr;
  if (const toml::table* t = top.table("proposer")) {
    KeyReader r(*t, "proposer");
    r.string("kind", c.proposer_kind);
    r.string("script", c.proposer_script);
    if (const toml::node* n = r.get("profile")) {
      profiles = n->as_array();
      if (!profiles || !profiles->is_array_of_tables() || profiles->empty())
        throw ConfigError("proposer.profile: expected one or more [[proposer.profile]] tables");
    }
    r.reject_unknown();
  }
  if (const toml::table* t = top.table("profiles")) {
    KeyReader r(*t, "profiles");
    r.boolean("adapt", c.profiles_settings.adapt);
    r.number("floor", c.profiles_settings.floor, 0, true, 0.5);
    r.reject_unknown();
  }
  if (const toml::table* t = top.table("llm")) {
    c.llm = *t;
    c.has_llm = true;
  }
  const toml::table* offline = top.table("offline");
  if (offline) c.offline = *offline;
  if (c.proposer_kind.empty()) c.proposer_kind = c.has_llm ? "llm" : "offline";
  if (c.proposer_kind != "llm" && c.proposer_kind != "offline" && c.proposer_kind != "scripted")
    throw ConfigError("proposer.kind: unknown proposer '" + c.proposer_kind + "' (known: llm, offline, scripted)");
  // A table the proposer does not use is read all the same: a typo in it is refused now,
  // not when the proposer changes (the one it uses, the proposer factory reads at start).
  if (c.has_llm && c.proposer_kind != "llm") llm::parse_llm_config(c.llm);
  if (offline && c.proposer_kind != "offline") parse_offline_config(c.offline);
  if (profiles) c.profiles = parse_profiles(*profiles, c);

  top.reject_unknown();
  return c;
}

Config load_config(const std::filesystem::path& repo, const std::filesystem::path& config_path) {
  std::filesystem::path path = config_path.empty() ? repo / "autoresearch.toml" : config_path;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!config_path.empty()) throw ConfigError(path.string() + ": cannot read the config file");
    Config c = parse_config("", repo, path.string());
    check_globs_against_tracked(c);
    return c;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    // A `repo` key in an explicit config is relative to the file's directory.
    Config c = parse_config(ss.str(), repo, path.string(), std::filesystem::absolute(path).parent_path());
    check_globs_against_tracked(c);
    return c;
  } catch (const ConfigError& e) {
    // One line naming the file and the key (a TOML syntax error names the file already).
    const std::string what = e.what();
    if (what.rfind(path.string(), 0) == 0) throw;
    throw ConfigError(path.string() + ": " + what);
  }
}

}  // namespace ard
