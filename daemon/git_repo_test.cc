// Tests of the git layer against real repositories made with the git CLI.
#include "daemon/git_repo.h"

#include <gmock/gmock.h>

#include "testing/test_util.h"

namespace ard {
namespace {

using testing::read_file;
using testing::sh_quote;
using testing::shell;
using testing::write_file;
using ::testing::HasSubstr;

GitLibrary git_library;

class GitRepoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = dir.path() / "repo";
    write_file(root / "trainer/train.cu", "lr 1\n");
    write_file(root / "trainer/harness/eval.h", "fixed\n");
    write_file(root / ".gitignore", "build/\n");
    ASSERT_EQ(testing::commit_base_repo(root), 0);
  }
  testing::ShellResult git(const std::string& args) {
    return shell("cd " + sh_quote(root.string()) + " && git " + args);
  }
  testing::TempDir dir;
  std::filesystem::path root;
  EditablePaths editable{{"trainer/train.cu", "trainer/model/**"}};
};

TEST_F(GitRepoTest, DiscoversTheRootFromASubdirectory) {
  EXPECT_EQ(discover_repo(root / "trainer/harness"), root);
  EXPECT_THROW(discover_repo("/"), GitError);
}

TEST_F(GitRepoTest, WorktreeCommitsAndResetsWithoutTouchingTheCheckout) {
  GitRepo repo(root);
  std::string base = repo.head();
  auto wt = repo.open_worktree("t1", "autoresearch/t1", root / ".autoresearchd/worktrees/t1");
  EXPECT_EQ(wt->head(), base);
  EXPECT_EQ(read_file(wt->workdir() / "trainer/train.cu"), "lr 1\n");

  write_file(wt->workdir() / "trainer/train.cu", "lr 2\n");
  write_file(wt->workdir() / "trainer/model/new.cuh", "new\n");
  std::string c1 = wt->commit_paths({"trainer/train.cu", "trainer/model/new.cuh"}, "raise lr");
  ASSERT_EQ(c1.size(), 40u);
  EXPECT_EQ(wt->head(), c1);
  EXPECT_EQ(git("log -1 --format=%s autoresearch/t1").out, "raise lr\n");
  EXPECT_EQ(git("rev-parse HEAD").out, base + "\n");  // the user's checkout stays on main
  EXPECT_EQ(read_file(root / "trainer/train.cu"), "lr 1\n");
  EXPECT_THAT(wt->diff(base, c1), HasSubstr("+lr 2"));
  auto files = wt->editable_files(c1, editable);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].path, "trainer/model/new.cuh");
  EXPECT_EQ(files[1].content, "lr 2\n");

  // Nothing changed: no commit.
  EXPECT_EQ(wt->commit_paths({"trainer/train.cu"}, "noop"), "");

  // Reset removes the commit and the file it added.
  wt->reset_hard(base);
  EXPECT_EQ(wt->head(), base);
  EXPECT_EQ(read_file(wt->workdir() / "trainer/train.cu"), "lr 1\n");
  EXPECT_FALSE(std::filesystem::exists(wt->workdir() / "trainer/model/new.cuh"));
  EXPECT_EQ(git("rev-parse autoresearch/t1").out, base + "\n");
  EXPECT_TRUE(wt->has_commit(c1));  // still in the object store
  EXPECT_FALSE(wt->has_commit("nonsense"));
}

TEST_F(GitRepoTest, ReopensAnExistingWorktreeAndRecreatesADeletedOne) {
  GitRepo repo(root);
  auto path = root / ".autoresearchd/worktrees/t";
  std::string c1;
  {
    auto wt = repo.open_worktree("t", "autoresearch/t", path);
    write_file(wt->workdir() / "trainer/train.cu", "lr 3\n");
    c1 = wt->commit_paths({"trainer/train.cu"}, "x");
  }
  EXPECT_EQ(repo.open_worktree("t", "autoresearch/t", path)->head(), c1);
  std::filesystem::remove_all(path);
  auto wt = repo.open_worktree("t", "autoresearch/t", path);
  EXPECT_EQ(wt->head(), c1);  // the branch kept its commit
  EXPECT_EQ(read_file(path / "trainer/train.cu"), "lr 3\n");
}

TEST_F(GitRepoTest, ChangedSinceSeesEditsUntrackedFilesButNotIgnoredOnes) {
  GitRepo repo(root);
  std::string base = repo.head();
  auto wt = repo.open_worktree("t", "autoresearch/t", root / ".autoresearchd/worktrees/t");
  EXPECT_TRUE(wt->changed_since(base).empty());
  write_file(wt->workdir() / "trainer/train.cu", "lr 2\n");
  wt->commit_paths({"trainer/train.cu"}, "edit");
  write_file(wt->workdir() / "trainer/harness/eval.h", "tampered\n");
  write_file(wt->workdir() / "trainer/harness/extra.h", "new\n");
  write_file(wt->workdir() / "build/out.o", "ignored\n");
  auto changed = wt->changed_since(base);
  std::sort(changed.begin(), changed.end());
  EXPECT_EQ(changed, (std::vector<std::string>{"trainer/harness/eval.h", "trainer/harness/extra.h",
                                                "trainer/train.cu"}));
}

TEST_F(GitRepoTest, ExcludeAddsALineOnce) {
  GitRepo repo(root);
  repo.exclude("/.autoresearchd/");
  repo.exclude("/.autoresearchd/");
  std::string text = read_file(root / ".git/info/exclude");
  EXPECT_EQ(text.find("/.autoresearchd/"), text.rfind("/.autoresearchd/"));
  write_file(root / ".autoresearchd/x", "state");
  EXPECT_EQ(git("status --porcelain").out, "");
}

TEST_F(GitRepoTest, EditsNeverWriteThroughACommittedSymlink) {
  std::filesystem::create_directories(dir / "outside");
  std::filesystem::create_directories(root / "trainer/model");
  std::filesystem::create_directory_symlink("../../../outside", root / "trainer/model/out");
  std::filesystem::create_symlink("../../../outside/target.cu", root / "trainer/model/link.cu");
  ASSERT_EQ(git("add -A && git -c user.name=t -c user.email=t@t commit -qm links").code, 0);
  GitRepo repo(root);
  const std::string base = repo.head();
  // Through a directory symlink: refused, nothing written anywhere.
  EXPECT_THROW(repo.commit_writes(base, {{"trainer/model/out/evil.cu", "x"}}, "evil", ""), GitError);
  // Onto a file symlink: the symlink becomes a regular file, its target is untouched.
  std::string commit = repo.commit_writes(base, {{"trainer/model/link.cu", "x"}}, "replace", "");
  ASSERT_FALSE(commit.empty());
  repo.checkout_detached(commit);
  EXPECT_FALSE(std::filesystem::is_symlink(root / "trainer/model/link.cu"));
  EXPECT_EQ(read_file(root / "trainer/model/link.cu"), "x");
  EXPECT_TRUE(std::filesystem::is_empty(dir / "outside"));
}

TEST_F(GitRepoTest, TrackedFilesAreTheIndexPaths) {
  GitRepo repo(root);
  EXPECT_THAT(repo.tracked_files(), ::testing::UnorderedElementsAre(".gitignore", "trainer/harness/eval.h", "trainer/train.cu"));
}

TEST(BlobHash, MatchesGit) {
  testing::TempDir dir;
  write_file(dir / "f", "hello\n");
  auto r = shell("git hash-object " + sh_quote((dir / "f").string()));
  EXPECT_EQ(blob_hash("hello\n") + "\n", r.out);
}

}  // namespace
}  // namespace ard
