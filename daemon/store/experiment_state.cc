// See experiment_state.h.
#include "daemon/store/experiment_state.h"

namespace ard {

const std::vector<ExperimentState>& all_experiment_states() {
  static const std::vector<ExperimentState> all = [] {
    std::vector<ExperimentState> v;
    for (int s = static_cast<int>(ExperimentState::kProposing); s <= static_cast<int>(ExperimentState::kDuplicate);
         ++s)
      v.push_back(static_cast<ExperimentState>(s));
    return v;
  }();
  return all;
}

std::optional<ExperimentState> parse_experiment_state(std::string_view word) {
  for (ExperimentState s : all_experiment_states())
    if (word == to_string(s)) return s;
  return std::nullopt;
}

bool is_final_state(std::string_view word) {
  auto s = parse_experiment_state(word);
  return s && is_final(*s);
}

}  // namespace ard
