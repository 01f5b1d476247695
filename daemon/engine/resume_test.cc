// plan_resumes: which interrupted rows of the last session run again, and
// where each one resumes (a fresh run, or its runs judged again).
#include "daemon/engine/resume.h"

#include <gtest/gtest.h>

#include "daemon/store/experiment_state.h"

namespace ard {
namespace {

ExperimentRow row(int64_t id, const std::string& state, const std::string& commit, double ended_at) {
  ExperimentRow r;
  r.id = id;
  r.state = state;
  r.commit = commit;
  r.ended_at = ended_at;
  r.error = "stopped during stage train";
  return r;
}

TrialRow trial(int64_t experiment, const std::string& commit, const std::string& status, std::optional<double> value) {
  TrialRow t;
  t.experiment_id = experiment;
  t.commit = commit;
  t.status = status;
  t.val_bpb = value;
  return t;
}

const std::string kInterrupted = "interrupted";

TEST(PlanResumes, AnInterruptedCandidateOfTheLastSessionRunsAgainFromScratch) {
  const ResumePlan plan = plan_resumes({row(2, kInterrupted, "c2", 150)}, {trial(2, "c2", "interrupted", std::nullopt)}, 100);
  ASSERT_EQ(plan.resume.size(), 1u);
  EXPECT_EQ(plan.resume[0].id, 2);
  EXPECT_EQ(plan.resume[0].runs, 0);
  EXPECT_FALSE(plan.resume[0].last_value);
  EXPECT_EQ(plan.resume[0].why, "stopped during stage train");
  EXPECT_TRUE(plan.left.empty());
}

TEST(PlanResumes, ACandidateInConfirmationKeepsItsFinishedRunsOnItsCommitOnly) {
  // Two ok runs on its commit, one on the commit it had before a re-apply, one interrupted.
  const ResumePlan plan =
      plan_resumes({row(3, kInterrupted, "new", 150)},
                   {trial(3, "old", "ok", 0.90), trial(3, "new", "ok", 0.95), trial(3, "new", "ok", 0.97),
                    trial(3, "new", "interrupted", std::nullopt), trial(4, "new", "ok", 0.5)},
                   100);
  ASSERT_EQ(plan.resume.size(), 1u);
  EXPECT_EQ(plan.resume[0].runs, 2);
  EXPECT_EQ(plan.resume[0].last_value, 0.97);
}

TEST(PlanResumes, BaselinesRowsWithoutACommitAndOtherStatesStay) {
  ExperimentRow baseline = row(1, kInterrupted, "b", 150);
  baseline.is_baseline = true;
  const ResumePlan plan = plan_resumes(
      {baseline, row(2, kInterrupted, "", 150), row(3, "kept", "c3", 150), row(4, "crash", "c4", 150)}, {}, 100);
  EXPECT_TRUE(plan.resume.empty());
  EXPECT_TRUE(plan.left.empty());
}

TEST(PlanResumes, RowsInterruptedBeforeTheLastSessionStay) {
  const ResumePlan plan = plan_resumes({row(2, kInterrupted, "c2", 99), row(3, kInterrupted, "c3", 100)}, {}, 100);
  ASSERT_EQ(plan.resume.size(), 1u);
  EXPECT_EQ(plan.resume[0].id, 3);
}

TEST(PlanResumes, ARowResumedTwiceAlreadyStaysInterruptedAndSaysWhy) {
  ExperimentRow twice = row(5, kInterrupted, "c5", 150);
  twice.resumes = kMaxResumes;
  ExperimentRow once = row(6, kInterrupted, "c6", 150);
  once.resumes = kMaxResumes - 1;
  const ResumePlan plan = plan_resumes({twice, once}, {}, 100);
  ASSERT_EQ(plan.resume.size(), 1u);
  EXPECT_EQ(plan.resume[0].id, 6);
  ASSERT_EQ(plan.left.size(), 1u);
  EXPECT_EQ(plan.left[0], "#5 was interrupted 3 times: it stays interrupted (an experiment runs again at most 2 times)");
}

TEST(PlanResumes, AFixKeepsItsDepthInTheChainOfFixes) {
  ExperimentRow broken = row(2, "build_fail", "c2", 120);
  ExperimentRow fix1 = row(3, "build_fail", "c3", 130);
  fix1.fix_of = 2;
  ExperimentRow fix2 = row(4, kInterrupted, "c4", 150);
  fix2.fix_of = 3;
  const ResumePlan plan = plan_resumes({broken, fix1, fix2}, {}, 100);
  ASSERT_EQ(plan.resume.size(), 1u);
  EXPECT_EQ(plan.resume[0].fix_round, 2);
}

}  // namespace
}  // namespace ard
