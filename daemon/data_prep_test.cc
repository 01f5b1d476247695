// Tests of the data step with a real child: a stand-in prepare script that
// speaks prepare's protocol (last line `data_dir: PATH`, one-line errors).
#include "daemon/data_prep.h"

#include <gmock/gmock.h>

#include "daemon/fatal_error.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;

class DataPrepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config = parse_config(R"(
[build]
command = "echo built > built.txt"
[data]
prepare = "./prepare.sh"
train = ["../corpus/train.jsonl.xz", "/abs/more.txt"]
val = ["../corpus/val.jsonl.xz"]
cache = "/tmp/cache dir"
)", dir / "repo");
    std::filesystem::create_directories(worktree);
    state.create();
  }
  void write_prepare(const std::string& body) {
    testing::write_file(worktree / "prepare.sh", "#!/bin/sh\n" + body);
    std::filesystem::permissions(worktree / "prepare.sh", std::filesystem::perms::owner_all);
  }
  testing::TempDir dir;
  Config config;
  std::filesystem::path worktree = dir / "wt";
  StateDir state{dir / "repo"};
  PosixProcessRunner runner;
  Log log{"", false};
};

TEST_F(DataPrepTest, CommandResolvesInputsAgainstTheRepo) {
  EXPECT_EQ(prepare_command(config), "'./prepare.sh' --train '" + (dir / "corpus/train.jsonl.xz").string() +
                                         "' --train '/abs/more.txt' --val '" + (dir / "corpus/val.jsonl.xz").string() +
                                         "' --field 'text' --cache '/tmp/cache dir'");
}

TEST_F(DataPrepTest, BuildsThenReturnsTheLastDataDirLine) {
  write_prepare("echo 'data_dir: /old'\necho progress\necho \"data_dir: /cache/$2\"\n");
  std::string d = prepare_data(config, worktree, state, runner, log);
  EXPECT_EQ(d, "/cache/" + (dir / "corpus/train.jsonl.xz").string());
  EXPECT_EQ(testing::read_file(worktree / "built.txt"), "built\n");
}

TEST_F(DataPrepTest, FailuresCarryPreparesOwnErrorLine) {
  write_prepare("echo 'prepare: error: train.jsonl:3: bad json' >&2\nexit 1\n");
  try {
    prepare_data(config, worktree, state, runner, log);
    FAIL();
  } catch (const FatalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("prepare failed (exit code 1): prepare: error: train.jsonl:3: bad json"));
  }
  write_prepare("echo nothing useful\n");
  EXPECT_THROW(prepare_data(config, worktree, state, runner, log), FatalError);
  config.build_command = "echo 'x.cc:1: error: nope'; exit 1";
  try {
    prepare_data(config, worktree, state, runner, log);
    FAIL();
  } catch (const FatalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("does not build"));
    EXPECT_THAT(e.what(), HasSubstr("x.cc:1: error: nope"));
  }
}

}  // namespace
}  // namespace ard
