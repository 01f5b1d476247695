// See scripted_proposer.h.
#include "proposers/scripted_proposer.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace ard {

ScriptedProposer::ScriptedProposer(const std::filesystem::path& script) {
  std::ifstream in(script);
  if (!in) throw std::runtime_error(script.string() + ": cannot read the proposer script");
  try {
    entries_ = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(script.string() + ": " + e.what());
  }
  if (!entries_.is_array()) throw std::runtime_error(script.string() + ": expected a JSON array");
  for (size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    std::string where = script.string() + ": entry " + std::to_string(i + 1);
    if (!e.is_object()) throw std::runtime_error(where + ": expected an object");
    if (e.contains("error")) {
      std::string k = e.value("error", "");
      if (k != "bad_edit" && k != "unavailable" && k != "fatal")
        throw std::runtime_error(where + ": error must be bad_edit, unavailable or fatal");
      continue;
    }
    if (!e.contains("description") || !e["description"].is_string())
      throw std::runtime_error(where + ": missing description");
    if (!e.contains("writes") || !e["writes"].is_array() || e["writes"].empty())
      throw std::runtime_error(where + ": missing writes");
    for (const auto& w : e["writes"])
      if (!w.is_object() || !w.contains("path") || !w["path"].is_string() || !w.contains("content") ||
          !w["content"].is_string())
        throw std::runtime_error(where + ": each write needs a string path and content");
  }
}

ProposalResult ScriptedProposer::propose(const ProposalContext& context) {
  size_t index = 0;
  for (const auto& h : context.history)
    if (!h.baseline) ++index;
  index = std::max(index, next_);
  ProposalResult result;
  if (index >= entries_.size()) {
    result.error = ProposalError{ProposalError::Kind::kExhausted, "the script has no more edits", {}};
    return result;
  }
  const auto& e = entries_[index];
  ProposalAttempt attempt{"", e.dump(), ""};
  if (e.contains("error")) {
    std::string k = e["error"];
    attempt.error = e.value("message", k);
    auto kind = k == "bad_edit"      ? ProposalError::Kind::kBadEdit
                : k == "unavailable" ? ProposalError::Kind::kUnavailable
                                     : ProposalError::Kind::kFatal;
    result.error = ProposalError{kind, attempt.error, {attempt}};
    if (kind != ProposalError::Kind::kUnavailable) next_ = index + 1;
    return result;
  }
  next_ = index + 1;
  Proposal p;
  p.description = e["description"];
  for (const auto& w : e["writes"]) p.writes.push_back({w["path"], w["content"]});
  p.attempts.push_back(attempt);
  result.proposal = std::move(p);
  return result;
}

}  // namespace ard
