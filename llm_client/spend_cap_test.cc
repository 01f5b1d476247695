// Tests of the two spending caps, and of one cap shared by several clients
// (a swarm's profiles).
#include "llm_client/spend_cap.h"

#include <gmock/gmock.h>

#include <cmath>
#include <thread>
#include <vector>

namespace llm {
namespace {

using ::testing::HasSubstr;

TEST(SpendCap, TheHoursCallsAndTheTagsCostEachStopTheNextCall) {
  SpendCap cap(1.0, 2, Spend{0.5, {}});
  EXPECT_FALSE(cap.start_call(100));
  EXPECT_FALSE(cap.start_call(200));
  auto full = cap.start_call(300);
  ASSERT_TRUE(full);
  EXPECT_EQ(full->reason, "LLM call cap 2/hour reached");
  EXPECT_DOUBLE_EQ(full->retry_at, 3700);
  EXPECT_FALSE(cap.start_call(3701));  // the first call is an hour old
  cap.add_cost(0.6);
  auto spent = cap.check(3702);
  ASSERT_TRUE(spent);
  EXPECT_THAT(spent->reason, HasSubstr("cost cap $1.00 reached"));
  EXPECT_TRUE(std::isinf(spent->retry_at));
}

// Calls made at once on many threads never pass the hour's cap together.
TEST(SpendCap, CallsFromManyThreadsAtOnceStopAtTheCap) {
  SpendCap cap(std::nullopt, 10, Spend{});
  std::vector<std::thread> threads;
  std::atomic<int> passed{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i)
        if (!cap.start_call(1000)) ++passed;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(passed.load(), 10);
}

}  // namespace
}  // namespace llm
