// Unit tests of the engine's helpers; the engine itself runs end to end in
// tests/daemon/e2e_test.cc and tests/daemon/engine_e2e_test.cc against real
// processes and real repos.
#include "daemon/engine/engine.h"

#include <gtest/gtest.h>

#include <limits>

namespace ard {
namespace {

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

// A provider's Retry-After (or a call cap's lifting) is waited for between
// asks when it is later than retry_wait_s, up to an hour; a cost cap's
// infinity is not.
TEST(AskAgainAfter, WaitsForTheLaterOfRetryWaitAndRetryAtUpToAnHour) {
  const double now = 1.7e9;
  EXPECT_DOUBLE_EQ(ask_again_after(60, 0, now), 60);
  EXPECT_DOUBLE_EQ(ask_again_after(60, now + 30, now), 60);
  EXPECT_DOUBLE_EQ(ask_again_after(60, now + 120, now), 120);
  EXPECT_DOUBLE_EQ(ask_again_after(5, now + 120, now), 120);
  EXPECT_DOUBLE_EQ(ask_again_after(60, now + 99999, now), kMaxAskWaitS);
  EXPECT_DOUBLE_EQ(ask_again_after(60, std::numeric_limits<double>::infinity(), now), 60);
  EXPECT_DOUBLE_EQ(ask_again_after(7200, now + 99999, now), 7200);
}

}  // namespace
}  // namespace ard
