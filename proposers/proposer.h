// The proposer seam: what the daemon hands a proposer, and what it gets back.
//
// A proposer turns the research context (program.md, the editable files, the
// history, the last failure) into an edit of the editable files and a one-line
// description. The daemon owns everything around it: it checks the edit
// against the editable globs, applies it, commits it and runs it. Proposers:
// scripted (tests), LLM (llm_client/), offline hyperparameter mutation.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "proposers/metric_goal.h"
#include "proposers/profiles.h"
#include <vector>

namespace ard {

/// One editable file as it stands in the worktree before the edit.
struct EditableFile {
  std::string path;     ///< relative to the worktree root, '/' separated
  std::string content;  ///< the whole file
};

/// One past experiment, as the proposer sees it.
struct HistoryEntry {
  long id = 0;
  std::string commit;           ///< short hash, empty if never committed
  std::string description;
  std::optional<double> val_bpb;
  std::string status;           ///< kept, discarded, crash, timeout, build_fail, ...
  bool baseline = false;        ///< the unmodified trainer, run first
  /// A kept change's standing at the larger scales a promotion round measured
  /// it at: "scale-bound at 2x" (it helped this model, not the larger one),
  /// "transfers at 2x"; "" when never measured there.
  std::string scale;
};

/// How many experiments ended one way ("kept", "discarded", "crash", ...).
struct OutcomeCount {
  std::string status;
  int count = 0;
};

/// One experiment that changed a region, as the research memory shows it.
struct TriedRecord {
  long id = 0;
  std::string description;
  std::string status;                  ///< kept, discarded, crash, build_fail, duplicate, ...
  std::optional<double> delta_sigma;   ///< (best − its mean) / σ, positive: better; unknown without σ
  std::string lines;                   ///< the lines it changed there, "path:first-last"
};

/// A region of the editable files (a file and the function or block of
/// lines a change touched) and what was tried there.
struct TriedRegion {
  std::string region;                ///< "trainer/train.cu: train_step", "trainer/train.cu: lines 1-50"
  int tries = 0;                     ///< experiments that changed it
  std::vector<OutcomeCount> outcomes;  ///< by status, the most first
  std::vector<TriedRecord> closest;  ///< the closest to a keep first (highest Δσ, then the newest)
};

/// What was tried before, by region: the research memory.
struct TriedMemory {
  std::vector<TriedRegion> regions;  ///< the most tried first
  std::vector<OutcomeCount> totals;  ///< every experiment with a change, by status, the most first
  bool empty() const { return regions.empty() && totals.empty(); }
};

/// Why the previous attempt failed, handed back so the next one can fix it.
struct Failure {
  std::string kind;    ///< build_fail, crash, timeout, patch_rejected, ...
  std::string detail;  ///< compiler errors, log tail, or the patch error
};

struct ProposalContext {
  long experiment_id = 0;
  std::string program_md;
  std::vector<EditableFile> files;
  std::vector<HistoryEntry> history;  ///< oldest first
  /// The experiments committed and not finished yet (building, running,
  /// waiting for a decision, or taken up again after a restart), oldest
  /// first; status is their state. A proposal should not repeat them.
  std::vector<HistoryEntry> in_flight;
  /// A researcher's idea (`autoresearchd idea`) this proposal is asked to put
  /// into practice; "" when none is queued. Proposers that cannot read it
  /// (scripted, offline) ignore it.
  std::string idea;
  /// The profile this proposal is drawn for (profiles.h; "" : no profiles),
  /// and its focus, the addendum the prompt carries ("" : none).
  std::string profile;
  std::string focus;
  /// What was tried before in each region of the editable files, from the
  /// history's diffs and decisions. Proposers that cannot read it (scripted,
  /// offline) ignore it.
  TriedMemory tried;
  std::optional<double> best_val_bpb;
  /// The metric the history's val_bpb fields hold (`summary.metric`), and
  /// which way is better (`summary.goal`): the proposer's wording follows them.
  std::string metric = "val_bpb";
  MetricGoal goal = MetricGoal::kMin;
  /// The noise floor, when known: "differences below 2σ = X are noise" (the
  /// keep rule's z·σ), handed to the proposer with the history.
  std::string noise_note;
  std::optional<Failure> last_failure;
  /// Set by the daemon when it stops: a proposer blocked in I/O (an LLM call)
  /// must return soon after, with a ProposalError of kind kUnavailable. May be
  /// null (never cancelled).
  const std::atomic<bool>* cancel = nullptr;
  bool cancelled() const { return cancel && cancel->load(); }
};

/// A file's new full content. The daemon writes exactly these files.
struct FileWrite {
  std::string path;
  std::string content;
};

/// One request/response round of a proposer, recorded by the daemon.
struct ProposalAttempt {
  std::string prompt;    ///< what was asked (empty for non-LLM proposers)
  std::string response;  ///< what came back, raw
  std::string error;     ///< empty when this attempt produced the edit
};

struct Proposal {
  std::string description;          ///< one line; becomes the commit message
  std::vector<FileWrite> writes;    ///< at least one
  std::vector<ProposalAttempt> attempts;  ///< every round, the last one succeeded
};

/// An expected failure of a proposer, returned as a value.
struct ProposalError {
  enum class Kind {
    kExhausted,    ///< the scripted list is used up / nothing left to try
    kUnavailable,  ///< provider down or rate limited: wait and ask again later
    kFatal,        ///< bad key, bad model, bad config: the daemon must stop
    kBadEdit,      ///< every attempt gave an edit that does not apply
    /// A spending cap is reached ("LLM cost cap $5.00 reached"): ask no
    /// earlier than retry_at; the daemon shows "paused: <message>" meanwhile.
    kPaused,
  };
  Kind kind = Kind::kFatal;
  std::string message;  ///< one line, names the cause; never holds a secret
  std::vector<ProposalAttempt> attempts;
  /// kPaused: Unix seconds when asking again may succeed (the hour's oldest
  /// call drops out); infinity for a cost cap, which lifts only when the
  /// config changes. kUnavailable: when the provider asked to be called again
  /// (Retry-After), 0 when it did not say.
  double retry_at = 0;
};

/// Either a proposal or the reason there is none.
struct ProposalResult {
  std::optional<Proposal> proposal;
  std::optional<ProposalError> error;
  bool ok() const { return proposal.has_value(); }
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  /// A short name for logs and the database ("scripted", "llm:openai/gpt-x").
  virtual std::string name() const = 0;
  /// Proposes one edit. Must not throw for expected failures. Called on a
  /// thread of its own, never the daemon's event loop.
  virtual ProposalResult propose(const ProposalContext& context) = 0;
  /// Whether propose() may run on several threads at once (several GPUs ask
  /// ahead in parallel). A proposer that keeps order-dependent state says no.
  virtual bool concurrent() const { return false; }
  /// Whether propose() fixes a build: given last_failure (the compiler's
  /// errors) and the failed commit's files, it answers with a repair of them.
  /// Only then does the daemon ask for fixes of a broken build; a proposer
  /// that would ignore the failure would spend its next ideas on the broken
  /// files instead, and lose them as further build failures.
  virtual bool fixes_builds() const { return false; }
  /// The profiles a proposal is drawn for (the swarm's, swarm_proposer.h);
  /// empty for a proposer of one kind.
  virtual std::vector<ProfileSpec> profiles() const { return {}; }
  /// The name of the proposer that answers for profile (the experiment's proposer).
  virtual std::string proposer_of(const std::string& profile) const { return name(); }
};

}  // namespace ard
