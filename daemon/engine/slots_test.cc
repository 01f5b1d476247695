// Tests of the worktree slots against a real repository made with the git CLI.
#include "daemon/engine/slots.h"

#include <gmock/gmock.h>

#include "daemon/exec/slot_files.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::read_file;
using testing::write_file;

GitLibrary git_library;

class SlotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = dir.path() / "repo";
    write_file(root / "trainer/train.cu", "lr 1\n");
    write_file(root / ".gitignore", "build/\n");
    ASSERT_EQ(testing::commit_base_repo(root), 0);
    repo = std::make_unique<GitRepo>(root);
    base = repo->head();
    next = repo->commit_writes(base, {{"trainer/train.cu", "lr 2\n"}}, "raise lr", "");
    slot.path = dir.path() / "slot";
    slot.repo = repo->open_detached_worktree("slot", slot.path, base, SlotKeep{{"build"}});
  }
  testing::TempDir dir;
  std::filesystem::path root;
  std::unique_ptr<GitRepo> repo;
  std::string base, next;
  WorktreeSlot slot;
  Log log{"", false};
};

TEST(FreeSlot, TheFirstThatNoCandidateHolds) {
  std::vector<WorktreeSlot> slots(3);
  slots[0].holder = 4;
  EXPECT_EQ(free_slot(slots), 1);
  slots[1].holder = 5;
  slots[2].holder = 6;  // a repeat run holds one like any candidate
  EXPECT_EQ(free_slot(slots), -1);
  EXPECT_EQ(free_slot({}), -1);
}

TEST_F(SlotsTest, ResetRemovesWhatAChildLeftAndKeepsTheBuild) {
  write_file(slot.path / "trainer/train.cu", "edited\n");
  write_file(slot.path / "left.txt", "x");
  write_file(slot.path / "build/train", "binary");
  EXPECT_THAT(slot_differences(slot, base, "build", std::nullopt), ElementsAre("left.txt", "trainer/train.cu"));
  EXPECT_EQ(reset_slot(slot, *repo, next, "build", log), "");
  EXPECT_EQ(read_file(slot.path / "trainer/train.cu"), "lr 2\n");
  EXPECT_FALSE(std::filesystem::exists(slot.path / "left.txt"));
  EXPECT_EQ(read_file(slot.path / "build/train"), "binary");
  EXPECT_TRUE(slot_differences(slot, next, "build", std::nullopt).empty());
}

TEST_F(SlotsTest, ResetAfterATamperedRunDiscardsTheBuild) {
  write_file(slot.path / "build/train", "binary");
  slot.discard_build = true;
  EXPECT_EQ(reset_slot(slot, *repo, base, "build", log), "");
  EXPECT_FALSE(std::filesystem::exists(slot.path / "build/train"));
  EXPECT_FALSE(slot.discard_build);
}

TEST_F(SlotsTest, ASlotWithoutItsWorktreeIsCreatedAgain) {
  slot.repo.reset();  // its re-creation failed before
  EXPECT_EQ(reset_slot(slot, *repo, next, "build", log), "");
  ASSERT_TRUE(slot.repo);
  EXPECT_EQ(slot.repo->head(), next);
  EXPECT_EQ(read_file(slot.path / "trainer/train.cu"), "lr 2\n");
}

TEST_F(SlotsTest, DifferencesNameTheBuildAndAMovedHead) {
  const std::string listing = stat_listing(build_output(slot, "build"));
  EXPECT_TRUE(std::filesystem::is_directory(slot.path / "build"));  // created empty
  EXPECT_TRUE(slot_differences(slot, base, "build", listing).empty());
  write_file(slot.path / "build/planted", "x");
  EXPECT_THAT(slot_differences(slot, base, "build", listing), ElementsAre("build (changed after the build)"));
  EXPECT_TRUE(slot_differences(slot, base, "build", std::nullopt).empty());  // no listing: not checked
  slot.repo->checkout_detached(next, SlotKeep{{"build"}});
  EXPECT_THAT(slot_differences(slot, base, "build", std::nullopt),
              ElementsAre("trainer/train.cu", HasSubstr("HEAD (moved to ")));
}

TEST_F(SlotsTest, NoFaultWhereTheDiskTakesWrites) { EXPECT_FALSE(slot_fault(slot, root)); }

TEST_F(SlotsTest, TheSandboxBindsTheBuildReadOnlyForAStage) {
  SandboxConfig sandbox;
  sandbox.mode = SandboxMode::kOff;
  EXPECT_TRUE(slot_sandbox(slot, sandbox, dir.path() / "scratch", "build", false, "", "make").empty());
  sandbox.mode = SandboxMode::kBwrap;
  const std::filesystem::path data = dir.path() / "data";
  std::filesystem::create_directories(data);
  const auto argv = slot_sandbox(slot, sandbox, dir.path() / "scratch", "build", false, data.string(), "make");
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv.back(), "--");
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "scratch"));
  auto bound_read_only = [&](const std::filesystem::path& p) {
    for (size_t i = 0; i + 2 < argv.size(); ++i)
      if (argv[i] == "--ro-bind" && argv[i + 1] == p.string()) return true;
    return false;
  };
  EXPECT_TRUE(bound_read_only(slot.path / "build"));
  EXPECT_TRUE(bound_read_only(data));
  const auto build = slot_sandbox(slot, sandbox, dir.path() / "scratch", "build", true, "", "make");
  for (size_t i = 0; i + 1 < build.size(); ++i)
    EXPECT_FALSE(build[i] == "--ro-bind" && build[i + 1] == (slot.path / "build").string());
}

}  // namespace
}  // namespace ard
