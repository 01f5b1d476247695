// The research engine: one Boost.Asio io_context owns the daemon's state and
// keeps every GPU training.
//
// One worker per GPU trains one candidate at a time. Candidates are proposed
// ahead of need (`lookahead` per GPU) by the proposal side (proposals.h), each
// on a thread of its own whose outcome is posted back to the loop; committed in the object database under
// refs/autoresearch/<tag>/exp/<id> (no checkout needed); built in a worktree
// slot of their own while other candidates train (at most `max_builds` at
// once); then trained on the first free GPU. So the LLM call and the build of
// candidate k+1 overlap the training of candidate k.
//
// autoresearch/<tag> is the chain of kept commits: a candidate is kept only
// when its parent is the best of the moment and it beats it. A candidate made
// against an older best that beats the current best has its change re-applied
// onto the current best (a cherry-pick), and that combination is evaluated
// and must win in turn; a change that does not re-apply is a `conflict`, and
// its stale diff goes back to the proposer.
//
// What happens to a measured candidate (keep, discard, confirm, re-apply,
// wait) is the judge's ruling (judge.h), a pure function of the evidence the
// engine reads from its state and the store; the engine applies it.
//
// The engine schedules; what it schedules with are values from its neighbours:
// proposal outcomes (proposals.h: a commit, an experiment ended before any
// build, a wait), worktree slots (slots.h), a run's steps (run_plan.h) and
// the repeat runs of the best (repeat_plan.h).
//
// A candidate's phases (Candidate::phase, candidate.h; a candidate that ends,
// kept or failed, is erased at once, its worker and slot freed):
//
//   from        to          when
//   (new)       kCommitted  a proposal committed (on_proposal); the baseline; a repeat run of
//                           the best (noise round, incumbent re-run). A proposal that ends before
//                           (patch_rejected, proposer_error, duplicate) is never a candidate.
//   kCommitted  (erased)    a stale candidate whose change does not apply onto the best: conflict
//   kCommitted  kBuilding   a slot is free and fewer than max_builds run (start_build; a stale
//                           candidate is first moved onto the best)
//   kCommitted  kBuilt      slurm.build = "job": the job builds it (built_in_job)
//   kBuilding   kBuilt      the build succeeded (on_run_end)
//   kBuilding   kCommitted  a fault of the machine: built again once it clears (rerun)
//   kBuilding   (erased)    build_fail (a fix is owed), tampered
//   kBuilt      kTraining   a worker is free and may train it (start_trainings, may_train)
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
//   (interrupted) kCommitted  the next start takes it up again (resume.h, resume_interrupted), or
//                 ...         with finished runs, the judge's ruling as from kTraining
//
// Builds and stages run through an Executor (executor.h): the engine hands it
// a Run and gets one RunEnd back; the local executor's children are
// Boost.Process v2 processes whose exits arrive as events; timers are
// steady_timers; SIGTERM and SIGINT arrive
// through a signal_set. Every state change is written to the store before
// the next step, and a branch moves only after the store says why, so a
// daemon killed anywhere restarts into a consistent state.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/decide/circuit_breaker.h"
#include "daemon/decide/noise_rounds.h"
#include "daemon/engine/candidate.h"
#include "daemon/engine/executor.h"
#include "daemon/engine/proposal_desk.h"
#include "daemon/engine/proposals.h"
#include "daemon/engine/resume.h"
#include "daemon/engine/run.h"
#include "daemon/engine/run_end.h"
#include "daemon/engine/slots.h"
#include "daemon/engine/store_watch.h"
#include "daemon/engine/tag_base.h"
#include "daemon/exec/fault_pause.h"
#include "daemon/git_repo.h"
#include "daemon/log.h"
#include "daemon/store/state_dir.h"
#include "daemon/store/store.h"
#include "proposers/editable.h"
#include "proposers/proposer.h"

namespace ard {

class SlurmClient;

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

  /// `start --rebase`, before run(): the tag's kept changes (the commits from
  /// its base to its best) are re-applied, in order, onto the checkout's HEAD, which becomes
  /// the tag's base; the result is measured as a new baseline and is the best
  /// from then on. A change that does not apply stops the start, naming it,
  /// with nothing moved. Without it, a HEAD with commits the tag lacks is one
  /// `note:` line in the log.
  void rebase_at_start() { rebase_ = true; }

 private:
  using Phase = CandidatePhase;  ///< candidate.h
  struct Worker {
    std::string gpu;  ///< CUDA device id, "" for a worker that sets no device
    int64_t candidate = 0;  ///< the key of the candidate it trains; 0: free
  };
  using Slot = WorktreeSlot;  ///< slots.h

  // Start and stop.
  void reconcile();
  /// Checks out every slot; false when a stop came meanwhile (the loop is polled between checkouts).
  bool open_slots();
  void prepare_data_then_begin();
  void begin();
  /// The experiments the last session left interrupted (resume.h) become
  /// candidates again: committed, or measured and ruled on by the judge.
  void resume_interrupted();
  void on_signal(int signal);
  void stop(const std::string& reason);
  void maybe_finish_stop();
  void fatal(const std::string& message);
  /// Proposing waits until `until` (Unix seconds) for the reason given; the
  /// reason is stored so that status shows it. An empty reason: proposing again.
  void pause_proposals(const std::string& reason, double until);

  // The machine's faults (fault_pause.h): nothing starts while one is in force.
  /// Pauses everything; status shows the fault, a timer retries.
  void environment_fault(const EnvironmentFault& fault);
  /// The experiment met a fault of the machine: it goes back to be built and
  /// run again once the fault clears (its trial reads environment_error).
  void rerun(Candidate& c, const EnvironmentFault& fault);
  /// A handler was cut short by a fault (the store's): candidates left without
  /// a child or a proposal thread are put back, then everything pauses.
  void recover(const EnvironmentFault& fault);
  /// False while the pause is in force; at its time, probes whether the fault cleared.
  bool environment_ready();

  // The pipeline.
  void pump();
  /// Every handler ends here: one pump (or, while stopping, the check whether
  /// the stop is complete) runs after the handler returned.
  void schedule_pump();
  /// Reads program.md once; while it is readable, asks for proposals up to the
  /// target (candidates and rows asked), each told what ask_context says.
  void request_proposals();
  AskContext ask_context(const std::string& program) const;
  /// Applies what came of a proposal (proposals.h): a committed one becomes a candidate.
  void on_proposal(const ProposalOutcome& outcome);
  void start_builds();
  void start_build(Candidate& c, int slot);
  void start_trainings();
  /// Hands c's stages, on its worker's GPU, to the executor (with executor = "slurm": as one
  /// job, with slurm.build = "job" the build first).
  void start_stages(Candidate& c);
  /// What every Run of c has: its row, commit, slot, logs dir, last stage, end settings.
  Run run_of(const Candidate& c) const;
  /// Starts run for c on executor (the store records each step, child group and job as the executor reports them).
  void start_run(Candidate& c, const Run& run, Executor& executor);
  /// The executor's end of c's run: a build that passed makes c kBuilt, anything else goes to end_run.
  void on_run_end(int64_t key, bool build, const RunEnd& end);
  /// The one place a run's end is applied, whichever executor ran it
  /// (classify_end decided what it was): a fault of the machine runs it
  /// again, a build failure owes a fix, a summary goes to the judge, anything
  /// else finishes the experiment with its final status.
  void end_run(Candidate& c, const RunEnd& end);
  /// A run that measured the metric: its trial and metrics recorded, then decided.
  void measured(Candidate& c, const RunEnd& end);
  /// Gathers the evidence on a measured candidate, asks the judge (judge.h)
  /// and applies its ruling. value: the metric of the run just finished.
  void decide(Candidate& c, double value);
  /// The judge's reapply: cherry-picks c's change onto the best, to be built
  /// and measured again (a conflict ends it). value: its mean on the older best.
  void reapply(Candidate& c, double value);
  /// Cherry-picks c's change onto the best (c's commit, parent and store row
  /// follow; why leads its log line). False: it conflicts, and c has ended as
  /// a conflict (log_tail: its last run's).
  bool move_onto_best(Candidate& c, const std::string& why, const std::string& log_tail);

  // executor = "slurm" (slurm_run_executor.h): the stages as one Slurm job.
  void open_slurm();
  /// slurm.build = "job": the candidate is checked out and goes to training; its job builds it first.
  void built_in_job(Candidate& c);

  // Endings.
  void fail(Candidate& c, const std::string& final_status, const std::string& error, const std::string& log_tail,
            const std::string& failure_detail = "");
  /// An experiment's end in the store, the breaker, what the next proposal
  /// is told, and the log. True for a failed baseline (fail stops the daemon).
  bool record_end(int64_t id, bool baseline, const std::string& final_status, const std::string& error,
                  const std::string& log_tail, const std::string& failure_detail);
  void release(Candidate& c);
  void keep(Candidate& c, double value, const std::string& why);

  // Noise rounds, confirmations and the incumbent's re-runs (noise_rounds.h, keep_rule.h).
  void add_repeat(const std::string& purpose, const std::string& gpu, bool in_round);
  void start_round(bool hold, const std::string& reason);
  void maybe_start_round();
  void decide_deferred();
  /// Re-runs of the best (after a keep) not finished yet.
  bool incumbent_pending() const;
  void maybe_end_round();
  void top_up_incumbent();
  void end_repeat(Candidate& c, const std::string& final_status, std::optional<long> steps);
  bool may_train(const Candidate& c, const Worker& w) const;
  std::optional<NoiseEstimate> decision_noise(const std::vector<TrialRow>& trials) const;

  // Helpers.
  /// The sandbox of a child of slot (slot_sandbox).
  std::vector<std::string> sandbox_wrapper(int slot, bool build, const std::string& command) const;
  /// What in c's slot (slot_differences) and of its refs differs from what c runs; "" when nothing.
  std::string tamper_check(const Candidate& c);
  /// reset_slot (slots.h) of slot to commit. Returns "" or why it failed.
  std::string reset_slot(int slot, const std::string& commit);
  /// Points the branch back at the best and c's ref back at its commit, where a child moved them.
  void restore_refs(const Candidate& c);
  std::filesystem::path log_path(const Candidate& c, const std::string& name) const;
  std::string exp_ref(int64_t id) const;
  /// The workers' GPU ids, in order.
  std::vector<std::string> gpu_ids() const;
  /// Gives c the next key and adds it to candidates_.
  Candidate& add(Candidate c);
  Candidate* find(int64_t key);
  void erase(int64_t key);

  boost::asio::io_context& io_;
  const Config& config_;
  const StateDir& state_;
  Store& store_;
  Proposer& proposer_;
  Log& log_;
  EditablePaths editable_;
  std::vector<std::string> env_;
  std::string branch_ref_;

  boost::asio::signal_set signals_;
  boost::asio::steady_timer stop_deadline_;
  boost::asio::steady_timer fault_timer_;
  StoreWatch store_watch_;

  std::unique_ptr<GitRepo> repo_;  ///< the user's checkout (read only, but for info/exclude)
  std::vector<Slot> slots_;
  std::vector<Worker> workers_;
  std::map<int64_t, Candidate> candidates_;  ///< every run in flight, by key (so oldest first)
  TagChain start_chain_;  ///< the tag's chain as reconcile found it (tag_base.h)
  std::string best_commit_;
  std::optional<double> best_val_;
  bool baseline_pending_ = false;   ///< the baseline has not been measured yet
  std::vector<int64_t> deferred_;   ///< keys of measured candidates waiting for the baseline's value
  std::vector<Resume> resumes_;     ///< planned by reconcile, taken up by begin (resume.h)
  std::string data_dir_;
  int64_t session_ = 0;
  std::optional<Failure> last_failure_;
  std::string last_wait_message_;
  std::string paused_;              ///< the pause status shows, '' when proposing
  CircuitBreaker breaker_;
  FaultPause fault_pause_;
  int builds_running_ = 0;
  std::unique_ptr<NoiseRounds> rounds_;
  int64_t best_id_ = 0;        ///< the experiment of best_commit_
  int64_t next_key_ = 0;       ///< the last Candidate::key given
  int next_repeat_ = 0;        ///< the last Candidate::repeat given
  int since_round_ = 0;        ///< experiments decided since the last noise round

  bool pump_scheduled_ = false;

  std::shared_ptr<Mailbox> mailbox_;  ///< the data step's thread posts its end here
  std::unique_ptr<Proposals> proposals_;

  bool rebase_ = false;   ///< start --rebase was asked for
  bool started_ = false;  ///< the data step is done and the pipeline runs
  bool stopping_ = false;
  std::string stop_reason_;
  std::optional<std::string> fatal_;
  bool store_lost_ = false;  ///< results.db was deleted or replaced: nothing more is written
  std::unique_ptr<StopFlag> data_stop_;
  bool data_running_ = false;

  std::unique_ptr<Executor> executor_;  ///< builds, and the stages with executor = "local"
  std::unique_ptr<SlurmClient> slurm_client_;
  std::unique_ptr<Executor> slurm_;  ///< the stages as Slurm jobs; null with executor = "local"
};

}  // namespace ard
