// See evaluated_reconcile.h.
#include "daemon/evaluated_reconcile.h"

#include <sstream>

namespace ard {

bool is_improvement(double value, std::optional<double> best, double min_improvement) {
  return !best || (value < *best && *best - value >= min_improvement);
}

std::vector<EvaluatedDecision> finish_evaluated(Store& store, const std::string& tag, double min_improvement) {
  std::vector<EvaluatedDecision> out;
  auto best_row = store.best(tag);
  std::optional<double> best = best_row ? best_row->val_bpb : std::nullopt;
  for (const auto& r : store.experiments(tag)) {
    if (r.state != "evaluated" || !r.val_bpb || r.commit.empty()) continue;
    EvaluatedDecision d{r.id, is_improvement(*r.val_bpb, best, min_improvement), r.commit, *r.val_bpb, best};
    std::ostringstream what;
    what << "val_bpb " << *r.val_bpb;
    if (best) what << " vs best " << *best;
    if (d.kept) {
      store.finish(r.id, status::kKept, "", r.log_tail);
      best = r.val_bpb;
    } else {
      store.finish(r.id, status::kDiscarded, what.str() + " is no improvement (decided at restart)", r.log_tail);
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace ard
