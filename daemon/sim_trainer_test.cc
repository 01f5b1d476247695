// Tests of the simulated trainer: its flags, its build, a run's summary block
// and the world's arithmetic (val_bpb = a + b·steps − effects + noise).
#include "daemon/sim_trainer.h"

#include <sstream>

#include "daemon/decide/summary.h"
#include "testing/test_util.h"

namespace ard {
namespace {

const std::vector<std::string> kKeys = {"val_bpb", "training_seconds", "num_steps", "budget_scale"};

struct SimOutput {
  int rc;
  std::string out, err;
};

SimOutput simulate(const std::filesystem::path& file, const SimRunFlags& flags) {
  std::ostringstream out, err;
  int rc = sim_simulate(file.string(), flags, out, err);
  return {rc, out.str(), err.str()};
}

SimOutput main_of(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int rc = sim_trainer_main(args, out, err);
  return {rc, out.str(), err.str()};
}

TEST(SimTrainer, ParsesTheRunFlags) {
  auto parsed = parse_sim_run_flags({"--budget", "0.5", "--budget-scale", "1.25", "--nonce", "7", "--check", "--data"});
  ASSERT_TRUE(std::holds_alternative<SimRunFlags>(parsed));
  const auto& f = std::get<SimRunFlags>(parsed);
  EXPECT_EQ(f.budget_s, 0.5);
  EXPECT_EQ(f.budget_scale, 1.25);
  EXPECT_EQ(f.nonce, 7u);
  EXPECT_TRUE(f.check);
  EXPECT_EQ(f.data, "");  // a trailing --data: the data step is off
  EXPECT_EQ(std::get<std::string>(parse_sim_run_flags({"--speed", "2"})), "--speed: unknown flag");
  EXPECT_EQ(std::get<std::string>(parse_sim_run_flags({"--budget", "x1"})), "--budget: not a number: 'x1'");
  EXPECT_EQ(std::get<std::string>(parse_sim_run_flags({"--nonce"})), "--nonce: missing value");
}

TEST(SimTrainer, ABuildErrorLineFailsTheBuildAtThatLine) {
  testing::TempDir dir;
  testing::write_file(dir / "t.sim", "effect 0 a\nBUILD_ERROR 'x' was not declared\n");
  std::ostringstream out, err;
  EXPECT_EQ(sim_build((dir / "t.sim").string(), out, err), 1);
  EXPECT_NE(err.str().find((dir / "t.sim").string() + ":2:1: error: 'x' was not declared\n"), std::string::npos);
  testing::write_file(dir / "t.sim", "effect 0 a\n");
  std::ostringstream out2, err2;
  EXPECT_EQ(sim_build((dir / "t.sim").string(), out2, err2), 0);
  EXPECT_EQ(err2.str(), "");
  std::ostringstream out3, err3;
  EXPECT_EQ(sim_build((dir / "missing.sim").string(), out3, err3), 2);
  EXPECT_EQ(err3.str(), "sim-trainer: cannot read " + (dir / "missing.sim").string() + "\n");
}

/// A world without noise: val_bpb = 1.05 − 0.00003·steps − effects, 4000 steps a second.
const std::string kQuietWorld = "seconds 0\nbpb_a 1.05\nbpb_b -0.00003\nnoise_sigma 0\nstep_cost 0.00025\n";

SimRunFlags run_for(double budget_s, double depth_scale = 1) {
  SimRunFlags f;
  f.budget_s = budget_s;
  f.depth_scale = depth_scale;
  f.nonce = 1;
  return f;
}

TEST(SimTrainer, ARunReportsTheWorldLessTheEffects) {
  testing::TempDir dir;
  testing::write_file(dir / "t.sim", kQuietWorld + "effect 0.01 a\neffect +0.005 b\neffect -0.002 c\n");
  SimOutput r = simulate(dir / "t.sim", run_for(0.5));
  ASSERT_EQ(r.rc, 0) << r.err;
  SummaryParse p = parse_summary(r.out, kKeys);
  ASSERT_TRUE(p.summary) << r.out;
  EXPECT_EQ(p.summary->values.at("num_steps"), 2000);  // 0.5 s / 0.00025 s a step
  EXPECT_NEAR(p.summary->values.at("val_bpb"), 1.05 - 0.00003 * 2000 - 0.013, 1e-6);
  EXPECT_EQ(p.summary->values.at("training_seconds"), 0.5);
}

TEST(SimTrainer, ALargerRungRunsDeeperSlowerAndWithEachLinesScaledEffect) {
  testing::TempDir dir;
  testing::write_file(dir / "t.sim", kQuietWorld + "effect 0.01 scaled 0 a\neffect 0.005 b\n");
  const std::vector<std::string> keys = {"val_bpb", "num_steps", "depth", "num_params_M"};
  SummaryParse small = parse_summary(simulate(dir / "t.sim", run_for(1)).out, keys);
  ASSERT_TRUE(small.summary);
  EXPECT_EQ(small.summary->values.at("depth"), 2);
  EXPECT_NEAR(small.summary->values.at("val_bpb"), 1.05 - 0.00003 * 4000 - 0.015, 1e-6);
  // the default ladder's rung: twice the depth, twice the budget
  SummaryParse large = parse_summary(simulate(dir / "t.sim", run_for(2, 2)).out, keys);
  ASSERT_TRUE(large.summary);
  EXPECT_EQ(large.summary->values.at("num_steps"), 4000);  // each step costs twice as much
  EXPECT_EQ(large.summary->values.at("depth"), 4);
  EXPECT_EQ(large.summary->values.at("num_params_M"), 0.8);
  // a lower by 0.02 per doubling; the first change does not transfer (scaled 0), the second does
  EXPECT_NEAR(large.summary->values.at("val_bpb"), 1.05 - 0.02 - 0.00003 * 4000 - 0.005, 1e-6);
  EXPECT_EQ(std::get<std::string>(parse_sim_run_flags({"--depth-scale", "0.5"})),
            "--depth-scale: must be from 1 to 64, got 0.5");
}

TEST(SimTrainer, NoiseIsSeededByTheContentAndTheNonce) {
  testing::TempDir dir;
  testing::write_file(dir / "t.sim", "seconds 0\nnoise_sigma 0.01\neffect 0 a\n");
  SimRunFlags f;
  f.nonce = 3;
  auto val = [&](const SimRunFlags& flags) {
    return parse_summary(simulate(dir / "t.sim", flags).out, kKeys).summary->values.at("val_bpb");
  };
  const double first = val(f);
  EXPECT_EQ(val(f), first);
  f.nonce = 4;
  EXPECT_NE(val(f), first);
}

TEST(SimTrainer, TheSubcommandChecksItsDataAndAnswersCheck) {
  testing::TempDir dir;
  testing::write_file(dir / "t.sim", "seconds 0\neffect 0 a\n");
  const std::string file = (dir / "t.sim").string();
  SimOutput check = main_of({"run", file, "--check"});
  EXPECT_EQ(check.rc, 0);
  EXPECT_EQ(check.out, "check: ok\n");
  SimOutput no_data = main_of({"run", file, "--data", (dir / "none").string()});
  EXPECT_EQ(no_data.rc, 1);
  EXPECT_EQ(no_data.out, "FAIL: no dataset at " + (dir / "none").string() + "\n");
  SimOutput run = main_of({"run", file, "--data", dir.path().string(), "--budget", "1"});
  EXPECT_EQ(run.rc, 0);
  EXPECT_TRUE(parse_summary(run.out, kKeys).summary) << run.out;
  SimOutput usage = main_of({"train", file});
  EXPECT_EQ(usage.rc, 2);
  EXPECT_EQ(usage.err.rfind("usage: autoresearchd sim-trainer build FILE", 0), 0u);
  SimOutput bad = main_of({"run", file, "--budget"});
  EXPECT_EQ(bad.rc, 2);
  EXPECT_EQ(bad.err, "sim-trainer: --budget: missing value\n");
}

TEST(SimTrainer, ABoardSpeedListWithoutTheDeviceIsAnError) {
  testing::TempDir dir;
  testing::write_file(dir / "t.sim", "seconds 0\neffect 0 a\n");
  setenv("FAKE_GPU_SPEEDS", "1.0,0.9", 1);
  setenv("CUDA_VISIBLE_DEVICES", "5", 1);
  SimOutput r = simulate(dir / "t.sim", {});
  unsetenv("FAKE_GPU_SPEEDS");
  unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "sim-trainer: FAKE_GPU_SPEEDS has no entry for CUDA_VISIBLE_DEVICES=5\n");
}

}  // namespace
}  // namespace ard
