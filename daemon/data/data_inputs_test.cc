// The [data] inputs: paths as prepare gets them, the first unreadable one by
// key and file, and the fetched files that replace them.
#include "daemon/data/data_inputs.h"

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace ard {
namespace {

using testing::TempDir;
using testing::write_file;

TEST(DataInputs, PathsResolveAgainstTheRepoAndHome) {
  Config c = parse_config("", "/r/repo");
  EXPECT_EQ(input_path(c, "../shared/corpus/train.jsonl.xz"), "/r/shared/corpus/train.jsonl.xz");
  EXPECT_EQ(input_path(c, "/abs/x.gz"), "/abs/x.gz");
  testing::ScopedEnv home("HOME", "/home/u");
  EXPECT_EQ(input_path(c, "~/d/x.gz"), "/home/u/d/x.gz");
  EXPECT_EQ(sources_path(c), "/r/repo/data_sources/c4-en.urls");
}

TEST(DataInputs, TheFirstUnreadableInputIsNamedByKeyAndFile) {
  TempDir tmp;
  Config c = parse_config("[data]\ntrain = [\"a.jsonl\", \"b.jsonl\"]\nval = [\"v.jsonl\"]\n", tmp / "repo");
  EXPECT_EQ(unreadable_input(c), "data.train[0]: " + (tmp / "repo/a.jsonl").string() + ": no such file");
  write_file(tmp / "repo/a.jsonl", "{}\n");
  std::filesystem::create_directories(tmp / "repo/b.jsonl");
  EXPECT_EQ(unreadable_input(c), "data.train[1]: " + (tmp / "repo/b.jsonl").string() + ": is a directory, not a file");
  std::filesystem::remove(tmp / "repo/b.jsonl");
  write_file(tmp / "repo/b.jsonl", "{}\n");
  EXPECT_EQ(unreadable_input(c), "data.val[0]: " + (tmp / "repo/v.jsonl").string() + ": no such file");
  write_file(tmp / "repo/v.jsonl", "{}\n");
  EXPECT_EQ(unreadable_input(c), std::nullopt);
}

TEST(DataInputs, TheFetchPlanLivesInTheCacheAndReplacesTheInputs) {
  TempDir tmp;
  write_file(tmp / "repo/my.urls", "train https://h/t{0..9}.gz\nval https://h/v.gz\n");
  Config c = parse_config("[data]\nsources = \"my.urls\"\nshards = 3\ncache = \"" + (tmp / "c").string() + "\"\n",
                          tmp / "repo");
  FetchPlan plan = data_fetch_plan(c);
  ASSERT_EQ(plan.train.size(), 3u);
  EXPECT_EQ(plan.train[2].dest, tmp / "c/sources/my/t2.gz");
  EXPECT_EQ(data_fetch_plan(c, 5).train.size(), 5u);
  Config fetched = with_inputs(c, plan);
  EXPECT_EQ(fetched.data.train, (std::vector<std::string>{(tmp / "c/sources/my/t0.gz").string(),
                                                          (tmp / "c/sources/my/t1.gz").string(),
                                                          (tmp / "c/sources/my/t2.gz").string()}));
  EXPECT_EQ(fetched.data.val, std::vector<std::string>{(tmp / "c/sources/my/v.gz").string()});
}

}  // namespace
}  // namespace ard
