// slurm_client: sbatch's argv, the time limit, the job query's output read
// back, and the job script run by /bin/sh as a job would run it.
#include "daemon/slurm/slurm_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(SlurmClient, SbatchArgvHasTheTableAndAppendsOutput) {
  SlurmConfig slurm;
  slurm.partition = "gpu";
  slurm.account = "lab";
  slurm.extra_args = {"--qos=low", "--constraint=h100"};
  SubmitSpec spec{"ard-main-3-t4", "/s/job.sh", "/l/3-job.log", "/w/main", 12};
  EXPECT_THAT(sbatch_argv(spec, slurm),
              ElementsAre("sbatch", "--parsable", "--job-name=ard-main-3-t4", "--output=/l/3-job.log",
                          "--open-mode=append", "--chdir=/w/main", "--time=12", "--partition=gpu", "--account=lab",
                          "--gres=gpu:1", "--qos=low", "--constraint=h100", "/s/job.sh"));
  slurm = SlurmConfig{};
  slurm.gres = "";
  spec.time_minutes = 0;
  EXPECT_THAT(sbatch_argv(spec, slurm),
              ElementsAre("sbatch", "--parsable", "--job-name=ard-main-3-t4", "--output=/l/3-job.log",
                          "--open-mode=append", "--chdir=/w/main", "/s/job.sh"));
}

TEST(SlurmClient, TimeLimitIsWholeMinutesWithSlack) {
  EXPECT_EQ(time_limit_minutes(0), 1);
  EXPECT_EQ(time_limit_minutes(1), 2);
  EXPECT_EQ(time_limit_minutes(60), 2);
  EXPECT_EQ(time_limit_minutes(61), 3);
  EXPECT_EQ(time_limit_minutes(720), 13);
}

TEST(SlurmClient, JobQueryTellsKnownGoneAndUnanswered) {
  std::string out =
      "@job 5\n"
      "JobId=5 JobName=a JobState=RUNNING Reason=None Restarts=0 ExitCode=0:0 NodeList=vm Power=\n"
      "@job 6\n"
      "slurm_load_jobs error: Invalid job id specified\n"
      "@job 7\n"
      "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n";
  JobQuery q = parse_job_query(out);
  ASSERT_EQ(q.known.size(), 1u);
  EXPECT_EQ(q.known.at("5").state, SlurmState::kRunning);
  EXPECT_EQ(q.gone, std::set<std::string>{"6"});
  EXPECT_THAT(job_query_command({"5", "6"}), HasSubstr("scontrol show job -o '6'"));
}

TEST(SlurmClient, ShellQuoteSurvivesQuotes) {
  auto r = testing::shell("printf '%s' " + shell_quote("it's a \"test\" $HOME"));
  EXPECT_EQ(r.out, "it's a \"test\" $HOME");
}

class JobScript : public ::testing::Test {
 protected:
  testing::TempDir dir;
  std::string run(const std::vector<JobStage>& stages, int& code) {
    std::filesystem::create_directories(dir / "wt");
    JobScriptSpec spec{"experiment 1", dir / "wt", stages, dir / "1-job.exit"};
    testing::write_file(dir / "job.sh", job_script(spec));
    auto r = testing::shell("cd / && SLURM_JOB_ID=42 SLURMD_NODENAME=node7 /bin/sh " +
                            testing::sh_quote((dir / "job.sh").string()));
    code = r.code;
    return r.out;
  }
};

TEST_F(JobScript, RunsTheStagesInOrderInTheWorktreeAndWritesTheExitFile) {
  int code = -1;
  std::string out = run({{"check", "pwd; echo checked"}, {"train", "echo 'it''s trained'"}}, code);
  EXPECT_EQ(code, 0);
  EXPECT_THAT(out, HasSubstr("autoresearchd: job 42 on node7 (restart 0)"));
  EXPECT_THAT(out, HasSubstr("autoresearchd: stage check\n" + (dir / "wt").string() + "\nchecked\n"));
  EXPECT_THAT(out, HasSubstr("autoresearchd: stage train\nits trained\n"));
  EXPECT_EQ(testing::read_file(dir / "1-job.exit"), "0 node7\n");
}

TEST_F(JobScript, StopsAtTheFirstFailingStage) {
  int code = -1;
  std::string out = run({{"check", "exit 3"}, {"train", "echo never"}}, code);
  EXPECT_EQ(last_job_stage(out), "check");
  EXPECT_EQ(last_job_stage("autoresearchd: job 1 on n (restart 0)\n"), "");
  EXPECT_EQ(code, 3);
  EXPECT_THAT(out, HasSubstr("autoresearchd: stage check exit 3"));
  EXPECT_THAT(out, Not(HasSubstr("never")));
  EXPECT_EQ(testing::read_file(dir / "1-job.exit"), "3 node7\n");
}

TEST_F(JobScript, ATermKillsAStageThatIgnoresIt) {
  std::filesystem::create_directories(dir / "wt");
  JobScriptSpec spec{"experiment 1", dir / "wt", {{"train", "trap '' TERM; echo $$ > pid; while :; do sleep 1; done"}},
                     dir / "1-job.exit"};
  testing::write_file(dir / "job.sh", job_script(spec));
  auto r = testing::shell("/bin/sh " + testing::sh_quote((dir / "job.sh").string()) + " > " +
                          testing::sh_quote((dir / "out").string()) + " 2>&1 & job=$!; " +
                          "while [ ! -s " + testing::sh_quote((dir / "wt/pid").string()) + " ]; do sleep 0.1; done; " +
                          "kill -TERM $job; wait $job; echo rc=$?; sleep 0.5; " +
                          "s=$(ps -o stat= -p $(cat " + testing::sh_quote((dir / "wt/pid").string()) + ")); " +
                          "case \"$s\" in ''|Z*) echo gone;; *) echo alive;; esac");  // a zombie is gone
  EXPECT_THAT(r.out, HasSubstr("rc=143"));
  EXPECT_THAT(r.out, HasSubstr("gone"));
  EXPECT_THAT(testing::read_file(dir / "out"), HasSubstr("autoresearchd: job signalled"));
  EXPECT_EQ(testing::read_file(dir / "1-job.exit"), "signalled " + testing::shell("hostname").out);
}

// A TERM can land at any point of the script: before a stage's fork, between
// the fork and `stage_pid=$!`, between two stages. Wherever it lands, once the
// script has exited nothing of its stages is alive (the stop contract).
TEST_F(JobScript, ATermAtAnyMomentLeavesNoStageBehind) {
  std::filesystem::create_directories(dir / "wt");
  const std::string marker = "4321.25";  // sleep's argument names this test's processes
  JobScriptSpec spec{"experiment 1", dir / "wt",
                     {{"check", "trap '' TERM; sleep 0.01"}, {"train", "trap '' TERM; sleep " + marker}},
                     dir / "1-job.exit"};
  testing::write_file(dir / "job.sh", job_script(spec));
  const std::string script = testing::sh_quote((dir / "job.sh").string());
  for (int i = 0; i < 25; ++i) {
    auto r = testing::shell("/bin/sh " + script + " >/dev/null 2>&1 & job=$!; sleep " + std::to_string(i * 0.004) +
                            "; kill -TERM $job; wait $job; ps -eo stat=,args= | grep -v grep | grep '" + marker +
                            "' | grep -v '^Z' || echo none");
    EXPECT_EQ(r.out, "none\n") << "TERM after " << i * 4 << " ms";
    testing::shell("pkill -9 -f 'sleep " + marker + "'");
  }
}

// Slurm signals every process of the job at once: the stage's shell dies of
// the TERM while a process of the stage that ignores it lives on, and the
// script's `wait` may return before its trap runs. Nothing may be left.
TEST_F(JobScript, ATermToEveryProcessOfTheJobLeavesNoStageBehind) {
  std::filesystem::create_directories(dir / "wt");
  const std::string marker = "4321.75";
  JobScriptSpec spec{"experiment 1", dir / "wt",
                     {{"train", "(trap '' TERM; exec sleep " + marker + ") & wait"}}, dir / "1-job.exit"};
  testing::write_file(dir / "job.sh", job_script(spec));
  const std::string script = testing::sh_quote((dir / "job.sh").string());
  for (int i = 0; i < 10; ++i) {
    auto r = testing::shell("/bin/sh " + script + " >/dev/null 2>&1 & job=$!; sleep " + std::to_string(0.2 + i * 0.01) +
                            "; kill -TERM $job; pkill -TERM -f '[s]leep " + marker + "'; wait $job; "
                            "ps -eo stat=,args= | grep '[s]leep " + marker + "' | grep -v '^Z' || echo none");
    EXPECT_EQ(r.out, "none\n") << "try " << i;
    testing::shell("pkill -9 -f '[s]leep " + marker + "'");
  }
}

TEST_F(JobScript, AMissingWorktreeSaysTheFilesystemIsNotShared) {
  JobScriptSpec spec{"experiment 1", dir / "absent", {{"check", "true"}}, dir / "x.exit"};
  testing::write_file(dir / "job.sh", job_script(spec));
  auto r = testing::shell("/bin/sh " + testing::sh_quote((dir / "job.sh").string()));
  EXPECT_EQ(r.code, 70);
  EXPECT_THAT(r.out, HasSubstr("shared filesystem"));
  EXPECT_THAT(testing::read_file(dir / "x.exit"), HasSubstr("70 "));
}

}  // namespace
}  // namespace ard
