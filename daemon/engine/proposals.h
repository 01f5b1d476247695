// The proposal side of the loop, as an executor is the run side: which
// experiment row is asked next (a build fix owed, then a researcher's commit
// to try, then a row whose proposer asked for a wait, else a new row), its
// proposer thread (a try needs none), and its answer
// turned into one ProposalOutcome the engine applies: a commit to build, an
// experiment that ended before any build, a wait, or a fault of the machine
// that holds the commit until it clears.
//
// It writes the experiment rows it asks for and the objects of their commits
// (never a branch), and how each experiment ended, which is what the next
// proposal is told and what the circuit breaker counts. It knows nothing of
// candidates, GPUs or the judge. When to ask, and what an outcome does, is the
// engine's.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/decide/circuit_breaker.h"
#include "daemon/engine/proposal_desk.h"
#include "daemon/git_repo.h"
#include "daemon/log.h"
#include "daemon/store/store.h"
#include "proposers/editable.h"
#include "proposers/proposer.h"

namespace ard {

/// A build failure the next proposal is asked to fix.
struct FixOwed {
  int64_t of = 0;                   ///< the experiment whose build failed
  int round = 0;                    ///< which fix of it this is (1, 2, ...)
  std::vector<EditableFile> files;  ///< the editable files as the failed commit had them
};

/// What the engine knows that a proposal is told (ProposalContext).
struct AskContext {
  std::string program;                  ///< program.md as read for this round (recorded and sent as is)
  std::string parent;                   ///< the best of now: the commit the proposal edits
  std::vector<HistoryEntry> in_flight;  ///< the candidates committed and not yet ended
  std::optional<double> best_value;
  std::string noise_note;                ///< "" until σ is known
};

/// One answer, for the engine to apply.
struct ProposalOutcome {
  enum class Kind {
    kCommitted,  ///< commit, made on parent: a candidate to build
    kEnded,      ///< the experiment ended before any build, as final_status (patch_rejected, duplicate,
                 ///< proposer_error for a bad edit): its row is finished and logged here
    kWaiting,    ///< the proposer asked for a wait: its row (or its fix) is asked again later, and
                 ///< asking is blocked for the wait
    kHeld,       ///< the commit met `fault`: handled again by replay_held once it clears
    kFatal,      ///< the proposer cannot go on (error); its row is finished
    kStopped,    ///< answered after cancel(): nothing applied (end_rows_at_stop ends the row)
  };
  Kind kind = Kind::kCommitted;
  int64_t experiment = 0;
  std::string parent;
  std::string commit;
  std::string description;
  int fix_round = 0;  ///< 0: no fix; else which fix of fix_of it is
  int64_t fix_of = 0;
  std::string final_status;    ///< kEnded
  std::string error;           ///< kEnded, kFatal: one line
  std::string failure_detail;  ///< kEnded: what the next proposal is told, when not the error
  std::optional<ProposerWait> wait;
  std::optional<EnvironmentFault> fault;
};

/// Stores a program.md version; returns its hash.
std::string record_program(Store& store, const std::string& content);

class Proposals {
 public:
  using OnOutcome = std::function<void(const ProposalOutcome&)>;
  /// on_outcome runs on the loop, once per answer (and once per replayed held
  /// answer); on_unblocked when a block's wait is over.
  Proposals(boost::asio::io_context& io, const Config& config, Store& store, Proposer& proposer, Log& log,
            OnOutcome on_outcome, std::function<void()> on_unblocked);
  /// Closes the mailbox: a thread that outlives this (a proposer that ignored the stop) posts nothing.
  ~Proposals();

  /// The checkout, once the engine has opened it; before any ask.
  void open(GitRepo& repo) { repo_ = &repo; }

  /// Asks for one proposal on a thread of its own, for the next row: the
  /// oldest fix owed (its failed commit's files, linked by fix_of), else the
  /// oldest try not taken (`autoresearchd try`: a new row whose proposer is
  /// "user", made on the try's parent; no proposer is called), else the
  /// oldest row asked again, else a new row. Returns the row's id.
  int64_t ask(const AskContext& context);
  /// Rows asked whose answer is not applied yet (asked, or held by a fault).
  size_t pending() const { return rows_.size(); }
  /// Proposer threads whose answer is awaited (given_up: none).
  int running() const { return running_; }
  /// Threads still inside a proposer (one that ignores the stop stays counted).
  int threads_inside() const { return inside_->load(); }

  void owe_fix(FixOwed fix) { fixes_.push_back(std::move(fix)); }

  /// Experiment id ended as final_status (experiment_state.h): its row
  /// finished, the breaker told, and what the next proposal is told of it
  /// (failure_to_tell; a keep: nothing any more) remembered.
  void record_end(int64_t id, const std::string& final_status, const std::string& error, const std::string& log_tail,
                  const std::string& failure_detail);
  /// The breaker's pause in force: experiments that keep failing the same way cost no more calls.
  std::optional<BreakerPause> breaker_pause() const { return breaker_.paused(); }
  std::string breaker_line() const { return breaker_.status_line(); }

  /// No ask for the next wait_s seconds (a proposer's wait, a pause); a block
  /// under way is left as it is.
  void block(double wait_s);
  bool blocked() const { return blocked_; }

  /// Tells the threads to stop; answers from now on come back as kStopped.
  void cancel();  ///< also ends a block's wait
  /// At the stop's deadline: the answers still awaited are not waited for.
  void give_up() { running_ = 0; }
  /// After a handler was cut short by a fault of the machine: rows neither
  /// awaited nor held are asked again.
  void recover();
  /// Handles again every answer a fault held (a fault may hold it again).
  void replay_held();
  /// At stop, every row not ended (asked, held, or to be asked again): removed
  /// when it has no proposal and no LLM call, else interrupted.
  void end_rows_at_stop();

 private:
  struct Row {
    std::optional<FixOwed> fix;
    std::string profile;  ///< the proposer profile drawn for it ("" : no profiles)
    std::optional<TryRow> attempt;  ///< a researcher's commit, taken as this row's proposal
    std::string parent;
    bool running = false;  ///< its thread's answer is awaited
    bool held = false;     ///< its answer waits for a fault of the machine to clear
    ProposalResult result;
  };
  void answered(int64_t id, ProposalResult result);
  /// What every answer does here before the engine applies it: a wait blocks
  /// asking (its line logged when it says something new); an experiment that
  /// ended is recorded (record_end) and logged.
  void deliver(const ProposalOutcome& o);
  /// Applies row id's answer; the row is erased unless its commit is held.
  ProposalOutcome handle(int64_t id);
  /// The researcher's idea row id is asked to try: the one it is linked to, else the oldest open one (linked now).
  std::string idea_for(int64_t id);
  /// Deletes a row with no proposal and no LLM call (Store::delete_if_empty), logged with when.
  bool drop_empty_row(int64_t id, const std::string& when);
  /// The next profile (its index in profiles_); with profiles.adapt, drawn by the
  /// shares the records so far give (adapted_shares).
  size_t draw_profile();

  const Config& config_;
  Store& store_;
  Proposer& proposer_;
  Log& log_;
  OnOutcome on_outcome_;
  std::function<void()> on_unblocked_;
  boost::asio::steady_timer block_timer_;
  bool blocked_ = false;
  EditablePaths editable_;
  GitRepo* repo_ = nullptr;
  std::map<int64_t, Row> rows_;
  std::deque<FixOwed> fixes_;
  std::vector<int64_t> asked_again_;  ///< rows whose proposer asked for a wait, oldest first
  std::vector<ProfileSpec> profiles_;  ///< the proposer's profiles; empty: none
  std::optional<ProfileDraw> draw_;
  CircuitBreaker breaker_;
  std::string last_wait_message_;  ///< the last wait logged, so that a wait that goes on is logged once
  std::optional<Failure> last_failure_;  ///< told to the next proposal
  int running_ = 0;
  bool cancelled_ = false;
  std::shared_ptr<Mailbox> mailbox_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  std::shared_ptr<std::atomic<int>> inside_;
};

}  // namespace ard
