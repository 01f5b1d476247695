// Tests of config parsing: defaults, overrides, stage lists, and one-line
// errors that name the offending key.
#include "daemon/config.h"

#include <gmock/gmock.h>

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
  EXPECT_EQ(c.stages[1].command, "build/trainer/train --data {data_dir}");
  EXPECT_DOUBLE_EQ(c.stages[1].timeout_s, 2 * 300 + 120);
  EXPECT_TRUE(c.data.enabled);
  EXPECT_EQ(c.data.train, std::vector<std::string>{"../shared/corpus/train.jsonl.xz"});
  EXPECT_EQ(c.data.prepare, "build/trainer/harness/prepare");
  EXPECT_EQ(c.metric, "val_bpb");
  EXPECT_EQ(c.proposer_kind, "offline");
  EXPECT_FALSE(c.has_llm);
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
  EXPECT_EQ(c.data.train, d.data.train);
}

}  // namespace
}  // namespace ard
