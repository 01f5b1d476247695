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
    if (e.contains("fix")) {
      if (!e["fix"].is_boolean()) throw std::runtime_error(where + ": fix must be true or false");
      fixes_builds_ = fixes_builds_ || e["fix"].get<bool>();
    }
    if (e.contains("error")) {
      std::string k = e.value("error", "");
      if (k != "bad_edit" && k != "unavailable" && k != "fatal")
        throw std::runtime_error(where + ": error must be bad_edit, unavailable or fatal");
      continue;
    }
    if (!e.contains("description") || !e["description"].is_string())
      throw std::runtime_error(where + ": missing description");
    if (e.contains("edits")) {
      if (!e["edits"].is_array() || e["edits"].empty()) throw std::runtime_error(where + ": edits must be a non-empty array");
      for (const auto& x : e["edits"])
        if (!x.is_object() || !x.contains("path") || !x["path"].is_string() || !x.contains("find") ||
            !x["find"].is_string() || x["find"].get<std::string>().empty() || !x.contains("replace") ||
            !x["replace"].is_string())
          throw std::runtime_error(where + ": each edit needs a string path, a non-empty find and a replace");
      continue;
    }
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
  index += context.in_flight.size();  // a restart's resumed experiments were proposed before
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
  if (e.contains("edits")) {
    for (const auto& x : e["edits"]) {
      const std::string path = x["path"], find = x["find"], replace = x["replace"];
      auto file = std::find_if(context.files.begin(), context.files.end(), [&](const EditableFile& f) { return f.path == path; });
      auto write = std::find_if(p.writes.begin(), p.writes.end(), [&](const FileWrite& w) { return w.path == path; });
      if (write == p.writes.end()) {
        if (file == context.files.end()) {
          attempt.error = path + ": not an editable file the proposer was given";
          result.error = ProposalError{ProposalError::Kind::kBadEdit, attempt.error, {attempt}};
          return result;
        }
        p.writes.push_back({path, file->content});
        write = p.writes.end() - 1;
      }
      const size_t at = write->content.find(find);
      if (at == std::string::npos) {
        attempt.error = path + ": the text to replace is not in the file: " + find.substr(0, 60);
        result.error = ProposalError{ProposalError::Kind::kBadEdit, attempt.error, {attempt}};
        return result;
      }
      write->content.replace(at, find.size(), replace);
    }
  } else {
    for (const auto& w : e["writes"]) p.writes.push_back({w["path"], w["content"]});
  }
  p.attempts.push_back(attempt);
  result.proposal = std::move(p);
  return result;
}

}  // namespace ard
