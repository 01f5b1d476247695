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

TEST_F(GitRepoTest, CommitsWithoutACheckoutAndWithoutTouchingTheUsersOne) {
  GitRepo repo(root);
  std::string base = repo.head();
  std::string c1 = repo.commit_writes(base, {{"trainer/train.cu", "lr 2\n"}, {"trainer/model/new.cuh", "new\n"}},
                                      "raise lr", "refs/autoresearch/t/exp/1");
  ASSERT_EQ(c1.size(), 40u);
  EXPECT_EQ(git("log -1 --format=%s%n%P refs/autoresearch/t/exp/1").out, "raise lr\n" + base + "\n");
  EXPECT_EQ(git("rev-parse HEAD").out, base + "\n");  // the user's checkout stays on main
  EXPECT_EQ(read_file(root / "trainer/train.cu"), "lr 1\n");
  EXPECT_EQ(git("status --porcelain").out, "");
  EXPECT_THAT(repo.diff(base, c1), HasSubstr("+lr 2"));
  auto files = repo.editable_files(c1, editable);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].path, "trainer/model/new.cuh");
  EXPECT_EQ(files[1].content, "lr 2\n");
  EXPECT_EQ(repo.commit_writes(base, {{"trainer/train.cu", "lr 1\n"}}, "noop", ""), "");  // no change: no commit
  // A file may not replace a directory, sit below a file, hold a control
  // character or climb out of the tree.
  EXPECT_THROW(repo.commit_writes(base, {{"trainer/harness", "x"}}, "m", ""), GitError);
  EXPECT_THROW(repo.commit_writes(base, {{"trainer/train.cu/x", "x"}}, "m", ""), GitError);
  EXPECT_THROW(repo.commit_writes(base, {{std::string("trainer/a\0b.cu", 15), "x"}}, "m", ""), GitError);
  EXPECT_THROW(repo.commit_writes(base, {{"trainer/../../x", "x"}}, "m", ""), GitError);
  EXPECT_THROW(repo.commit_writes(base, {{".git/config", "x"}}, "m", ""), GitError);
  EXPECT_TRUE(repo.has_commit(c1));
  EXPECT_FALSE(repo.has_commit("nonsense"));
}

// A revision as the user names it, and the paths a change touches.
TEST_F(GitRepoTest, ResolvesARevisionToItsCommitAndParentAndListsTheChangedPaths) {
  GitRepo repo(root);
  const std::string base = repo.head();
  write_file(root / "trainer/train.cu", "lr 2\n");
  write_file(root / "trainer/model/k.cuh", "kernel\n");
  ASSERT_EQ(git("add -A && git -c user.name=u -c user.email=u@localhost commit -qm 'raise lr'").code, 0);
  ASSERT_EQ(git("rm -q trainer/model/k.cuh && git mv trainer/harness/eval.h trainer/harness/check.h && "
                "git -c user.name=u -c user.email=u@localhost commit -qm 'drop k, move eval'")
                .code,
            0);
  const auto first = repo.resolve("HEAD~1");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->parent, base);
  EXPECT_EQ(repo.resolve(first->commit.substr(0, 10))->commit, first->commit);  // a prefix
  EXPECT_EQ(repo.resolve("HEAD")->parent, first->commit);
  EXPECT_EQ(repo.resolve(base)->parent, "");  // the root commit
  EXPECT_FALSE(repo.resolve("no-such-branch"));
  EXPECT_FALSE(repo.resolve(""));
  EXPECT_THAT(repo.changed_paths(base, first->commit),
              ::testing::UnorderedElementsAre("trainer/model/k.cuh", "trainer/train.cu"));
  EXPECT_THAT(repo.changed_paths(first->commit, repo.head()),
              ::testing::UnorderedElementsAre("trainer/harness/eval.h", "trainer/harness/check.h", "trainer/model/k.cuh"));
}

TEST_F(GitRepoTest, DetachedSlotsCheckOutExactlyTheCommit) {
  GitRepo repo(root);
  std::string base = repo.head();
  std::string c1 = repo.commit_writes(base, {{"trainer/model/new.cuh", "new\n"}}, "add", "");
  auto path = root / ".autoresearchd/worktrees/t";
  const SlotKeep keep{{"build"}};
  auto wt = repo.open_detached_worktree("t", path, c1, keep);
  EXPECT_EQ(wt->head(), c1);
  EXPECT_EQ(read_file(path / "trainer/model/new.cuh"), "new\n");
  EXPECT_EQ(git("branch --list 'autoresearchd-slot-*'").out, "");  // the scratch branch is gone
  // Whatever a child left goes: edits, untracked files; the kept build directory stays.
  write_file(path / "trainer/harness/eval.h", "tampered\n");
  write_file(path / "core", "a core dump\n");
  write_file(path / "build/out.o", "kept\n");
  EXPECT_EQ(wt->differences(c1, keep), (std::vector<std::string>{"core", "trainer/harness/eval.h"}));
  wt->checkout_detached(base, keep);
  EXPECT_EQ(wt->head(), base);
  EXPECT_FALSE(std::filesystem::exists(path / "trainer/model/new.cuh"));
  EXPECT_FALSE(std::filesystem::exists(path / "core"));
  EXPECT_EQ(read_file(path / "trainer/harness/eval.h"), "fixed\n");
  EXPECT_EQ(read_file(path / "build/out.o"), "kept\n");
  EXPECT_TRUE(wt->differences(base, keep).empty());
  EXPECT_EQ(shell("cd " + sh_quote(path.string()) + " && git status --porcelain").out, "");
  // Reopened as it is; recreated when its directory was deleted.
  EXPECT_EQ(repo.open_detached_worktree("t", path, c1)->head(), c1);
  std::filesystem::remove_all(path);
  EXPECT_EQ(repo.open_detached_worktree("t", path, base)->head(), base);
  EXPECT_EQ(git("rev-parse HEAD").out, base + "\n");
}

TEST_F(GitRepoTest, DifferencesSeeEditsAndEveryUntrackedFileButTheKeptDirectory) {
  GitRepo repo(root);
  std::string base = repo.head();
  auto wt = repo.open_detached_worktree("t", root / ".autoresearchd/worktrees/t", base);
  const SlotKeep keep{{"build"}};
  EXPECT_TRUE(wt->differences(base, keep).empty());
  write_file(wt->workdir() / "trainer/train.cu", "lr 2\n");
  write_file(wt->workdir() / "trainer/harness/extra.h", "new\n");
  write_file(wt->workdir() / "build/out.o", "kept\n");
  write_file(wt->workdir() / "ignored.log", "ignored by no rule, still not the commit's\n");
  EXPECT_EQ(wt->differences(base, keep),
            (std::vector<std::string>{"ignored.log", "trainer/harness/extra.h", "trainer/train.cu"}));
}

TEST_F(GitRepoTest, AResetWritesNoFileThroughASymlinkAChildPlantedAtATrackedPath) {
  GitRepo repo(root);
  const std::string base = repo.head();
  const std::string c1 = repo.commit_writes(base, {{"trainer/model/payload.cuh", "llm-written\n"}}, "add", "");
  const std::string c2 = repo.commit_writes(c1, {{"trainer/model/payload.cuh", "llm-written, again\n"}}, "edit", "");
  auto path = root / ".autoresearchd/worktrees/t";
  auto wt = repo.open_detached_worktree("t", path, c2);
  const auto outside = dir.path() / "authorized_keys";
  write_file(outside, "ssh-ed25519 AAAA the user's key\n");
  std::filesystem::remove(path / "trainer/model/payload.cuh");
  std::filesystem::create_symlink(outside, path / "trainer/model/payload.cuh");
  EXPECT_EQ(wt->differences(c2, {}), std::vector<std::string>{"trainer/model/payload.cuh"});
  wt->checkout_detached(c1);
  EXPECT_EQ(read_file(outside), "ssh-ed25519 AAAA the user's key\n");
  EXPECT_FALSE(std::filesystem::is_symlink(path / "trainer/model/payload.cuh"));
  EXPECT_EQ(read_file(path / "trainer/model/payload.cuh"), "llm-written\n");
  EXPECT_TRUE(wt->differences(c1, {}).empty());
}

TEST_F(GitRepoTest, ASameSizeRewriteWithItsOldMtimeIsSeenAndRestored) {
  GitRepo repo(root);
  const std::string base = repo.head();
  auto path = root / ".autoresearchd/worktrees/t";
  auto wt = repo.open_detached_worktree("t", path, base);
  const auto eval = path / "trainer/harness/eval.h";
  const auto mtime = std::filesystem::last_write_time(eval);
  ASSERT_EQ(shell("printf 'FIXED\\n' | dd of=" + sh_quote(eval.string()) + " conv=notrunc status=none").code, 0);
  std::filesystem::last_write_time(eval, mtime);
  ASSERT_EQ(read_file(eval), "FIXED\n");
  EXPECT_EQ(wt->differences(base, {}), std::vector<std::string>{"trainer/harness/eval.h"});
  wt->checkout_detached(base);
  EXPECT_EQ(read_file(eval), "fixed\n");
  EXPECT_TRUE(wt->differences(base, {}).empty());
}

TEST_F(GitRepoTest, AWorktreePastRepairIsDeletedAndCreatedAgain) {
  GitRepo repo(root);
  const std::string base = repo.head();
  auto path = root / ".autoresearchd/worktrees/t";
  repo.open_detached_worktree("t", path, base);
  // Its .git file replaced by a directory: not a worktree any more.
  std::filesystem::remove(path / ".git");
  std::filesystem::create_directory(path / ".git");
  write_file(path / "junk", "x\n");
  auto wt = repo.open_detached_worktree("t", path, base);
  EXPECT_EQ(wt->head(), base);
  EXPECT_FALSE(std::filesystem::exists(path / "junk"));
  EXPECT_TRUE(std::filesystem::is_regular_file(path / ".git"));
  EXPECT_TRUE(wt->differences(base, {}).empty());
}

TEST_F(GitRepoTest, CherryPicksOntoANewerCommitOrReportsTheConflict) {
  write_file(root / "trainer/train.cu", "lr 1\n#\n#\n#\nwd 1\n");
  ASSERT_EQ(git("commit -qam two").code, 0);
  GitRepo repo(root);
  std::string base = repo.head();
  std::string a = repo.commit_writes(base, {{"trainer/train.cu", "lr 2\n#\n#\n#\nwd 1\n"}}, "lr", "");
  std::string b = repo.commit_writes(base, {{"trainer/train.cu", "lr 1\n#\n#\n#\nwd 2\n"}}, "wd", "");
  auto pick = repo.cherry_pick(b, a, "refs/autoresearch/t/exp/2");
  ASSERT_FALSE(pick.commit.empty());
  EXPECT_EQ(git("show " + pick.commit + ":trainer/train.cu").out, "lr 2\n#\n#\n#\nwd 2\n");
  EXPECT_EQ(git("log -1 --format=%s%n%P " + pick.commit).out, "wd\n" + a + "\n");
  EXPECT_EQ(repo.ref_target("refs/autoresearch/t/exp/2"), pick.commit);
  std::string c = repo.commit_writes(base, {{"trainer/train.cu", "lr 3\n#\n#\n#\nwd 1\n"}}, "lr 3", "");
  auto conflict = repo.cherry_pick(c, a, "");
  EXPECT_TRUE(conflict.commit.empty());
  EXPECT_EQ(conflict.conflicts, std::vector<std::string>{"trainer/train.cu"});
}

TEST_F(GitRepoTest, RevertsAChangeOntoANewerCommitOrReportsTheConflict) {
  write_file(root / "trainer/train.cu", "lr 1\n#\n#\n#\nwd 1\n");
  ASSERT_EQ(git("commit -qam two").code, 0);
  GitRepo repo(root);
  std::string base = repo.head();
  std::string a = repo.commit_writes(base, {{"trainer/train.cu", "lr 2\n#\n#\n#\nwd 1\n"}}, "lr", "");
  std::string b = repo.commit_writes(a, {{"trainer/train.cu", "lr 2\n#\n#\n#\nwd 2\n"}}, "wd", "");
  auto undo = repo.revert(a, b, "Revert lr\n");
  ASSERT_FALSE(undo.commit.empty());
  EXPECT_EQ(git("show " + undo.commit + ":trainer/train.cu").out, "lr 1\n#\n#\n#\nwd 2\n");
  EXPECT_EQ(git("log -1 --format=%s%n%P " + undo.commit).out, "Revert lr\n" + b + "\n");
  std::string c = repo.commit_writes(b, {{"trainer/train.cu", "lr 3\n#\n#\n#\nwd 2\n"}}, "lr 3", "");
  auto conflict = repo.revert(a, c, "Revert lr\n");  // lr changed again since
  EXPECT_TRUE(conflict.commit.empty());
  EXPECT_EQ(conflict.conflicts, std::vector<std::string>{"trainer/train.cu"});
}

TEST_F(GitRepoTest, RefsAreSetReadAndListed) {
  GitRepo repo(root);
  std::string base = repo.head();
  EXPECT_FALSE(repo.ref_target("refs/heads/autoresearch/t"));
  repo.set_ref("refs/heads/autoresearch/t", base, "test");
  repo.set_ref("refs/autoresearch/t/exp/1", base, "test");
  EXPECT_EQ(repo.ref_target("refs/heads/autoresearch/t"), base);
  auto refs = repo.refs_with_prefix("refs/autoresearch/t/");
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs.begin()->first, "refs/autoresearch/t/exp/1");
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
