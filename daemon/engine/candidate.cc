// See candidate.h.
#include "daemon/engine/candidate.h"

#include "daemon/util/text.h"

namespace ard {

std::vector<HistoryEntry> in_flight_history(const std::map<int64_t, Candidate>& candidates) {
  std::vector<HistoryEntry> in_flight;
  for (const auto& [key, c] : candidates)
    if (!c.repeat && !c.baseline)
      in_flight.push_back({.id = c.experiment, .commit = short_commit(c.commit), .description = c.description,
                           .status = c.phase == CandidatePhase::kMeasured   ? "measured"
                                     : c.phase == CandidatePhase::kTraining ? "running"
                                                                            : "committed"});
  return in_flight;
}

std::vector<std::string> running_work(const std::map<int64_t, Candidate>& candidates,
                                      const std::vector<StageConfig>& stages, bool jobs) {
  std::vector<std::string> work;
  for (const auto& [key, c] : candidates)
    if (c.running && (c.phase == CandidatePhase::kBuilding || !jobs))
      work.push_back("#" + std::to_string(c.experiment) + "'s " +
                     (c.phase == CandidatePhase::kBuilding ? std::string("build") : "stage " + stages[c.stage].name));
  return work;
}

std::vector<int64_t> build_order(const std::map<int64_t, Candidate>& candidates) {
  std::vector<int64_t> order;
  for (bool repeats : {true, false})
    for (const auto& [key, c] : candidates)
      if (c.phase == CandidatePhase::kCommitted && (c.repeat > 0) == repeats) order.push_back(key);
  return order;
}

int64_t next_to_train(const std::map<int64_t, Candidate>& candidates, const std::string& gpu, bool round_holds,
                      bool rungs_here) {
  bool awaited = false;  // a pinned run is being built for gpu, or waits for it
  for (const auto& [key, c] : candidates)
    awaited = awaited || (c.pin_gpu == gpu && !gpu.empty() &&
                          (c.phase == CandidatePhase::kBuilding || c.phase == CandidatePhase::kBuilt));
  for (bool repeats : {true, false})
    for (const auto& [key, c] : candidates) {
      if ((c.repeat > 0) != repeats || c.phase != CandidatePhase::kBuilt) continue;
      if (c.rung > 0 && !rungs_here) continue;
      if (round_holds && !c.repeat && !c.baseline) continue;  // a round measures the best first
      if (c.pin_gpu.empty() ? !awaited : c.pin_gpu == gpu) return key;
    }
  return 0;
}

std::vector<int64_t> keys_of(const std::map<int64_t, Candidate>& candidates) {
  std::vector<int64_t> keys;
  for (const auto& [key, c] : candidates) keys.push_back(key);
  return keys;
}

}  // namespace ard
