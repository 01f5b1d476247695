// Tests of a tag's base against a real repository: the note when HEAD moved
// on, and `--rebase` moving the kept changes onto HEAD or refusing to.
#include "daemon/engine/tag_base.h"

#include <gmock/gmock.h>

#include "daemon/fatal_error.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;
using testing::write_file;

GitLibrary git_library;

class TagBaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = dir.path() / "repo";
    write_file(root / "trainer/train.cu", "lr 1\n#\n#\n#\ndepth 8\n");
    ASSERT_EQ(testing::commit_base_repo(root), 0);
    repo = std::make_unique<GitRepo>(root);
    base = repo->head();
    best = repo->commit_writes(base, {{"trainer/train.cu", "lr 2\n#\n#\n#\ndepth 8\n"}}, "raise lr", "");
  }
  /// A commit of the user's on HEAD (the checkout's branch), writing train.cu.
  std::string user_commit(const std::string& content) {
    write_file(root / "trainer/train.cu", content);
    EXPECT_EQ(testing::shell("cd " + testing::sh_quote(root.string()) +
                             " && git -c user.name=u -c user.email=u@localhost commit -qam 'user change'")
                  .code,
              0);
    return repo->head();
  }
  testing::TempDir dir;
  std::filesystem::path root;
  std::unique_ptr<GitRepo> repo;
  std::string base, best;
};

TEST_F(TagBaseTest, NoNoteWhileHeadIsTheBase) {
  EXPECT_EQ(newer_head_note(*repo, "t", base, best), "");
  EXPECT_EQ(kept_chain(*repo, base, best), std::vector<std::string>{best});
}

TEST_F(TagBaseTest, ANewerHeadIsNotedAndRebaseMovesTheKeptChangeOntoIt) {
  const std::string head = user_commit("lr 1\n#\n#\n#\ndepth 12\n");
  EXPECT_THAT(newer_head_note(*repo, "t", base, best),
              HasSubstr("has 1 commit(s) that tag t does not (it researches on " + base.substr(0, 7) +
                        "); `autoresearchd start --rebase` moves its 1 kept change(s) onto HEAD"));
  const RebasedTag r = rebase_onto_head(*repo, "t", base, best);
  EXPECT_TRUE(r.moved);
  EXPECT_EQ(r.head, head);
  EXPECT_NE(r.onto, head);
  // The kept change on top of the user's: both lines changed.
  const std::string diff = repo->diff(head, r.onto);
  EXPECT_THAT(diff, HasSubstr("-lr 1\n+lr 2\n"));
  EXPECT_THAT(repo->diff(base, r.onto), HasSubstr("+depth 12"));
  EXPECT_THAT(r.log_line, HasSubstr("with its 1 kept change(s), now"));
}

TEST_F(TagBaseTest, AKeptChangeThatDoesNotApplyStopsTheRebaseNamingIt) {
  user_commit("lr 3\n#\n#\n#\ndepth 8\n");
  try {
    rebase_onto_head(*repo, "t", base, best);
    FAIL() << "a conflicting kept change was moved";
  } catch (const FatalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("(raise lr) does not apply onto"));
    EXPECT_THAT(e.what(), HasSubstr("nothing was moved"));
  }
}

TEST_F(TagBaseTest, AFirstStartRecordsTheRunAndMakesTheBranchAtHead) {
  Store store((dir.path() / "results.db").string());
  std::vector<std::string> lines;
  const TagChain chain = settle_tag(*repo, store, "t", false, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_EQ(chain.base, base);
  EXPECT_EQ(chain.best, base);  // nothing kept yet
  EXPECT_FALSE(chain.best_val);
  EXPECT_EQ(chain.best_id, 0);
  EXPECT_EQ(store.run_base("t"), base);
  EXPECT_EQ(repo->ref_target("refs/heads/autoresearch/t"), base);
  EXPECT_TRUE(lines.empty());
}

TEST_F(TagBaseTest, AStartFindsTheBestKeptCommitAndPutsAMovedBranchBackOnIt) {
  Store store((dir.path() / "results.db").string());
  settle_tag(*repo, store, "t", false, [](const std::string&) {});
  const int64_t id = store.create_experiment("t", false, base, "", "p", std::nullopt);
  store.set_commit(id, best, repo->diff(base, best));
  store.set_metrics(id, {0.9, std::nullopt, std::nullopt, "{}"});
  store.finish(id, status::kKept, "", "");
  repo->set_ref("refs/heads/autoresearch/t", base, "moved by hand");
  std::vector<std::string> lines;
  const TagChain chain = settle_tag(*repo, store, "t", false, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_EQ(chain.best, best);
  EXPECT_EQ(chain.best_val, 0.9);
  EXPECT_EQ(chain.best_id, id);
  EXPECT_FALSE(chain.rebased);
  EXPECT_EQ(repo->ref_target("refs/heads/autoresearch/t"), best);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("is not the best kept commit; reset to " + best.substr(0, 7)));
}

TEST_F(TagBaseTest, ARebasedStartRecordsTheNewBaseAndForgetsTheBestsValue) {
  Store store((dir.path() / "results.db").string());
  settle_tag(*repo, store, "t", false, [](const std::string&) {});
  const std::string head = user_commit("lr 1\n#\n#\n#\ndepth 12\n");
  const TagChain chain = settle_tag(*repo, store, "t", true, [](const std::string&) {});
  EXPECT_TRUE(chain.rebased);
  EXPECT_EQ(chain.base, head);
  EXPECT_EQ(chain.best, head);  // no change was kept: the chain is HEAD itself
  EXPECT_EQ(store.run_base("t"), head);
}

TEST_F(TagBaseTest, ABaseMissingFromTheRepoStopsTheStart) {
  Store store((dir.path() / "results.db").string());
  store.add_run("t", "autoresearch/t", std::string(40, 'a'));
  EXPECT_THROW(settle_tag(*repo, store, "t", false, [](const std::string&) {}), FatalError);
}

}  // namespace
}  // namespace ard
