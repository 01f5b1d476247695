// See swarm_proposer.h.
#include "proposers/swarm_proposer.h"

#include <set>
#include <stdexcept>

namespace ard {

SwarmProposer::SwarmProposer(std::vector<Member> members) : members_(std::move(members)) {
  if (members_.empty()) throw std::invalid_argument("SwarmProposer: no profile");
  std::set<std::string> names;
  for (const auto& m : members_) {
    if (!m.proposer || !names.insert(m.spec.name).second)
      throw std::invalid_argument("SwarmProposer: profile '" + m.spec.name + "' has no proposer or is named twice");
    specs_.push_back(m.spec);
  }
}

std::string SwarmProposer::name() const {
  std::string out = "swarm(";
  for (size_t i = 0; i < specs_.size(); ++i) out += (i ? ", " : "") + specs_[i].name;
  return out + ")";
}

ProposalResult SwarmProposer::propose(const ProposalContext& context) {
  for (auto& m : members_)
    if (m.spec.name == context.profile) return m.proposer->propose(context);
  ProposalResult r;
  r.error = ProposalError{ProposalError::Kind::kFatal, "no proposer profile '" + context.profile + "'", {}, 0};
  return r;
}

std::string SwarmProposer::proposer_of(const std::string& profile) const {
  for (const auto& m : members_)
    if (m.spec.name == profile) return m.proposer->name();
  return name();
}

bool SwarmProposer::concurrent() const {
  for (const auto& m : members_)
    if (!m.proposer->concurrent()) return false;
  return true;
}

bool SwarmProposer::fixes_builds() const {
  for (const auto& m : members_)
    if (!m.proposer->fixes_builds()) return false;
  return true;
}

}  // namespace ard
