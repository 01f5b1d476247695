// The daemon's configuration: autoresearch.toml in the research repo.
//
// Every key has a default (docs/daemon.md lists them), so a repo without the
// file runs with the defaults. Unknown keys and bad values are ConfigErrors
// naming the key. The [llm] and [offline] tables are kept raw: the proposer
// factory validates the one it uses.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "proposers/config_error.h"
#include "proposers/metric_goal.h"

namespace ard {


/// The most candidates a GPU may have proposed ahead (`lookahead`): each one
/// holds a worktree slot.
inline constexpr int kMaxLookahead = 8;

struct StageConfig {
  std::string name;
  std::string command;     ///< /bin/sh command; {data_dir} {budget} {worktree} substituted
  double timeout_s = 0;    ///< the child's whole process group is killed past this
  double expected_s = 0;   ///< when status expects it to end; the timeout if unset
};

struct DataConfig {
  bool enabled = true;
  std::string prepare = "build/trainer/harness/prepare";  ///< relative to the worktree
  std::vector<std::string> train = {"../shared/corpus/train.jsonl.xz"};  ///< relative to the repo
  std::vector<std::string> val = {"../shared/corpus/val.jsonl.xz"};
  std::string field = "text";
  std::string cache = "~/.cache/autoresearchd";
  double timeout_s = 7200;
  /// When an input above is missing: download the files of `sources` into
  /// <cache>/sources/<list name> and use them instead (false: refuse).
  bool fetch = true;
  std::string sources = "data_sources/c4-en.urls";  ///< the URL list, relative to the repo
  int shards = 12;  ///< train files of the list fetched: 12 C4 shards are >= 2 B tokens
};

/// [serve]: the dashboard (docs/dashboard.md).
struct ServeConfig {
  bool enabled = false;        ///< also serve from inside the daemon
  std::string bind = "127.0.0.1";
  int port = 8765;
  std::string token;           ///< required for a non-loopback bind and for actions
  bool allow_actions = false;  ///< offer stop and program.md edits (with the token)
};

/// `[noise]`: the noise floor (noise.h) and the keep margin.
struct NoiseConfig {
  int every = 30;            ///< a noise round after this many experiments per GPU
  double max_age_s = 21600;  ///< or once the estimate is this old; 0: no age limit
  double z = 2;              ///< keep margin in σΔ (keep_rule.h)
  double prior_sigma = 0;    ///< σ used until one is measured; 0: none (confirm instead)
  bool calibrate = true;     ///< 2+ GPUs: budget scales per board from the rounds (noise_rounds.h)
  bool rounds = true;        ///< false: no noise rounds (σ from confirmations and prior_sigma only)
};

/// `[keep]`: the keep rule's choices (keep_rule.h).
struct KeepConfig {
  bool equal_but_simpler = true;  ///< |Δ| ≤ σ and fewer lines: kept
  int confirmations = 2;          ///< runs of an undecided candidate after its first
};

/// `[dedup]`: duplicates caught before any GPU time (decide/duplicates.h).
struct DedupConfig {
  /// A change at least this similar to an earlier one is a duplicate (0, 1]; 1: only
  /// identical changes (and reverts of kept ones), which are duplicates at any threshold.
  double threshold = 0.9;
};

/// Where stages run (`executor`): children of the daemon, one worker per GPU,
/// or one Slurm job per experiment, `slurm.max_jobs` workers.
enum class ExecutorKind { kLocal, kSlurm };
/// `sandbox.mode`: every child in bubblewrap, or unconfined (status warns).
enum class SandboxMode { kBwrap, kOff };
/// `slurm.build`: built on the daemon's machine, or as the job's first stage.
enum class SlurmBuild { kLocal, kJob };
/// `slurm.on_restart`: the jobs a killed daemon left are followed, or cancelled.
enum class SlurmOnRestart { kAdopt, kCancel };

/// The config's word for each ("local", "slurm", "bwrap", "off", "job", "adopt", "cancel").
const char* to_string(ExecutorKind kind);
const char* to_string(SandboxMode mode);
const char* to_string(SlurmBuild build);
const char* to_string(SlurmOnRestart on_restart);

/// The [sandbox] table: how children are confined (docs/threat_model.md).
struct SandboxConfig {
  SandboxMode mode = SandboxMode::kBwrap;
  bool network = false;        ///< true: children share the host's network
  int tmp_mb = 4096;           ///< the sandbox's /tmp: a tmpfs of at most this many MiB
  int scratch_mb = 4096;       ///< the slot's scratch directory: a tmpfs of at most this many MiB
  /// More host paths a child may read (absolute): a toolchain outside /usr and /opt. The system
  /// paths are always readable; the user's home, the repository and other slots are not.
  std::vector<std::string> read_only;
};

/// The [logs] table: how long stage logs are kept.
struct LogsConfig {
  double keep_days = 30;  ///< logs older than this are deleted at start; 0 keeps them all
};

/// The [slurm] table: each experiment's stages as one Slurm job (docs/slurm.md).
struct SlurmConfig {
  std::string partition;                ///< sbatch --partition; "": the cluster's default
  std::string account;                  ///< sbatch --account; "": none
  std::string gres = "gpu:1";           ///< sbatch --gres; "": none (CPU-only clusters)
  int max_jobs = 1;                     ///< jobs in flight at once: the workers
  std::vector<std::string> extra_args;  ///< more sbatch arguments, as given
  SlurmOnRestart on_restart = SlurmOnRestart::kAdopt;
  SlurmBuild build = SlurmBuild::kLocal;
  double poll_s = 5;                    ///< how often the jobs' states are read
  int max_resubmits = 2;                ///< a preempted or node-failed job is submitted again this often
};

/// `[[proposer.profile]]`: one proposer of the swarm (proposers/profiles.h).
struct ProfileConfig {
  std::string name;      ///< letters, digits, '_', '.', '-'; unique; recorded with each experiment
  double weight = 1;     ///< > 0
  std::string addendum;  ///< the prompt's focus for this profile ("" : none)
  std::string kind;      ///< "llm" or "offline"; from proposer.kind when not given
  toml::table llm;       ///< kind "llm": [llm] with the profile's model, provider and temperature over it
};

/// `[profiles]`: how the profiles' weights move.
struct ProfilesConfig {
  bool adapt = false;  ///< the weights follow each profile's keeps per GPU-hour (adapted_shares)
  double floor = 0.1;  ///< the least share a profile keeps under adapt (at most 1 / profiles)
};

/// A stage's time limits at one rung (RungConfig): the stage's timeout_s and
/// expected_s of StageConfig, for the rung's budget.
struct StageTiming {
  std::string stage;      ///< the StageConfig's name
  double timeout_s = 0;   ///< the child's whole process group is killed past this
  double expected_s = 0;  ///< when status expects it to end
};

/// One rung of the promotion ladder (decide/promotion.h): a larger scale of the
/// same experiment. Rung 0 is the experiment as the rest of the config gives
/// it; `[[rung]]` tables are rungs 1..n, in the file's order.
///
///   [[rung]]
///   name = "2x"
///   budget_s = 600                 # default: twice the previous rung's
///   build_timeout_s = 1800         # default: build.timeout_s
///   values = { depth_scale = "2" } # placeholders {depth_scale}, ... of the commands
///   timeout_s = { train = 1400 }   # per stage; default: the stage's, scaled by budget
///   expected_s = { train = 700 }   # per stage; default: likewise
struct RungConfig {
  std::string name;             ///< letters, digits, '_', '.', '-'; unique; rung 0 is "base"
  double budget_s = 0;          ///< the training budget, {budget} in its commands
  double depth_scale = 1;       ///< values["depth_scale"] as a number (>= 1; 1 when not given)
  /// Placeholder values its build and stage commands receive ({name} -> value),
  /// as written; depth_scale among them when given.
  std::map<std::string, std::string> values;
  double build_timeout_s = 0;
  std::vector<StageTiming> stages;  ///< one per Config::stages, in their order
};

/// `promote.on_fail`: what a change that does not transfer to a rung leads to.
enum class PromoteOnFail {
  kLabel,   ///< labelled scale_bound; the chain stays as it is
  kRevert,  ///< labelled scale_bound, and its revert proposed as a candidate
};
const char* to_string(PromoteOnFail on_fail);  ///< "label", "revert"

/// `[promote]`: when kept changes are promoted up the ladder (decide/promotion.h).
struct PromoteConfig {
  int every = 5;             ///< a promotion round after this many kept changes
  double max_share = 0.25;   ///< the most of the night's GPU time spent at rungs above 0, [0, 1]; 0: no rounds
  PromoteOnFail on_fail = PromoteOnFail::kLabel;
  int gpus = 0;              ///< workers reserved for rungs above 0 (0: none reserved)
};

struct Config {
  std::filesystem::path repo;  ///< absolute research repo root
  std::string tag = "main";
  std::vector<std::string> editable = {"trainer/train.cu", "trainer/model/**"};
  std::string program = "program.md";  ///< relative to the repo root, read from the user's checkout
  int64_t max_program_bytes = 64 * 1024;  ///< a larger program.md is refused until it is fixed
  double budget_s = 300;
  double startup_s = 120;
  double min_improvement = 0;  ///< a floor under the keep rule (keep_rule.h): kept only when Δ ≥ z·σΔ and Δ ≥ this
  int max_fix_attempts = 2;
  double retry_wait_s = 60;  ///< wait before asking an unavailable or exhausted proposer again

  /// The GPUs to train on, one worker each (their CUDA device ids, given to
  /// the worker's children as CUDA_VISIBLE_DEVICES). Empty: "auto", every GPU
  /// in CUDA_VISIBLE_DEVICES or else that `nvidia-smi -L` lists (gpus.h).
  std::vector<std::string> gpus;
  /// Candidates kept proposed (and where possible built) ahead of need, per
  /// GPU. 0: propose only when a GPU is free (strictly one at a time).
  int lookahead = 1;
  int max_builds = 2;  ///< builds that may run at once (CPU work, beside training)

  std::string build_command =
      "cmake -S trainer -B build/trainer -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build/trainer";
  double build_timeout_s = 1800;
  /// The slot's build directory (one top-level name): the only untracked path
  /// a slot keeps between experiments, written by the build alone (stages get
  /// it read-only) and deleted after a tampered experiment.
  std::string build_dir = "build";

  std::vector<StageConfig> stages;  ///< filled with the defaults when the file has none

  /// The promotion ladder: [0] is rung 0 (this config's budget, stages and
  /// build; depth_scale 1), then the `[[rung]]` tables; default_rungs() when
  /// the file has none.
  std::vector<RungConfig> rungs;
  PromoteConfig promote;

  std::string metric = "val_bpb";
  /// `summary.goal`: whether a lower metric is better ("min") or a higher one
  /// ("max"). The keep rule, the judge, the plots, the prompt and the research
  /// memory all follow it (proposers/metric_goal.h).
  MetricGoal goal = MetricGoal::kMin;
  std::vector<std::string> summary_keys = {"val_bpb",        "training_seconds", "total_seconds",
                                           "peak_vram_mb",   "mfu_percent",      "total_tokens_M",
                                           "num_steps",      "num_params_M",     "depth"};

  DataConfig data;
  ServeConfig serve;
  NoiseConfig noise;
  KeepConfig keep;
  DedupConfig dedup;

  /// How start's preflight finds the GPU: "nvidia-smi" (the driver's list),
  /// "off" (stages that need no GPU; skips the CUDA checks too), or a
  /// command that exits 0 when the GPU is usable.
  std::string preflight_gpu = "nvidia-smi";
  SandboxConfig sandbox;
  LogsConfig logs;
  ExecutorKind executor = ExecutorKind::kLocal;
  SlurmConfig slurm;

  std::vector<std::string> env_pass = {"PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR",
                                       "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "LD_LIBRARY_PATH"};

  std::string proposer_kind;    ///< "llm" when [llm] is present, else "offline"; or "scripted"
  std::string proposer_script;  ///< the scripted proposer's JSON file, relative to the repo
  toml::table llm;              ///< raw [llm] table, validated by the proposer factory
  toml::table offline;          ///< raw [offline] table
  bool has_llm = false;
  /// The swarm's profiles; empty: the one proposer of proposer.kind.
  std::vector<ProfileConfig> profiles;
  ProfilesConfig profiles_settings;
};

/// Parses a config from TOML text. repo is the research repo root unless the
/// file's `repo` key names another one, relative to key_base (default: repo).
Config parse_config(const std::string& toml_text, const std::filesystem::path& repo,
                    const std::string& source_name = "autoresearch.toml",
                    const std::filesystem::path& key_base = {});

/// Loads <repo>/autoresearch.toml, or config_path when given. A missing default
/// file gives the defaults; a missing explicit file is an error. Editable globs
/// that reach a protected path (proposers/editable.h) are refused, tried against
/// the repo's tracked files as well when the repo is a git repository.
Config load_config(const std::filesystem::path& repo, const std::filesystem::path& config_path = {});

/// The stages used when the file lists none: a quick check, then the full run.
std::vector<StageConfig> default_stages(double budget_s, double startup_s);

/// Rung 0: the experiment as config gives it ("base": its budget, build
/// timeout and stages' timings, depth_scale 1, no values).
RungConfig base_rung(const Config& config);

/// The ladder used when the file has no `[[rung]]`: rung 0, then "2x" at twice
/// the depth (depth_scale = "2") and twice the budget, its stages' timeouts
/// scaled by the budget (rung_timing). Rung 0 alone (no promotion) when no
/// build or stage command takes {depth_scale}: that trainer has no scale knob.
std::vector<RungConfig> default_rungs(const Config& config);

/// A stage's timing at a rung of budget_s when the rung names none: the
/// stage's own timeout and expected time times budget_s / config.budget_s,
/// never below the stage's own.
StageTiming rung_timing(const StageConfig& stage, double base_budget_s, double budget_s);

/// Throws ConfigError when tag cannot name a branch autoresearch/<tag>.
void validate_tag(const std::string& tag);

/// Throws ConfigError (naming serve.bind, serve.port or serve.token) when the
/// dashboard cannot be served safely as configured: a bind that is not an IP
/// address, a non-loopback bind or actions without a token, a short token.
void validate_serve(const ServeConfig& serve);

/// True for 127.0.0.0/8 and ::1.
bool is_loopback_address(const std::string& address);

/// "~/x" with $HOME expanded; other paths as they are.
std::string expand_home(const std::string& path);

}  // namespace ard
