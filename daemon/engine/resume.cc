// See resume.h.
#include "daemon/engine/resume.h"

#include <map>

#include "daemon/store/experiment_state.h"

namespace ard {

ResumePlan plan_resumes(const std::vector<ExperimentRow>& rows, const std::vector<TrialRow>& trials, double since) {
  std::map<int64_t, const ExperimentRow*> by_id;
  for (const auto& r : rows) by_id[r.id] = &r;
  ResumePlan plan;
  for (const auto& r : rows) {
    if (r.state != to_string(ExperimentState::kInterrupted) || r.is_baseline || r.commit.empty()) continue;
    if (r.ended_at && *r.ended_at < since) continue;
    if (r.resumes >= kMaxResumes) {
      plan.left.push_back("#" + std::to_string(r.id) + " was interrupted " + std::to_string(r.resumes + 1) +
                          " times: it stays interrupted (an experiment runs again at most " +
                          std::to_string(kMaxResumes) + " times)");
      continue;
    }
    Resume resume;
    resume.id = r.id;
    resume.why = r.error;
    // A fix of a fix of ...: its depth, so that the limit on fix attempts still holds.
    for (auto of = r.fix_of; of; ++resume.fix_round) {
      auto parent = by_id.find(*of);
      of = parent == by_id.end() ? std::nullopt : parent->second->fix_of;
      if (resume.fix_round > static_cast<int>(rows.size())) break;  // a cycle cannot be, but never loops
    }
    for (const auto& t : trials)
      if (t.experiment_id == r.id && t.commit == r.commit && t.status == "ok" && t.val_bpb) {
        ++resume.runs;
        resume.last_value = t.val_bpb;
      }
    plan.resume.push_back(std::move(resume));
  }
  return plan;
}

}  // namespace ard
