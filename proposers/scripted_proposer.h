// The scripted proposer: replays edits from a JSON file, for tests and demos.
//
//   [ {"description": "raise the lr", "writes": [{"path": "trainer/train.cu", "content": "..."}]},
//     {"error": "bad_edit", "message": "the model gave no edit"},
//     {"description": "slot 7", "edits": [{"path": "trainer/train.cu", "find": "a", "replace": "b"}]},
//     ... ]
//
// "edits" change the files the proposer is given (the best of the moment):
// the first occurrence of each "find" is replaced, so edits made one after
// another add up the way an LLM's search/replace edits do. A "find" that is
// not in its file answers bad_edit.
// Entries are used in order: the next one after the last used, and never one
// before the number of non-baseline experiments already in the history, so a
// restarted daemon goes on where it stopped. An "unavailable" entry is not
// used up: it answers every call until the script is changed (an outage).
// "error" is one of bad_edit, unavailable, fatal. An entry with "fix": true is
// written as the repair of a broken build; a script with one such entry says
// that this proposer fixes builds (fixes_builds), so the daemon asks it for
// fixes of a broken build, which take the next entries in order as any
// proposal does. A script without one is never asked for a fix.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "proposers/proposer.h"

namespace ard {

class ScriptedProposer : public Proposer {
 public:
  /// Reads and checks the whole script; throws std::runtime_error naming the entry.
  explicit ScriptedProposer(const std::filesystem::path& script);
  std::string name() const override { return "scripted"; }
  ProposalResult propose(const ProposalContext& context) override;
  bool fixes_builds() const override { return fixes_builds_; }

 private:
  nlohmann::json entries_;
  bool fixes_builds_ = false;  ///< an entry has "fix": true
  size_t next_ = 0;  ///< the entry after the last one handed out
};

}  // namespace ard
