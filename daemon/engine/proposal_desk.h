// Proposals, as values the engine applies: what the proposer is told (its
// history, the noise note; what was tried where is decide/memory.h's), its thread and the mailbox that brings its answer
// back to the loop, what a proposer's error asks of the engine (a wait or a
// pause), and a proposal checked and committed (or rejected, or held by a
// fault of the machine).
//
// Nothing here schedules: which experiment row is asked, when, and what
// happens to its candidate is the engine's.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/duplicates.h"
#include "daemon/decide/memory.h"  // tried_memory: what was tried where, for ProposalContext::tried
#include "daemon/decide/noise.h"
#include "daemon/exec/environment_fault.h"
#include "daemon/git_repo.h"
#include "daemon/store/store.h"
#include "proposers/editable.h"
#include "proposers/proposer.h"

namespace ard {

/// The LLM client's call records, written by the loop: a proposal thread
/// posts each record to the io_context instead of touching the store.
class LoopCallSink : public llm::CallSink {
 public:
  LoopCallSink(boost::asio::io_context& io, Store& store) : io_(io), store_(store) {}
  void record(const llm::CallRecord& call) override;
  void call_started(const llm::CallRecord& call) override;
  /// Read once, when the proposer is built, before the loop runs.
  llm::Spend spend(const std::string& tag) override { return store_.spend(tag); }
  /// Read once, when the proposer is built, before the loop runs.
  std::optional<long> learnt_limit(const std::string& provider) override { return store_.learnt_limit(provider); }
  void learn_limit(const std::string& provider, long tokens, const std::string& reason) override;

 private:
  boost::asio::io_context& io_;
  Store& store_;
};

/// Where proposal and data threads post their results to the loop. The engine
/// closes it when it is destroyed, so a thread that outlives the engine (a
/// proposer that ignored the stop) posts nothing.
class Mailbox {
 public:
  explicit Mailbox(boost::asio::io_context& io) : io_(&io) {}
  /// Runs f on the loop, unless the mailbox is closed. Any thread.
  template <typename F>
  void post(F&& f) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (io_) boost::asio::post(*io_, std::forward<F>(f));
  }
  /// Nothing is posted from now on; returns once no post is under way.
  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    io_ = nullptr;
  }

 private:
  std::mutex mutex_;
  boost::asio::io_context* io_;
};

/// The longest wait before asking a proposer again that the proposer asked
/// for (a provider's Retry-After, a call cap's lifting): one hour.
constexpr double kMaxAskWaitS = 3600;

/// Seconds before asking an unavailable or paused proposer again at `now`:
/// retry_wait_s, or until retry_at (Unix seconds) when that is later, at most
/// kMaxAskWaitS (or retry_wait_s, when that is longer). An infinite retry_at
/// (a cost cap, which lifts only when the config changes) waits retry_wait_s.
double ask_again_after(double retry_wait_s, double retry_at, double now);

/// A proposal's description as the store and the log keep it: its first line,
/// trimmed, at most 200 characters, "(no description)" when empty.
std::string description_line(const std::string& text);

/// The history a proposer is given: every finished experiment of `rows`, in
/// their order, its description as status shows it (a proposer error says so);
/// a kept change's labels (the tag's current_change_labels) at the rungs named
/// by rung_names (index: the rung) as HistoryEntry::scale.
std::vector<HistoryEntry> proposal_history(const std::vector<ExperimentRow>& rows,
                                           const std::vector<ChangeLabelRow>& labels = {},
                                           const std::vector<std::string>& rung_names = {});

/// The earlier change of the tag that experiment id's diff repeats
/// (duplicates.h, find_duplicate at threshold): rows are the tag's
/// experiments, finished or in flight; the baseline, rows without a diff and
/// the failed changes that id's fix chain repairs (fix_of, fix_of of that, ...)
/// are not compared.
std::optional<DuplicateOf> duplicate_among(const std::vector<ExperimentRow>& rows, int64_t id,
                                           const std::string& diff, double threshold);

/// The proposer's noise note: "Differences below zσ = X are noise (σ = S, ...)."
std::string noise_note(double z, const NoiseEstimate& noise);

/// What the next proposal is told of an experiment that ended with
/// final_status (ProposalContext::last_failure): nothing of a discarded or an
/// interrupted one; else failure_detail, or where that is empty the error and
/// the log's tail, with what looks like a secret redacted (it goes to the LLM
/// provider).
std::optional<Failure> failure_to_tell(const std::string& final_status, const std::string& error,
                                       const std::string& log_tail, const std::string& failure_detail);

/// Asks proposer for ctx on a thread of its own and posts the result through
/// box, to done on the loop. ctx.cancel is set to *cancel; *inside counts the
/// threads inside propose() (a proposer that ignores the stop stays counted);
/// a proposer that throws answers a fatal ProposalError "proposer failed: ...".
void propose_on_thread(Proposer& proposer, ProposalContext ctx, std::shared_ptr<std::atomic<bool>> cancel,
                       std::shared_ptr<std::atomic<int>> inside, std::shared_ptr<Mailbox> box,
                       std::function<void(ProposalResult)> done);

/// Stores result's attempts under row id, after those the row has, then
/// clears them from result: a proposal handled again (after a fault of the
/// machine held its commit) records them once.
void record_attempts(Store& store, int64_t id, ProposalResult& result);

/// What a proposer's error of kind exhausted, unavailable or paused asks of
/// the engine: wait, then ask again.
struct ProposerWait {
  /// "nothing to propose: <why>", "proposer unavailable: <why>", or for a cap
  /// "paused: <why>" with when it lifts (" (lifts at 14:05:00)", " (lifts when
  /// the config changes)").
  std::string message;
  bool pauses = false;   ///< a cap (kPaused): status shows message while it lasts
  double wait_s = 0;     ///< seconds before the next ask (ask_again_after)
  std::string log_line;  ///< message and when the proposer is asked again
};

/// The wait e asks for at `now`; nullopt for kFatal (the daemon stops) and
/// kBadEdit (the experiment is a proposer_error and the next is asked).
std::optional<ProposerWait> proposer_wait(const ProposalError& e, double retry_wait_s, double now);

/// A proposal committed, or why it was not.
struct ProposalCommit {
  std::string commit;                     ///< the new commit; empty when rejected or held
  std::string rejected;                   ///< why the edit is a patch_rejected; empty otherwise
  std::optional<EnvironmentFault> fault;  ///< the machine's fault that held it: committed again once it clears
};

/// Checks each of writes against editable (none at all is rejected too), then
/// commits base (a fix's files as the failed commit had them) and writes onto
/// parent under ref, with message description (GitRepo::commit_writes; the
/// branch does not move). A git error is a fault of the machine where a probe
/// write into objects_dir fails, else a rejected edit; an edit that changes
/// nothing is rejected.
ProposalCommit commit_proposal(GitRepo& repo, const EditablePaths& editable, const std::string& parent,
                               const std::vector<EditableFile>& base, const std::vector<FileWrite>& writes,
                               const std::string& description, const std::string& ref,
                               const std::filesystem::path& objects_dir);

/// Why a researcher's commit, made on parent, cannot be tried as a proposal
/// (`autoresearchd try`): it has no parent, changes nothing, or touches a
/// path the daemon may not edit (the first few named). "" when it can.
std::string try_refusal(GitRepo& repo, const EditablePaths& editable, const std::string& commit,
                        const std::string& parent);

/// A researcher's commit taken as a proposal: checked (try_refusal: a
/// rejected edit), then ref pointed at it; a git error there is a fault of the
/// machine where a probe write into objects_dir fails, else a rejected edit.
ProposalCommit commit_try(GitRepo& repo, const EditablePaths& editable, const std::string& commit,
                          const std::string& parent, const std::string& ref, const std::filesystem::path& objects_dir);

}  // namespace ard
