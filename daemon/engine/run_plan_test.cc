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

TEST(RunPlan, RungZeroGivesItsIndexAndDepthScaleOne) {
  Config config = two_stages();
  EXPECT_EQ(rung_placeholders(rung_at(config, 0), 0),
            (std::map<std::string, std::string>{{"depth_scale", "1"}, {"rung", "0"}}));
}

TEST(RunPlan, ARungGivesItsIndexAndItsValuesAsWritten) {
  RungConfig rung;
  rung.depth_scale = 2.5;
  rung.values = {{"depth_scale", "2.50"}, {"width", "768"}};
  EXPECT_EQ(rung_placeholders(rung, 3),
            (std::map<std::string, std::string>{{"depth_scale", "2.50"}, {"rung", "3"}, {"width", "768"}}));
  rung.values = {{"width", "768"}};  // depth_scale from the number when not written
  EXPECT_EQ(rung_placeholders(rung, 1).at("depth_scale"), "2.5");
  EXPECT_EQ(substitute("t {budget} {rung} d={depth_scale} w={width} {other}", "/d", 600, "/w", 1, rung_placeholders(rung, 1)),
            "t 600 1 d=2.5 w=768 {other}");
}

TEST(RunPlan, RungAtIsRungZeroFromTheConfigAndRefusesPastTheLadder) {
  Config config = parse_config("budget_s = 100\n", "/r");
  config.budget_s = 150;  // rung 0 is always the config as it is now
  EXPECT_EQ(rung_at(config, 0).name, "base");
  EXPECT_DOUBLE_EQ(rung_at(config, 0).budget_s, 150);
  EXPECT_EQ(rung_at(config, 1).name, "2x");
  EXPECT_THROW(rung_at(config, 2), std::out_of_range);
}

TEST(RunPlan, StagesAndBuildAtARungTakeItsBudgetPlaceholdersAndTimings) {
  Config config = two_stages();
  config.build_command = "make DEPTH_SCALE={depth_scale} RUNG={rung}";
  config.stages[1].command = "train {data_dir} {budget} {budget_scale} --depth-scale {depth_scale} --rung {rung}";
  config.rungs = default_rungs(config);
  config.rungs[1].build_timeout_s = 1200;
  config.rungs[1].stages[1].timeout_s = 2000;
  const auto wrap = [](const std::string& command) { return std::vector<std::string>{command}; };
  const auto log = [](const std::string& name) { return std::filesystem::path(name + ".log"); };

  auto base = local_stages(config, "/data", "/slot", 1, wrap, log);  // today's callers: rung 0
  ASSERT_EQ(base.size(), 2u);
  EXPECT_EQ(base[1].command, "train /data 300 1.0000 --depth-scale 1 --rung 0");
  EXPECT_EQ(base[1].timeout_s, 900);
  EXPECT_EQ(build_step(config, {}, "b.log").command, "make DEPTH_SCALE=1 RUNG=0");
  EXPECT_EQ(build_step(config, {}, "b.log").timeout_s, 600);

  auto twice = local_stages(config, 1, "/data", "/slot", 1.25, wrap, log);
  ASSERT_EQ(twice.size(), 2u);
  EXPECT_EQ(twice[1].command, "train /data 600 1.2500 --depth-scale 2 --rung 1");
  EXPECT_THAT(twice[1].wrapper, ElementsAre(twice[1].command));
  EXPECT_EQ(twice[1].timeout_s, 2000);
  EXPECT_EQ(twice[1].expected_s, 640);  // 320 scaled by the budget
  EXPECT_EQ(twice[0].timeout_s, 120);   // 60 scaled by the budget
  const RunStep build = build_step(config, 1, {"box"}, "b.log");
  EXPECT_EQ(build.command, "make DEPTH_SCALE=2 RUNG=1");
  EXPECT_EQ(build.timeout_s, 1200);

  config.slurm.build = SlurmBuild::kJob;
  auto job = job_steps(config, 1, "/data", "/slot", "/logs/job.log");
  ASSERT_EQ(job.size(), 3u);
  EXPECT_EQ(job[0].command, "make DEPTH_SCALE=2 RUNG=1");
  EXPECT_EQ(job[0].timeout_s, 1200);
  EXPECT_EQ(job[0].expected_s, 0);
  EXPECT_EQ(job[2].command, "train /data 600 1.0000 --depth-scale 2 --rung 1");
  EXPECT_EQ(job[2].timeout_s, 2000);
  EXPECT_THROW(job_steps(config, 2, "/data", "/slot", "/logs/job.log"), std::out_of_range);
}

}  // namespace
}  // namespace ard
