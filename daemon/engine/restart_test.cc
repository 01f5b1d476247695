// settle_last_sessions on a store a killed daemon left: what ends, what is
// deleted, what is decided, and what runs again, each with its log line; the
// start that settles the tag too, the session it opens, and an interrupted
// experiment taken up again.
#include "daemon/engine/restart.h"

#include <gmock/gmock.h>

#include "daemon/log.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

const std::string kBase(40, 'a');

TEST(SettleLastSessions, AKilledSessionsRowsEndAndThoseWithACommitRunAgain) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  const int64_t session = store.begin_session("t", 1);
  store.set_session_alive(session);
  const int64_t baseline = store.create_experiment("t", true, kBase, "", "baseline", std::nullopt);
  store.set_commit(baseline, kBase, "");
  store.set_metrics(baseline, {1.0, std::nullopt, std::nullopt, ""});
  store.finish(baseline, status::kKept, "", "");
  const int64_t running = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
  store.set_proposal(running, "wider");
  store.set_commit(running, std::string(40, 'b'), "diff");
  store.set_stage(running, ExperimentState::kRunning, "train", 10.0, 20.0, 15.0);
  const int64_t asking = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);  // no proposal yet

  std::vector<std::string> lines;
  SettleSettings settings{"t", "val_bpb", KeepSettings{}, 0.0, dir.path()};
  const std::vector<Resume> resumes = settle_last_sessions(store, settings, [&](const std::string& l) { lines.push_back(l); });

  EXPECT_EQ(store.experiment(running)->state, status::kInterrupted);
  EXPECT_EQ(store.experiment(running)->error, "the daemon stopped while the experiment was running (stage train)");
  EXPECT_FALSE(store.experiment(asking)) << "a row that only waited for a proposal is deleted";
  EXPECT_TRUE(store.unfinished().empty());
  EXPECT_EQ(store.sessions("t").back().end_reason, "killed");
  ASSERT_EQ(resumes.size(), 1u);
  EXPECT_EQ(resumes[0].id, running);
  EXPECT_EQ(resumes[0].runs, 0);
  EXPECT_THAT(lines, Contains("reconcile: closed 1 session(s) of a killed daemon"));
  EXPECT_THAT(lines, Contains("reconcile: #" + std::to_string(running) + " marked interrupted (was running (stage train))"));
  EXPECT_THAT(lines, Contains("#" + std::to_string(asking) +
                              " removed at restart: it had no proposal and no LLM call; its id stays unused"));
}

TEST(SettleLastSessions, AFirstStartFindsNothingToSettle) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  std::vector<std::string> lines;
  SettleSettings settings{"t", "val_bpb", KeepSettings{}, 0.0, dir.path()};
  EXPECT_TRUE(settle_last_sessions(store, settings, [&](const std::string& l) { lines.push_back(l); }).empty());
  EXPECT_TRUE(lines.empty());
}

GitLibrary git_library;

class StartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_file(root / "trainer/train.cu", "lr 1\n");
    ASSERT_EQ(testing::commit_base_repo(root), 0);
    repo = std::make_unique<GitRepo>(root);
    config.repo = root;
    config.tag = "t";
  }
  testing::TempDir dir;
  std::filesystem::path root = dir.path() / "repo";
  std::unique_ptr<GitRepo> repo;
  Config config;
  Store store{(dir.path() / "results.db").string()};
  std::vector<std::string> lines;
  std::function<void(const std::string&)> log = [this](const std::string& l) { lines.push_back(l); };
};

TEST_F(StartTest, AFirstStartSettlesTheTagAtHeadWithNothingToTakeUp) {
  Log file_log(dir.path() / "daemon.log", false);
  const StartPoint start = settle_start(store, *repo, config, dir.path(), {}, false, file_log);
  EXPECT_TRUE(start.resumes.empty());
  EXPECT_EQ(start.chain.base, repo->head());
  EXPECT_EQ(start.chain.best, repo->head());
  EXPECT_FALSE(start.chain.best_val);
  EXPECT_EQ(repo->ref_target("refs/heads/autoresearch/t"), repo->head());
}

TEST_F(StartTest, ASessionIsOpenedWithItsGpusAndSaysSoInItsFirstLine) {
  const int64_t id = open_session(store, config, repo->head(), "llm", {"0", "2"}, log);
  const SessionRow row = store.sessions("t").back();
  EXPECT_EQ(row.id, id);
  EXPECT_EQ(row.gpus, "0,2");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("session " + std::to_string(id) + ": tag t, branch autoresearch/t"));
  EXPECT_THAT(lines[0], HasSubstr("proposer llm, 2 GPU worker(s): 0,2"));
  open_session(store, config, repo->head(), "llm", {""}, log);
  EXPECT_THAT(lines.back(), HasSubstr("one worker (no GPU id)"));
}

TEST_F(StartTest, AnInterruptedExperimentIsTakenUpFromItsCommitOrStaysInterruptedWithoutIt) {
  store.add_run("t", "autoresearch/t", repo->head());
  const std::string commit = repo->commit_writes(repo->head(), {{"trainer/train.cu", "lr 2\n"}}, "raise lr", "");
  const int64_t id = store.create_experiment("t", false, repo->head(), "", "llm", std::nullopt);
  store.set_proposal(id, "raise lr");
  store.set_commit(id, commit, "diff");
  store.finish(id, status::kInterrupted, "the daemon stopped", "");
  const std::string ref = "refs/autoresearch/t/exp/" + std::to_string(id);
  const auto taken = take_up(Resume{id, 0, 0, std::nullopt, "the daemon stopped"}, store, *repo, ref, log);
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->experiment, id);
  EXPECT_EQ(taken->commit, commit);
  EXPECT_EQ(taken->parent, repo->head());
  EXPECT_EQ(taken->description, "raise lr");
  EXPECT_EQ(repo->ref_target(ref), commit);
  EXPECT_NE(store.experiment(id)->state, status::kInterrupted);
  EXPECT_THAT(lines.back(), HasSubstr("resumed (the daemon stopped; 1 of at most 2): it runs again from"));

  const int64_t lost = store.create_experiment("t", false, repo->head(), "", "llm", std::nullopt);
  store.set_commit(lost, std::string(40, 'c'), "diff");
  store.finish(lost, status::kInterrupted, "the daemon stopped", "");
  EXPECT_FALSE(take_up(Resume{lost, 0, 0, std::nullopt, "x"}, store, *repo, ref + "x", log));
  EXPECT_EQ(lines.back(), "#" + std::to_string(lost) + " stays interrupted: its commit is not in the repo");
}

}  // namespace
}  // namespace ard
