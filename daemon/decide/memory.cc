// See memory.h.
#include "daemon/decide/memory.h"

#include <algorithm>
#include <map>

#include "daemon/decide/keep_rule.h"
#include "daemon/decide/regions.h"

namespace ard {
namespace {

bool counts(const ExperimentRow& r) {
  return is_final_state(r.state) && r.state != status::kInterrupted && !r.is_baseline && !r.diff.empty();
}

/// Ties among counts: kept first, then the measured, then the failures.
int status_rank(const std::string& s) {
  static const char* const order[] = {status::kKept,      status::kDiscarded, status::kCrash,    status::kTimeout,
                                      status::kBuildFail, status::kDuplicate, status::kConflict, status::kTampered};
  for (size_t i = 0; i < std::size(order); ++i)
    if (s == order[i]) return static_cast<int>(i);
  return static_cast<int>(std::size(order));
}

std::vector<OutcomeCount> sorted_counts(const std::map<std::string, int>& by_status) {
  std::vector<OutcomeCount> out;
  for (const auto& [s, n] : by_status) out.push_back({s, n});
  std::stable_sort(out.begin(), out.end(), [](const OutcomeCount& a, const OutcomeCount& b) {
    if (a.count != b.count) return a.count > b.count;
    return status_rank(a.status) < status_rank(b.status);
  });
  return out;
}

}  // namespace

std::vector<TriedRegion> tally_regions(const std::vector<ExperimentRow>& rows) {
  struct Tally {
    TriedRegion region;
    std::map<std::string, int> by_status;
    int64_t newest = 0;
  };
  std::map<std::string, Tally> tallies;
  for (const auto& r : rows) {
    if (!counts(r)) continue;
    const std::vector<DiffRegion> regions = diff_regions(r.diff);
    const std::optional<double> ds = delta_sigma(r.decision);
    for (const std::string& key : region_keys(regions)) {
      Tally& t = tallies[key];
      t.region.region = key;
      ++t.region.tries;
      ++t.by_status[r.state];
      t.newest = std::max(t.newest, r.id);
      std::string lines;
      for (const auto& dr : regions)
        if (dr.key == key) lines += (lines.empty() ? "" : ", ") + region_text(dr);
      t.region.closest.push_back({static_cast<long>(r.id), display_description(r), r.state, ds, lines});
    }
  }
  std::vector<std::pair<int64_t, TriedRegion>> out;
  for (auto& [key, t] : tallies) {
    t.region.outcomes = sorted_counts(t.by_status);
    auto& recs = t.region.closest;
    std::stable_sort(recs.begin(), recs.end(), [](const TriedRecord& a, const TriedRecord& b) {
      if (a.delta_sigma.has_value() != b.delta_sigma.has_value()) return a.delta_sigma.has_value();
      if (a.delta_sigma && *a.delta_sigma != *b.delta_sigma) return *a.delta_sigma > *b.delta_sigma;
      return a.id > b.id;
    });
    out.emplace_back(t.newest, std::move(t.region));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    if (a.second.tries != b.second.tries) return a.second.tries > b.second.tries;
    return a.first > b.first;
  });
  std::vector<TriedRegion> regions;
  for (auto& [newest, region] : out) regions.push_back(std::move(region));
  return regions;
}

std::vector<OutcomeCount> outcome_totals(const std::vector<ExperimentRow>& rows) {
  std::map<std::string, int> by_status;
  for (const auto& r : rows)
    if (counts(r)) ++by_status[r.state];
  return sorted_counts(by_status);
}

int kept_count(const TriedRegion& region) {
  for (const auto& o : region.outcomes)
    if (o.status == status::kKept) return o.count;
  return 0;
}

TriedMemory tried_memory(const std::vector<ExperimentRow>& rows, const std::vector<EditableFile>& files,
                         size_t per_region) {
  TriedMemory m;
  m.totals = outcome_totals(rows);
  for (TriedRegion& region : tally_regions(rows)) {
    // The key begins with the file's path: "path: name", "path (new file)", "path".
    const bool editable = std::any_of(files.begin(), files.end(), [&](const EditableFile& f) {
      const std::string& k = region.region;
      return k.rfind(f.path, 0) == 0 && (k.size() == f.path.size() || k[f.path.size()] == ':' || k[f.path.size()] == ' ');
    });
    if (!editable) continue;
    if (region.closest.size() > per_region) region.closest.resize(per_region);
    m.regions.push_back(std::move(region));
  }
  return m;
}

}  // namespace ard
