// The research memory: what was tried where, and how it ended, read from the
// store's finished experiments (their diffs and decision lines) each time it
// is wanted, so it needs nothing stored of its own.
//
//   - an experiment counts when it finished with a change: a final state
//     other than `interrupted`, not the baseline, a diff not empty (proposer
//     errors, rejected edits and conflicts made no change of their own);
//   - it counts once in every region it touched (regions.h: the region keys
//     of its diff), so an experiment that touched two regions is a try in
//     each and once in the totals;
//   - its Δσ is the keep rule's Δ over σ, read back from its decision line
//     (keep_rule.h, delta_sigma): (best − mean)/σ, positive when it was
//     better; unknown for an experiment never measured or decided without σ;
//   - regions come most tried first (ties: the most recently tried first);
//     within a region, the records closest to a keep first: highest Δσ first,
//     those without one after them, newest first.
// The prompt (llm_client/prompt.h), `status` and the dashboard show it.
#pragma once

#include <string>
#include <vector>

#include "daemon/store/store.h"
#include "proposers/proposer.h"

namespace ard {

/// Every region that finished experiments of rows touched, with all of its
/// records (see the top of this file).
std::vector<TriedRegion> tally_regions(const std::vector<ExperimentRow>& rows);

/// The experiments of rows that count, by status, the most first.
std::vector<OutcomeCount> outcome_totals(const std::vector<ExperimentRow>& rows);

/// The regions `status` and the dashboard show: the most tried.
inline constexpr size_t kTopRegions = 5;

/// How many of a region's tries were kept.
int kept_count(const TriedRegion& region);

/// The memory a proposal is given: the regions of the editable files among
/// files (other paths left out), each with at most per_region records.
TriedMemory tried_memory(const std::vector<ExperimentRow>& rows, const std::vector<EditableFile>& files,
                         size_t per_region = 3);

}  // namespace ard
