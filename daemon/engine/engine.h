// The research engine: one Boost.Asio io_context owns the daemon's state and
// keeps every GPU training, one candidate per GPU at a time. Candidates are
// proposed ahead of need (`lookahead` per GPU, proposals.h), committed under
// refs/autoresearch/<tag>/exp/<id>, built in worktree slots of their own
// (workspace.h) while others train, then trained on the first free GPU.
//
// autoresearch/<tag> is the chain of kept commits. What happens to a measured
// candidate (keep, discard, confirm, re-apply onto a newer best, wait) is the
// judge's ruling (judge.h), a pure function of the evidence; the engine
// applies it. The engine schedules; what it schedules with are values from
// its neighbours: proposal outcomes, slots, a run's steps (run_plan.h), the
// repeat runs of the best (repeat_plan.h), and each run's one RunEnd.
//
// A candidate's phases (Candidate::phase, candidate.h; a candidate that ends,
// kept or failed, is erased at once, its worker and slot freed):
//
//   from        to          when
//   (new)       kCommitted  a proposal committed (on_proposal); the baseline; a repeat run of
//                           the best (noise round, incumbent re-run); a promotion round's run of a
//                           chain commit at a larger rung (advance_promotion, promotion_round.h:
//                           a repeat whose end goes back to the round). A proposal that ends before
//                           (patch_rejected, proposer_error, duplicate) is never a candidate.
//   kCommitted  (erased)    a stale candidate whose change does not apply onto the best: conflict
//   kCommitted  kBuilding   a slot is free and fewer than max_builds run (start_build; a stale
//                           candidate is first moved onto the best)
//   kCommitted  kBuilt      slurm.build = "job": the job builds it (built_in_job)
//   kBuilding   kBuilt      the build succeeded (on_run_end)
//   kBuilding   kCommitted  a fault of the machine: built again once it clears (rerun)
//   kBuilding   (erased)    build_fail (a fix is owed), tampered
//   kBuilt      kTraining   a worker is free and may train it (start_trainings, next_to_train)
//   kTraining   kCommitted  a fault of the machine: built and run again once it clears (rerun)
//   kTraining   (erased)    crash, timeout, tampered, interrupted; a repeat's run ended (end_repeat)
//   kTraining   ...         measured (Engine::measured): the judge's ruling (decide):
//                 kMeasured   defer: it waits for the baseline, a round, or the best's re-runs
//                 kBuilt      confirm or remeasure: it runs again in the slot it holds
//                 kCommitted  reapply: its change is cherry-picked onto the best and built anew
//                 (erased)    keep, discard (a reapply whose change conflicts ends as a conflict)
//   kMeasured   ...         decide_deferred: the judge's ruling again, as from kTraining, but
//                           confirm and remeasure go to kCommitted (its slot was released)
//   any         (erased)    the daemon stops: interrupted (maybe_finish_stop); a fault of the machine
//                           that follows one experiment every time: crash (rerun)
//   (interrupted) kCommitted  the next start takes it up again (restart.h take_up, in begin), or
//                 ...         with finished runs, the judge's ruling as from kTraining
//
// Builds and stages run through an Executor (executor.h): a Run in, one
// RunEnd out. Every state change is written to the store before the next
// step, and a branch moves only after the store says why, so a daemon killed
// anywhere restarts into a consistent state.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/data/data_prep.h"
#include "daemon/engine/candidate.h"
#include "daemon/engine/executor.h"
#include "daemon/engine/fault_hold.h"
#include "daemon/engine/promotion_round.h"
#include "daemon/engine/proposals.h"
#include "daemon/engine/repeat_plan.h"
#include "daemon/engine/restart.h"
#include "daemon/engine/store_watch.h"
#include "daemon/engine/workspace.h"
#include "daemon/log.h"
#include "daemon/store/state_dir.h"
#include "daemon/store/store.h"
#include "proposers/editable.h"
#include "proposers/proposer.h"

namespace ard {

class Engine {
 public:
  /// gpus: the workers' GPU ids (gpus.h); empty: one worker that sets no device.
  /// executor: runs the builds and the local stages; null: a LocalExecutor on io.
  Engine(boost::asio::io_context& io, const Config& config, const StateDir& state, Store& store, Proposer& proposer,
         Log& log, std::vector<std::string> gpus, std::unique_ptr<Executor> executor = nullptr);
  ~Engine();

  /// Runs the loop until SIGTERM/SIGINT or a fatal error (thrown as
  /// FatalError once the loop has wound down: children killed, rows finished,
  /// the session closed). Returns the number of proposal threads still inside
  /// a proposer that ignored the stop (the caller must then end the process
  /// without waiting for them).
  int run();

  /// `start --rebase`, before run(): the tag's kept changes are re-applied, in
  /// order, onto the checkout's HEAD, which becomes the tag's base, measured
  /// as a new baseline (rebase_onto_head, tag_base.h). Without it, a HEAD with
  /// commits the tag lacks is one `note:` line in the log.
  void rebase_at_start() { rebase_ = true; }

 private:
  using Phase = CandidatePhase;  ///< candidate.h

  // Start and stop.
  /// After the data step: the baseline if one is due, the start's noise round, the interrupted experiments taken up.
  void begin();
  void on_signal(int signal);
  void stop(const std::string& reason);
  void maybe_finish_stop();
  void fatal(const std::string& message);
  /// Proposing waits until `until` (Unix seconds) for reason, which status
  /// shows (show_pause); an empty reason: proposing again.
  void pause_proposals(const std::string& reason, double until);
  void show_pause(const std::string& reason);

  // The machine's faults (fault_hold.h): nothing starts while one is in force.
  /// Pauses everything; status shows the fault, a timer retries.
  void environment_fault(const EnvironmentFault& fault);
  /// c met a fault of the machine: built and run again once it clears (its trial reads environment_error).
  void rerun(Candidate& c, const EnvironmentFault& fault);
  /// A handler was cut short by a fault (the store's): candidates left without
  /// a child or a proposal thread are put back, then everything pauses.
  void recover(const EnvironmentFault& fault);
  /// False while the pause is in force; at its time, probes whether the fault cleared.
  bool environment_ready();

  // The pipeline. Every handler ends in schedule_pump: one pump (or, while
  // stopping, the check whether the stop is complete) after it returned.
  void pump();
  void schedule_pump();
  /// Reads program.md once; while it is readable, asks for proposals up to the target.
  void request_proposals();
  AskContext ask_context(const std::string& program) const;
  void on_proposal(const ProposalOutcome& outcome);
  void start_builds();
  void start_build(Candidate& c, int slot);
  void start_trainings();
  /// c's stages on its worker's GPU (executor = "slurm": one job, with slurm.build = "job" the build first).
  void start_stages(Candidate& c);
  Run run_of(const Candidate& c) const;
  /// Starts run for c on executor; the store records each step, child group and job as it reports them.
  void start_run(Candidate& c, const Run& run, Executor& executor);
  /// The executor's end of c's run: a build that passed makes c kBuilt, anything else goes to end_run.
  void on_run_end(int64_t key, bool build, const RunEnd& end);
  /// The one place a run's end is applied, whichever executor ran it: a fault
  /// of the machine runs it again, a build failure owes a fix, a summary goes
  /// to the judge, anything else ends the experiment with its final status.
  void end_run(Candidate& c, const RunEnd& end);
  void measured(Candidate& c, const RunEnd& end);
  /// Asks the judge (judge.h) on c's evidence and applies its ruling. value: its last run's.
  void decide(Candidate& c, double value);
  /// The judge's reapply: c's change onto the best, built and measured again. value: its mean on the older best.
  void reapply(Candidate& c, double value);
  /// Cherry-picks c's change onto the best (why leads its log line). False: it
  /// conflicts, and c has ended as a conflict (log_tail: its last run's).
  bool move_onto_best(Candidate& c, const std::string& why, const std::string& log_tail);
  /// slurm.build = "job": c is checked out and goes to training; its job builds it first.
  void built_in_job(Candidate& c);

  // Endings.
  void fail(Candidate& c, const std::string& final_status, const std::string& error, const std::string& log_tail,
            const std::string& failure_detail = "");
  void release(Candidate& c);
  void keep(Candidate& c, double value, const std::string& why);

  // The repeat runs of the best (repeat_plan.h) and the decisions that wait for them.
  void start_round(bool hold, const std::string& reason);
  void maybe_start_round();
  void decide_deferred();
  void maybe_end_round();
  void top_up_incumbent();
  void end_repeat(Candidate& c, const std::string& final_status, std::optional<long> steps);

  // Promotion rounds (promotion_round.h): the best's stack run again at a larger rung.
  /// A round due (promote.every kept changes, `autoresearchd promote`) or left in progress starts.
  void maybe_start_promotion();
  std::vector<double> rung_budgets() const;  ///< each rung's budget_s, rung 0 first
  /// The round over the trials: its comparisons decided, the runs it wants added, its labels stored once done.
  void advance_promotion();
  /// promote.on_fail = "revert": the revert of experiment's change onto the best, queued as a try.
  void propose_revert(int64_t experiment, int rung);
  /// A promotion run's end (final_status "ok": measured, its trial ended already).
  void end_rung_run(Candidate& c, const std::string& final_status);

  std::filesystem::path log_path(const Candidate& c, const std::string& name) const;
  /// Gives c the next key and adds it to candidates_.
  Candidate& add(Candidate c);
  Candidate* find(int64_t key);
  void erase(int64_t key) { candidates_.erase(key); }  ///< key by value: it may be the erased one's own

  boost::asio::io_context& io_;
  const Config& config_;
  const StateDir& state_;
  Store& store_;
  Proposer& proposer_;
  Log& log_;
  EditablePaths editable_;
  std::vector<std::string> env_;
  Workspace workspace_;  ///< the user's checkout, the slots, the tag's refs

  boost::asio::signal_set signals_;
  boost::asio::steady_timer stop_deadline_;
  StoreWatch store_watch_;

  std::vector<std::string> gpus_;  ///< the workers' CUDA device ids ("" : a worker that sets no device)
  std::vector<int64_t> training_;  ///< by worker: the key of the candidate it trains; 0: free
  std::map<int64_t, Candidate> candidates_;  ///< every run in flight, by key (so oldest first)
  StartPoint start_;  ///< what the start settled (restart.h): the tag's chain, the experiments to take up
  BestRun best_;  ///< the best of the moment: the tip of autoresearch/<tag>
  bool baseline_pending_ = false;   ///< the baseline has not been measured yet
  std::vector<int64_t> deferred_;   ///< keys of measured candidates waiting for the baseline's value
  std::string data_dir_;
  int64_t session_ = 0;
  std::string paused_;              ///< the pause status shows, '' when proposing
  std::string proposer_waits_;      ///< why the proposer has nothing to run, '' when it proposes (RoundPlanInput)
  FaultHold faults_;  ///< a fault of the machine in force: nothing starts
  int builds_running_ = 0;
  RepeatRuns repeats_;  ///< the noise rounds and the incumbent's re-runs (repeat_plan.h)
  std::optional<PromotionRound> promotion_;  ///< the promotion round in progress
  bool promotion_check_ = false;  ///< a round may be due: checked at the next pump
  int promotion_runs_ = 0;        ///< the last promotion run's number (its log's name)
  std::string promotion_failed_at_;  ///< the best when a round ended without labels: none again until a keep
  int64_t next_key_ = 0;       ///< the last Candidate::key given
  bool pump_scheduled_ = false;
  std::shared_ptr<Mailbox> mailbox_;  ///< the data step's thread posts its end here
  std::unique_ptr<Proposals> proposals_;

  bool rebase_ = false;   ///< start --rebase was asked for
  bool started_ = false;  ///< the data step is done and the pipeline runs
  bool stopping_ = false;
  std::string stop_reason_;
  std::optional<std::string> fatal_;
  bool store_lost_ = false;  ///< results.db was deleted or replaced: nothing more is written
  DataStep data_;

  std::unique_ptr<Executor> executor_;  ///< builds, and the stages with executor = "local"
  std::unique_ptr<Executor> slurm_;  ///< the stages as Slurm jobs; null with executor = "local"
};

}  // namespace ard
