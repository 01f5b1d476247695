// Tests of the store's watch with a real store file: the session's heartbeat
// while the file is the one open, and one call naming the cause once it is
// deleted.
#include "daemon/engine/store_watch.h"

#include <gmock/gmock.h>
#include <unistd.h>

#include <chrono>

#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;

TEST(StoreWatch, BeatsForTheSessionUntilTheFileIsDeletedThenSaysSoOnce) {
  testing::TempDir dir;
  const auto db = dir.path() / "results.db";
  Store store(db.string());
  store.add_run("t", "autoresearch/t", "base");
  const int64_t session = store.begin_session("t", getpid());
  boost::asio::io_context io;
  std::vector<std::string> lost;
  StoreWatch watch(io, store, 0.02, [&](const std::string& why) { lost.push_back(why); });
  watch.start(session);
  EXPECT_TRUE(store.dead_sessions_alive_at());  // the first beat is at start
  io.run_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(lost.empty());
  std::filesystem::remove(db);
  io.restart();
  io.run_for(std::chrono::milliseconds(200));  // the watch ends itself: run_for returns at once after it
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_THAT(lost[0], HasSubstr("was deleted while the daemon had it open"));
}

}  // namespace
}  // namespace ard
