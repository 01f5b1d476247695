// The local executor with real child processes (/bin/sh commands in a temp
// worktree): stages in order, the slot's check before each stage and after
// the last, a changed slot ending the run before its next stage, a stop, and
// a failed build's compiler errors.
#include "daemon/engine/local_executor.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <fstream>

#include "testing/test_util.h"

namespace ard {
namespace {

class LocalExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir.path() / "slot");
    std::filesystem::create_directories(dir.path() / "logs");
  }

  RunStep step(const std::string& name, const std::string& command, double timeout_s = 30) {
    return RunStep{name, command, {}, timeout_s, 1, dir.path() / "logs" / (name + ".log")};
  }
  ard::Run run_of(std::vector<RunStep> stages) {
    ard::Run run;
    run.experiment = 7;
    run.trial = 3;
    run.commit = "0123456789abcdef0123456789abcdef01234567";
    run.slot = 0;
    run.worktree = dir.path() / "slot";
    run.gpu = "1";
    run.purpose = "candidate";
    run.stages = std::move(stages);
    run.env = {"PATH=/usr/bin:/bin", "WHO=stage"};
    run.logs_dir = dir.path() / "logs";
    run.last_stage = run.stages.empty() ? "train" : run.stages.back().name;
    run.end_settings.summary_keys = {"val_bpb", "training_seconds", "num_steps"};
    return run;
  }

  /// Starts run and runs the loop until its end; slot_check answers each check of the slot.
  RunEnd run_to_end(const ard::Run& run, std::function<std::string()> slot_check = [] { return std::string(); },
                    std::function<void(LocalExecutor&)> after_start = nullptr) {
    LocalExecutor executor(io);
    std::optional<RunEnd> end;
    bool inside_start = true;
    RunCallbacks cb;
    cb.group = [&](pid_t pgid) { groups.push_back(pgid); };
    cb.step_started = [&](size_t index, const RunStep& s) { started.push_back(std::to_string(index) + ":" + s.name); };
    cb.check_slot = [&] {
      ++checks;
      return slot_check();
    };
    cb.ended = [&](const RunEnd& e) {
      EXPECT_FALSE(inside_start) << "an end from inside start()";
      EXPECT_EQ(executor.active(), 0u) << "the run still counted when its end came";
      end = e;
    };
    executor.start(run, cb);
    inside_start = false;
    EXPECT_EQ(executor.active(), 1u);
    if (after_start) after_start(executor);
    io.run_for(std::chrono::seconds(60));
    EXPECT_TRUE(end) << "no end within 60 s";
    return end.value_or(RunEnd{});
  }

  testing::TempDir dir;
  boost::asio::io_context io;
  std::vector<pid_t> groups;
  std::vector<std::string> started;
  int checks = 0;
};

// Stages run in order in the worktree with the run's environment; the slot
// is checked before each and after the last; the last stage's summary is the end.
TEST_F(LocalExecutorTest, RunsTheStagesInOrderAndEndsWithTheLastOnesSummary) {
  const RunEnd end = run_to_end(run_of(
      {step("prep", "echo $WHO > prepared"),
       step("train", "cat prepared; printf -- '---\\nval_bpb: 0.95\\ntraining_seconds: 2\\nnum_steps: 10\\n---\\n'")}));
  EXPECT_EQ(end.kind, RunEnd::Kind::kOk) << end.detail;
  ASSERT_TRUE(end.summary);
  EXPECT_DOUBLE_EQ(end.value, 0.95);
  EXPECT_EQ(started, (std::vector<std::string>{"0:prep", "1:train"}));
  EXPECT_EQ(checks, 3);
  EXPECT_EQ(groups.size(), 2u);
  EXPECT_EQ(testing::read_file(dir.path() / "logs/train.log").rfind("stage\n", 0), 0u);
}

// A slot that changed after a stage ends the run tampered before the next
// stage starts; the next stage never runs.
TEST_F(LocalExecutorTest, AChangedSlotEndsTheRunBeforeTheNextStage) {
  int n = 0;
  const RunEnd end = run_to_end(run_of({step("prep", "true"), step("train", "touch trained")}),
                                [&] { return ++n == 2 ? std::string("train.cu (changed)") : std::string(); });
  EXPECT_EQ(end.kind, RunEnd::Kind::kTampered);
  EXPECT_EQ(end.detail, "before stage train: train.cu (changed)");
  EXPECT_EQ(started, (std::vector<std::string>{"0:prep"}));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "slot/trained"));
}

// stop_all ends a running stage as stopped.
TEST_F(LocalExecutorTest, StopAllEndsARunningStageAsStopped) {
  boost::asio::steady_timer later(io);
  const RunEnd end = run_to_end(run_of({step("train", "sleep 30")}), [] { return std::string(); }, [&](LocalExecutor& executor) {
    later.expires_after(std::chrono::milliseconds(300));
    later.async_wait([&executor](const boost::system::error_code&) { executor.stop_all(); });
  });
  EXPECT_EQ(end.kind, RunEnd::Kind::kStopped);
  EXPECT_EQ(end.detail, "stopped during stage train");
}

// A stage that runs past its timeout ends the run timed out.
TEST_F(LocalExecutorTest, AStagePastItsTimeoutTimesOut) {
  const RunEnd end = run_to_end(run_of({step("train", "sleep 30", 0.3)}));
  EXPECT_EQ(end.kind, RunEnd::Kind::kTimedOut) << end.detail;
}

// A build run runs the build alone: a failure ends it with the compiler's errors.
TEST_F(LocalExecutorTest, AFailedBuildEndsWithItsCompilerErrors) {
  ard::Run run = run_of({});
  run.build = step("build", "echo 'train.cu:3:1: error: expected ;'; exit 2");
  run.purpose = "build";
  const RunEnd end = run_to_end(run);
  EXPECT_EQ(end.kind, RunEnd::Kind::kBuildFailed);
  EXPECT_NE(end.detail.find("build failed"), std::string::npos) << end.detail;
  EXPECT_NE(end.failure_detail.find("expected ;"), std::string::npos) << end.failure_detail;
  EXPECT_EQ(started, (std::vector<std::string>{"0:build"}));
  EXPECT_EQ(checks, 0);
}

}  // namespace
}  // namespace ard
