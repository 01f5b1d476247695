// Tests of the proposal desk: the proposer's history and noise note, its
// thread and mailbox, what its errors ask of the engine, and a proposal
// committed in a real repository made with the git CLI.
#include "daemon/engine/proposal_desk.h"

#include <gmock/gmock.h>

#include <limits>

#include "daemon/log.h"
#include "daemon/store/experiment_state.h"
#include "daemon/util/text.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;

GitLibrary git_library;

// A provider's Retry-After (or a call cap's lifting) is waited for between
// asks when it is later than retry_wait_s, up to an hour; a cost cap's
// infinity is not.
TEST(AskAgainAfter, WaitsForTheLaterOfRetryWaitAndRetryAtUpToAnHour) {
  const double now = 1.7e9;
  EXPECT_DOUBLE_EQ(ask_again_after(60, 0, now), 60);
  EXPECT_DOUBLE_EQ(ask_again_after(60, now + 30, now), 60);
  EXPECT_DOUBLE_EQ(ask_again_after(60, now + 120, now), 120);
  EXPECT_DOUBLE_EQ(ask_again_after(5, now + 120, now), 120);
  EXPECT_DOUBLE_EQ(ask_again_after(60, now + 99999, now), kMaxAskWaitS);
  EXPECT_DOUBLE_EQ(ask_again_after(60, std::numeric_limits<double>::infinity(), now), 60);
  EXPECT_DOUBLE_EQ(ask_again_after(7200, now + 99999, now), 7200);
}

TEST(DescriptionLine, FirstLineTrimmedAndCapped) {
  EXPECT_EQ(description_line("  raise lr \t\nand more"), "raise lr");
  EXPECT_EQ(description_line(" \n"), "(no description)");
  EXPECT_EQ(description_line(""), "(no description)");
  const std::string line = description_line(std::string(250, 'x'));
  EXPECT_EQ(line.size(), 200u);
  EXPECT_EQ(line.substr(197), "...");
}

TEST(ProposalHistory, FinishedExperimentsOnlyInOrder) {
  ExperimentRow base;
  base.id = 1;
  base.is_baseline = true;
  base.commit = "0123456789abcdef0123456789abcdef01234567";
  base.description = "baseline";
  base.state = status::kKept;
  base.val_bpb = 0.98;
  ExperimentRow running;
  running.id = 2;
  running.state = "running";
  ExperimentRow failed;
  failed.id = 3;
  failed.state = status::kProposerError;
  failed.error = "every attempt failed to apply";
  const auto history = proposal_history({base, running, failed});
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0].id, 1);
  EXPECT_EQ(history[0].commit, short_commit(base.commit));
  EXPECT_TRUE(history[0].baseline);
  EXPECT_EQ(history[0].val_bpb, 0.98);
  EXPECT_EQ(history[1].id, 3);
  EXPECT_EQ(history[1].status, status::kProposerError);
  EXPECT_EQ(history[1].description, "(proposer error: every attempt failed to apply)");  // never ""
  EXPECT_EQ(history[0].scale, "");
}

TEST(ProposalHistory, AKeptChangeCarriesItsLabelsAtTheLargerRungs) {
  ExperimentRow kept;
  kept.id = 4;
  kept.state = status::kKept;
  ExperimentRow discarded;
  discarded.id = 5;
  discarded.state = status::kDiscarded;
  const std::vector<ChangeLabelRow> labels = {{0, 4, 1, "scale_bound"}, {0, 4, 2, "untested"}, {0, 5, 1, "transfers"}};
  const auto history = proposal_history({kept, discarded}, labels, {"base", "2x", "4x"});
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0].scale, "scale-bound at 2x");
  EXPECT_EQ(history[1].scale, "");  // a change no longer kept has no standing to mark
}

// A change is compared with every other row's diff, finished or in flight,
// but not with the baseline nor with the failed changes its fix chain repairs.
TEST(DuplicateAmong, EveryEarlierChangeButTheBaselineAndTheChainAFixRepairs) {
  const std::string diff =
      "--- a/trainer/train.cu\n+++ b/trainer/train.cu\n@@ -1,1 +1,1 @@\n-lr = 0.01\n+lr = 0.02\n";
  auto row = [&](int64_t id, const std::string& state, std::optional<int64_t> fix_of = std::nullopt) {
    ExperimentRow r;
    r.id = id;
    r.state = state;
    r.diff = diff;
    r.description = "raise lr";
    r.fix_of = fix_of;
    return r;
  };
  ExperimentRow base = row(1, status::kKept);
  base.is_baseline = true;
  // #2 failed to build, #3 fixed it and failed too, #4 fixes #3: neither is what #4 repeats.
  const std::vector<ExperimentRow> chain = {base, row(2, status::kBuildFail), row(3, status::kBuildFail, 2),
                                            row(4, "committed", 3)};
  EXPECT_FALSE(duplicate_among(chain, 4, diff, 0.9));
  // The same change in flight as #5 is what a new #6 repeats.
  std::vector<ExperimentRow> rows = {base, row(5, "running"), row(6, "committed")};
  auto dup = duplicate_among(rows, 6, diff, 0.9);
  ASSERT_TRUE(dup);
  EXPECT_EQ(dup->id, 5);
  rows[1].diff.clear();  // never committed: nothing to compare
  EXPECT_FALSE(duplicate_among(rows, 6, diff, 0.9));
}

TEST(NoiseNote, SaysTheMarginAndWhereSigmaComesFrom) {
  EXPECT_EQ(noise_note(2, NoiseEstimate{0.01, 5, false}),
            "Differences below 2σ = 0.02 are noise (σ = 0.01, from repeated runs of the same commit).");
  EXPECT_EQ(noise_note(2, NoiseEstimate{0.005, 0, true}),
            "Differences below 2σ = 0.01 are noise (σ = 0.005, the configured prior).");
}

TEST(ProposerWait, UnavailableWaitsAndAsksAgain) {
  const double now = 1.7e9;
  auto w = proposer_wait(ProposalError{ProposalError::Kind::kUnavailable, "HTTP 503", {}, 0}, 60, now);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->message, "proposer unavailable: HTTP 503");
  EXPECT_FALSE(w->pauses);
  EXPECT_DOUBLE_EQ(w->wait_s, 60);
  EXPECT_EQ(w->log_line, "proposer unavailable: HTTP 503; asking again every 60 s");
  // A Retry-After later than retry_wait_s is waited for, and the log says until when.
  w = proposer_wait(ProposalError{ProposalError::Kind::kUnavailable, "HTTP 429", {}, now + 600}, 60, now);
  EXPECT_DOUBLE_EQ(w->wait_s, 600);
  EXPECT_EQ(w->log_line, "proposer unavailable: HTTP 429; asking again at " + format_time(now + 600).substr(11, 8));
  w = proposer_wait(ProposalError{ProposalError::Kind::kExhausted, "the script is used up", {}, 0}, 60, now);
  EXPECT_EQ(w->message, "nothing to propose: the script is used up");
  EXPECT_FALSE(w->pauses);
}

TEST(ProposerWait, ACapPausesAndSaysWhenItLifts) {
  const double now = 1.7e9;
  auto w = proposer_wait(ProposalError{ProposalError::Kind::kPaused, "LLM call cap 10/h reached", {}, now + 120}, 60,
                         now);
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->pauses);
  EXPECT_EQ(w->message, "paused: LLM call cap 10/h reached (lifts at " + format_time(now + 120).substr(11, 8) + ")");
  const double inf = std::numeric_limits<double>::infinity();
  w = proposer_wait(ProposalError{ProposalError::Kind::kPaused, "LLM cost cap $5.00 reached", {}, inf}, 60, now);
  EXPECT_EQ(w->message, "paused: LLM cost cap $5.00 reached (lifts when the config changes)");
  EXPECT_DOUBLE_EQ(w->wait_s, 60);
}

TEST(ProposerWait, FatalAndBadEditAreNoWait) {
  EXPECT_FALSE(proposer_wait(ProposalError{ProposalError::Kind::kFatal, "bad key", {}, 0}, 60, 0));
  EXPECT_FALSE(proposer_wait(ProposalError{ProposalError::Kind::kBadEdit, "no edit applies", {}, 0}, 60, 0));
}

TEST(RecordAttempts, AfterThoseTheRowHasAndOnce) {
  testing::TempDir dir;
  Store store((dir.path() / "results.db").string());
  store.add_run("t", "autoresearch/t", "parent");
  const int64_t id = store.create_experiment("t", false, "parent", "", "stub", std::nullopt);
  ProposalResult failed;
  failed.error = ProposalError{ProposalError::Kind::kUnavailable, "HTTP 503", {{"p1", "r1", "503"}}, 0};
  record_attempts(store, id, failed);
  EXPECT_TRUE(failed.error->attempts.empty());
  ProposalResult made;
  made.proposal = Proposal{"raise lr", {{"trainer/train.cu", "lr 2\n"}}, {{"p2", "r2", ""}, {"p3", "r3", ""}}};
  record_attempts(store, id, made);
  record_attempts(store, id, made);  // handled again after a fault: nothing twice
  const auto attempts = store.attempts(id);
  ASSERT_EQ(attempts.size(), 3u);
  EXPECT_EQ(attempts[0].error, "503");
  EXPECT_EQ(attempts[2].prompt, "p3");
}

TEST(FailureToTell, TheFailureButNotADiscardOrAStop) {
  EXPECT_FALSE(failure_to_tell(status::kDiscarded, "discarded: Δ = 0.01", "tail", ""));
  EXPECT_FALSE(failure_to_tell(status::kInterrupted, "stopped", "tail", ""));
  auto told = failure_to_tell(status::kCrash, "exit 1", "Traceback", "");
  ASSERT_TRUE(told);
  EXPECT_EQ(told->kind, status::kCrash);
  EXPECT_EQ(told->detail, "exit 1\nTraceback");
  told = failure_to_tell(status::kBuildFail, "build failed", "make: *** [all]", "train.cu:3: error: x");
  EXPECT_EQ(told->detail, "train.cu:3: error: x");  // the compiler's errors alone
  told = failure_to_tell(status::kCrash, "exit 1", "key sk-ant-api03-" + std::string(40, 'a'), "");
  EXPECT_EQ(told->detail.find("sk-ant-api03-" + std::string(40, 'a')), std::string::npos);  // redacted
}

class StubProposer : public Proposer {
 public:
  std::string name() const override { return "stub"; }
  ProposalResult propose(const ProposalContext& ctx) override {
    if (ctx.experiment_id == 2) throw std::runtime_error("boom");
    ProposalResult r;
    r.proposal = Proposal{"try " + std::to_string(ctx.experiment_id) + (ctx.cancelled() ? " cancelled" : ""), {}, {}};
    return r;
  }
};

TEST(ProposeOnThread, TheAnswerComesBackOnTheLoop) {
  boost::asio::io_context io;
  StubProposer proposer;
  auto box = std::make_shared<Mailbox>(io);
  auto cancel = std::make_shared<std::atomic<bool>>(true);
  auto inside = std::make_shared<std::atomic<int>>(0);
  std::vector<ProposalResult> results;
  for (long id : {1, 2}) {
    ProposalContext ctx;
    ctx.experiment_id = id;
    propose_on_thread(proposer, ctx, cancel, inside, box, [&](ProposalResult r) { results.push_back(std::move(r)); });
  }
  auto guard = boost::asio::make_work_guard(io);
  while (results.size() < 2) io.run_one();
  EXPECT_EQ(inside->load(), 0);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    if (r.ok()) {
      EXPECT_EQ(r.proposal->description, "try 1 cancelled");  // the context carries the cancel flag
    } else {
      EXPECT_EQ(r.error->kind, ProposalError::Kind::kFatal);
      EXPECT_EQ(r.error->message, "proposer failed: boom");
    }
  }
}

TEST(Mailbox, PostsNothingOnceClosed) {
  boost::asio::io_context io;
  Mailbox box(io);
  int ran = 0;
  box.post([&] { ++ran; });
  box.close();
  box.post([&] { ++ran; });
  io.run();
  EXPECT_EQ(ran, 1);
}

class CommitProposalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = dir.path() / "repo";
    testing::write_file(root / "trainer/train.cu", "lr 1\n");
    testing::write_file(root / "trainer/harness/eval.h", "fixed\n");
    testing::write_file(root / "trainer/model/k.cuh", "kernel\n");
    ASSERT_EQ(testing::commit_base_repo(root), 0);
  }
  ProposalCommit commit(const std::vector<FileWrite>& writes, const std::vector<EditableFile>& base = {}) {
    GitRepo repo(root);
    return commit_proposal(repo, editable, repo.head(), base, writes, "raise lr", "refs/autoresearch/t/exp/1",
                           root / ".git" / "objects");
  }
  testing::TempDir dir;
  std::filesystem::path root;
  EditablePaths editable{{"trainer/train.cu", "trainer/model/**"}};
};

TEST_F(CommitProposalTest, CommitsAnEditableWriteUnderTheRef) {
  const ProposalCommit made = commit({{"trainer/train.cu", "lr 2\n"}});
  EXPECT_EQ(made.commit.size(), 40u);
  EXPECT_EQ(made.rejected, "");
  EXPECT_FALSE(made.fault);
  GitRepo repo(root);
  EXPECT_EQ(repo.ref_target("refs/autoresearch/t/exp/1"), made.commit);
}

TEST_F(CommitProposalTest, AFixCommitsTheFailedFilesUnderTheNewWrites) {
  const ProposalCommit made =
      commit({{"trainer/model/k.cuh", "fixed\n"}}, {{"trainer/train.cu", "lr 3\n"}, {"trainer/model/k.cuh", "bad\n"}});
  ASSERT_EQ(made.commit.size(), 40u);
  GitRepo repo(root);
  const auto files = repo.editable_files(made.commit, editable);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].content, "fixed\n");
  EXPECT_EQ(files[1].content, "lr 3\n");
}

TEST_F(CommitProposalTest, RejectsWhatIsNoEditableChange) {
  EXPECT_EQ(commit({}).rejected, "the proposal writes no file");
  EXPECT_THAT(commit({{"trainer/train.cu", "lr 2\n"}, {"trainer/harness/eval.h", "x\n"}}).rejected,
              HasSubstr("trainer/harness/eval.h"));
  EXPECT_EQ(commit({{"trainer/train.cu", "lr 1\n"}}).rejected, "the edit changes nothing");
  const ProposalCommit under_a_file = commit({{"trainer/model/k.cuh/y", "y"}});
  EXPECT_THAT(under_a_file.rejected, HasSubstr("the edit cannot be applied: "));
  EXPECT_FALSE(under_a_file.fault);
  EXPECT_EQ(under_a_file.commit, "");
}

}  // namespace
}  // namespace ard
