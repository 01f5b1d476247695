// Tests of the proposal side of the loop against a scripted proposer, a real
// store and a real repository: which row is asked, and the one outcome each
// answer becomes (committed, ended, waiting, fatal, stopped), with the rows
// left as the engine expects them.
#include "daemon/engine/proposals.h"

#include <gmock/gmock.h>

#include <deque>
#include <mutex>

#include "daemon/store/experiment_state.h"
#include "proposers/swarm_proposer.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;
using Kind = ProposalOutcome::Kind;

GitLibrary git_library;

/// Answers each ask with the next scripted result and remembers what it was told.
class ScriptedProposer : public Proposer {
 public:
  std::string name() const override { return "scripted"; }
  ProposalResult propose(const ProposalContext& ctx) override {
    std::lock_guard<std::mutex> lock(mutex);
    told.push_back(ctx);
    ProposalResult r = script.front();
    script.pop_front();
    return r;
  }
  std::mutex mutex;
  std::deque<ProposalResult> script;
  std::vector<ProposalContext> told;
};

ProposalResult edit(const std::string& description, const std::string& content) {
  ProposalResult r;
  r.proposal = Proposal{description, {{"trainer/train.cu", content}}, {}};
  return r;
}

ProposalResult error(ProposalError::Kind kind, const std::string& message) {
  ProposalResult r;
  r.error = ProposalError{kind, message, {}, 0};
  return r;
}

class ProposalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = dir.path() / "repo";
    testing::write_file(root / "trainer/train.cu", "lr 1\n#\n#\n#\n#\n#\n#\ndepth 8\n");
    ASSERT_EQ(testing::commit_base_repo(root), 0);
    config.repo = root;
    config.tag = "t";
    config.editable = {"trainer/train.cu"};
    repo = std::make_unique<GitRepo>(root);
    base = repo->head();
    store.add_run("t", "autoresearch/t", base);
    proposals = std::make_unique<Proposals>(io, config, store, proposer, log,
                                            [this](const ProposalOutcome& o) { outcomes.push_back(o); },
                                            [this] { ++unblocked; });
    proposals->open(*repo);
  }
  /// Asks once and runs the loop until its outcome is in.
  ProposalOutcome ask_one() {
    const size_t before = outcomes.size();
    io.restart();  // the last ask's guard, let go, stopped it
    auto guard = boost::asio::make_work_guard(io);
    proposals->ask(AskContext{"program", base, {}, std::nullopt, ""});
    while (outcomes.size() == before) io.run_one();
    return outcomes.back();
  }
  testing::TempDir dir;
  std::filesystem::path root;
  Config config;
  Store store{(dir.path() / "results.db").string()};
  Log log{dir.path() / "daemon.log", false};
  ScriptedProposer proposer;
  boost::asio::io_context io;
  std::unique_ptr<GitRepo> repo;
  std::string base;
  std::vector<ProposalOutcome> outcomes;
  int unblocked = 0;
  std::unique_ptr<Proposals> proposals;
};

TEST_F(ProposalsTest, AnEditIsCommittedOnTheParentOfItsAsk) {
  proposer.script = {edit("raise lr\nmore words", "lr 2\n#\n#\n#\n#\n#\n#\ndepth 8\n")};
  const ProposalOutcome o = ask_one();
  EXPECT_EQ(o.kind, Kind::kCommitted);
  EXPECT_EQ(o.parent, base);
  EXPECT_EQ(o.description, "raise lr");
  EXPECT_EQ(repo->ref_target("refs/autoresearch/t/exp/" + std::to_string(o.experiment)), o.commit);
  const auto row = store.experiment(o.experiment);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->commit, o.commit);
  EXPECT_THAT(row->diff, HasSubstr("+lr 2"));
  EXPECT_EQ(proposals->pending(), 0u);
  EXPECT_EQ(proposals->running(), 0);
  EXPECT_EQ(proposer.told.at(0).files.at(0).path, "trainer/train.cu");
}

TEST_F(ProposalsTest, AnEditOutsideTheEditableFilesEndsAsPatchRejected) {
  ProposalResult outside;
  outside.proposal = Proposal{"touch the harness", {{"trainer/harness/eval.h", "x\n"}}, {}};
  proposer.script = {outside};
  const ProposalOutcome o = ask_one();
  EXPECT_EQ(o.kind, Kind::kEnded);
  EXPECT_EQ(o.final_status, status::kPatchRejected);
  EXPECT_THAT(o.error, HasSubstr("trainer/harness/eval.h"));
}

TEST_F(ProposalsTest, TheSameChangeAgainIsADuplicateNamingTheFirst) {
  proposer.script = {edit("raise lr", "lr 2\n#\n#\n#\n#\n#\n#\ndepth 8\n"),
                     edit("raise lr again", "lr 2\n#\n#\n#\n#\n#\n#\ndepth 8\n")};
  const ProposalOutcome first = ask_one();
  ASSERT_EQ(first.kind, Kind::kCommitted);
  const ProposalOutcome second = ask_one();
  EXPECT_EQ(second.kind, Kind::kEnded);
  EXPECT_EQ(second.final_status, status::kDuplicate);
  EXPECT_THAT(second.error, HasSubstr("#" + std::to_string(first.experiment)));
  EXPECT_THAT(second.failure_detail, HasSubstr("it was not run"));
}

TEST_F(ProposalsTest, AWaitAsksTheSameRowAgainAndABadEditEndsIt) {
  proposer.script = {error(ProposalError::Kind::kUnavailable, "HTTP 503"),
                     error(ProposalError::Kind::kBadEdit, "no edit applies")};
  const ProposalOutcome wait = ask_one();
  EXPECT_EQ(wait.kind, Kind::kWaiting);
  ASSERT_TRUE(wait.wait);
  EXPECT_THAT(wait.wait->message, HasSubstr("HTTP 503"));
  EXPECT_EQ(proposals->pending(), 0u);
  const ProposalOutcome bad = ask_one();
  EXPECT_EQ(bad.experiment, wait.experiment);  // the row waited, and was asked again
  EXPECT_EQ(bad.kind, Kind::kEnded);
  EXPECT_EQ(bad.final_status, status::kProposerError);
  EXPECT_EQ(bad.error, "no edit applies");
  EXPECT_EQ(store.experiment(bad.experiment)->state, status::kProposerError);  // finished here
  proposer.script = {edit("again", "lr 5\n")};
  ask_one();
  ASSERT_TRUE(proposer.told.back().last_failure);  // the next proposal is told of the bad edit
  EXPECT_EQ(proposer.told.back().last_failure->kind, status::kProposerError);
  EXPECT_EQ(proposer.told.back().last_failure->detail, "no edit applies");
}

TEST_F(ProposalsTest, AnEndIsToldToTheNextProposalAndCountedUntilAKeepClearsBoth) {
  for (int i = 0; i < 3; ++i) {  // the breaker's default: three of the same failure pause proposing
    const int64_t id = store.create_experiment("t", false, base, "", "scripted", std::nullopt);
    proposals->record_end(id, status::kCrash, "exit 134", "Aborted", "");
    EXPECT_EQ(store.experiment(id)->state, status::kCrash);
  }
  EXPECT_TRUE(proposals->breaker_pause());
  EXPECT_THAT(proposals->breaker_line(), HasSubstr("crash"));
  proposer.script = {edit("one", "lr 6\n"), edit("two", "lr 7\n")};
  ask_one();
  ASSERT_TRUE(proposer.told.back().last_failure);
  EXPECT_EQ(proposer.told.back().last_failure->kind, status::kCrash);
  EXPECT_THAT(proposer.told.back().last_failure->detail, HasSubstr("Aborted"));
  const int64_t kept = store.create_experiment("t", false, base, "", "scripted", std::nullopt);
  proposals->record_end(kept, status::kKept, "", "", "");
  EXPECT_FALSE(proposals->breaker_pause());
  ask_one();
  EXPECT_FALSE(proposer.told.back().last_failure);
}

TEST_F(ProposalsTest, AFixOwedIsAskedFirstWithTheFailedFiles) {
  const int64_t failed = store.create_experiment("t", false, base, "", "scripted", std::nullopt);
  proposals->owe_fix(FixOwed{failed, 1, {{"trainer/train.cu", "lr 3 broken\n"}}});
  proposer.script = {edit("fix it", "lr 3\n")};
  const ProposalOutcome o = ask_one();
  EXPECT_EQ(o.kind, Kind::kCommitted);
  EXPECT_NE(o.experiment, failed);  // a row of its own
  EXPECT_EQ(o.fix_round, 1);
  EXPECT_EQ(o.fix_of, failed);
  EXPECT_EQ(proposer.told.at(0).files.at(0).content, "lr 3 broken\n");
  EXPECT_EQ(store.experiment(o.experiment)->fix_of, failed);
}

TEST_F(ProposalsTest, AFatalErrorFinishesTheRow) {
  proposer.script = {error(ProposalError::Kind::kFatal, "bad key")};
  const ProposalOutcome o = ask_one();
  EXPECT_EQ(o.kind, Kind::kFatal);
  EXPECT_EQ(o.error, "bad key");
  EXPECT_EQ(store.experiment(o.experiment)->state, status::kProposerError);
}

TEST_F(ProposalsTest, AnAnswerAfterCancelIsStoppedAndItsRowEndsAtStop) {
  proposer.script = {edit("raise lr", "lr 2\n#\n#\n#\n#\n#\n#\ndepth 8\n")};
  proposals->cancel();
  const ProposalOutcome o = ask_one();
  EXPECT_EQ(o.kind, Kind::kStopped);
  EXPECT_EQ(proposals->pending(), 1u);
  proposals->end_rows_at_stop();
  EXPECT_EQ(proposals->pending(), 0u);
  // Nothing of the proposal was recorded, so its row is gone, its id unused.
  EXPECT_FALSE(store.experiment(o.experiment));
}

TEST_F(ProposalsTest, ABlockLastsItsWaitOnceAndSaysWhenItIsOver) {
  proposals->block(0.05);
  proposals->block(60);  // a block under way is left as it is
  EXPECT_TRUE(proposals->blocked());
  io.run_for(std::chrono::seconds(2));  // returns once the wait is over: nothing else is pending
  EXPECT_FALSE(proposals->blocked());
  EXPECT_EQ(unblocked, 1);
}

// A researcher's commit is the next row's proposal, with no proposer call:
// taken as it is on its own parent, its proposer "user"; one that touches
// what the daemon may not edit ends as patch_rejected.
TEST_F(ProposalsTest, ATryIsTakenBeforeAnyProposerWithItsOwnCommitAndParent) {
  const std::string mine = repo->commit_writes(base, {{"trainer/train.cu", "lr 5\n#\n#\n#\n#\n#\n#\ndepth 8\n"}},
                                               "the user's lr", "refs/heads/mine");
  const std::string harness =
      repo->commit_writes(base, {{"trainer/harness/eval.h", "easier\n"}}, "an easier eval", "refs/heads/bad");
  store.add_try("t", mine, base, "the user's lr");
  store.add_try("t", harness, base, "an easier eval");
  const ProposalOutcome taken = ask_one();
  EXPECT_EQ(taken.kind, Kind::kCommitted);
  EXPECT_EQ(taken.commit, mine);
  EXPECT_EQ(taken.parent, base);
  EXPECT_EQ(taken.description, "the user's lr");
  EXPECT_EQ(store.experiment(taken.experiment)->proposer, "user");
  EXPECT_EQ(store.tries("t")[0].experiment, taken.experiment);
  EXPECT_EQ(repo->ref_target("refs/autoresearch/t/exp/" + std::to_string(taken.experiment)), mine);
  const ProposalOutcome refused = ask_one();
  EXPECT_EQ(refused.kind, Kind::kEnded);
  EXPECT_EQ(refused.final_status, status::kPatchRejected);
  EXPECT_THAT(refused.error, HasSubstr("it changes trainer/harness/eval.h, which the daemon may not edit"));
  EXPECT_TRUE(proposer.told.empty());  // no proposer was asked
}

/// Answers every ask with a new line of its own, and remembers the profile and focus it was told.
class EchoProposer : public Proposer {
 public:
  explicit EchoProposer(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  ProposalResult propose(const ProposalContext& ctx) override {
    told.push_back(ctx.profile + "|" + ctx.focus);
    ProposalResult r;
    r.proposal = Proposal{name_ + " " + std::to_string(ctx.experiment_id),
                          {{"trainer/train.cu", "lr 10" + std::to_string(ctx.experiment_id) + "\n#\n#\n#\n#\n#\n#\ndepth 8\n"}},
                          {}};
    return r;
  }
  std::vector<std::string> told;

 private:
  std::string name_;
};

// With profiles each new row is drawn by weight (2:1 here), records its profile and
// its profile's proposer, and its proposer is told the profile's focus.
TEST_F(ProposalsTest, ProfilesAreDrawnByWeightRecordedAndToldTheirFocus) {
  std::vector<SwarmProposer::Member> members;
  auto arch = std::make_unique<EchoProposer>("llm:arch-model");
  auto optim = std::make_unique<EchoProposer>("offline");
  EchoProposer* arch_seen = arch.get();
  EchoProposer* optim_seen = optim.get();
  members.push_back({{"arch", 2, "Architecture changes only."}, std::move(arch)});
  members.push_back({{"optim", 1, ""}, std::move(optim)});
  SwarmProposer swarm(std::move(members));
  proposals = std::make_unique<Proposals>(io, config, store, swarm, log,
                                          [this](const ProposalOutcome& o) { outcomes.push_back(o); }, [] {});
  proposals->open(*repo);
  std::vector<std::string> drawn;
  for (int k = 0; k < 6; ++k) {
    const ProposalOutcome o = ask_one();
    ASSERT_EQ(o.kind, Kind::kCommitted) << o.error;
    const auto row = store.experiment(o.experiment);
    drawn.push_back(row->profile);
    EXPECT_EQ(row->proposer, row->profile == "arch" ? "llm:arch-model" : "offline");
  }
  EXPECT_EQ(drawn, (std::vector<std::string>{"arch", "optim", "arch", "arch", "optim", "arch"}));
  EXPECT_EQ(arch_seen->told.at(0), "arch|Architecture changes only.");
  EXPECT_EQ(optim_seen->told.at(0), "optim|");
}

// With profiles.adapt the draw follows the keeps per GPU-hour each profile earned:
// 8 keeps in 4 GPU-hours against none in 4 give shares 0.9 and 0.1 (equal weights, no
// floor), so nine of ten new rows go to the first; without adapt they would split 5:5.
TEST_F(ProposalsTest, AdaptedProfilesDrawTowardTheOneWithMoreKeepsPerGpuHour) {
  for (const std::string name : {"keeper", "idle"}) {
    const int64_t spent = store.create_experiment("t", false, base, "", "offline", std::nullopt);
    store.set_profile(spent, name);
    store.end_trial(store.begin_trial(spent, "t", "0", "candidate", base), "ok", 4 * 3600.0, 1.0, "{}");
    store.finish(spent, status::kDiscarded, "", "");
  }
  for (int k = 0; k < 8; ++k) {
    const int64_t kept = store.create_experiment("t", false, base, "", "offline", std::nullopt);
    store.set_profile(kept, "keeper");
    store.finish(kept, status::kKept, "", "");
  }
  std::vector<SwarmProposer::Member> members;
  members.push_back({{"keeper", 1, ""}, std::make_unique<EchoProposer>("offline")});
  members.push_back({{"idle", 1, ""}, std::make_unique<EchoProposer>("offline")});
  SwarmProposer swarm(std::move(members));
  config.profiles_settings.adapt = true;
  config.profiles_settings.floor = 0;
  proposals = std::make_unique<Proposals>(io, config, store, swarm, log,
                                          [this](const ProposalOutcome& o) { outcomes.push_back(o); }, [] {});
  proposals->open(*repo);
  int keeper = 0;
  for (int k = 0; k < 10; ++k) {
    const ProposalOutcome o = ask_one();
    ASSERT_EQ(o.kind, Kind::kCommitted) << o.error;
    keeper += store.experiment(o.experiment)->profile == "keeper";
  }
  EXPECT_EQ(keeper, 9);
}

}  // namespace
}  // namespace ard
