// doctor's Slurm check against a real single-node cluster: the probe job
// reads the token (this machine shares its filesystem with itself), a
// partition that does not exist names sbatch's error, and a local executor
// skips the check.
#include "daemon/slurm/slurm_doctor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "slurm_cluster.h"

namespace ard {
namespace {

using ::testing::HasSubstr;

class SlurmDoctor : public ::testing::Test {
 protected:
  testing::SlurmCluster cluster;
  testing::TempDir dir;
  PosixProcessRunner runner;
  Check check(const std::string& toml) {
    Config c = parse_config(toml, dir / "repo");
    Probe probe(c, runner);
    return check_slurm(c, probe, 60);
  }
};

TEST_F(SlurmDoctor, AProbeJobReadsTheTokenInTheWorktreesDirectory) {
  ASSERT_TRUE(cluster.started()) << cluster.error();
  Check c = check("executor = 'slurm'\n[slurm]\ngres = 'gpu:1'\n");  // the probe asks for no GPU
  EXPECT_EQ(c.state, Check::State::kOk) << c.text();
  std::string host = testing::shell("hostname").out;
  EXPECT_THAT(c.line, HasSubstr("a probe job on " + host.substr(0, host.find('\n')) + " read a token file in " +
                                (dir / "repo/.autoresearchd/worktrees").string()));
  // The token and the job's output are removed.
  for (const auto& e : std::filesystem::directory_iterator(dir / "repo/.autoresearchd/worktrees"))
    ADD_FAILURE() << "left behind: " << e.path();
}

TEST_F(SlurmDoctor, AJobThatCannotRunNamesSbatchsError) {
  ASSERT_TRUE(cluster.started()) << cluster.error();
  Check c = check("executor = 'slurm'\n[slurm]\npartition = 'nosuch'\n");
  EXPECT_EQ(c.state, Check::State::kFailed);
  EXPECT_TRUE(c.blocks());
  EXPECT_THAT(c.line, HasSubstr("the probe job did not run"));
  EXPECT_THAT(c.line, HasSubstr("partition"));
  EXPECT_THAT(c.fix, HasSubstr("[slurm] partition"));
}

TEST(SlurmDoctorLocal, SkippedWithTheLocalExecutor) {
  testing::TempDir dir;
  PosixProcessRunner runner;
  Config config = parse_config("", dir / "repo");
  Probe probe(config, runner);
  Check c = check_slurm(config, probe);
  EXPECT_EQ(c.state, Check::State::kSkipped);
  EXPECT_FALSE(c.blocks());
}

}  // namespace
}  // namespace ard
