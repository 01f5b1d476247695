// Tests of the slot's files against a tree: what a child may leave (links out,
// FIFOs, unreadable directories, same-size rewrites) is seen and removed
// without a write through a link.
#include "daemon/exec/slot_files.h"

#include <sys/stat.h>

#include <gmock/gmock.h>

#include <map>

#include "daemon/git_repo.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using testing::read_file;
using testing::write_file;

class SlotFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = dir.path() / "slot";
    add("trainer/train.cu", "lr 1\n");
    add("trainer/model/payload.cuh", "payload\n");
    add("trainer/harness/eval.h", "fixed\n");
    add("scripts/run.sh", "#!/bin/sh\n", SlotEntry::Kind::kExecutable);
    add("trainer/link.h", "harness/eval.h", SlotEntry::Kind::kSymlink);
    std::filesystem::create_directories(root);
    write_file(root / ".git", "gitdir: elsewhere\n");
    ASSERT_EQ(repair(), "");
  }
  void add(const std::string& path, const std::string& content, SlotEntry::Kind kind = SlotEntry::Kind::kFile) {
    const std::string id = blob_hash(content);
    blobs[id] = content;
    entries.push_back({path, kind, id});
  }
  std::string repair() {
    return make_slot_equal(root, entries, keep, [this](const std::string& id) { return blobs.at(id); });
  }
  std::vector<std::string> differences() { return slot_differences(root, entries, keep); }

  testing::TempDir dir;
  std::filesystem::path root;
  std::vector<SlotEntry> entries;
  std::map<std::string, std::string> blobs;
  SlotKeep keep{{"build"}};
};

TEST_F(SlotFilesTest, AFreshSlotHoldsTheTreeExactly) {
  EXPECT_TRUE(differences().empty());
  EXPECT_EQ(read_file(root / "trainer/model/payload.cuh"), "payload\n");
  EXPECT_EQ(std::filesystem::read_symlink(root / "trainer/link.h"), "harness/eval.h");
  EXPECT_NE(std::filesystem::status(root / "scripts/run.sh").permissions() & std::filesystem::perms::owner_exec,
            std::filesystem::perms::none);
  EXPECT_EQ(read_file(root / ".git"), "gitdir: elsewhere\n");  // never looked into
}

TEST_F(SlotFilesTest, ASymlinkAtATrackedPathIsReplacedAndItsTargetIsNeverWritten) {
  const auto outside = dir.path() / "authorized_keys";
  write_file(outside, "the user's key\n");
  std::filesystem::remove(root / "trainer/model/payload.cuh");
  std::filesystem::create_symlink(outside, root / "trainer/model/payload.cuh");
  EXPECT_EQ(differences(), std::vector<std::string>{"trainer/model/payload.cuh"});
  EXPECT_EQ(repair(), "");
  EXPECT_EQ(read_file(outside), "the user's key\n");
  EXPECT_FALSE(std::filesystem::is_symlink(root / "trainer/model/payload.cuh"));
  EXPECT_EQ(read_file(root / "trainer/model/payload.cuh"), "payload\n");
}

TEST_F(SlotFilesTest, ADirectoryReplacedByALinkOutIsRemovedWithoutTouchingWhatItPointsAt) {
  const auto outside = dir.path() / "home";
  write_file(outside / "payload.cuh", "the user's file\n");
  std::filesystem::remove_all(root / "trainer/model");
  std::filesystem::create_directory_symlink(outside, root / "trainer/model");
  EXPECT_EQ(differences(), std::vector<std::string>{"trainer/model"});
  EXPECT_EQ(repair(), "");
  EXPECT_EQ(read_file(outside / "payload.cuh"), "the user's file\n");
  EXPECT_TRUE(std::filesystem::is_directory(std::filesystem::symlink_status(root / "trainer/model")));
  EXPECT_TRUE(differences().empty());
}

TEST_F(SlotFilesTest, ASameSizeRewriteWithItsOldMtimeDiffersByContent) {
  const auto eval = root / "trainer/harness/eval.h";
  const auto mtime = std::filesystem::last_write_time(eval);
  write_file(eval, "FIXED\n");
  std::filesystem::last_write_time(eval, mtime);
  EXPECT_EQ(differences(), std::vector<std::string>{"trainer/harness/eval.h"});
  EXPECT_EQ(repair(), "");
  EXPECT_EQ(read_file(eval), "fixed\n");
}

TEST_F(SlotFilesTest, FifosLinksAndUntrackedFilesGoAndTheBuildDirectoryStays) {
  std::filesystem::remove(root / "trainer/train.cu");
  ASSERT_EQ(::mkfifo((root / "trainer/train.cu").c_str(), 0644), 0);
  ASSERT_EQ(::mkfifo((root / "pipe").c_str(), 0644), 0);
  std::filesystem::create_symlink("/etc", root / "etc");
  write_file(root / "core", "dump\n");
  write_file(root / "build/trainer/train", "the build's output\n");
  std::filesystem::remove(root / "trainer/link.h");
  std::filesystem::create_symlink("/etc/passwd", root / "trainer/link.h");
  std::filesystem::permissions(root / "scripts/run.sh", std::filesystem::perms::owner_exec,
                               std::filesystem::perm_options::remove);
  EXPECT_EQ(differences(), (std::vector<std::string>{"core", "etc", "pipe", "scripts/run.sh", "trainer/link.h",
                                                     "trainer/train.cu"}));
  EXPECT_EQ(repair(), "");
  EXPECT_TRUE(differences().empty());
  EXPECT_EQ(read_file(root / "trainer/train.cu"), "lr 1\n");
  EXPECT_EQ(std::filesystem::read_symlink(root / "trainer/link.h"), "harness/eval.h");
  EXPECT_EQ(read_file(root / "build/trainer/train"), "the build's output\n");
  EXPECT_TRUE(std::filesystem::exists("/etc/passwd"));
}

TEST_F(SlotFilesTest, AKeptNameThatIsALinkDiffersAndGoes) {
  std::filesystem::create_directory_symlink(dir.path(), root / "build");
  EXPECT_EQ(differences(), std::vector<std::string>{"build"});
  EXPECT_EQ(repair(), "");
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(root / "build")));
  EXPECT_TRUE(std::filesystem::exists(root / "trainer/train.cu"));
}

TEST_F(SlotFilesTest, AnUnreadableUntrackedDirectoryIsRemoved) {
  write_file(root / "trainer/model/hidden/deep/x", "x\n");
  std::filesystem::permissions(root / "trainer/model/hidden/deep", std::filesystem::perms::none);
  std::filesystem::permissions(root / "trainer/model/hidden", std::filesystem::perms::none);
  EXPECT_EQ(differences(), std::vector<std::string>{"trainer/model/hidden"});
  EXPECT_EQ(repair(), "");
  EXPECT_FALSE(std::filesystem::exists(root / "trainer/model/hidden"));
}

TEST_F(SlotFilesTest, ASlotWhoseGitFileIsALinkCannotBeRepairedInPlace) {
  std::filesystem::remove(root / ".git");
  std::filesystem::create_symlink(dir.path(), root / ".git");
  EXPECT_EQ(differences(), std::vector<std::string>{".git"});
  EXPECT_THAT(repair(), ::testing::HasSubstr(".git: not a file or a directory"));
}

TEST_F(SlotFilesTest, RemoveTreeNofollowDeletesLinksNotWhatTheyPointAt) {
  write_file(dir.path() / "outside/keep", "keep\n");
  std::filesystem::create_directory_symlink(dir.path() / "outside", root / "trainer/out");
  std::filesystem::permissions(root / "trainer/harness", std::filesystem::perms::owner_read,
                               std::filesystem::perm_options::replace);
  EXPECT_EQ(remove_tree_nofollow(root), "");
  EXPECT_FALSE(std::filesystem::exists(root));
  EXPECT_EQ(read_file(dir.path() / "outside/keep"), "keep\n");
  EXPECT_EQ(remove_tree_nofollow(root), "");  // already gone
}

TEST_F(SlotFilesTest, TheStatListingChangesWithAnyWriteBelowTheDirectory) {
  const auto train = root / "build/trainer/train";
  write_file(train, "binary\n");
  const std::string built = stat_listing(root / "build");
  ASSERT_FALSE(built.empty());
  EXPECT_EQ(stat_listing(root / "build"), built);
  // A same-size rewrite with the old mtime still moves the ctime.
  const auto mtime = std::filesystem::last_write_time(train);
  write_file(train, "poison\n");
  std::filesystem::last_write_time(train, mtime);
  const std::string rewritten = stat_listing(root / "build");
  EXPECT_NE(rewritten, built);
  write_file(root / "build/new.o", "x\n");
  EXPECT_NE(stat_listing(root / "build"), rewritten);
  EXPECT_EQ(stat_listing(root / "missing"), "");
}

}  // namespace
}  // namespace ard
