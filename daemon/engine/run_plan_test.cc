// Tests of the runs' steps as the config makes them: placeholders, the
// environment on a GPU, purposes, log names, the build, the local stages and
// a Slurm job's steps.
#include "daemon/engine/run_plan.h"

#include <gmock/gmock.h>

#include "daemon/decide/run_evidence.h"

namespace ard {
namespace {

using ::testing::ElementsAre;

TEST(CalibratesBoards, OnlyLocallyWithAStageThatPassesTheScale) {
  Config config;
  config.stages = {{"train", "train --budget-scale {budget_scale}"}};
  EXPECT_TRUE(calibrates_boards(config));
  config.noise.calibrate = false;
  EXPECT_FALSE(calibrates_boards(config));
  config.noise.calibrate = true;
  config.executor = ExecutorKind::kSlurm;  // a worker is a job slot, not a board
  EXPECT_FALSE(calibrates_boards(config));
  config.executor = ExecutorKind::kLocal;
  config.stages = {{"train", "train"}};  // the scale would reach nothing
  EXPECT_FALSE(calibrates_boards(config));
}

TEST(Substitute, ReplacesEveryPlaceholder) {
  EXPECT_EQ(substitute("t --data {data_dir} --time-budget {budget} -C {worktree} {data_dir}", "/d", 300, "/w"),
            "t --data /d --time-budget 300 -C /w /d");
  EXPECT_EQ(substitute("{budget}", "", 2.5, ""), "2.5");
  EXPECT_EQ(substitute("no braces", "/d", 1, "/w"), "no braces");
}

TEST(ChildEnv, SetsTheGpuInPlaceOfAnyOther) {
  const std::vector<std::string> env = {"PATH=/usr/bin", "CUDA_VISIBLE_DEVICES=7", "HOME=/h"};
  EXPECT_EQ(child_env(env, ""), env);
  EXPECT_THAT(child_env(env, "2"), ElementsAre("PATH=/usr/bin", "HOME=/h", "CUDA_VISIBLE_DEVICES=2"));
}

TEST(TrialPurpose, ItsOwnElseReappliedElseCandidate) {
  EXPECT_EQ(trial_purpose(purpose::kConfirm, 1), purpose::kConfirm);
  EXPECT_EQ(trial_purpose("", 1), purpose::kReapplied);
  EXPECT_EQ(trial_purpose("", 0), purpose::kCandidate);
}

TEST(LogFileName, NamesTheRowAndWhichRunOfItItIs) {
  EXPECT_EQ(log_file_name(12, 0, 0, 0, "", "build"), "12-build.log");
  EXPECT_EQ(log_file_name(12, 0, 1, 2, purpose::kConfirm, "train"), "12-r1-c2-train.log");
  EXPECT_EQ(log_file_name(5, 3, 0, 0, purpose::kNoise, "train"), "5-noise3-train.log");
}

Config two_stages() {
  Config config;
  config.build_command = "make";
  config.build_timeout_s = 600;
  config.budget_s = 300;
  config.stages = {{"check", "check {worktree}"}, {"train", "train {data_dir} {budget} {budget_scale}"}};
  config.stages[0].timeout_s = 60;
  config.stages[1].timeout_s = 900;
  config.stages[1].expected_s = 320;
  return config;
}

TEST(BuildStep, TheBuildCommandBehindItsWrapper) {
  const RunStep step = build_step(two_stages(), {"bwrap", "--"}, "/logs/1-build.log");
  EXPECT_EQ(step.name, "build");
  EXPECT_EQ(step.command, "make");
  EXPECT_THAT(step.wrapper, ElementsAre("bwrap", "--"));
  EXPECT_EQ(step.timeout_s, 600);
  EXPECT_EQ(step.expected_s, 600);
  EXPECT_EQ(step.log, "/logs/1-build.log");
}

TEST(LocalStages, EachFilledForTheSlotAndTheBoardWithItsSandboxAndLog) {
  const auto steps = local_stages(
      two_stages(), "/data", "/slot", 1.25, [](const std::string& command) { return std::vector<std::string>{"box", command}; },
      [](const std::string& name) { return std::filesystem::path("/logs") / (name + ".log"); });
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].command, "check /slot");
  EXPECT_THAT(steps[0].wrapper, ElementsAre("box", "check /slot"));
  EXPECT_EQ(steps[0].log, "/logs/check.log");
  EXPECT_EQ(steps[1].command, "train /data 300 1.2500");
  EXPECT_EQ(steps[1].timeout_s, 900);
  EXPECT_EQ(steps[1].expected_s, 320);
}

TEST(JobSteps, OneLogNoWrapperAndTheBuildFirstWhenTheJobBuilds) {
  Config config = two_stages();
  auto steps = job_steps(config, "/data", "/slot", "/logs/job.log");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].command, "train /data 300 1.0000");
  EXPECT_TRUE(steps[1].wrapper.empty());
  EXPECT_EQ(steps[0].log, "/logs/job.log");
  config.slurm.build = SlurmBuild::kJob;
  steps = job_steps(config, "/data", "/slot", "/logs/job.log");
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].name, "build");
  EXPECT_EQ(steps[0].timeout_s, 600);
  EXPECT_EQ(steps[0].expected_s, 0);  // its time is not the stages'
  EXPECT_EQ(steps[2].log, "/logs/job.log");
}

}  // namespace
}  // namespace ard
