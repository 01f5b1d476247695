// slurm_job: Slurm's output as captured from Debian's Slurm 22.05.8.
#include "daemon/slurm/slurm_job.h"

#include <gtest/gtest.h>

namespace ard {
namespace {

// `scontrol show job -o` of a finished and a timed-out job, as printed.
const char* kTwoJobs =
    "JobId=1 JobName=a UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 Nice=0 Account=(null) "
    "QOS=(null) JobState=COMPLETED Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 "
    "ExitCode=0:0 RunTime=00:00:03 TimeLimit=UNLIMITED TimeMin=N/A Partition=debug AllocNode:Sid=localhost:28544 "
    "ReqNodeList=(null) ExcNodeList=(null) NodeList=vm BatchHost=vm NumNodes=1 NumCPUs=1 NumTasks=1 "
    "Command=(null) WorkDir=/tmp/sl1 StdErr=/tmp/sl1/a.out StdIn=/dev/null StdOut=/tmp/sl1/a.out Power= \n"
    "JobId=2 JobName=b UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901758 Nice=0 Account=(null) "
    "QOS=(null) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) Requeue=1 Restarts=2 BatchFlag=1 Reboot=0 "
    "ExitCode=0:15 RunTime=00:01:24 TimeLimit=00:01:00 NodeList=vm BatchHost=vm Power= ";

TEST(SlurmJob, SbatchParsableGivesTheId) {
  EXPECT_EQ(parse_sbatch_output("123\n"), "123");
  EXPECT_EQ(parse_sbatch_output("4567;cluster\n"), "4567");
  EXPECT_EQ(parse_sbatch_output("sbatch: warning: something\n89\n"), "89");
  EXPECT_EQ(parse_sbatch_output("sbatch: error: Batch job submission failed: Invalid partition name specified\n"),
            std::nullopt);
  EXPECT_EQ(parse_sbatch_output(""), std::nullopt);
}

TEST(SlurmJob, StatesAreClassified) {
  EXPECT_EQ(parse_slurm_state("PENDING"), SlurmState::kPending);
  EXPECT_EQ(parse_slurm_state("RUNNING"), SlurmState::kRunning);
  EXPECT_EQ(parse_slurm_state("COMPLETING"), SlurmState::kRunning);
  EXPECT_EQ(parse_slurm_state("REQUEUED"), SlurmState::kRequeued);
  EXPECT_EQ(parse_slurm_state("COMPLETED"), SlurmState::kCompleted);
  EXPECT_EQ(parse_slurm_state("OUT_OF_MEMORY"), SlurmState::kFailed);
  EXPECT_EQ(parse_slurm_state("CANCELLED by 0"), SlurmState::kCancelled);
  EXPECT_EQ(parse_slurm_state("CANCELLED+"), SlurmState::kCancelled);
  EXPECT_EQ(parse_slurm_state("PREEMPTED"), SlurmState::kPreempted);
  EXPECT_EQ(parse_slurm_state("BOOT_FAIL"), SlurmState::kNodeFail);
  EXPECT_EQ(parse_slurm_state("SOMETHING_NEW"), SlurmState::kUnknown);
  EXPECT_TRUE(is_ended(SlurmState::kTimeout));
  EXPECT_FALSE(is_ended(SlurmState::kRequeued));
  EXPECT_FALSE(is_ended(SlurmState::kPending));
  EXPECT_TRUE(is_environment_end(SlurmState::kPreempted));
  EXPECT_TRUE(is_environment_end(SlurmState::kNodeFail));
  EXPECT_FALSE(is_environment_end(SlurmState::kFailed));
  EXPECT_FALSE(is_environment_end(SlurmState::kCancelled));
}

TEST(SlurmJob, ScontrolRecordsAreRead) {
  auto jobs = parse_scontrol_jobs(kTwoJobs);
  ASSERT_EQ(jobs.size(), 2u);
  const SlurmJobInfo& a = jobs.at("1");
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.state, SlurmState::kCompleted);
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.node, "vm");
  EXPECT_EQ(a.reason, "");
  const SlurmJobInfo& b = jobs.at("2");
  EXPECT_EQ(b.state, SlurmState::kTimeout);
  EXPECT_EQ(b.reason, "TimeLimit");
  EXPECT_EQ(b.exit_signal, 15);
  EXPECT_EQ(b.restarts, 2);
}

TEST(SlurmJob, PendingJobHasNoNodeAndValuesWithSpacesStayWhole) {
  auto jobs = parse_scontrol_jobs(
      "JobId=7 JobName=ard-x-7 JobState=PENDING Reason=BeginTime Restarts=1 ExitCode=1:0 NodeList=(null) "
      "Comment=two words Power=\n");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs.at("7").state, SlurmState::kPending);
  EXPECT_EQ(jobs.at("7").node, "");
  EXPECT_EQ(jobs.at("7").exit_code, 1);
  EXPECT_EQ(scontrol_fields("A=1 Comment=two words B=2").at("Comment"), "two words");
}

TEST(SlurmJob, EmptyListingsAndErrorsGiveNoJobs) {
  EXPECT_TRUE(parse_scontrol_jobs("No jobs in the system\n").empty());
  EXPECT_TRUE(parse_scontrol_jobs("slurm_load_jobs error: Invalid job id specified\n").empty());
  EXPECT_TRUE(parse_scontrol_jobs("").empty());
}

TEST(SlurmJob, ExitFile) {
  auto e = parse_job_exit_file("3 node07\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, 3);
  EXPECT_EQ(e->node, "node07");
  EXPECT_EQ(parse_job_exit_file("0\n")->code, 0);
  EXPECT_EQ(parse_job_exit_file(""), std::nullopt);
  EXPECT_EQ(parse_job_exit_file("x y"), std::nullopt);
  auto signalled = parse_job_exit_file("signalled node07\n");
  ASSERT_TRUE(signalled);
  EXPECT_TRUE(signalled->signalled);
  EXPECT_EQ(signalled->code, 143);
  EXPECT_EQ(signalled->node, "node07");
  EXPECT_FALSE(parse_job_exit_file("3 node07")->signalled);
}

}  // namespace
}  // namespace ard
