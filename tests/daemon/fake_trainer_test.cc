// The fake trainer's simulation mode as a real child process: the step count
// from budget, scale and board speed, val_bpb from the world's line, the draw
// fixed by the nonce; and a file without `effect` still reports its val_bpb.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <unistd.h>

namespace {

const std::string kFake = FAKE_TRAINER;

std::map<std::string, double> run(const std::string& env, const std::string& file, const std::string& flags) {
  const std::string command = env + " " + kFake + " run " + file + " " + flags + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::map<std::string, double> values;
  char line[256];
  while (pipe && std::fgets(line, sizeof line, pipe)) {
    char key[64];
    double v;
    if (std::sscanf(line, "%63[a-z_A-Z]: %lf", key, &v) == 2) values[key] = v;
  }
  EXPECT_EQ(pipe ? pclose(pipe) : -1, 0) << command;
  return values;
}

class FakeTrainerSimulation : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fake_sim_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  std::filesystem::path dir_;
};

TEST_F(FakeTrainerSimulation, StepsFollowBudgetScaleAndBoardSpeed) {
  const std::string file = write("c.txt", "effect 0\nseconds 0\nnoise_sigma 0\n");
  auto v = run("FAKE_GPU_SPEEDS=0.95,0.98,1.00,1.03 CUDA_VISIBLE_DEVICES=3", file,
               "--budget 300 --budget-scale 0.5 --nonce 1");
  EXPECT_EQ(v["num_steps"], std::floor(300 * 0.5 * 1.03 / 0.1));
  EXPECT_DOUBLE_EQ(v["budget_scale"], 0.5);
  EXPECT_DOUBLE_EQ(v["training_seconds"], 150);
  EXPECT_NEAR(v["val_bpb"], 0.642 + 1.15e-4 * v["num_steps"], 1e-6);  // σ = 0: the world's line
  auto one = run("FAKE_GPU_SPEED=0.95", file, "--budget 60 --nonce 1");
  EXPECT_EQ(one["num_steps"], 570);
  EXPECT_DOUBLE_EQ(one["budget_scale"], 1);
}

TEST_F(FakeTrainerSimulation, NegativeSlopeAndEffect) {
  const std::string file = write("c.txt", "effect 0.01\nbpb_a 1.33\nbpb_b -1.15e-4\nseconds 0\nnoise_sigma 0\n");
  auto v = run("", file, "--budget 300 --nonce 1");
  EXPECT_EQ(v["num_steps"], 3000);
  EXPECT_NEAR(v["val_bpb"], 1.33 - 1.15e-4 * 3000 - 0.01, 1e-6);
}

TEST_F(FakeTrainerSimulation, TheNonceFixesTheDraw) {
  const std::string file = write("c.txt", "effect 0.0045\nseconds 0\n");
  const double a = run("", file, "--budget 300 --nonce 7")["val_bpb"];
  EXPECT_EQ(run("", file, "--budget 300 --nonce 7")["val_bpb"], a);
  double sum = 0, squares = 0;
  const int n = 40;
  for (int i = 0; i < n; ++i) {
    const double v = run("", file, "--budget 300 --nonce " + std::to_string(100 + i))["val_bpb"];
    sum += v, squares += v * v;
  }
  const double mean = sum / n, sd = std::sqrt((squares - n * mean * mean) / (n - 1));
  const double expected = 0.642 + 1.15e-4 * 3000 - 0.0045;
  EXPECT_NEAR(mean, expected, 4 * 0.0015 / std::sqrt(n));
  EXPECT_GT(sd, 0.0015 * 0.6);
  EXPECT_LT(sd, 0.0015 * 1.5);
}

TEST_F(FakeTrainerSimulation, FilesWithoutEffectKeepTheirValue) {
  const std::string file = write("c.txt", "val_bpb 0.95\nseconds 0\n");
  EXPECT_DOUBLE_EQ(run("", file, "--budget 300 --budget-scale 0.9")["val_bpb"], 0.95);
}

}  // namespace
