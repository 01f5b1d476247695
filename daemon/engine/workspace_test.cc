// Tests of the workspace against a real repository made with the git CLI:
// its slots, and what a child moved of the tag's refs found and put back.
#include "daemon/engine/workspace.h"

#include <gmock/gmock.h>

#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;
using testing::read_file;
using testing::write_file;

GitLibrary git_library;

Config config_in(const std::filesystem::path& root) {
  Config config;
  config.repo = root / "repo";
  config.tag = "t";
  config.sandbox.mode = SandboxMode::kOff;
  return config;
}

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(config.repo / "trainer/train.cu", "lr 1\n");
    write_file(config.repo / ".gitignore", "build/\n");
    ASSERT_EQ(testing::commit_base_repo(config.repo), 0);
    workspace.open();
    base = workspace.repo().head();
    next = workspace.repo().commit_writes(base, {{"trainer/train.cu", "lr 2\n"}}, "raise lr", "");
    workspace.repo().set_ref(workspace.branch_ref(), base, "test");
    workspace.repo().set_ref(workspace.exp_ref(7), next, "test");
  }
  testing::TempDir dir;
  Config config = config_in(dir.path());
  StateDir state{config.repo};
  Log log{"", false};
  Workspace workspace{config, state, log};
  std::string base, next;
};

TEST_F(WorkspaceTest, NamesTheTagsRefs) {
  EXPECT_EQ(workspace.branch_ref(), "refs/heads/autoresearch/t");
  EXPECT_EQ(workspace.exp_ref(7), "refs/autoresearch/t/exp/7");
}

TEST_F(WorkspaceTest, OpensItsSlotsAtTheCommitUnlessStopped) {
  ASSERT_TRUE(workspace.open_slots(2, base, [] { return false; }));
  ASSERT_EQ(workspace.slots().size(), 2u);
  EXPECT_EQ(workspace.slot(0).path.filename(), "t");
  EXPECT_EQ(workspace.slot(1).path.filename(), "t+1");
  EXPECT_EQ(read_file(workspace.slot(1).path / "trainer/train.cu"), "lr 1\n");
  Workspace other(config, state, log);
  other.open();
  int asked = 0;
  EXPECT_FALSE(other.open_slots(3, base, [&] { return ++asked == 2; }));  // a stop between the checkouts
  EXPECT_EQ(other.slots().size(), 1u);
}

TEST_F(WorkspaceTest, ATamperCheckFindsAnEditAndMovedRefsAndRestoreRefsPutsTheRefsBack) {
  ASSERT_TRUE(workspace.open_slots(1, base, [] { return false; }));
  ASSERT_EQ(workspace.reset(0, next), "");
  EXPECT_EQ(workspace.tamper_check(0, 7, next, std::nullopt, base), "");
  write_file(workspace.slot(0).path / "trainer/train.cu", "lr 9\n");
  workspace.repo().set_ref(workspace.branch_ref(), next, "a child moved it");
  workspace.repo().set_ref(workspace.exp_ref(7), base, "a child moved it");
  const std::string bad = workspace.tamper_check(0, 7, next, std::nullopt, base);
  EXPECT_THAT(bad, HasSubstr("trainer/train.cu"));
  EXPECT_THAT(bad, HasSubstr("autoresearch/t (moved)"));
  EXPECT_THAT(bad, HasSubstr("refs/autoresearch/t/exp/7 (moved)"));
  workspace.restore_refs(7, next, base);
  EXPECT_EQ(workspace.repo().ref_target(workspace.branch_ref()), base);
  EXPECT_EQ(workspace.repo().ref_target(workspace.exp_ref(7)), next);
}

TEST_F(WorkspaceTest, ReleaseFreesTheSlotAtTheBestWithNothingAChildLeft) {
  ASSERT_TRUE(workspace.open_slots(1, base, [] { return false; }));
  ASSERT_EQ(workspace.reset(0, next), "");
  workspace.slot(0).holder = 3;
  write_file(workspace.slot(0).path / "left.txt", "x");
  EXPECT_EQ(workspace.release(0, base), "");
  EXPECT_EQ(workspace.slot(0).holder, 0);
  EXPECT_EQ(read_file(workspace.slot(0).path / "trainer/train.cu"), "lr 1\n");
  EXPECT_FALSE(std::filesystem::exists(workspace.slot(0).path / "left.txt"));
}

TEST_F(WorkspaceTest, WithTheSandboxOffAChildRunsUnwrapped) {
  ASSERT_TRUE(workspace.open_slots(1, base, [] { return false; }));
  EXPECT_TRUE(workspace.sandbox(0, true, "", "make").empty());
}

}  // namespace
}  // namespace ard
