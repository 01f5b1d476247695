// Tests of run_end.h: every row of classify_end's table, the local exits and
// Slurm's job ends turned into outcomes, and the same log classified the same
// way whichever executor ran it.
#include "daemon/engine/run_end.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "daemon/slurm/job_outcome.h"

namespace ard {
namespace {

using ::testing::HasSubstr;
using Exit = RunOutcome::Exit;
using Kind = RunEnd::Kind;

class RunEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ard_run_end_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    settings_.metric = "val_bpb";
    settings_.summary_keys = {"val_bpb", "training_seconds", "num_steps"};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path log(const std::string& text) {
    auto p = dir_ / "run.log";
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    return p;
  }
  static RunOutcome outcome(Exit exit, const std::string& what = "") {
    RunOutcome o;
    o.exit = exit;
    o.what = what;
    o.last_stage = "train";
    return o;
  }

  std::filesystem::path dir_;
  EndSettings settings_;
};

constexpr const char* kSummary = "step 10\n---\nval_bpb: 0.981\ntraining_seconds: 300\nnum_steps: 10\n---\n";

TEST_F(RunEndTest, AStopIsStoppedAndInterrupted) {
  RunEnd e = classify_end(outcome(Exit::kStopped, "stopped during stage train"), log("step 1\n"), settings_);
  EXPECT_EQ(e.kind, Kind::kStopped);
  EXPECT_EQ(e.detail, "stopped during stage train");
  EXPECT_EQ(e.log_tail, "step 1\n");
  EXPECT_STREQ(final_status(e.kind), "interrupted");
}

TEST_F(RunEndTest, AFaultOfTheMachineCarriesTheFault) {
  RunOutcome o = outcome(Exit::kMachineFault);
  o.fault = EnvironmentFault(dir_, 0, "the disk of " + dir_.string() + " is full");
  RunEnd e = classify_end(o, log(""), settings_);
  EXPECT_EQ(e.kind, Kind::kMachineFault);
  ASSERT_TRUE(e.fault);
  EXPECT_THAT(e.detail, HasSubstr("is full"));
  EXPECT_STREQ(final_status(e.kind), "interrupted");
}

TEST_F(RunEndTest, AFailedBuildGivesItsFirstCompilerErrorAndAllOfThemForTheProposer) {
  RunOutcome o = outcome(Exit::kFailed, "build failed (exit code 1)");
  o.build = true;
  RunEnd e = classify_end(o, log("[1/2] cc a.cu\na.cu:3:1: error: x undeclared\nb.cu:9: error: y\nninja: stopped\n"),
                          settings_);
  EXPECT_EQ(e.kind, Kind::kBuildFailed);
  EXPECT_EQ(e.detail, "build failed (exit code 1): a.cu:3:1: error: x undeclared");
  EXPECT_EQ(e.failure_detail, "a.cu:3:1: error: x undeclared\nb.cu:9: error: y\n");
  EXPECT_STREQ(final_status(e.kind), "build_fail");
}

TEST_F(RunEndTest, ABuildThatRanOutOfTimeIsABuildFailureWithoutACompilerLine) {
  RunOutcome o = outcome(Exit::kTimedOut, "build timed out after 60 s");
  o.build = true;
  RunEnd e = classify_end(o, log("error: half a line\n"), settings_);
  EXPECT_EQ(e.kind, Kind::kBuildFailed);
  EXPECT_EQ(e.detail, "build timed out after 60 s");
}

TEST_F(RunEndTest, ABuildThatPassedIsOkWithoutSummaryUnlessTheSlotChanged) {
  RunOutcome o = outcome(Exit::kSucceeded);
  o.build = true;
  RunEnd e = classify_end(o, log("built\n"), settings_);
  EXPECT_EQ(e.kind, Kind::kOk);
  EXPECT_FALSE(e.summary);
  o.tampered = "train.cu differs";
  e = classify_end(o, log("built\n"), settings_);
  EXPECT_EQ(e.kind, Kind::kTampered);
  EXPECT_EQ(e.detail, "train.cu differs");
}

TEST_F(RunEndTest, AStageThatRanOutOfTimeIsATimeout) {
  RunEnd e = classify_end(outcome(Exit::kTimedOut, "stage train timed out after 3 s"), log(kSummary), settings_);
  EXPECT_EQ(e.kind, Kind::kTimedOut);
  EXPECT_EQ(e.detail, "stage train timed out after 3 s");
  EXPECT_STREQ(final_status(e.kind), "timeout");
}

TEST_F(RunEndTest, AFailedStageIsACrashWithItsFailLine) {
  RunEnd e = classify_end(outcome(Exit::kFailed, "stage train failed (exit code 1)"),
                          log("step 1\nFAIL: out of memory\nmore\n"), settings_);
  EXPECT_EQ(e.kind, Kind::kCrashed);
  EXPECT_EQ(e.detail, "stage train failed (exit code 1): FAIL: out of memory");
  e = classify_end(outcome(Exit::kFailed, "stage train failed (exit code 1)"), log("step 1\n"), settings_);
  EXPECT_EQ(e.detail, "stage train failed (exit code 1)");
}

TEST_F(RunEndTest, AFailedIntegrityProbeIsTamperedNotACrash) {
  RunEnd e = classify_end(outcome(Exit::kFailed, "stage check failed (exit code 1)"),
                          log("FAIL: tampered: causality: row 0 position 5 changed\n"), settings_);
  EXPECT_EQ(e.kind, Kind::kTampered);
  EXPECT_EQ(e.detail, "stage check failed (exit code 1): integrity probe failed: causality: row 0 position 5 changed");
}

TEST_F(RunEndTest, PassedStagesWithASlotThatChangedAreTampered) {
  RunOutcome o = outcome(Exit::kSucceeded);
  o.tampered = "the worktree differs from the experiment's commit: train.cu";
  RunEnd e = classify_end(o, log(kSummary), settings_);
  EXPECT_EQ(e.kind, Kind::kTampered);
  EXPECT_EQ(e.detail, "after stage train: the worktree differs from the experiment's commit: train.cu");
}

TEST_F(RunEndTest, ASecondSummaryBlockIsAForgery) {
  RunEnd e = classify_end(outcome(Exit::kSucceeded), log(std::string(kSummary) + "---\nval_bpb: 0.5\n---\n"), settings_);
  EXPECT_EQ(e.kind, Kind::kTampered);
  EXPECT_THAT(e.detail, HasSubstr("stage train: the summary cannot be believed: "));
}

TEST_F(RunEndTest, NoSummaryOrNoFiniteMetricIsACrash) {
  RunEnd e = classify_end(outcome(Exit::kSucceeded), log("step 1\n"), settings_);
  EXPECT_EQ(e.kind, Kind::kCrashed);
  EXPECT_EQ(e.detail, "stage train printed no summary block");
  e = classify_end(outcome(Exit::kSucceeded), log("---\ntraining_seconds: 300\n---\n"), settings_);
  EXPECT_EQ(e.kind, Kind::kCrashed);
  EXPECT_EQ(e.detail, "the summary of stage train has no val_bpb");
  e = classify_end(outcome(Exit::kSucceeded), log("---\nval_bpb: nan\n---\n"), settings_);
  EXPECT_EQ(e.kind, Kind::kCrashed);
  EXPECT_EQ(e.detail, "val_bpb is nan");
}

TEST_F(RunEndTest, PassedStagesWithTheMetricAreOkWithTheSummary) {
  RunEnd e = classify_end(outcome(Exit::kSucceeded), log(kSummary), settings_);
  EXPECT_EQ(e.kind, Kind::kOk);
  EXPECT_DOUBLE_EQ(e.value, 0.981);
  ASSERT_TRUE(e.summary);
  EXPECT_DOUBLE_EQ(e.summary->values.at("num_steps"), 10);
  EXPECT_EQ(e.detail, "");
}

TEST(ProcessOutcome, NamesTheStageAndHowItEnded) {
  ProcessResult r;
  r.end = ProcessResult::End::kExited;
  r.code = 1;
  RunOutcome o = process_outcome(r, "train", "train", std::nullopt);
  EXPECT_EQ(o.exit, Exit::kFailed);
  EXPECT_EQ(o.what, "stage train failed (exit code 1)");
  o = process_outcome(r, "build", "train", std::nullopt);
  EXPECT_TRUE(o.build);
  EXPECT_EQ(o.what, "build failed (exit code 1)");
  r.end = ProcessResult::End::kTimedOut;
  r.seconds = 30;
  EXPECT_EQ(process_outcome(r, "build", "train", std::nullopt).what, "build timed out after 30 s");
  EXPECT_EQ(process_outcome(r, "check", "train", std::nullopt).what, "stage check timed out after 30 s");
  r.end = ProcessResult::End::kStopped;
  EXPECT_EQ(process_outcome(r, "build", "train", std::nullopt).what, "stopped during the build");
  o = process_outcome(r, "train", "train", EnvironmentFault("/x", 0, "full"));
  EXPECT_EQ(o.exit, Exit::kStopped);  // a stop is a stop
  r.end = ProcessResult::End::kExited;
  o = process_outcome(r, "train", "train", EnvironmentFault("/x", 0, "full"));
  EXPECT_EQ(o.exit, Exit::kMachineFault);
  r.code = 0;
  EXPECT_EQ(process_outcome(r, "train", "train", std::nullopt).exit, Exit::kSucceeded);
}

TEST_F(RunEndTest, JobOutcomeReadsTheBuildStepOfAJobThatBuildsOnTheNode) {
  Config config;
  config.stages = {{"train", "train"}};
  config.slurm.build = SlurmBuild::kJob;
  JobEnd end;
  end.kind = JobEnd::Kind::kFailed;
  end.exit_code = 2;
  end.error = "Slurm job 7 failed: exit code 2";
  auto job_log = log("autoresearchd: stage build started\na.cu:1: error: nope\n");
  RunOutcome o = job_outcome(end, job_log, config);
  EXPECT_TRUE(o.build);
  EXPECT_EQ(o.what, "build failed (exit code 2)");
  EXPECT_EQ(classify_end(o, job_log, settings_).detail, "build failed (exit code 2): a.cu:1: error: nope");
  config.slurm.build = SlurmBuild::kLocal;  // the build ran here: the job's failure is the stage's
  o = job_outcome(end, job_log, config);
  EXPECT_FALSE(o.build);
  EXPECT_EQ(classify_end(o, job_log, settings_).kind, Kind::kCrashed);
}

TEST_F(RunEndTest, JobOutcomeTreatsACancelledOrLostJobAsStopped) {
  Config config;
  config.stages = {{"train", "train"}};
  for (auto kind : {JobEnd::Kind::kStopped, JobEnd::Kind::kCancelled, JobEnd::Kind::kEnvironment}) {
    JobEnd end;
    end.kind = kind;
    end.error = "Slurm job 7 was cancelled outside the daemon";
    RunEnd e = classify_end(job_outcome(end, log(""), config), log(""), settings_);
    EXPECT_EQ(e.kind, Kind::kStopped);
    EXPECT_EQ(e.detail, end.error);
  }
}

// The drift this file ended: a job that fails the harness's integrity probe was
// `tampered` when the daemon saw it end and `crash` when a restart found it ended.
// Both now read the same outcome; a local stage with the same log agrees.
TEST_F(RunEndTest, AFailedProbeIsTamperedLocallyLiveOnSlurmAndAtRestart) {
  Config config;
  config.stages = {{"train", "train"}};
  auto probe_log = log("autoresearchd: stage train started\nFAIL: tampered: causality: row 0 position 5\n");
  JobEnd end;
  end.kind = JobEnd::Kind::kFailed;
  end.exit_code = 1;
  end.error = "Slurm job 7 failed: exit code 1";
  RunEnd slurm = classify_end(job_outcome(end, probe_log, config), probe_log, settings_);
  ProcessResult r;
  r.end = ProcessResult::End::kExited;
  r.code = 1;
  RunEnd local = classify_end(process_outcome(r, "train", "train", std::nullopt), probe_log, settings_);
  EXPECT_EQ(slurm.kind, Kind::kTampered);
  EXPECT_EQ(local.kind, Kind::kTampered);
  EXPECT_EQ(slurm.detail, "Slurm job 7 failed: exit code 1: integrity probe failed: causality: row 0 position 5");
  // And a job whose summary is forged is tampered too, no longer a crash.
  auto forged = log(std::string(kSummary) + "---\nval_bpb: 0.5\n---\n");
  end.kind = JobEnd::Kind::kCompleted;
  EXPECT_EQ(classify_end(job_outcome(end, forged, config), forged, settings_).kind, Kind::kTampered);
}

}  // namespace
}  // namespace ard
