// See engine.h. Rules every handler follows:
// - the store first, then the branch: an outcome is recorded before
//   autoresearch/<tag> moves, so a daemon killed between the two restarts
//   into a branch that reconcile resets to the best kept commit;
// - a handler never calls pump() itself: it schedules one (schedule_pump), so
//   no loop over the candidates sees a candidate erased under it;
// - a candidate that ends (kept, or any failure) is erased at once, its
//   worker and slot freed, and its slot checked out at the best again.
#include "daemon/engine/engine.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <set>
#include <sstream>

#include "daemon/data/data_prep.h"
#include "daemon/decide/keep_rule.h"
#include "daemon/decide/run_evidence.h"
#include "daemon/decide/summary.h"
#include "daemon/engine/run_end.h"
#include "daemon/duration.h"
#include "daemon/engine/judge.h"
#include "daemon/engine/restart.h"
#include "daemon/engine/resume.h"
#include "daemon/engine/tag_base.h"
#include "daemon/engine/local_executor.h"
#include "daemon/engine/repeat_plan.h"
#include "daemon/engine/run_plan.h"
#include "daemon/engine/slurm_run_executor.h"
#include "daemon/fatal_error.h"
#include "daemon/program_file.h"
#include "daemon/slurm/slurm_client.h"
#include "daemon/slurm/slurm_recovery.h"
#include "daemon/util/clock.h"
#include "daemon/util/text.h"

namespace ard {
namespace asio = boost::asio;

namespace {

/// How long stop() waits for proposal threads before it gives them up.
constexpr double kProposalGraceS = 8;
/// How often the engine checks that results.db is still the file it has open.
constexpr double kStoreCheckS = 2;
/// How often one experiment runs again after a fault of the machine before the fault is its own.
constexpr int kMaxFaultReruns = 2;

std::chrono::steady_clock::duration seconds(double s) { return steady_seconds(s); }

/// Runs f; should it throw (a store write met a fault of the machine), the
/// candidate's run is not waited for (recover puts it back) and the throw goes on.
template <typename Candidate, typename F>
void not_running_on_throw(Candidate& c, F f) {
  try {
    f();
  } catch (...) {
    c.running = false;
    throw;
  }
}

}  // namespace

Engine::Engine(asio::io_context& io, const Config& config, const StateDir& state, Store& store, Proposer& proposer,
               Log& log, std::vector<std::string> gpus, std::unique_ptr<Executor> executor)
    : io_(io),
      config_(config),
      state_(state),
      store_(store),
      proposer_(proposer),
      log_(log),
      editable_(config.editable),
      env_(scrubbed_env(config.env_pass)),
      branch_ref_("refs/heads/autoresearch/" + config.tag),
      signals_(io, SIGTERM, SIGINT),
      stop_deadline_(io),
      fault_timer_(io),
      store_watch_(io, store, kStoreCheckS,
                   [this](const std::string& problem) {
                     store_lost_ = true;
                     fatal(problem + "; stopping so nothing is written to the lost file");
                   }),
      breaker_(BreakerConfig{}, now_seconds),
      fault_pause_(config.retry_wait_s),
      mailbox_(std::make_shared<Mailbox>(io)),
      proposals_(std::make_unique<Proposals>(io, config, store, proposer, log,
                                             [this](const ProposalOutcome& o) { on_proposal(o); },
                                             [this] { schedule_pump(); })),
      executor_(executor ? std::move(executor) : std::make_unique<LocalExecutor>(io)) {
  if (gpus.empty()) gpus.push_back("");
  for (auto& g : gpus) workers_.push_back({std::move(g), 0});
  rounds_ = std::make_unique<NoiseRounds>(gpu_ids(), calibrates_boards(config_));
}

Engine::~Engine() { mailbox_->close(); }

int Engine::run() {
  state_.create();
  repo_ = std::make_unique<GitRepo>(config_.repo);
  repo_->exclude("/.autoresearchd/");
  proposals_->open(*repo_);
  // SIGTERM and SIGINT are taken from here on: open_slots looks at them between checkouts,
  // which take seconds with many GPUs and a deep lookahead.
  signals_.async_wait([this](const boost::system::error_code& e, int sig) {
    if (!e) on_signal(sig);
  });
  // A killed daemon's Slurm jobs are adopted or cancelled, and their results recorded, before reconcile
  // (whatever the executor is now).
  recover_slurm_jobs(config_, store_, slurm_env(env_), state_.root / "slurm", log_);
  if (config_.executor == ExecutorKind::kSlurm) open_slurm();
  reconcile();
  if (!open_slots()) {  // stopped during the checkouts: nothing began; the stop finishes on the loop
    io_.run();
    return proposals_->threads_inside();
  }
  session_ = store_.begin_session(config_.tag, getpid());
  std::string gpu_list;
  for (const auto& gpu : gpu_ids()) gpu_list += (gpu_list.empty() ? "" : ",") + gpu;
  store_.set_session_gpus(session_, gpu_list);
  log_("session " + std::to_string(session_) + ": tag " + config_.tag + ", branch autoresearch/" + config_.tag +
       ", best " + short_commit(best_commit_) + ", proposer " + proposer_.name() + ", " +
       (workers_.front().gpu.empty() ? std::string("one worker (no GPU id)")
                                     : std::to_string(workers_.size()) + " GPU worker(s): " + gpu_list));
  if (config_.data.enabled) prepare_data_then_begin();
  else asio::post(io_, [this] { begin(); });
  store_watch_.start(session_);
  for (;;) {
    try {
      io_.run();
      break;
    } catch (const EnvironmentFault& f) {
      if (stopping_) throw;  // the stop cannot finish its rows: the error names the file
      recover(f);
    } catch (const DatabaseFileLost& e) {
      // A handler met the lost file: stop (children ended, threads cancelled), writing nothing more.
      store_lost_ = true;
      fatal(e.what());
      asio::post(io_, [this] { maybe_finish_stop(); });
    }
  }
  if (fatal_) throw LoggedFatalError(*fatal_);  // stop() logged "error: <cause>"
  return proposals_->threads_inside();
}

void Engine::reconcile() {
  SettleSettings settle{config_.tag, config_.metric, keep_settings(config_), config_.noise.prior_sigma, state_.root};
  resumes_ = settle_last_sessions(store_, settle, [this](const std::string& line) { log_(line); });

  start_chain_ = settle_tag(*repo_, store_, config_.tag, rebase_, [this](const std::string& line) { log_(line); });
  best_commit_ = start_chain_.best;
  best_val_ = start_chain_.best_val;
  best_id_ = start_chain_.best_id;
}

bool Engine::open_slots() {
  // What an older daemon's children left in the scratch directories goes (they are tmpfs mounts now).
  if (std::string e = remove_tree_nofollow(state_.root / "scratch"); !e.empty()) log_("warning: scratch: " + e);
  // One slot a GPU trains in, one for each candidate built ahead, and one per
  // GPU for the repeat runs (a noise round needs slots while candidates hold theirs).
  size_t n = workers_.size() * (2 + static_cast<size_t>(config_.lookahead));
  for (size_t i = 0; i < n; ++i) {
    // A signal that came meanwhile is handled now (the loop holds nothing else yet): the stop
    // ends here, with nothing begun, instead of after every checkout.
    io_.poll();
    if (stopping_) return false;
    std::string name = i == 0 ? config_.tag : config_.tag + "+" + std::to_string(i);
    auto path = state_.root / "worktrees" / name;
    // Checking out the best also drops whatever an interrupted experiment left.
    slots_.push_back({path, repo_->open_detached_worktree(name, path, best_commit_, SlotKeep{{config_.build_dir}}), 0});
  }
  return true;
}

void Engine::prepare_data_then_begin() {
  data_running_ = true;
  data_stop_ = std::make_unique<StopFlag>();
  auto box = mailbox_;
  prepare_data_on_thread(
      config_, slots_.front().path, state_, log_, store_, data_stop_.get(),
      [box](std::function<void()> f) { box->post(std::move(f)); },
      [this](const std::string& dir, const std::string& error) {
        data_running_ = false;
        if (stopping_) return maybe_finish_stop();
        if (!error.empty()) return fatal(error);
        data_dir_ = dir;
        store_.set_session_data_dir(session_, data_dir_);
        begin();
      });
}

void Engine::begin() {
  if (stopping_) return;
  started_ = true;
  const bool need_baseline = baseline_due(store_.experiments(config_.tag), start_chain_.rebased);
  if (need_baseline) {
    best_id_ = record_baseline(*repo_, store_, config_.tag, start_chain_,
                               read_program_file(config_.repo / config_.program, config_.max_program_bytes).content);
    add({.experiment = best_id_, .baseline = true, .parent = best_commit_, .commit = best_commit_,
         .description = "baseline", .purpose = purpose::kBaseline, .pin_gpu = workers_.front().gpu,
         .in_round = config_.noise.rounds});
    baseline_pending_ = true;
    log_("#" + std::to_string(best_id_) + " baseline at " + short_commit(best_commit_));
  }
  rounds_->restore(store_.last_noise_estimate(config_.tag));
  // At start the incumbent runs on every GPU at once (the baseline is the first
  // GPU's run when there is one); new candidates wait for the round.
  if (config_.noise.rounds) start_round(true, need_baseline ? "start (baseline)" : "start");
  resume_interrupted();
  schedule_pump();
}

void Engine::resume_interrupted() {
  for (const Resume& r : std::exchange(resumes_, {})) {
    auto row = store_.experiment(r.id);
    if (!row || !repo_->has_commit(row->commit)) {
      log_("#" + std::to_string(r.id) + " stays interrupted: its commit is not in the repo");
      continue;
    }
    store_.resume(r.id);
    repo_->set_ref(exp_ref(r.id), row->commit, "autoresearchd: resumed");
    Candidate& resumed = add({.experiment = r.id, .parent = row->parent_commit, .commit = row->commit,
                              .description = row->description, .fix_round = r.fix_round,
                              .reapplies = row->reapplied_from.empty() ? 0 : 1,
                              .confirmations = std::max(0, r.runs - 1)});
    log_("#" + std::to_string(r.id) + " resumed (" + r.why + "; " + std::to_string(row->resumes + 1) + " of at most " +
         std::to_string(kMaxResumes) + "): " +
         (r.runs > 0 && r.last_value ? "the judge rules on its " + std::to_string(r.runs) + " finished run(s) again"
                                     : "it runs again from " + short_commit(row->commit)));
    // Its runs are in the store: the judge rules as it would have (it defers while a round holds).
    if (r.runs > 0 && r.last_value) decide(resumed, *r.last_value);
  }
}

void Engine::on_signal(int) {
  stop("stopped");
  // Further signals while winding down change nothing.
  signals_.async_wait([](const boost::system::error_code&, int) {});
}

void Engine::fatal(const std::string& message) {
  if (!fatal_) fatal_ = message;
  stop("error: " + message);
}

void Engine::stop(const std::string& reason) {
  if (stopping_) return;
  stopping_ = true;
  stop_reason_ = reason;
  proposals_->cancel();
  if (data_stop_) data_stop_->request();
  fault_timer_.cancel();
  store_watch_.stop();
  std::vector<std::string> waits;
  for (auto& [id, c] : candidates_)
    if (c.running && (c.phase == Phase::kBuilding || !slurm_))  // Slurm jobs are waited for as one
      waits.push_back("#" + std::to_string(c.experiment) + "'s " +
                      (c.phase == Phase::kBuilding ? std::string("build") : "stage " + config_.stages[c.stage].name));
  executor_->stop_all();
  if (slurm_) slurm_->stop_all();
  if (slurm_ && slurm_->active()) waits.push_back("the Slurm jobs' cancellation");
  if (data_running_) waits.push_back("the data step");
  if (proposals_->running() > 0)
    waits.push_back(std::to_string(proposals_->running()) + " proposal call(s) (at most " + format_number(kProposalGraceS) +
                    " s)");
  // `stop` prints this line: what the daemon waits for before it exits.
  log_("stopping: waiting for " + (waits.empty() ? std::string("nothing") : join_list(waits, 10)));
  stop_deadline_.expires_after(seconds(kProposalGraceS));
  stop_deadline_.async_wait([this](const boost::system::error_code& e) {
    if (!e) {
      proposals_->give_up();  // their results go nowhere
      maybe_finish_stop();
    }
  });
  maybe_finish_stop();
}

void Engine::maybe_finish_stop() {
  if (!stopping_) return;
  if (executor_->active() || (slurm_ && slurm_->active())) return;  // on_run_end comes back here
  if (data_running_ || proposals_->running() > 0) return;
  stop_deadline_.cancel();
  if (store_lost_) {  // nothing can be recorded: the next start's reconcile has nothing of this session
    log_.file_only(stop_reason_);
    signals_.cancel();
    return io_.stop();
  }
  std::vector<int64_t> keys;
  for (const auto& [key, c] : candidates_) keys.push_back(key);
  for (int64_t key : keys) {
    Candidate& c = candidates_[key];
    const char* where = c.phase == Phase::kMeasured ? "stopped before the baseline it is compared with was measured"
                                                    : "stopped before it ran";
    if (!c.repeat) store_.finish(c.experiment, status::kInterrupted, where, "");
    release(c);
    erase(key);
  }
  proposals_->end_rows_at_stop();
  if (const size_t n = session_ ? last_session_resumes(store_, config_.tag).resume.size() : 0; n > 0)
    log_(std::to_string(n) + " interrupted experiment(s) run again at the next start, from their commits");
  store_.end_session(session_, stop_reason_);
  if (fatal_) log_.file_only(stop_reason_);  // main prints it to the terminal as it exits
  else log_(stop_reason_);
  signals_.cancel();
  io_.stop();
}

void Engine::schedule_pump() {
  if (pump_scheduled_) return;
  pump_scheduled_ = true;
  asio::post(io_, [this] {
    pump_scheduled_ = false;
    if (stopping_) maybe_finish_stop();
    else pump();
  });
}

void Engine::pump() {
  if (stopping_ || !started_ || !environment_ready()) return;
  maybe_start_round();
  start_trainings();
  start_builds();
  request_proposals();
}

// ---------------------------------------------------------------- proposals

void Engine::pause_proposals(const std::string& reason, double until) {
  if (reason != paused_) {
    paused_ = reason;
    store_.set_session_paused(session_, reason);
    if (!reason.empty()) log_(reason);
  }
  if (!reason.empty()) proposals_->block(std::max(0.0, until - now_seconds()));
}

// ---------------------------------------------------------------- the machine's faults

void Engine::environment_fault(const EnvironmentFault& fault) {
  // One fault met by several handlers at once pauses once; check() backs off.
  if (!fault_pause_.active()) fault_pause_.trip(fault);
  paused_ = fault_pause_.status_line();
  log_(paused_);
  try {
    store_.set_session_paused(session_, paused_);
  } catch (const EnvironmentFault&) {
    // The store is what failed: daemon.log has the line.
  }
  fault_timer_.expires_after(seconds(std::max(0.0, fault_pause_.until() - now_seconds())));
  fault_timer_.async_wait([this](const boost::system::error_code& err) {
    if (!err) schedule_pump();
  });
}

void Engine::rerun(Candidate& c, const EnvironmentFault& fault) {
  const std::string where = c.phase == Phase::kBuilding ? "build" : "run";
  // A fault that follows the same experiment every time is the experiment's own (a stage that
  // fills the disk): after kMaxFaultReruns runs again it fails, and the slot's reset frees the space.
  if (++c.fault_reruns > kMaxFaultReruns) {
    environment_fault(fault);
    return fail(c, status::kCrash,
                where + " met a fault of the machine each of the " + std::to_string(c.fault_reruns) +
                    " times it ran, so it is the experiment's (did it fill the disk?): " + fault.what(),
                "");
  }
  c.phase = Phase::kCommitted;
  c.stage = 0;
  release(c);
  if (c.trial) store_.end_trial(c.trial, status::kEnvironmentError, std::nullopt, std::nullopt, "");
  c.trial = 0;
  if (!c.repeat) store_.set_state(c.experiment, ExperimentState::kCommitted);
  log_("#" + std::to_string(c.experiment) + " " + where + " met a fault of the machine; it runs again once it clears: " +
       fault.what());
  environment_fault(fault);
}

void Engine::recover(const EnvironmentFault& fault) {
  log_(std::string("a write failed: ") + fault.what());
  std::vector<int64_t> keys;
  for (const auto& [key, c] : candidates_) keys.push_back(key);
  for (int64_t key : keys) {
    Candidate& c = candidates_[key];
    if (c.running) continue;  // its handler comes back
    if (c.phase == Phase::kBuilding || c.phase == Phase::kTraining) {
      try {
        rerun(c, fault);
      } catch (const EnvironmentFault&) {
        // The row is set right at the next start's reconcile.
      }
    } else if (c.phase == Phase::kCommitted && c.slot >= 0) {
      release(c);  // cut short before its build started
    }
  }
  proposals_->recover();
  environment_fault(fault);
}

bool Engine::environment_ready() {
  if (!fault_pause_.active()) return true;
  if (now_seconds() < fault_pause_.until()) return false;
  if (!fault_pause_.check()) {
    environment_fault(*fault_pause_.fault());
    return false;
  }
  log_("resumed: the fault cleared");
  pause_proposals("", 0);
  proposals_->replay_held();
  return !stopping_ && !fault_pause_.active();  // a held commit may have met the fault again
}

void Engine::request_proposals() {
  if (proposals_->blocked()) return;
  // The breaker: experiments that keep failing the same way cost no more calls.
  if (auto p = breaker_.paused()) return pause_proposals(breaker_.status_line(), p->until);
  // An editor's save may remove program.md for a moment: never propose without it.
  ProgramFile program = read_program_file(config_.repo / config_.program, config_.max_program_bytes);
  if (!program.ok())
    return pause_proposals("paused: " + program.message + "; waiting for it", now_seconds() + config_.retry_wait_s);
  if (!paused_.empty() && proposals_->running() == 0) pause_proposals("", 0);
  const size_t target = workers_.size() * (1 + static_cast<size_t>(config_.lookahead));
  const int limit = proposer_.concurrent() ? static_cast<int>(workers_.size()) : 1;
  // The content checked above is the one every proposal of this round records and sends:
  // the file is read once, never again after the check.
  while (candidates_.size() + proposals_->pending() < target && proposals_->running() < limit)
    proposals_->ask(ask_context(program.content));
}

AskContext Engine::ask_context(const std::string& program) const {
  AskContext a;
  a.program = program;
  a.parent = best_commit_;
  for (const auto& [key, c] : candidates_)
    if (!c.repeat && !c.baseline)
      a.in_flight.push_back({.id = c.experiment, .commit = short_commit(c.commit), .description = c.description,
                             .status = c.phase == Phase::kMeasured   ? "measured"
                                       : c.phase == Phase::kTraining ? "running"
                                                                     : "committed"});
  a.best_value = best_val_;
  if (auto noise = decision_noise(store_.trials(config_.tag))) a.noise_note = noise_note(config_.noise.z, *noise);
  a.last_failure = last_failure_;
  return a;
}

void Engine::on_proposal(const ProposalOutcome& o) {
  using Kind = ProposalOutcome::Kind;
  const std::string id = "#" + std::to_string(o.experiment);
  if (stopping_ || o.kind == Kind::kStopped) return schedule_pump();
  switch (o.kind) {
    case Kind::kHeld:
      log_(id + " cannot be committed now; it is committed once the fault clears");
      return environment_fault(*o.fault);
    case Kind::kWaiting:
      if (o.wait->pauses && paused_ != o.wait->message) {
        paused_ = o.wait->message;
        store_.set_session_paused(session_, paused_);
      }
      if (o.wait->message != last_wait_message_) log_(o.wait->log_line);
      last_wait_message_ = o.wait->message;
      proposals_->block(o.wait->wait_s);
      return schedule_pump();
    case Kind::kFatal: return fatal("proposer: " + o.error);
    default: break;
  }
  if (o.kind == Kind::kEnded && o.final_status == status::kProposerError) {  // a bad edit
    store_.finish(o.experiment, status::kProposerError, o.error, "");
    last_failure_ = Failure{status::kProposerError, o.error};
    log_(id + " proposer_error: " + o.error);
    return schedule_pump();
  }
  last_wait_message_.clear();
  if (!paused_.empty()) pause_proposals("", 0);
  if (o.kind == Kind::kEnded) {
    record_end(o.experiment, false, o.final_status, o.error, "", o.failure_detail);
    return schedule_pump();
  }
  add({.experiment = o.experiment, .parent = o.parent, .commit = o.commit, .description = o.description,
       .fix_round = o.fix_round});
  log_(id + " " + short_commit(o.commit) + " " + o.description +
       (o.fix_round ? " (fix " + std::to_string(o.fix_round) + " of #" + std::to_string(o.fix_of) + ")" : ""));
  schedule_pump();
}

// ---------------------------------------------------------------- builds

void Engine::open_slurm() {
  slurm_client_ = std::make_unique<SlurmClient>(io_, slurm_env(env_), state_.root / "slurm");
  slurm_ = std::make_unique<SlurmRunExecutor>(io_, config_, *slurm_client_, log_, state_.root / "slurm");
}

void Engine::built_in_job(Candidate& c) {
  c.phase = Phase::kBuilt;
  if (!c.repeat) store_.set_state(c.experiment, ExperimentState::kBuilt);
  schedule_pump();
}

void Engine::start_builds() {
  std::vector<int64_t> ready;  // repeats first, then in order of creation
  for (const auto& [key, c] : candidates_)
    if (c.phase == Phase::kCommitted && c.repeat) ready.push_back(key);
  for (const auto& [key, c] : candidates_)
    if (c.phase == Phase::kCommitted && !c.repeat) ready.push_back(key);
  for (int64_t key : ready) {
    if (builds_running_ >= config_.max_builds) return;
    Candidate* c = find(key);
    if (!c || c->phase != Phase::kCommitted) continue;
    int slot = free_slot(slots_);
    if (slot < 0) return;
    start_build(*c, slot);
  }
}

void Engine::start_build(Candidate& c, int slot) {
  // A candidate made against an older best is moved onto the best of the
  // moment before it is built, so it is measured against what it must beat.
  if (!c.baseline && !c.repeat && c.parent != best_commit_ &&
      !move_onto_best(c, "made against " + short_commit(c.parent), ""))
    return;
  c.slot = slot;
  c.build_listing.reset();
  slots_[slot].holder = c.key;
  if (std::string e = reset_slot(slot, c.commit); !e.empty()) {
    if (auto fault = slot_fault(slots_[slot], config_.repo)) return rerun(c, *fault);
    return fatal("cannot check out a candidate: " + e);
  }
  if (slurm_ && config_.slurm.build == SlurmBuild::kJob) return built_in_job(c);
  Run run = run_of(c);
  run.purpose = "build";
  run.env = env_;
  run.build = build_step(config_, sandbox_wrapper(slot, true, config_.build_command), log_path(c, "build"));
  start_run(c, run, *executor_);
  // After start: a store write that failed in its first step leaves c committed in its slot (recover).
  c.phase = Phase::kBuilding;
  ++builds_running_;
}

// ---------------------------------------------------------------- training

void Engine::start_trainings() {
  // A GPU that a pinned run (the baseline, a round's run, a confirmation) is
  // being built or waits for goes to that run: were a candidate built sooner to
  // take it, the pinned run would wait behind it while another GPU idles.
  std::set<std::string> awaited;
  for (const auto& [id, c] : candidates_)
    if (!c.pin_gpu.empty() && (c.phase == Phase::kBuilding || c.phase == Phase::kBuilt)) awaited.insert(c.pin_gpu);
  for (size_t w = 0; w < workers_.size(); ++w) {
    if (workers_[w].candidate) continue;
    Candidate* next = nullptr;
    for (bool repeats : {true, false})  // repeats first, then in order of creation
      for (auto& [key, c] : candidates_)
        if (!next && (c.repeat > 0) == repeats && c.phase == Phase::kBuilt && may_train(c, workers_[w]) &&
            (!c.pin_gpu.empty() || !awaited.count(workers_[w].gpu)))
          next = &c;
    if (!next) continue;
    next->phase = Phase::kTraining;
    next->worker = static_cast<int>(w);
    next->stage = 0;
    next->run_gpu = workers_[w].gpu;
    workers_[w].candidate = next->key;
    if (!next->repeat) store_.set_gpu(next->experiment, workers_[w].gpu);
    const std::string run_purpose = trial_purpose(next->purpose, next->reapplies);
    next->trial = store_.begin_trial(next->experiment, config_.tag, workers_[w].gpu, run_purpose,
                                     next->commit, rounds_->scale(workers_[w].gpu), rounds_->calibration());
    start_stages(*next);
    if (stopping_) return;
  }
}

void Engine::start_stages(Candidate& c) {
  const std::string& gpu = workers_[c.worker].gpu;
  Run run = run_of(c);
  run.trial = c.trial;
  run.gpu = gpu;
  run.purpose = trial_purpose(c.purpose, c.reapplies);
  run.env = child_env(env_, gpu);
  if (slurm_) {  // one job, one log; the scheduler's node confines it, not the sandbox
    run.env.clear();  // the job's environment is the Slurm client's (slurm_env)
    run.name = "ard-" + config_.tag + "-" + std::to_string(c.experiment) + "-t" + std::to_string(c.trial);
    run.title = "experiment " + std::to_string(c.experiment) + ", trial " + std::to_string(c.trial) + ", commit " + c.commit;
    run.stages = job_steps(config_, data_dir_, run.worktree.string(), log_path(c, "job"));
    return start_run(c, run, *slurm_);
  }
  run.stages = local_stages(
      config_, data_dir_, slots_[c.slot].path.string(), rounds_->scale(gpu),
      [&](const std::string& command) { return sandbox_wrapper(c.slot, false, command); },
      [&](const std::string& name) { return log_path(c, name); });
  start_run(c, run, *executor_);
}

Run Engine::run_of(const Candidate& c) const {
  Run run;
  run.experiment = c.experiment;
  run.commit = c.commit;
  run.slot = c.slot;
  run.worktree = slots_[c.slot].path;
  run.logs_dir = state_.logs();
  run.last_stage = config_.stages.back().name;
  run.end_settings = EndSettings{config_.metric, config_.summary_keys};
  return run;
}

void Engine::start_run(Candidate& c, const Run& run, Executor& executor) {
  const int64_t key = c.key;
  const bool build = run.build.has_value();
  c.record.emplace(store_, c.experiment, c.repeat > 0, c.description, build);
  RunCallbacks callbacks;
  callbacks.group = [this, key](pid_t pgid) {
    if (Candidate* c = find(key)) c->record->group_started(pgid);
  };
  callbacks.step_started = [this, key](size_t index, const RunStep& step) {
    Candidate* c = find(key);
    if (!c) return;
    c->stage = index;
    not_running_on_throw(*c, [&] { c->record->step_started(index, step); });
  };
  callbacks.check_slot = [this, key]() -> std::string {
    Candidate* c = find(key);
    std::string bad;
    if (c) not_running_on_throw(*c, [&] { bad = tamper_check(*c); });
    return bad;
  };
  callbacks.ended = [this, key, build](const RunEnd& end) { on_run_end(key, build, end); };
  const std::string job_log = run.stages.empty() ? std::string() : run.stages.front().log.string();
  callbacks.job = [this, key, job_log](const std::string& job, const std::string& node) {
    if (Candidate* c = find(key)) c->record->job(c->trial, job, node, job_log);
  };
  callbacks.fatal = [this](const std::string& why) { fatal(why); };
  c.running = true;
  executor.start(run, std::move(callbacks));
}

void Engine::on_run_end(int64_t key, bool build, const RunEnd& end) {
  if (build) --builds_running_;
  Candidate* c = find(key);
  if (!c) return;
  c->running = false;
  c->record->ended();
  if (!build || end.kind != RunEnd::Kind::kOk) return end_run(*c, end);
  // Listed as the stages will see it: a build that made no build directory gets its empty one
  // now, not from the stage's sandbox, which would count as a change.
  c->build_listing = stat_listing(build_output(slots_[c->slot], config_.build_dir));
  c->phase = Phase::kBuilt;
  if (!c->repeat) store_.set_state(c->experiment, ExperimentState::kBuilt);
  schedule_pump();
}

void Engine::end_run(Candidate& c, const RunEnd& end) {
  using Kind = RunEnd::Kind;
  switch (end.kind) {
    case Kind::kMachineFault: return rerun(c, *end.fault);
    case Kind::kBuildFailed:
      if (proposer_.fixes_builds() && !c.baseline && !c.repeat && c.fix_round < config_.max_fix_attempts)
        proposals_->owe_fix(FixOwed{c.experiment, c.fix_round + 1, repo_->editable_files(c.commit, editable_)});
      return fail(c, status::kBuildFail, end.detail, end.log_tail, end.failure_detail);
    case Kind::kOk:
      if (end.summary) return measured(c, end);
      return fail(c, status::kCrash, "a run ended without a summary", end.log_tail);  // a build's kOk is handled by its caller
    default: return fail(c, final_status(end.kind), end.detail, end.log_tail);
  }
}

void Engine::measured(Candidate& c, const RunEnd& end) {
  const Summary& summary = *end.summary;
  const double v = end.value;
  const TrialFigures figures = trial_figures(summary);
  store_.end_trial(c.trial, "ok", figures.training_seconds, v, summary.to_json());
  store_.set_trial_steps(c.trial, figures.steps, figures.tokens);
  c.trial = 0;
  // The GPU is free for the next candidate while this one is decided.
  workers_[c.worker].candidate = 0;
  c.worker = -1;
  if (c.repeat) return end_repeat(c, "ok", figures.steps);
  store_.set_metrics(c.experiment, {v, figures.peak_vram_mb, figures.training_seconds, summary.to_json()});
  if (c.in_round) {
    c.in_round = false;
    rounds_->run_done(c.run_gpu, rounds_->scale(c.run_gpu), figures.steps);
  }
  decide(c, v);
  maybe_end_round();
  schedule_pump();
}

// ---------------------------------------------------------------- decisions

void Engine::decide(Candidate& c, double v) {
  // The evidence (judge.h): the runs of the candidate, of the commit it was
  // made against and of the best, under the boards' current calibration.
  const std::vector<TrialRow> trials = store_.trials(config_.tag);
  const auto row = store_.experiment(c.experiment);
  Evidence e =
      recorded_evidence(trials, rounds_->calibration(), c.commit, c.parent, best_commit_, row ? row->diff : "");
  e.metric = config_.metric;
  e.baseline = c.baseline;
  e.value = v;
  e.baseline_pending = baseline_pending_;
  e.round_holds = rounds_->holds();
  e.incumbent_pending = incumbent_pending();
  e.noise = decision_noise(trials);
  e.confirmations_done = c.confirmations;
  e.reapplies_done = c.reapplies;
  e.gpus = gpu_ids();
  const Ruling r = judge(e, keep_settings(config_));

  // The ruling applied: the store's decision line first, then the branch or the next run.
  switch (r.action) {
    case Action::defer:
      deferred_.push_back(c.key);
      c.phase = Phase::kMeasured;
      release(c);  // its slot and GPU; the decision needs no files
      return;
    case Action::remeasure:
      log_("#" + std::to_string(c.experiment) + " " + r.reason);
      c.pin_gpu.clear();
      c.phase = c.slot >= 0 ? Phase::kBuilt : Phase::kCommitted;
      return schedule_pump();
    case Action::confirm:
      store_.set_decision(c.experiment, r.reason, r.value);
      ++c.confirmations;
      c.purpose = purpose::kConfirm;
      c.pin_gpu = r.gpu;
      c.phase = c.slot >= 0 ? Phase::kBuilt : Phase::kCommitted;
      log_("#" + std::to_string(c.experiment) + " runs again" + (c.pin_gpu.empty() ? "" : " on GPU " + c.pin_gpu) + ": " +
           r.reason);
      return schedule_pump();
    case Action::reapply:
      store_.set_decision(c.experiment, r.reason, r.value);
      return reapply(c, *r.value);
    case Action::discard:
      ++since_round_;
      store_.set_decision(c.experiment, r.reason, r.value);
      return fail(c, status::kDiscarded, r.reason, file_tail(log_path(c, config_.stages.back().name)));
    case Action::keep:
      store_.set_decision(c.experiment, r.reason, r.value);
      if (c.baseline) {
        baseline_pending_ = false;
        // Its log line has always been "#1 kept: val_bpb 0.98"; the store's says "the baseline" too.
        keep(c, *r.value, config_.metric + " " + format_number(*r.value));
        return decide_deferred();  // candidates measured while the baseline ran, in order
      }
      ++since_round_;
      return keep(c, *r.value, r.reason);
  }
}

void Engine::decide_deferred() {
  std::vector<int64_t> waiting;
  waiting.swap(deferred_);
  for (int64_t key : waiting)
    if (Candidate* d = find(key)) {
      auto row = store_.experiment(d->experiment);
      if (row && row->val_bpb) decide(*d, *row->val_bpb);
    }
}

void Engine::reapply(Candidate& c, double v) {
  std::string tail = file_tail(log_path(c, config_.stages.back().name));
  std::ostringstream what;
  // It did better than the best it was measured against; whether it beats the
  // best of now is measured again on top of it.
  what << config_.metric << " " << v << " was measured on " << short_commit(c.parent)
       << ", an older best, and beat it (the best is now " << *best_val_ << ")";
  release(c);
  if (!move_onto_best(c, what.str(), tail)) return;
  c.phase = Phase::kCommitted;
  c.stage = 0;
  c.purpose.clear();
  c.pin_gpu.clear();
  c.confirmations = 0;
  schedule_pump();
}

bool Engine::move_onto_best(Candidate& c, const std::string& why, const std::string& log_tail) {
  GitRepo::CherryPick pick = repo_->cherry_pick(c.commit, best_commit_, exp_ref(c.experiment));
  if (pick.commit.empty()) {
    fail(c, status::kConflict,
         why + "; its change does not apply onto the best " + short_commit(best_commit_) + ": conflicts in " +
             join_list(pick.conflicts, 5),
         log_tail, "this change conflicts with the best commit:\n" + repo_->diff(c.parent, c.commit));
    return false;
  }
  store_.set_reapplied(c.experiment, pick.commit, best_commit_, repo_->diff(best_commit_, pick.commit));
  log_("#" + std::to_string(c.experiment) + " " + why + "; re-applied onto the best " + short_commit(best_commit_) +
       " as " + short_commit(pick.commit) + ", to be measured there");
  c.commit = pick.commit;
  c.parent = best_commit_;
  ++c.reapplies;
  return true;
}

void Engine::keep(Candidate& c, double v, const std::string& why) {
  std::string tail = file_tail(log_path(c, config_.stages.back().name));
  store_.finish(c.experiment, status::kKept, "", tail);
  breaker_.record_success();
  repo_->set_ref(branch_ref_, c.commit, "autoresearchd: keep #" + std::to_string(c.experiment));
  best_commit_ = c.commit;
  best_val_ = v;
  best_id_ = c.experiment;
  last_failure_.reset();
  // The keep rule's reasons say "kept: ..." themselves; the baseline's is its value alone.
  log_("#" + std::to_string(c.experiment) + " " + (why.rfind("kept: ", 0) == 0 ? why : "kept: " + why));
  release(c);
  erase(c.key);
  if (!rounds_->active()) top_up_incumbent();
  schedule_pump();
}

// ---------------------------------------------------------------- repeats

void Engine::add_repeat(const std::string& what, const std::string& gpu, bool in_round) {
  add({.experiment = best_id_, .repeat = ++next_repeat_, .parent = best_commit_, .commit = best_commit_,
       .description = what + " run of #" + std::to_string(best_id_), .purpose = what, .pin_gpu = gpu,
       .in_round = in_round});
}

void Engine::start_round(bool hold, const std::string& reason) {
  rounds_->begin(hold, reason);
  log_("noise round (" + reason + "): the best " + short_commit(best_commit_) + " on every GPU");
  for (const auto& w : workers_) {
    bool covered = false;  // the baseline is the first GPU's run of the start round
    for (const auto& [id, c] : candidates_) covered = covered || (c.baseline && c.in_round && c.pin_gpu == w.gpu);
    if (!covered) add_repeat(purpose::kNoise, w.gpu, true);
  }
}

void Engine::maybe_start_round() {
  if (!config_.noise.rounds || baseline_pending_ || rounds_->active() || !best_id_) return;
  const std::string why = round_due(*rounds_, since_round_, now_seconds(), config_.noise.every, config_.noise.max_age_s);
  if (!why.empty()) start_round(false, why);
}

void Engine::maybe_end_round() {
  if (!rounds_->complete()) return;
  const RoundEnd end = end_round(*rounds_, store_.trials(config_.tag), now_seconds());
  if (!end.warning.empty()) log_("warning: " + end.warning);
  store_.add_noise_estimate(config_.tag, end.row);
  if (!end.log_line.empty()) log_(end.log_line);
  if (!end.next_round.empty()) return start_round(true, end.next_round);
  since_round_ = 0;
  decide_deferred();
  top_up_incumbent();
}

void Engine::top_up_incumbent() {
  if (!config_.noise.rounds || baseline_pending_ || !best_id_) return;
  const std::vector<TrialRow> trials = store_.trials(config_.tag);
  std::vector<std::string> used = gpus_of(trials, best_commit_, rounds_->calibration());
  for (const auto& [id, c] : candidates_)
    if (c.repeat && c.commit == best_commit_) used.push_back(c.pin_gpu);  // on its way
  for (const auto& gpu : incumbent_rerun_gpus(gpu_ids(), used)) add_repeat(purpose::kIncumbent, gpu, false);
}

void Engine::end_repeat(Candidate& c, const std::string& final_status, std::optional<long> steps) {
  if (c.trial) store_.end_trial(c.trial, final_status, std::nullopt, std::nullopt, "");
  c.trial = 0;
  if (c.in_round) rounds_->run_done(c.run_gpu, rounds_->scale(c.run_gpu), final_status == "ok" ? steps : std::nullopt);
  if (final_status == "ok" && c.commit == best_commit_)
    if (auto mean = best_mean(store_.trials(config_.tag), best_commit_, rounds_->calibration())) {
      best_val_ = mean;
      store_.set_decision(best_id_, store_.decision(best_id_), best_val_);
    }
  if (final_status != "ok")
    log_(c.description + " on GPU " + c.run_gpu + ": " + final_status);
  release(c);
  erase(c.key);
  maybe_end_round();
  if (!incumbent_pending()) decide_deferred();
  schedule_pump();
}

bool Engine::incumbent_pending() const {
  for (const auto& [id, c] : candidates_)
    if (c.repeat && c.purpose == purpose::kIncumbent && c.commit == best_commit_) return true;
  return false;
}

bool Engine::may_train(const Candidate& c, const Worker& w) const {
  if (!c.repeat && !c.baseline && rounds_->holds()) return false;  // a round measures the best first
  return c.pin_gpu.empty() || c.pin_gpu == w.gpu;
}

std::optional<NoiseEstimate> Engine::decision_noise(const std::vector<TrialRow>& trials) const {
  return noise_status(trials, rounds_->noise_from(), config_.noise.prior_sigma, config_.noise.z).used;
}

void Engine::fail(Candidate& c, const std::string& final_status, const std::string& error, const std::string& log_tail,
                  const std::string& failure_detail) {
  if (c.repeat) return end_repeat(c, final_status, std::nullopt);
  if (c.trial) store_.end_trial(c.trial, final_status, std::nullopt, std::nullopt, "");
  const bool fatal_baseline = record_end(c.experiment, c.baseline, final_status, error, log_tail, failure_detail);
  // What a tampered experiment's children could reach is not trusted: its build output goes too,
  // and a ref it moved (possible unconfined) is put back, or every later experiment would be tampered.
  if (final_status == status::kTampered) {
    if (c.slot >= 0) slots_[c.slot].discard_build = true;
    restore_refs(c);
  }
  const int64_t id = c.experiment;
  release(c);
  erase(c.key);
  if (fatal_baseline)
    return fatal("the baseline #" + std::to_string(id) + " failed (" + final_status + ")" + (error.empty() ? "" : ": " + error));
  schedule_pump();
}

bool Engine::record_end(int64_t id, bool baseline, const std::string& final_status, const std::string& error,
                        const std::string& log_tail, const std::string& failure_detail) {
  store_.finish(id, final_status, error, log_tail);
  breaker_.record_end(final_status, error);
  if (auto told = failure_to_tell(final_status, error, log_tail, failure_detail)) last_failure_ = std::move(told);
  // A failed baseline stops the daemon: its fatal line says all of this, so it is logged once.
  const bool fatal_baseline = baseline && final_status != status::kInterrupted;
  if (!fatal_baseline) log_("#" + std::to_string(id) + " " + final_status + (error.empty() ? "" : ": " + error));
  return fatal_baseline;
}

void Engine::release(Candidate& c) {
  if (c.worker >= 0) workers_[c.worker].candidate = 0;
  c.worker = -1;
  const int slot = std::exchange(c.slot, -1);
  if (slot >= 0) {
    slots_[slot].holder = 0;
    // Nothing a child left outlives it. A slot that cannot be made clean on a full disk is reset
    // again before its next use; otherwise the daemon stops rather than run in it.
    if (std::string e = reset_slot(slot, best_commit_); !e.empty()) {
      if (slot_fault(slots_[slot], config_.repo)) log_("warning: cannot reset a worktree to the best yet: " + e);
      else fatal("cannot reset a worktree to the best: " + e);
    }
  }
}

// ---------------------------------------------------------------- helpers

std::vector<std::string> Engine::sandbox_wrapper(int slot, bool build, const std::string& command) const {
  return slot_sandbox(slots_[slot], config_.sandbox, state_.root / "scratch" / std::to_string(slot), config_.build_dir,
                      build, data_dir_, command);
}

std::string Engine::tamper_check(const Candidate& c) {
  std::vector<std::string> bad = slot_differences(slots_[c.slot], c.commit, config_.build_dir, c.build_listing);
  if (repo_->ref_target(branch_ref_) != best_commit_) bad.push_back("autoresearch/" + config_.tag + " (moved)");
  if (repo_->ref_target(exp_ref(c.experiment)) != c.commit) bad.push_back(exp_ref(c.experiment) + " (moved)");
  if (bad.empty()) return "";
  return "the worktree differs from the experiment's commit: " + join_list(bad, 10);
}

void Engine::restore_refs(const Candidate& c) {
  try {
    if (repo_->ref_target(branch_ref_) != best_commit_) {
      repo_->set_ref(branch_ref_, best_commit_, "autoresearchd: put back after a tampered experiment");
      log_("autoresearch/" + config_.tag + " was moved by #" + std::to_string(c.experiment) + "; put back at " +
           short_commit(best_commit_));
    }
    if (!c.commit.empty() && repo_->ref_target(exp_ref(c.experiment)) != c.commit)
      repo_->set_ref(exp_ref(c.experiment), c.commit, "autoresearchd: put back after a tampered experiment");
  } catch (const GitError& e) {
    log_(std::string("warning: cannot put a moved ref back: ") + e.what());
  }
}

std::string Engine::reset_slot(int slot, const std::string& commit) {
  return ard::reset_slot(slots_[slot], *repo_, commit, config_.build_dir, log_);
}

std::filesystem::path Engine::log_path(const Candidate& c, const std::string& name) const {
  return state_.logs() / log_file_name(c.experiment, c.repeat, c.reapplies, c.confirmations, c.purpose, name);
}

std::string Engine::exp_ref(int64_t id) const {
  return "refs/autoresearch/" + config_.tag + "/exp/" + std::to_string(id);
}

std::vector<std::string> Engine::gpu_ids() const {
  std::vector<std::string> ids;
  for (const auto& w : workers_) ids.push_back(w.gpu);
  return ids;
}

Candidate* Engine::find(int64_t key) {
  auto it = candidates_.find(key);
  return it == candidates_.end() ? nullptr : &it->second;
}

Candidate& Engine::add(Candidate c) {
  c.key = ++next_key_;
  return candidates_[c.key] = std::move(c);
}

void Engine::erase(int64_t key) { candidates_.erase(key); }

}  // namespace ard
