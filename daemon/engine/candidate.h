// A candidate: what the engine schedules, one run at a time. It is an
// experiment in flight (proposed, or taken up again after a restart), the
// baseline, or a repeat run of the best (a noise round's, or the incumbent's
// re-run after a keep). Its fields are the engine's bookkeeping; the store
// holds what outlives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/engine/run_record.h"
#include "proposers/proposer.h"

namespace ard {

/// Where a candidate is: the table at the top of engine.h says which moves
/// exist. kMeasured: measured, its decision deferred (judge.h) until what it
/// waits for is there.
enum class CandidatePhase { kCommitted, kBuilding, kBuilt, kTraining, kMeasured };
/// An experiment in flight, or a repeat run of the best. Each is one run at a
/// time (a build, or its stages), and its trials are rows of `experiment`.
struct Candidate {
  int64_t key = 0;         ///< its key in candidates_: the engine's count, in order of creation
  int64_t experiment = 0;  ///< its row in the store; a repeat's is the best's
  /// 0: the experiment's own candidate. n > 0: the best's n-th repeat run (a
  /// noise round's or the incumbent's re-run), which adds a trial to the
  /// best's row and writes nothing else of it.
  int repeat = 0;
  bool baseline = false;
  CandidatePhase phase = CandidatePhase::kCommitted;
  std::string parent;  ///< the best it was made against
  std::string commit;
  std::string description;
  int fix_round = 0;   ///< which fix of a build failure it is (0: none)
  int reapplies = 0;   ///< how often its change was re-applied onto a newer best
  int slot = -1;       ///< the worktree slot it is built and trained in
  int fault_reruns = 0;  ///< runs again after a fault of the machine (the engine's limit at most)
  /// The build directory as the build left it (stat_listing); a stage that
  /// changed it is tampered. Unset before the local build.
  std::optional<std::string> build_listing;
  int worker = -1;     ///< the worker training it
  size_t stage = 0;    ///< the stage running now
  int64_t trial = 0;
  bool running = false;  ///< the executor runs its build or its stages (its end is still to come)
  // Decisions that hold (docs/daemon.md, "The keep rule").
  std::string purpose;      ///< the trial's purpose (run_evidence.h)
  std::string pin_gpu;      ///< set: it trains on this GPU only
  std::string run_gpu;      ///< the GPU of the run in progress
  bool in_round = false;    ///< one of a noise round's runs
  int rung = 0;             ///< a promotion round's run at this rung (config.rungs; a repeat of its commit); 0: as configured
  int confirmations = 0;    ///< runs of the candidate after its first (on this commit)
  std::optional<RunRecord> record;  ///< the store's record of its run in progress (or last run)
};

/// The experiments among candidates as the next proposal is told of them
/// (neither the baseline nor a repeat run): committed, running or measured.
std::vector<HistoryEntry> in_flight_history(const std::map<int64_t, Candidate>& candidates);

/// What runs among candidates, as a stop names what it waits for: "#7's
/// build", "#8's stage train" (Candidate::stage indexes stages). jobs: the
/// stages run as Slurm jobs, waited for as one, so only builds are named.
std::vector<std::string> running_work(const std::map<int64_t, Candidate>& candidates,
                                      const std::vector<StageConfig>& stages, bool jobs);

/// The candidates' keys, oldest first: a loop that may erase some goes over these.
std::vector<int64_t> keys_of(const std::map<int64_t, Candidate>& candidates);

/// The committed candidates, in the order their builds start: repeat runs
/// first, then in order of creation.
std::vector<int64_t> build_order(const std::map<int64_t, Candidate>& candidates);

/// The key of the built candidate that a free worker on gpu trains next, 0 for
/// none. Repeat runs first, then in order of creation; a pinned run trains on
/// its GPU only; while a round holds (round_holds) only repeats and the
/// baseline train. A GPU that a pinned run (the baseline, a round's run, a
/// confirmation) is being built for or waits for is kept for it: were a
/// candidate built sooner to take it, the pinned run would wait behind it
/// while another GPU idles. rungs_here false: a promotion run (rung > 0)
/// does not train on gpu (promote.gpus reserves other workers for them).
int64_t next_to_train(const std::map<int64_t, Candidate>& candidates, const std::string& gpu, bool round_holds,
                      bool rungs_here = true);

}  // namespace ard
