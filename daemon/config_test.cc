// Tests of config parsing: defaults, overrides, stage lists, and one-line
// errors that name the offending key.
#include "daemon/config.h"

#include <gmock/gmock.h>

#include "llm_client/llm_config.h"
#include "proposers/offline_proposer.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::string& text) {
  try {
    parse_config(text, "/r");
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  return "no error";
}

TEST(Config, EmptyFileGivesTheDefaults) {
  Config c = parse_config("", "/r");
  EXPECT_EQ(c.repo, "/r");
  EXPECT_EQ(c.tag, "main");
  EXPECT_EQ(c.editable, (std::vector<std::string>{"trainer/train.cu", "trainer/model/**"}));
  EXPECT_DOUBLE_EQ(c.budget_s, 300);
  EXPECT_THAT(c.build_command, HasSubstr("cmake -S trainer -B build/trainer"));
  ASSERT_EQ(c.stages.size(), 2u);
  EXPECT_EQ(c.stages[0].name, "check");
  EXPECT_EQ(c.stages[0].command, "build/trainer/train --check");
  EXPECT_EQ(c.stages[1].command,
            "build/trainer/train --data {data_dir} --time-budget {budget} --budget-scale {budget_scale} --depth-scale {depth_scale}");
  EXPECT_DOUBLE_EQ(c.stages[1].timeout_s, 2 * 300 + 120);
  EXPECT_TRUE(c.data.enabled);
  EXPECT_EQ(c.data.train, std::vector<std::string>{"../shared/corpus/train.jsonl.xz"});
  EXPECT_EQ(c.data.prepare, "build/trainer/harness/prepare");
  EXPECT_EQ(c.metric, "val_bpb");
  EXPECT_EQ(c.goal, MetricGoal::kMin);
  EXPECT_EQ(c.proposer_kind, "offline");
  EXPECT_FALSE(c.has_llm);
}

TEST(Config, SummaryGoalNamesTheMetricsDirection) {
  EXPECT_EQ(parse_config("[summary]\ngoal = 'min'\n", "/r").goal, MetricGoal::kMin);
  const Config c = parse_config("[summary]\nmetric = 'score'\ngoal = 'max'\nkeys = ['score']\n", "/r");
  EXPECT_EQ(c.goal, MetricGoal::kMax);
  EXPECT_EQ(c.metric, "score");
  EXPECT_EQ(error_of("[summary]\ngoal = 'higher'\n"), "summary.goal: expected \"min\" or \"max\", got \"higher\"");
  EXPECT_THAT(error_of("[summary]\ngoal = 1\n"), HasSubstr("summary.goal: expected a string"));
}

TEST(Config, BudgetDrivesTheDefaultRunTimeout) {
  Config c = parse_config("budget_s = 60\nstartup_s = 30\n", "/r");
  EXPECT_DOUBLE_EQ(c.stages[1].timeout_s, 150);
  Config d = parse_config("budget_s = 10\n[[stage]]\nname='run'\ncommand='x'\n", "/r");
  EXPECT_DOUBLE_EQ(d.stages[0].timeout_s, 2 * 10 + 120);
  EXPECT_DOUBLE_EQ(d.stages[0].expected_s, d.stages[0].timeout_s);
}

TEST(Config, ReadsEverySection) {
  Config c = parse_config(R"(
tag = "dec02"
editable = ["src/*.cc"]
min_improvement = 0.001
max_fix_attempts = 3
[build]
command = "make"
timeout_s = 5
[[stage]]
name = "smoke"
command = "./t --steps 2"
timeout_s = 3
expected_s = 1.5
[[stage]]
name = "full"
command = "./t --data {data_dir}"
[summary]
metric = "loss"
keys = ["loss", "peak_vram_mb"]
[data]
enabled = false
[env]
pass = ["PATH"]
[proposer]
kind = "scripted"
script = "edits.json"
[llm]
provider = "openai"
model = "x"
[offline]
seed = 3
)", "/r");
  EXPECT_EQ(c.tag, "dec02");
  EXPECT_EQ(c.build_command, "make");
  ASSERT_EQ(c.stages.size(), 2u);
  EXPECT_DOUBLE_EQ(c.stages[0].expected_s, 1.5);
  EXPECT_EQ(c.metric, "loss");
  EXPECT_FALSE(c.data.enabled);
  EXPECT_EQ(c.env_pass, std::vector<std::string>{"PATH"});
  EXPECT_EQ(c.proposer_kind, "scripted");
  EXPECT_TRUE(c.has_llm);
  EXPECT_EQ(c.llm["model"].value<std::string>(), "x");
  EXPECT_EQ(c.offline["seed"].value<int64_t>(), 3);
}

TEST(Config, LlmSectionMakesLlmTheDefaultKind) {
  EXPECT_EQ(parse_config("[llm]\n", "/r").proposer_kind, "llm");
}

// The swarm: each profile's model over [llm], its weight, addendum and kind.
TEST(Config, ProfilesTakeTheirModelOverTheLlmTableAndTheirOwnWeights) {
  const Config c = parse_config(R"(
[llm]
provider = "openai"
model = "base-model"
[[proposer.profile]]
name = "arch"
weight = 2
addendum = "Architecture changes only."
model = "big-model"
temperature = 0.9
[[proposer.profile]]
name = "offline-1"
kind = "offline"
[profiles]
adapt = true
floor = 0.2
)", "/r");
  ASSERT_EQ(c.profiles.size(), 2u);
  EXPECT_EQ(c.profiles[0].name, "arch");
  EXPECT_EQ(c.profiles[0].weight, 2);
  EXPECT_EQ(c.profiles[0].addendum, "Architecture changes only.");
  EXPECT_EQ(c.profiles[0].kind, "llm");
  EXPECT_EQ(c.profiles[0].llm["model"].value_or(std::string()), "big-model");
  EXPECT_EQ(c.profiles[0].llm["provider"].value_or(std::string()), "openai");  // from [llm]
  EXPECT_EQ(c.profiles[0].llm["temperature"].value_or(0.0), 0.9);
  EXPECT_EQ(c.profiles[1].kind, "offline");
  EXPECT_EQ(c.profiles[1].weight, 1);
  EXPECT_TRUE(c.profiles_settings.adapt);
  EXPECT_EQ(c.profiles_settings.floor, 0.2);
  EXPECT_TRUE(parse_config("", "/r").profiles.empty());
}

TEST(Config, ProfileErrorsNameTheProfile) {
  EXPECT_THAT(error_of("[[proposer.profile]]\nname = 'a b'\n"), HasSubstr("proposer.profile[1].name: 'a b' is not a profile name"));
  EXPECT_THAT(error_of("[[proposer.profile]]\nname = 'a'\n[[proposer.profile]]\nname = 'a'\n"),
              HasSubstr("proposer.profile[2].name: duplicate profile 'a'"));
  EXPECT_THAT(error_of("[[proposer.profile]]\nname = 'a'\nweight = 0\n"), HasSubstr("proposer.profile[1].weight: must be > 0"));
  EXPECT_THAT(error_of("[[proposer.profile]]\nname = 'a'\nkind = 'llm'\n"), HasSubstr("needs an [llm] table"));
  EXPECT_THAT(error_of("[[proposer.profile]]\nname = 'a'\nmodel = 'm'\n"), HasSubstr("an offline profile asks no model"));
  EXPECT_THAT(error_of("[proposer]\nkind = 'scripted'\nscript = 's.json'\n[[proposer.profile]]\nname = 'a'\n"),
              HasSubstr("profiles need proposer.kind llm or offline"));
  EXPECT_THAT(error_of("[profiles]\nfloor = 0.7\n"), HasSubstr("profiles.floor"));
}

TEST(Config, RepoKeyIsRelativeToTheFile) {
  testing::TempDir dir;
  testing::write_file(dir / "conf/a.toml", "repo = '../research'\n");
  Config c = load_config("/elsewhere", dir / "conf/a.toml");
  EXPECT_EQ(c.repo, dir.path() / "research");
  Config d = load_config(dir.path());  // no default file: defaults
  EXPECT_EQ(d.repo, dir.path());
  EXPECT_THROW(load_config(dir.path(), dir / "missing.toml"), ConfigError);
}

TEST(Config, ErrorsNameTheKey) {
  EXPECT_THAT(error_of("tagg = 'x'"), HasSubstr("tagg: unknown key"));
  EXPECT_THAT(error_of("[build]\ncmd = 'x'"), HasSubstr("build.cmd: unknown key"));
  EXPECT_THAT(error_of("budget_s = 'long'"), HasSubstr("budget_s: expected a number"));
  EXPECT_THAT(error_of("budget_s = -5"), HasSubstr("budget_s: must be > 0"));
  EXPECT_THAT(error_of("tag = 'a/b'"), HasSubstr("tag:"));
  // git's ref rules, which the character set alone let through.
  EXPECT_THAT(error_of("tag = 'a.'"), HasSubstr("tag: 'a.' cannot name the branch autoresearch/a."));
  EXPECT_THAT(error_of("tag = 'a.lock'"), HasSubstr("tag:"));
  EXPECT_THAT(error_of("tag = 'a..b'"), HasSubstr("tag:"));
  EXPECT_THAT(error_of("tag = '-a'"), HasSubstr("tag:"));
  EXPECT_THAT(error_of("tag = 'a@{1}'"), HasSubstr("tag:"));
  EXPECT_THAT(error_of("tag = \"a\\u0001b\""), HasSubstr("tag:"));
  EXPECT_NO_THROW(validate_tag("dec5.run-2_b"));
  EXPECT_THAT(error_of("editable = ['../x']"), HasSubstr("editable:"));
  EXPECT_THAT(error_of("editable = []"), HasSubstr("editable: must not be empty"));
  EXPECT_THAT(error_of("[[stage]]\nname='a'\n"), HasSubstr("stage[1].command: missing"));
  EXPECT_THAT(error_of("[[stage]]\nname='a'\ncommand='x'\n[[stage]]\nname='a'\ncommand='y'\n"),
              HasSubstr("stage[2].name: duplicate"));
  EXPECT_THAT(error_of("[[stage]]\nname='a'\ncommand='x'\ntimeout='1'\n"), HasSubstr("stage[1].timeout: unknown key"));
  EXPECT_THAT(error_of("[summary]\nmetric='loss'\n"), HasSubstr("summary.metric"));
  EXPECT_THAT(error_of("[data]\nenabled='yes'\n"), HasSubstr("data.enabled: expected true or false"));
  EXPECT_THAT(error_of("[env]\npass=['A B']\n"), HasSubstr("env.pass"));
  EXPECT_THAT(error_of("build = 3"), HasSubstr("build: expected a table"));
  EXPECT_THAT(error_of("max_fix_attempts = 1.5"), HasSubstr("max_fix_attempts: expected an integer"));
  EXPECT_THAT(error_of("x = = 1"), HasSubstr("autoresearch.toml:1:"));
}

TEST(Config, EveryNumberHasAMaximum) {
  EXPECT_EQ(error_of("lookahead = 100000"), "lookahead: must be 0 to 8, got 100000");
  EXPECT_EQ(error_of("retry_wait_s = 1e300"), "retry_wait_s: must be > 0 and <= 86400, got 1e+300");
  EXPECT_EQ(error_of("[[stage]]\nname='t'\ncommand='x'\ntimeout_s = 1e10\n"),
            "stage[1].timeout_s: must be > 0 and <= 1e+07, got 1e+10");
  EXPECT_EQ(error_of("[build]\ntimeout_s = 1e10\n"), "build.timeout_s: must be > 0 and <= 1e+07, got 1e+10");
  EXPECT_EQ(error_of("budget_s = 1e10"), "budget_s: must be > 0 and <= 1e+07, got 1e+10");
  EXPECT_EQ(error_of("max_builds = 1000"), "max_builds: must be 1 to 64, got 1000");
  EXPECT_EQ(error_of("[logs]\nkeep_days = 1e9\n"), "logs.keep_days: must be >= 0 and <= 36500, got 1e+09");
  EXPECT_EQ(error_of("[slurm]\npoll_s = 1e9\n"), "slurm.poll_s: must be > 0 and <= 3600, got 1e+09");
  EXPECT_EQ(parse_config("lookahead = 8\nretry_wait_s = 86400\n", "/r").lookahead, 8);
}

TEST(Config, AnErrorInAFileNamesTheFileAndTheKey) {
  testing::TempDir dir;
  testing::write_file(dir / "autoresearch.toml", "lookahead = 100000\n");
  try {
    load_config(dir.path());
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "autoresearch.toml").string() + ": lookahead: must be 0 to 8, got 100000");
  }
  testing::write_file(dir / "autoresearch.toml", "x = = 1\n");
  try {
    load_config(dir.path());
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind((dir / "autoresearch.toml").string() + ":1:", 0), 0u) << e.what();
  }
}

TEST(Config, StageNamesAreFileNameSafe) {
  EXPECT_EQ(error_of("[[stage]]\nname = '../../x'\ncommand = 'true'\n"),
            "stage[1].name: '../../x' is not a stage name (letters, digits, '_', '.', '-'; no '/'; at most 64)");
  EXPECT_THAT(error_of("[[stage]]\nname = '.hidden'\ncommand = 'true'\n"), HasSubstr("is not a stage name"));
  EXPECT_THAT(error_of("[[stage]]\nname = 'a b'\ncommand = 'true'\n"), HasSubstr("is not a stage name"));
  EXPECT_EQ(parse_config("[[stage]]\nname = 'train-2.b_c'\ncommand = 'true'\n", "/r").stages[0].name, "train-2.b_c");
}

TEST(Config, GitignoreIsRefusedAsAGitFileNotAsAPathOutsideTheRepo) {
  EXPECT_EQ(error_of("editable = ['.gitignore']"), "editable[0]: \".gitignore\" would let an edit change .gitignore");
  EXPECT_EQ(error_of("editable = ['.git/config']"), "editable: '.git/config' must be a path inside the repo");
  EXPECT_EQ(error_of("editable = ['trainer/model/']"),
            "editable[0]: \"trainer/model/\" can never match a file: it ends with '/' (globs match files, not "
            "directories)");
}

TEST(Config, AnUnusedLlmOrOfflineTableIsCheckedAllTheSame) {
  const std::string llm = "[llm]\nprovider = 'openai'\nmodel = 'm'\n";
  EXPECT_EQ(parse_config("[proposer]\nkind = 'offline'\n" + llm, "/r").proposer_kind, "offline");
  EXPECT_EQ(error_of("[proposer]\nkind = 'offline'\n" + llm + "tempreature = 0.5\n"), "llm.tempreature: unknown key");
  EXPECT_EQ(error_of(llm + "[offline]\nmax_factr = 2\n"), "offline.max_factr: unknown key");
  EXPECT_EQ(error_of("[proposer]\nkind = 'psychic'\n[llm]\n"),
            "proposer.kind: unknown proposer 'psychic' (known: llm, offline, scripted)");
}

TEST(Config, TheBuildDirectoryIsOneNameInTheWorktreeRoot) {
  EXPECT_EQ(parse_config("", "/r").build_dir, "build");
  EXPECT_EQ(parse_config("[build]\ndir = \"out\"\n", "/r").build_dir, "out");
  for (const char* bad : {"../x", "a/b", ".git", "..", "."})
    EXPECT_EQ(error_of(std::string("[build]\ndir = \"") + bad + "\"\n"),
              std::string("build.dir: '") + bad + "' must be one directory name in the worktree's root");
}

TEST(Config, NoiseAndKeepTables) {
  Config d = parse_config("", "/r");
  EXPECT_EQ(d.noise.every, 30);
  EXPECT_DOUBLE_EQ(d.noise.max_age_s, 21600);
  EXPECT_DOUBLE_EQ(d.noise.z, 2);
  EXPECT_DOUBLE_EQ(d.noise.prior_sigma, 0);
  EXPECT_TRUE(d.keep.equal_but_simpler);
  EXPECT_EQ(d.keep.confirmations, 2);

  Config c = parse_config(
      "[noise]\nevery = 5\nmax_age_s = 0\nz = 2.5\nprior_sigma = 0.0015\n"
      "[keep]\nequal_but_simpler = false\nconfirmations = 3\n",
      "/r");
  EXPECT_EQ(c.noise.every, 5);
  EXPECT_DOUBLE_EQ(c.noise.max_age_s, 0);
  EXPECT_DOUBLE_EQ(c.noise.z, 2.5);
  EXPECT_DOUBLE_EQ(c.noise.prior_sigma, 0.0015);
  EXPECT_FALSE(c.keep.equal_but_simpler);
  EXPECT_EQ(c.keep.confirmations, 3);

  EXPECT_THAT(error_of("[noise]\nevery = 0\n"), HasSubstr("noise.every: must be 1 to 1000000, got 0"));
  EXPECT_THAT(error_of("[noise]\nevery = 2.5\n"), HasSubstr("noise.every: expected an integer"));
  EXPECT_THAT(error_of("[noise]\nz = 0\n"), HasSubstr("noise.z: must be > 0"));
  EXPECT_THAT(error_of("[noise]\nz = 7\n"), HasSubstr("noise.z: must be <= 6"));
  EXPECT_THAT(error_of("[noise]\nprior_sigma = -0.001\n"), HasSubstr("noise.prior_sigma: must be >= 0"));
  EXPECT_THAT(error_of("[noise]\nmax_age_s = -1\n"), HasSubstr("noise.max_age_s: must be >= 0"));
  EXPECT_THAT(error_of("[noise]\nsigma = 1\n"), HasSubstr("noise.sigma: unknown key"));
  EXPECT_THAT(error_of("[keep]\nequal_but_simpler = 1\n"), HasSubstr("keep.equal_but_simpler: expected true or false"));
  EXPECT_THAT(error_of("[keep]\nconfirmations = -1\n"), HasSubstr("keep.confirmations: must be 0 to 1000000, got -1"));
  EXPECT_THAT(error_of("[keep]\nconfirmations = 6\n"), HasSubstr("keep.confirmations: must be <= 5"));
  EXPECT_THAT(error_of("keep = 1\n"), HasSubstr("keep: expected a table"));
}

TEST(Config, SandboxLogsAndProgramLimit) {
  Config d = parse_config("", "/r");
  EXPECT_STREQ(to_string(d.sandbox.mode), "bwrap");
  EXPECT_FALSE(d.sandbox.network);
  EXPECT_EQ(d.max_program_bytes, 64 * 1024);
  EXPECT_DOUBLE_EQ(d.logs.keep_days, 30);
  Config c = parse_config("max_program_bytes = 2000000\n[sandbox]\nmode = 'off'\nnetwork = true\n[logs]\nkeep_days = 0\n",
                          "/r");
  EXPECT_STREQ(to_string(c.sandbox.mode), "off");
  EXPECT_TRUE(c.sandbox.network);
  EXPECT_EQ(c.max_program_bytes, 2000000);
  EXPECT_DOUBLE_EQ(c.logs.keep_days, 0);
  EXPECT_EQ(error_of("[sandbox]\nmode = 'none'\n"), "sandbox.mode: expected \"bwrap\" or \"off\", got \"none\"");
  EXPECT_EQ(error_of("sandbox = 'off'\n"), "sandbox: expected a table: [sandbox] with mode = \"bwrap\" or \"off\"");
  EXPECT_EQ(error_of("[sandbox]\nnet = true\n"), "sandbox.net: unknown key");
  EXPECT_EQ(error_of("[sandbox]\nnetwork = 1\n"), "sandbox.network: expected true or false");
  EXPECT_TRUE(d.sandbox.read_only.empty());
  Config ro = parse_config("[sandbox]\nread_only = ['/opt2/cuda', '~/tools']\n", "/r");
  ASSERT_EQ(ro.sandbox.read_only.size(), 2u);
  EXPECT_EQ(ro.sandbox.read_only[0], "/opt2/cuda");
  EXPECT_EQ(ro.sandbox.read_only[1].front(), '/');  // ~ expanded
  EXPECT_EQ(error_of("[sandbox]\nread_only = ['tools']\n"),
            "sandbox.read_only: expected absolute paths (or ~/...), got \"tools\"");
  EXPECT_THAT(error_of("[sandbox]\nread_only = ['/']\n"), HasSubstr("would show the child every file"));
  EXPECT_THAT(error_of("max_program_bytes = 0"), HasSubstr("max_program_bytes: must be >= 1"));
  EXPECT_THAT(error_of("max_program_bytes = 1.5"), HasSubstr("max_program_bytes: expected a whole number"));
  EXPECT_THAT(error_of("[logs]\nkeep_days = -1\n"), HasSubstr("logs.keep_days: must be >= 0"));
}

TEST(Config, ExecutorAndSlurmTable) {
  Config d = parse_config("", "/r");
  EXPECT_STREQ(to_string(d.executor), "local");
  EXPECT_EQ(d.slurm.gres, "gpu:1");
  EXPECT_EQ(d.slurm.max_jobs, 1);
  EXPECT_STREQ(to_string(d.slurm.on_restart), "adopt");
  EXPECT_STREQ(to_string(d.slurm.build), "local");
  EXPECT_EQ(parse_config("[slurm]\nbuild = 'job'\n", "/r").slurm.build, SlurmBuild::kJob);
  EXPECT_EQ(error_of("[slurm]\nbuild = 'remote'\n"), "slurm.build: expected \"local\" or \"job\", got \"remote\"");
  Config c = parse_config(
      "executor = 'slurm'\n[slurm]\npartition = 'gpu'\naccount = 'lab'\ngres = ''\nmax_jobs = 8\n"
      "extra_args = ['--qos=low']\non_restart = 'cancel'\npoll_s = 0.5\nmax_resubmits = 0\n",
      "/r");
  EXPECT_STREQ(to_string(c.executor), "slurm");
  EXPECT_EQ(c.slurm.partition, "gpu");
  EXPECT_EQ(c.slurm.account, "lab");
  EXPECT_EQ(c.slurm.gres, "");
  EXPECT_EQ(c.slurm.max_jobs, 8);
  EXPECT_EQ(c.slurm.extra_args, std::vector<std::string>{"--qos=low"});
  EXPECT_STREQ(to_string(c.slurm.on_restart), "cancel");
  EXPECT_DOUBLE_EQ(c.slurm.poll_s, 0.5);
  EXPECT_EQ(c.slurm.max_resubmits, 0);
  EXPECT_EQ(error_of("executor = 'k8s'\n"), "executor: expected \"local\" or \"slurm\", got \"k8s\"");
  EXPECT_EQ(error_of("[slurm]\non_restart = 'keep'\n"),
            "slurm.on_restart: expected \"adopt\" or \"cancel\", got \"keep\"");
  EXPECT_THAT(error_of("[slurm]\nmax_jobs = 0\n"), HasSubstr("slurm.max_jobs: must be 1 to 4096, got 0"));
  EXPECT_THAT(error_of("[slurm]\npoll_s = 0\n"), HasSubstr("slurm.poll_s: must be > 0"));
  EXPECT_EQ(error_of("[slurm]\nqueue = 'x'\n"), "slurm.queue: unknown key");
  EXPECT_EQ(error_of("[slurm]\nextra_args = '--qos=low'\n"), "slurm.extra_args: expected an array of strings");
}

TEST(Config, EditableGlobsThatOpenTheHarnessAreRefused) {
  EXPECT_EQ(error_of("editable = ['**']"), "editable[0]: \"**\" would let an edit change trainer/harness/eval.h");
  EXPECT_EQ(error_of("editable = ['trainer/train.cu', 'trainer/**']"),
            "editable[1]: \"trainer/**\" would let an edit change trainer/harness/eval.h");
  EXPECT_EQ(error_of("editable = ['trainer/harness/eval.h']"),
            "editable[0]: \"trainer/harness/eval.h\" would let an edit change trainer/harness/eval.h");
  EXPECT_EQ(error_of("editable = ['CMakeLists.txt']"),
            "editable[0]: \"CMakeLists.txt\" would let an edit change CMakeLists.txt");
  EXPECT_EQ(error_of("editable = ['.autoresearchd/**']"),
            "editable[0]: \".autoresearchd/**\" would let an edit change .autoresearchd/results.db");

  // A build file the repo tracks where no fixed probe looks.
  testing::TempDir dir;
  testing::write_file(dir / "trainer/ext/CMakeLists.txt", "# build\n");
  testing::write_file(dir / "trainer/ext/a.cu", "");
  ASSERT_EQ(testing::commit_base_repo(dir.path()), 0);
  testing::write_file(dir / "autoresearch.toml", "editable = ['trainer/ext/*']\n");
  try {
    load_config(dir.path());
    FAIL() << "accepted a glob over a tracked build file";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "autoresearch.toml").string() +
                                         ": editable[0]: \"trainer/ext/*\" would let an edit change trainer/ext/CMakeLists.txt");
  }
  testing::write_file(dir / "autoresearch.toml", "editable = ['trainer/ext/*.cu']\n");
  EXPECT_EQ(load_config(dir.path()).editable, std::vector<std::string>{"trainer/ext/*.cu"});
}

TEST(Config, ShippedConfigParses) {
  std::string text = testing::read_file(std::filesystem::path(ARD_SOURCE_DIR) / "autoresearch.toml");
  ASSERT_FALSE(text.empty());
  Config c = parse_config(text, ARD_SOURCE_DIR);
  Config d = parse_config("", ARD_SOURCE_DIR);
  EXPECT_EQ(c.tag, d.tag);
  EXPECT_EQ(c.build_command, d.build_command);
  ASSERT_EQ(c.stages.size(), d.stages.size());
  for (size_t i = 0; i < c.stages.size(); ++i) {
    EXPECT_EQ(c.stages[i].command, d.stages[i].command);
    EXPECT_DOUBLE_EQ(c.stages[i].timeout_s, d.stages[i].timeout_s);
  }
  EXPECT_EQ(c.promote.every, d.promote.every);
  EXPECT_DOUBLE_EQ(c.promote.max_share, d.promote.max_share);
  EXPECT_EQ(c.promote.on_fail, d.promote.on_fail);
  EXPECT_EQ(c.promote.gpus, d.promote.gpus);
  ASSERT_EQ(c.rungs.size(), d.rungs.size());
  EXPECT_EQ(c.rungs.back().name, d.rungs.back().name);
  EXPECT_EQ(c.data.train, d.data.train);
  EXPECT_EQ(c.noise.every, d.noise.every);
  EXPECT_DOUBLE_EQ(c.noise.max_age_s, d.noise.max_age_s);
  EXPECT_DOUBLE_EQ(c.noise.z, d.noise.z);
  EXPECT_DOUBLE_EQ(c.noise.prior_sigma, d.noise.prior_sigma);
  EXPECT_EQ(c.keep.equal_but_simpler, d.keep.equal_but_simpler);
  EXPECT_EQ(c.keep.confirmations, d.keep.confirmations);
  EXPECT_EQ(c.data.fetch, d.data.fetch);
  EXPECT_EQ(c.data.sources, d.data.sources);
  EXPECT_EQ(c.data.shards, d.data.shards);
  EXPECT_EQ(c.preflight_gpu, d.preflight_gpu);
}

// Each commented `-- example: ... --` block of the shipped file, uncommented
// into the file, is a config the daemon and the proposer accept.
TEST(Config, ShippedLlmAndOfflineExamplesWork) {
  std::string text = testing::read_file(std::filesystem::path(ARD_SOURCE_DIR) / "autoresearch.toml");
  std::istringstream in(text);
  std::vector<std::string> examples;
  std::string block;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# -- example:", 0) == 0) {
      inside = true;
      block.clear();
    } else if (line == "# -- end --") {
      inside = false;
      examples.push_back(block);
    } else if (inside) {
      ASSERT_EQ(line.rfind("# ", 0), 0u) << line;
      block += line.substr(2) + "\n";
    }
  }
  ASSERT_EQ(examples.size(), 4u);
  for (const auto& ex : examples) {
    Config c = parse_config(text + "\n" + ex, ARD_SOURCE_DIR);
    if (c.has_llm) {
      EXPECT_EQ(c.proposer_kind, "llm");
      llm::LlmConfig l = llm::parse_llm_config(c.llm);
      EXPECT_FALSE(l.model.empty());
    } else {
      OfflineConfig o = parse_offline_config(c.offline);
      EXPECT_EQ(o.file, "trainer/train.cu");
    }
  }
}

TEST(Config, FetchAndPreflightKeys) {
  Config d = parse_config("", "/r");
  EXPECT_TRUE(d.data.fetch);
  EXPECT_EQ(d.data.sources, "data_sources/c4-en.urls");
  EXPECT_EQ(d.data.shards, 12);
  EXPECT_EQ(d.preflight_gpu, "nvidia-smi");
  Config c = parse_config("[data]\nfetch = false\nsources = 'm.urls'\nshards = 3\n[preflight]\ngpu = 'off'\n", "/r");
  EXPECT_FALSE(c.data.fetch);
  EXPECT_EQ(c.data.sources, "m.urls");
  EXPECT_EQ(c.data.shards, 3);
  EXPECT_EQ(c.preflight_gpu, "off");
  EXPECT_THAT(error_of("[data]\nshards = 0\n"), HasSubstr("data.shards: must be 1 to 100000, got 0"));
  EXPECT_THAT(error_of("[preflight]\ngpu = ''\n"), HasSubstr("preflight.gpu: must not be empty"));
  EXPECT_THAT(error_of("[preflight]\ncuda = 'x'\n"), HasSubstr("preflight.cuda: unknown key"));
}

TEST(Config, ServeDefaultsToReadOnlyLoopback) {
  Config c = parse_config("", "/r");
  EXPECT_FALSE(c.serve.enabled);
  EXPECT_EQ(c.serve.bind, "127.0.0.1");
  EXPECT_EQ(c.serve.port, 8765);
  EXPECT_EQ(c.serve.token, "");
  EXPECT_FALSE(c.serve.allow_actions);
  Config d = parse_config(R"(
[serve]
enabled = true
bind = "0.0.0.0"
port = 9000
token = "0123456789abcdef"
allow_actions = true
)", "/r");
  EXPECT_TRUE(d.serve.enabled);
  EXPECT_EQ(d.serve.bind, "0.0.0.0");
  EXPECT_EQ(d.serve.port, 9000);
  EXPECT_EQ(d.serve.token, "0123456789abcdef");
  EXPECT_TRUE(d.serve.allow_actions);
  EXPECT_EQ(parse_config("[serve]\nbind = \"::1\"\n", "/r").serve.bind, "::1");
}

TEST(Config, WithoutRungTablesTheLadderIsBaseThenTwiceTheDepthAndBudget) {
  Config c = parse_config("budget_s = 100\n", "/r");
  ASSERT_EQ(c.rungs.size(), 2u);
  EXPECT_EQ(c.rungs[0].name, "base");
  EXPECT_DOUBLE_EQ(c.rungs[0].budget_s, 100);
  EXPECT_DOUBLE_EQ(c.rungs[0].depth_scale, 1);
  EXPECT_TRUE(c.rungs[0].values.empty());
  ASSERT_EQ(c.rungs[0].stages.size(), 2u);
  EXPECT_DOUBLE_EQ(c.rungs[0].stages[1].timeout_s, c.stages[1].timeout_s);
  EXPECT_EQ(c.rungs[1].name, "2x");
  EXPECT_DOUBLE_EQ(c.rungs[1].budget_s, 200);
  EXPECT_DOUBLE_EQ(c.rungs[1].depth_scale, 2);
  EXPECT_EQ(c.rungs[1].values, (std::map<std::string, std::string>{{"depth_scale", "2"}}));
  EXPECT_DOUBLE_EQ(c.rungs[1].build_timeout_s, c.build_timeout_s);
  ASSERT_EQ(c.rungs[1].stages.size(), 2u);
  EXPECT_EQ(c.rungs[1].stages[1].stage, "train");
  EXPECT_DOUBLE_EQ(c.rungs[1].stages[1].timeout_s, 2 * (2 * 100 + 120));
  EXPECT_DOUBLE_EQ(c.rungs[1].stages[1].expected_s, 2 * (100 + 120));
  EXPECT_DOUBLE_EQ(c.rungs[1].stages[0].timeout_s, 2 * 300);
  EXPECT_EQ(c.promote.every, 5);
  EXPECT_DOUBLE_EQ(c.promote.max_share, 0.25);
  EXPECT_EQ(c.promote.on_fail, PromoteOnFail::kLabel);
  EXPECT_EQ(c.promote.gpus, 0);

  // A trainer whose commands take no {depth_scale} has no scale knob: no default ladder.
  Config custom = parse_config("[[stage]]\nname = \"train\"\ncommand = \"./train --budget {budget}\"\n", "/r");
  ASSERT_EQ(custom.rungs.size(), 1u);
  EXPECT_EQ(custom.rungs[0].name, "base");
}

TEST(Config, RungTablesReplaceTheDefaultLadder) {
  Config c = parse_config(R"(
budget_s = 100
gpus = [0, 1, 2]
[[stage]]
name = "train"
command = "train --depth-scale {depth_scale} --budget {budget}"
timeout_s = 300
expected_s = 150
[[rung]]
name = "wide"
values = { depth_scale = 2, width = "768" }
timeout_s = { train = 900 }
[[rung]]
name = "deep-4x"
budget_s = 1000
build_timeout_s = 60
expected_s = { train = 1100 }
values = { depth_scale = "4" }
[promote]
every = 3
max_share = 0.5
on_fail = "revert"
gpus = 1
)",
                          "/r");
  ASSERT_EQ(c.rungs.size(), 3u);
  EXPECT_EQ(c.rungs[0].name, "base");
  EXPECT_EQ(c.rungs[1].name, "wide");
  EXPECT_DOUBLE_EQ(c.rungs[1].budget_s, 200);  // twice the rung below when not given
  EXPECT_DOUBLE_EQ(c.rungs[1].depth_scale, 2);
  EXPECT_EQ(c.rungs[1].values, (std::map<std::string, std::string>{{"depth_scale", "2"}, {"width", "768"}}));
  ASSERT_EQ(c.rungs[1].stages.size(), 1u);
  EXPECT_DOUBLE_EQ(c.rungs[1].stages[0].timeout_s, 900);
  EXPECT_DOUBLE_EQ(c.rungs[1].stages[0].expected_s, 300);  // 150 scaled by 200 / 100
  EXPECT_EQ(c.rungs[2].name, "deep-4x");
  EXPECT_DOUBLE_EQ(c.rungs[2].budget_s, 1000);
  EXPECT_DOUBLE_EQ(c.rungs[2].build_timeout_s, 60);
  EXPECT_DOUBLE_EQ(c.rungs[2].depth_scale, 4);
  EXPECT_DOUBLE_EQ(c.rungs[2].stages[0].timeout_s, 3000);  // 300 scaled by 1000 / 100
  EXPECT_DOUBLE_EQ(c.rungs[2].stages[0].expected_s, 1100);
  EXPECT_EQ(c.promote.every, 3);
  EXPECT_DOUBLE_EQ(c.promote.max_share, 0.5);
  EXPECT_EQ(c.promote.on_fail, PromoteOnFail::kRevert);
  EXPECT_STREQ(to_string(c.promote.on_fail), "revert");
  EXPECT_EQ(c.promote.gpus, 1);
}

TEST(Config, RungAndPromoteErrorsNameTheKey) {
  EXPECT_EQ(error_of("rung = 3"), "rung: expected one or more [[rung]] tables");
  EXPECT_EQ(error_of("[[rung]]\nbudget_s = 10\n"), "rung[1].name: missing");
  EXPECT_EQ(error_of("[[rung]]\nname = 'base'\n"), "rung[1].name: 'base' names another rung (rung 0 is \"base\")");
  EXPECT_EQ(error_of("[[rung]]\nname = 'a'\n[[rung]]\nname = 'a'\n"),
            "rung[2].name: 'a' names another rung (rung 0 is \"base\")");
  EXPECT_THAT(error_of("[[rung]]\nname = 'a b'\n"), HasSubstr("rung[1].name: 'a b' is not a rung name"));
  EXPECT_EQ(error_of("[[rung]]\nname = 'a'\nsize = 2\n"), "rung[1].size: unknown key");
  EXPECT_EQ(error_of("[[rung]]\nname = 'a'\nbudget_s = 0\n"), "rung[1].budget_s: must be > 0 and <= 1e+07, got 0");
  EXPECT_EQ(error_of("[[rung]]\nname = 'a'\ntimeout_s = { fit = 10 }\n"), "rung[1].timeout_s.fit: no stage is named 'fit'");
  EXPECT_EQ(error_of("[[rung]]\nname = 'a'\nexpected_s = { train = 'long' }\n"),
            "rung[1].expected_s.train: expected a number of seconds");
  EXPECT_EQ(error_of("[[rung]]\nname = 'a'\ntimeout_s = { train = -1 }\n"),
            "rung[1].timeout_s.train: must be > 0 and <= 10000000");
  EXPECT_EQ(error_of("[[rung]]\nname = 'a'\nvalues = { depth_scale = 'two' }\n"),
            "rung[1].values.depth_scale: expected a number, got 'two'");
  EXPECT_EQ(error_of("[[rung]]\nname = 'a'\nvalues = { depth_scale = 0.5 }\n"),
            "rung[1].values.depth_scale: must be >= 1 and <= 64 (a rung is a larger scale), got 0.5");
  EXPECT_EQ(error_of("[[rung]]\nname = 'a'\nvalues = { budget = '9' }\n"),
            "rung[1].values.budget: {budget} is filled by the daemon itself");
  EXPECT_EQ(error_of("[[rung]]\nname = 'a'\nvalues = { rung = '9' }\n"),
            "rung[1].values.rung: {rung} is filled by the daemon itself");
  EXPECT_THAT(error_of("[[rung]]\nname = 'a'\nvalues = { width = '7; rm -rf ~' }\n"),
              HasSubstr("rung[1].values.width: '7; rm -rf ~' must be 1 to 256 of"));
  EXPECT_EQ(error_of("[[rung]]\nname = 'a'\nvalues = { width = true }\n"),
            "rung[1].values.width: expected a string or a number");
  EXPECT_EQ(error_of("[[rung]]\nname = 'a'\nvalues = 3\n"), "rung[1].values: expected a table [rung[1].values]");
  EXPECT_EQ(error_of("[promote]\non_fail = 'drop'\n"), "promote.on_fail: expected \"label\" or \"revert\", got \"drop\"");
  EXPECT_EQ(error_of("[promote]\nevery = 0\n"), "promote.every: must be 1 to 1000000, got 0");
  EXPECT_EQ(error_of("[promote]\nmax_share = -0.1\n"), "promote.max_share: must be >= 0 and <= 1, got -0.1");
  EXPECT_EQ(error_of("[promote]\nmax_share = 1.5\n"), "promote.max_share: must be >= 0 and <= 1, got 1.5");
  EXPECT_EQ(error_of("[promote]\ngpus = -1\n"), "promote.gpus: must be 0 to 4096, got -1");
  EXPECT_EQ(error_of("gpus = [0, 1]\n[promote]\ngpus = 2\n"), "promote.gpus: 2 reserved of 2 GPU(s) leaves none for rung 0");
  EXPECT_EQ(error_of("executor = 'slurm'\n[slurm]\nmax_jobs = 3\n[promote]\ngpus = 3\n"),
            "promote.gpus: 3 reserved of 3 Slurm job slot(s) (slurm.max_jobs) leaves none for rung 0");
  EXPECT_NO_THROW(parse_config("executor = 'slurm'\n[slurm]\nmax_jobs = 4\n[promote]\ngpus = 3\n", "/r"));
  EXPECT_NO_THROW(parse_config("[promote]\ngpus = 3\n", "/r"));  // gpus = "auto": counted at start
  EXPECT_EQ(error_of("[promote]\nround = 1\n"), "promote.round: unknown key");
}

TEST(Config, ServeRefusesUnsafeOrBadValues) {
  EXPECT_EQ(error_of("[serve]\nbind = \"0.0.0.0\"\n"),
            "serve.token: required to serve on 0.0.0.0, which is not a loopback address");
  EXPECT_EQ(error_of("[serve]\nallow_actions = true\n"), "serve.token: required when serve.allow_actions = true");
  EXPECT_EQ(error_of("[serve]\ntoken = \"short\"\n"), "serve.token: must be at least 16 characters");
  EXPECT_THAT(error_of("[serve]\ntoken = \"0123456789 abcdef\"\n"), HasSubstr("serve.token: only printable"));
  EXPECT_EQ(error_of("[serve]\nbind = \"localhost\"\n"), "serve.bind: 'localhost' is not an IPv4 or IPv6 address");
  EXPECT_EQ(error_of("[serve]\nport = 70000\n"), "serve.port: must be 1 to 65535, got 70000");
  EXPECT_EQ(error_of("[serve]\nport = 0\n"), "serve.port: must be 1 to 65535, got 0");
  EXPECT_EQ(error_of("[serve]\nport = \"80\"\n"), "serve.port: expected an integer");
  EXPECT_EQ(error_of("[serve]\nenabled = 1\n"), "serve.enabled: expected true or false");
  EXPECT_EQ(error_of("[serve]\nhost = \"x\"\n"), "serve.host: unknown key");
  EXPECT_TRUE(is_loopback_address("127.0.0.2"));
  EXPECT_TRUE(is_loopback_address("::1"));
  EXPECT_FALSE(is_loopback_address("10.0.0.1"));
  EXPECT_FALSE(is_loopback_address("::"));
}

}  // namespace
}  // namespace ard
