// The swarm as one Proposer: several proposers, one per profile
// (profiles.h). The daemon draws a profile for each proposal on its loop and
// names it in the context (ProposalContext::profile, with its focus); that
// profile's proposer answers. Every profile sees the same history and memory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "proposers/profiles.h"
#include "proposers/proposer.h"

namespace ard {

class SwarmProposer : public Proposer {
 public:
  struct Member {
    ProfileSpec spec;
    std::unique_ptr<Proposer> proposer;
  };
  /// members: at least one, with unique names.
  explicit SwarmProposer(std::vector<Member> members);

  /// "swarm(arch, optim)".
  std::string name() const override;
  /// The proposal of the member context.profile names; a name no member has is a fatal error.
  ProposalResult propose(const ProposalContext& context) override;
  /// Every member may run on several threads at once.
  bool concurrent() const override;
  /// Every member fixes builds (a fix is asked of whichever profile is drawn).
  bool fixes_builds() const override;

  std::vector<ProfileSpec> profiles() const override { return specs_; }
  /// The name of member i's own proposer ("llm:openai/gpt-x", "offline"), for the experiment's row.
  std::string member_name(size_t i) const { return members_.at(i).proposer->name(); }
  std::string proposer_of(const std::string& profile) const override;

 private:
  std::vector<Member> members_;
  std::vector<ProfileSpec> specs_;
};

}  // namespace ard
