// Tests of the swarm as one proposer: the profile the context names answers.
#include "proposers/swarm_proposer.h"

#include <gmock/gmock.h>

namespace ard {
namespace {

class Named : public Proposer {
 public:
  Named(std::string name, bool concurrent) : name_(std::move(name)), concurrent_(concurrent) {}
  std::string name() const override { return name_; }
  ProposalResult propose(const ProposalContext& ctx) override {
    ProposalResult r;
    r.proposal = Proposal{name_ + " for " + ctx.profile + ": " + ctx.focus, {{"trainer/train.cu", "x"}}, {}};
    return r;
  }
  bool concurrent() const override { return concurrent_; }

 private:
  std::string name_;
  bool concurrent_;
};

std::vector<SwarmProposer::Member> members(bool second_concurrent) {
  std::vector<SwarmProposer::Member> m;
  m.push_back({{"arch", 2, "Architecture only."}, std::make_unique<Named>("llm:a", true)});
  m.push_back({{"optim", 1, ""}, std::make_unique<Named>("offline", second_concurrent)});
  return m;
}

TEST(SwarmProposer, TheProfileTheContextNamesAnswers) {
  SwarmProposer swarm(members(true));
  EXPECT_EQ(swarm.name(), "swarm(arch, optim)");
  EXPECT_EQ(swarm.profiles().size(), 2u);
  EXPECT_EQ(swarm.member_name(1), "offline");
  ProposalContext ctx;
  ctx.profile = "arch";
  ctx.focus = "Architecture only.";
  EXPECT_EQ(swarm.propose(ctx).proposal->description, "llm:a for arch: Architecture only.");
  ctx.profile = "nope";
  const ProposalResult r = swarm.propose(ctx);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind, ProposalError::Kind::kFatal);
  EXPECT_TRUE(swarm.concurrent());
  EXPECT_FALSE(SwarmProposer(members(false)).concurrent());  // one member keeps order: none runs at once
  EXPECT_FALSE(swarm.fixes_builds());
  EXPECT_THROW(SwarmProposer({}), std::invalid_argument);
}

}  // namespace
}  // namespace ard
