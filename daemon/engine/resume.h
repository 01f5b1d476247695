// Nothing in flight is dropped by a stop: which interrupted experiments the
// next start takes up again, and where each one resumes.
//
// A stop (or a killed daemon's reconcile) finishes the experiments in flight
// as `interrupted`. At the next start, those of the last session that had a
// commit run again from it:
//
//   runs on its commit   resumes as
//   none                 a candidate to build and run, as if just committed
//   n >= 1 (ok)          a measured candidate: the judge (judge.h) rules on
//                        its n runs again, so a confirmation in flight is
//                        asked for again and a decision that waited still comes
//
// Not resumed: baselines (the start measures its own), rows without a commit
// (stopped while proposing: the proposer is asked anew), rows interrupted in
// an earlier session (the user has started since), and a row resumed
// kMaxResumes times already: a candidate that takes the daemon down with it
// (out of memory, say) is not run for ever.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/store/store.h"

namespace ard {

/// How often one experiment is taken up again after an interruption.
constexpr int kMaxResumes = 2;

/// One interrupted experiment that runs again.
struct Resume {
  int64_t id = 0;
  int fix_round = 0;  ///< how deep in a chain of build fixes it is (0: not a fix)
  int runs = 0;       ///< its finished runs on its commit (trials with status ok)
  std::optional<double> last_value;  ///< the metric of the last of them
  std::string why;    ///< the interruption, as its error said it
};

/// What plan_resumes decided: the rows that run again, oldest first, and a
/// line for each interrupted row of the session it leaves as it is.
struct ResumePlan {
  std::vector<Resume> resume;
  std::vector<std::string> left;  ///< e.g. "#7 was interrupted 3 times: it stays interrupted"
};

/// rows: one tag's experiments (oldest first); trials: that tag's runs;
/// since: when the session that was stopped or killed began (rows that ended
/// before it were interrupted earlier, and stay so).
ResumePlan plan_resumes(const std::vector<ExperimentRow>& rows, const std::vector<TrialRow>& trials, double since);

}  // namespace ard
