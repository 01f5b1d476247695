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

#include <boost/asio/post.hpp>

#include "daemon/decide/keep_rule.h"
#include "daemon/decide/promotion.h"
#include "daemon/decide/run_evidence.h"
#include "daemon/decide/summary.h"
#include "daemon/duration.h"
#include "daemon/engine/judge.h"
#include "daemon/engine/restart.h"
#include "daemon/engine/local_executor.h"
#include "daemon/engine/run_plan.h"
#include "daemon/engine/slurm_run_executor.h"
#include "daemon/fatal_error.h"
#include "daemon/program_file.h"
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
      workspace_(config, state, log),
      signals_(io, SIGTERM, SIGINT),
      stop_deadline_(io),
      store_watch_(io, store, kStoreCheckS,
                   [this](const std::string& problem) {
                     store_lost_ = true;
                     fatal(problem + "; stopping so nothing is written to the lost file");
                   }),
      gpus_(gpus.empty() ? std::vector<std::string>{""} : std::move(gpus)),
      training_(gpus_.size(), 0),
      faults_(io, config.retry_wait_s, [this] { schedule_pump(); }),
      repeats_(config, gpus_),
      mailbox_(std::make_shared<Mailbox>(io)),
      proposals_(std::make_unique<Proposals>(io, config, store, proposer, log,
                                             [this](const ProposalOutcome& o) { on_proposal(o); },
                                             [this] { schedule_pump(); })),
      executor_(executor ? std::move(executor) : std::make_unique<LocalExecutor>(io)) {}

Engine::~Engine() { mailbox_->close(); }

int Engine::run() {
  state_.create();
  workspace_.open();
  proposals_->open(workspace_.repo());
  // SIGTERM and SIGINT are taken from here on: the slots' checkouts look at them in between,
  // which take seconds with many GPUs and a deep lookahead.
  signals_.async_wait([this](const boost::system::error_code& e, int sig) {
    if (!e) on_signal(sig);
  });
  start_ = settle_start(store_, workspace_.repo(), config_, state_.root, slurm_env(env_), rebase_, log_);
  best_ = {start_.chain.best_id, start_.chain.best, start_.chain.best_val};
  if (config_.executor == ExecutorKind::kSlurm)
    slurm_ = std::make_unique<SlurmRunExecutor>(io_, config_, slurm_env(env_), log_, state_.root / "slurm");
  // One slot a GPU trains in, one for each candidate built ahead, and one per GPU for the
  // repeat runs (a noise round needs slots while candidates hold theirs). A signal that came
  // meanwhile is handled between checkouts (the loop holds nothing else yet).
  const size_t slots = gpus_.size() * (2 + static_cast<size_t>(config_.lookahead));
  if (!workspace_.open_slots(slots, best_.commit, [this] {
        io_.poll();
        return stopping_;
      })) {
    io_.run();  // stopped during the checkouts: nothing began; the stop finishes on the loop
    return proposals_->threads_inside();
  }
  session_ = open_session(store_, config_, best_.commit, proposer_.name(), gpus_, [this](const std::string& line) {
    log_(line);
  });
  if (!config_.data.enabled) asio::post(io_, [this] { begin(); });
  else  // the data step first, on a thread of its own
    data_.start(
        config_, workspace_.slot(0).path, state_, log_, store_,
        [box = mailbox_](std::function<void()> f) { box->post(std::move(f)); },
        [this](const std::string& dir, const std::string& error) {
          if (stopping_) return maybe_finish_stop();
          if (!error.empty()) return fatal(error);
          data_dir_ = dir;
          store_.set_session_data_dir(session_, data_dir_);
          begin();
        });
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

void Engine::begin() {
  if (stopping_) return;
  started_ = true;
  const bool need_baseline = baseline_due(store_.experiments(config_.tag), start_.chain.rebased);
  if (need_baseline) {
    best_.id = record_baseline(workspace_.repo(), store_, config_.tag, start_.chain,
                               read_program_file(config_.repo / config_.program, config_.max_program_bytes).content);
    add({.experiment = best_.id, .baseline = true, .parent = best_.commit, .commit = best_.commit,
         .description = "baseline", .purpose = purpose::kBaseline, .pin_gpu = gpus_.front(),
         .in_round = config_.noise.rounds});
    baseline_pending_ = true;
    log_("#" + std::to_string(best_.id) + " baseline at " + short_commit(best_.commit));
  }
  repeats_.rounds().restore(store_.last_noise_estimate(config_.tag));
  promotion_check_ = true;  // a round the last session left in progress resumes
  // At start the incumbent runs on every GPU at once (the baseline is the first
  // GPU's run when there is one); new candidates wait for the round.
  if (config_.noise.rounds) start_round(true, need_baseline ? "start (baseline)" : "start");
  // The experiments the last session left interrupted are candidates again; one with finished
  // runs is ruled on by the judge as it would have been (it defers while a round holds).
  const auto log = [this](const std::string& line) { log_(line); };
  for (const Resume& r : std::exchange(start_.resumes, {}))
    if (auto taken = take_up(r, store_, workspace_.repo(), workspace_.exp_ref(r.id), log)) {
      Candidate& c = add(std::move(*taken));
      if (r.runs > 0 && r.last_value) decide(c, *r.last_value);
    }
  schedule_pump();
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
  data_.stop();
  faults_.cancel();
  store_watch_.stop();
  std::vector<std::string> waits = running_work(candidates_, config_.stages, slurm_ != nullptr);
  executor_->stop_all();
  if (slurm_) slurm_->stop_all();
  if (slurm_ && slurm_->active()) waits.push_back("the Slurm jobs' cancellation");
  if (data_.running()) waits.push_back("the data step");
  if (proposals_->running() > 0)
    waits.push_back(std::to_string(proposals_->running()) + " proposal call(s) (at most " + format_number(kProposalGraceS) +
                    " s)");
  // `stop` prints this line: what the daemon waits for before it exits.
  log_("stopping: waiting for " + (waits.empty() ? std::string("nothing") : join_list(waits, 10)));
  stop_deadline_.expires_after(steady_seconds(kProposalGraceS));
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
  if (data_.running() || proposals_->running() > 0) return;
  stop_deadline_.cancel();
  if (store_lost_) {  // nothing can be recorded: the next start's reconcile has nothing of this session
    log_.file_only(stop_reason_);
    signals_.cancel();
    return io_.stop();
  }
  for (int64_t key : keys_of(candidates_)) {
    Candidate& c = candidates_[key];
    const char* where = c.phase == Phase::kMeasured ? "stopped while its decision waited for runs of the best"
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
  if (promotion_check_) maybe_start_promotion();
  start_trainings();
  start_builds();
  request_proposals();
}

// ---------------------------------------------------------------- proposals

void Engine::show_pause(const std::string& reason) {
  if (reason == paused_) return;
  paused_ = reason;
  store_.set_session_paused(session_, reason);
}

void Engine::pause_proposals(const std::string& reason, double until) {
  if (reason != paused_) {
    show_pause(reason);
    if (!reason.empty()) log_(reason);
  }
  if (!reason.empty()) proposals_->block(std::max(0.0, until - now_seconds()));
}

// ---------------------------------------------------------------- the machine's faults

void Engine::environment_fault(const EnvironmentFault& fault) {
  paused_ = faults_.hold(fault);
  log_(paused_);
  try {
    store_.set_session_paused(session_, paused_);
  } catch (const EnvironmentFault&) {
    // The store is what failed: daemon.log has the line.
  }
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
  for (int64_t key : keys_of(candidates_)) {
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
  switch (faults_.now()) {
    case FaultHold::Now::kFree: return true;
    case FaultHold::Now::kHeld: return false;
    case FaultHold::Now::kProbeFailed:
      environment_fault(*faults_.fault());  // held again, backed off
      return false;
    case FaultHold::Now::kCleared: break;
  }
  log_("resumed: the fault cleared");
  pause_proposals("", 0);
  proposals_->replay_held();
  return !stopping_ && !faults_.active();  // a held commit may have met the fault again
}

void Engine::request_proposals() {
  if (proposals_->blocked()) return;
  // The breaker: experiments that keep failing the same way cost no more calls.
  if (auto p = proposals_->breaker_pause()) return pause_proposals(proposals_->breaker_line(), p->until);
  // An editor's save may remove program.md for a moment: never propose without it.
  ProgramFile program = read_program_file(config_.repo / config_.program, config_.max_program_bytes);
  if (!program.ok())
    return pause_proposals("paused: " + program.message + "; waiting for it", now_seconds() + config_.retry_wait_s);
  if (!paused_.empty() && proposals_->running() == 0) pause_proposals("", 0);
  const size_t target = gpus_.size() * (1 + static_cast<size_t>(config_.lookahead));
  const int limit = proposer_.concurrent() ? static_cast<int>(gpus_.size()) : 1;
  // The content checked above is the one every proposal of this round records and sends:
  // the file is read once, never again after the check.
  while (candidates_.size() + proposals_->pending() < target && proposals_->running() < limit)
    proposals_->ask(ask_context(program.content));
}

AskContext Engine::ask_context(const std::string& program) const {
  AskContext a;
  a.program = program;
  a.parent = best_.commit;
  a.in_flight = in_flight_history(candidates_);
  a.best_value = best_.value;
  if (auto noise = repeats_.decision_noise(store_.trials(config_.tag))) a.noise_note = noise_note(config_.noise.z, *noise);
  return a;
}

void Engine::on_proposal(const ProposalOutcome& o) {
  using Kind = ProposalOutcome::Kind;
  if (stopping_ || o.kind == Kind::kStopped) return schedule_pump();
  if (o.kind == Kind::kFatal) return fatal("proposer: " + o.error);
  if (o.kind == Kind::kHeld) {
    log_("#" + std::to_string(o.experiment) + " cannot be committed now; it is committed once the fault clears");
    return environment_fault(*o.fault);
  }
  if (o.kind == Kind::kWaiting && o.wait->pauses) show_pause(o.wait->message);
  const bool bad_edit = o.kind == Kind::kEnded && o.final_status == status::kProposerError;
  if (o.kind != Kind::kWaiting && !bad_edit && !paused_.empty()) pause_proposals("", 0);  // an answer ends a wait
  // While it waits, the GPUs it leaves idle may promote what was kept (a round is due with one change).
  if (o.kind == Kind::kWaiting) {
    if (proposer_waits_.empty()) promotion_check_ = true;
    proposer_waits_ = o.wait->message;
  } else if (o.kind == Kind::kCommitted || o.kind == Kind::kEnded) {
    proposer_waits_.clear();
  }
  if (o.kind == Kind::kCommitted) {
    add({.experiment = o.experiment, .parent = o.parent, .commit = o.commit, .description = o.description,
         .fix_round = o.fix_round});
    log_("#" + std::to_string(o.experiment) + " " + short_commit(o.commit) + " " + o.description +
         (o.fix_round ? " (fix " + std::to_string(o.fix_round) + " of #" + std::to_string(o.fix_of) + ")" : ""));
  }
  schedule_pump();
}

// ---------------------------------------------------------------- builds

void Engine::built_in_job(Candidate& c) {
  c.phase = Phase::kBuilt;
  if (!c.repeat) store_.set_state(c.experiment, ExperimentState::kBuilt);
  schedule_pump();
}

void Engine::start_builds() {
  for (int64_t key : build_order(candidates_)) {
    if (builds_running_ >= config_.max_builds) return;
    Candidate* c = find(key);
    if (!c || c->phase != Phase::kCommitted) continue;
    int slot = free_slot(workspace_.slots());
    if (slot < 0) return;
    start_build(*c, slot);
  }
}

void Engine::start_build(Candidate& c, int slot) {
  // A candidate made against an older best is moved onto the best of the
  // moment before it is built, so it is measured against what it must beat.
  if (!c.baseline && !c.repeat && c.parent != best_.commit &&
      !move_onto_best(c, "made against " + short_commit(c.parent), ""))
    return;
  c.slot = slot;
  c.build_listing.reset();
  workspace_.slot(slot).holder = c.key;
  if (std::string e = workspace_.reset(slot, c.commit); !e.empty()) {
    if (auto fault = slot_fault(workspace_.slot(slot), config_.repo)) return rerun(c, *fault);
    return fatal("cannot check out a candidate: " + e);
  }
  if (slurm_ && config_.slurm.build == SlurmBuild::kJob) return built_in_job(c);
  Run run = run_of(c);
  run.purpose = "build";
  run.env = env_;
  run.build = build_step(config_, static_cast<size_t>(c.rung),
                         workspace_.sandbox(slot, true, data_dir_, config_.build_command), log_path(c, "build"));
  start_run(c, run, *executor_);
  // After start: a store write that failed in its first step leaves c committed in its slot (recover).
  c.phase = Phase::kBuilding;
  ++builds_running_;
}

// ---------------------------------------------------------------- training

void Engine::start_trainings() {
  for (size_t w = 0; w < gpus_.size(); ++w) {
    if (training_[w]) continue;
    // promote.gpus: the last workers train the promotion runs, the others never do.
    const bool rungs_here = config_.promote.gpus <= 0 || w + static_cast<size_t>(config_.promote.gpus) >= gpus_.size();
    Candidate* next = find(next_to_train(candidates_, gpus_[w], repeats_.rounds().holds(), rungs_here));
    if (!next) continue;
    next->phase = Phase::kTraining;
    next->worker = static_cast<int>(w);
    next->stage = 0;
    next->run_gpu = gpus_[w];
    training_[w] = next->key;
    if (!next->repeat) store_.set_gpu(next->experiment, gpus_[w]);
    const std::string run_purpose = trial_purpose(next->purpose, next->reapplies);
    next->trial = store_.begin_trial(next->experiment, config_.tag, gpus_[w], run_purpose,
                                     next->commit, repeats_.rounds().scale(gpus_[w]), repeats_.rounds().calibration(),
                                     next->rung);
    start_stages(*next);
    if (stopping_) return;
  }
}

void Engine::start_stages(Candidate& c) {
  const std::string& gpu = gpus_[c.worker];
  Run run = run_of(c);
  run.trial = c.trial;
  run.gpu = gpu;
  run.purpose = trial_purpose(c.purpose, c.reapplies);
  run.env = child_env(env_, gpu);
  if (slurm_) {  // one job, one log; the scheduler's node confines it, not the sandbox
    run.env.clear();  // the job's environment is the Slurm client's (slurm_env)
    run.name = "ard-" + config_.tag + "-" + std::to_string(c.experiment) + "-t" + std::to_string(c.trial);
    run.title = "experiment " + std::to_string(c.experiment) + ", trial " + std::to_string(c.trial) + ", commit " + c.commit;
    run.stages = job_steps(config_, static_cast<size_t>(c.rung), data_dir_, run.worktree.string(), log_path(c, "job"));
    return start_run(c, run, *slurm_);
  }
  run.stages = local_stages(
      config_, static_cast<size_t>(c.rung), data_dir_, workspace_.slot(c.slot).path.string(), repeats_.rounds().scale(gpu),
      [&](const std::string& command) { return workspace_.sandbox(c.slot, false, data_dir_, command); },
      [&](const std::string& name) { return log_path(c, name); });
  start_run(c, run, *executor_);
}

Run Engine::run_of(const Candidate& c) const {
  Run run;
  run.experiment = c.experiment;
  run.commit = c.commit;
  run.slot = c.slot;
  run.worktree = workspace_.slot(c.slot).path;
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
    if (c)
      not_running_on_throw(*c, [&] {
        bad = workspace_.tamper_check(c->slot, c->experiment, c->commit, c->build_listing, best_.commit);
      });
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
  else promotion_check_ = true;  // `autoresearchd promote` is taken up at a run's end
  Candidate* c = find(key);
  if (!c) return;
  c->running = false;
  c->record->ended();
  if (!build || end.kind != RunEnd::Kind::kOk) return end_run(*c, end);
  // Listed as the stages will see it: a build that made no build directory gets its empty one
  // now, not from the stage's sandbox, which would count as a change.
  c->build_listing = stat_listing(build_output(workspace_.slot(c->slot), config_.build_dir));
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
        proposals_->owe_fix(FixOwed{c.experiment, c.fix_round + 1, workspace_.repo().editable_files(c.commit, editable_)});
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
  if (c.rung > 0)  // the larger model must really have run: its size against the rung-0 run's
    if (std::string bad = rung_size_check(model_size(store_.experiment(c.experiment).value_or(ExperimentRow{}).summary_json),
                                          model_size(summary),
                                          rung_at(config_, c.rung).depth_scale);
        !bad.empty())
      return fail(c, status::kTampered, "at rung " + std::to_string(c.rung) + ": " + bad, end.log_tail);
  store_.end_trial(c.trial, "ok", figures.training_seconds, v, summary.to_json());
  store_.set_trial_steps(c.trial, figures.steps, figures.tokens);
  c.trial = 0;
  // The GPU is free for the next candidate while this one is decided.
  training_[c.worker] = 0;
  c.worker = -1;
  if (c.rung > 0) return end_rung_run(c, "ok");
  if (c.repeat) return end_repeat(c, "ok", figures.steps);
  store_.set_metrics(c.experiment, {v, figures.peak_vram_mb, figures.training_seconds, summary.to_json()});
  repeats_.run_done(c, figures.steps);
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
      recorded_evidence(trials, repeats_.rounds().calibration(), c.commit, c.parent, best_.commit, row ? row->diff : "");
  e.metric = config_.metric;
  e.baseline = c.baseline;
  e.value = v;
  e.baseline_pending = baseline_pending_;
  e.round_holds = repeats_.rounds().holds();
  e.incumbent_pending = RepeatRuns::incumbent_pending(candidates_, best_.commit);
  e.noise = repeats_.decision_noise(trials);
  e.confirmations_done = c.confirmations;
  e.reapplies_done = c.reapplies;
  e.gpus = gpus_;
  const Ruling r = judge(e, keep_settings(config_));

  // The ruling applied: the store's decision line first, then the branch or the next run.
  if (r.action != Action::defer && r.action != Action::remeasure) store_.set_decision(c.experiment, r.reason, r.value);
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
      ++c.confirmations;
      c.purpose = purpose::kConfirm;
      c.pin_gpu = r.gpu;
      c.phase = c.slot >= 0 ? Phase::kBuilt : Phase::kCommitted;
      log_("#" + std::to_string(c.experiment) + " runs again" + (c.pin_gpu.empty() ? "" : " on GPU " + c.pin_gpu) + ": " +
           r.reason);
      return schedule_pump();
    case Action::reapply: return reapply(c, *r.value);
    case Action::discard:
      repeats_.decided();
      return fail(c, status::kDiscarded, r.reason, file_tail(log_path(c, config_.stages.back().name)));
    case Action::keep:
      if (c.baseline) {
        baseline_pending_ = false;
        // Its log line has always been "#1 kept: val_bpb 0.98"; the store's says "the baseline" too.
        keep(c, *r.value, config_.metric + " " + format_number(*r.value));
        return decide_deferred();  // candidates measured while the baseline ran, in order
      }
      repeats_.decided();
      return keep(c, *r.value, r.reason);
  }
}

void Engine::decide_deferred() {
  if (stopping_) return;  // a run the stop ended is no evidence: the waiting stay undecided
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
  // It did better than the best it was measured against; whether it beats the
  // best of now is measured again on top of it.
  const std::string what = config_.metric + " " + format_number(v) + " was measured on " + short_commit(c.parent) +
                           ", an older best, and beat it (the best is now " + format_number(*best_.value) + ")";
  release(c);
  if (!move_onto_best(c, what, tail)) return;
  c.phase = Phase::kCommitted;
  c.stage = 0;
  c.purpose.clear();
  c.pin_gpu.clear();
  c.confirmations = 0;
  schedule_pump();
}

bool Engine::move_onto_best(Candidate& c, const std::string& why, const std::string& log_tail) {
  GitRepo& repo = workspace_.repo();
  GitRepo::CherryPick pick = repo.cherry_pick(c.commit, best_.commit, workspace_.exp_ref(c.experiment));
  if (pick.commit.empty()) {
    fail(c, status::kConflict,
         why + "; its change does not apply onto the best " + short_commit(best_.commit) + ": conflicts in " +
             join_list(pick.conflicts, 5),
         log_tail, "this change conflicts with the best commit:\n" + repo.diff(c.parent, c.commit));
    return false;
  }
  store_.set_reapplied(c.experiment, pick.commit, best_.commit, repo.diff(best_.commit, pick.commit));
  log_("#" + std::to_string(c.experiment) + " " + why + "; re-applied onto the best " + short_commit(best_.commit) +
       " as " + short_commit(pick.commit) + ", to be measured there");
  c.commit = pick.commit;
  c.parent = best_.commit;
  ++c.reapplies;
  return true;
}

void Engine::keep(Candidate& c, double v, const std::string& why) {
  std::string tail = file_tail(log_path(c, config_.stages.back().name));
  proposals_->record_end(c.experiment, status::kKept, "", tail, "");
  workspace_.repo().set_ref(workspace_.branch_ref(), c.commit, "autoresearchd: keep #" + std::to_string(c.experiment));
  best_ = {c.experiment, c.commit, v};
  // The keep rule's reasons say "kept: ..." themselves; the baseline's is its value alone.
  log_("#" + std::to_string(c.experiment) + " " + (why.rfind("kept: ", 0) == 0 ? why : "kept: " + why));
  release(c);
  erase(c.key);
  if (!repeats_.rounds().active()) top_up_incumbent();
  promotion_check_ = true;
  schedule_pump();
}

// ---------------------------------------------------------------- repeats

void Engine::start_round(bool hold, const std::string& reason) {
  log_("noise round (" + reason + "): the best " + short_commit(best_.commit) + " on every GPU");
  for (Candidate& run : repeats_.begin_round(hold, reason, best_, candidates_)) add(std::move(run));
}

void Engine::maybe_start_round() {
  if (baseline_pending_) return;
  if (std::string why = repeats_.due(best_, now_seconds()); !why.empty()) start_round(false, why);
}

void Engine::maybe_end_round() {
  const auto end = repeats_.end_if_complete(store_.trials(config_.tag), now_seconds());
  if (!end) return;
  if (!end->warning.empty()) log_("warning: " + end->warning);
  store_.add_noise_estimate(config_.tag, end->row);
  if (!end->log_line.empty()) log_(end->log_line);
  if (!end->next_round.empty()) return start_round(true, end->next_round);
  decide_deferred();
  top_up_incumbent();
}

void Engine::top_up_incumbent() {
  if (baseline_pending_) return;
  for (Candidate& run : repeats_.incumbent_runs(store_.trials(config_.tag), best_, candidates_))
    add(std::move(run));
}

void Engine::end_repeat(Candidate& c, const std::string& final_status, std::optional<long> steps) {
  if (c.trial) store_.end_trial(c.trial, final_status, std::nullopt, std::nullopt, "");
  c.trial = 0;
  repeats_.run_done(c, final_status == "ok" ? steps : std::nullopt);
  if (final_status == "ok" && c.commit == best_.commit)
    if (auto mean = best_mean(store_.trials(config_.tag), best_.commit, repeats_.rounds().calibration())) {
      best_.value = mean;
      store_.set_decision(best_.id, store_.decision(best_.id), best_.value);
    }
  if (final_status != "ok")
    log_(c.description + " on GPU " + c.run_gpu + ": " + final_status);
  release(c);
  erase(c.key);
  maybe_end_round();
  if (!RepeatRuns::incumbent_pending(candidates_, best_.commit)) decide_deferred();
  schedule_pump();
}

// ---------------------------------------------------------------- promotion

std::vector<double> Engine::rung_budgets() const {
  std::vector<double> budgets;
  for (const RungConfig& r : config_.rungs) budgets.push_back(r.budget_s);
  return budgets;
}

void Engine::maybe_start_promotion() {
  promotion_check_ = false;
  if (promotion_ || config_.rungs.size() < 2 || baseline_pending_ || !best_.id || stopping_) return;
  if (best_.commit == promotion_failed_at_) return;  // its reference failed at the rung: not again before a keep
  std::vector<PromotionRoundRow> rounds = store_.promotion_rounds(config_.tag);
  std::optional<PromotionRoundRow> open;
  for (const PromotionRoundRow& r : rounds)
    if (!r.ended_at) {
      open = r;
      break;
    }
  const std::vector<ExperimentRow> rows = store_.experiments(config_.tag);
  ChainLink base{0, start_.chain.base};
  for (const ExperimentRow& row : rows)
    if (row.is_baseline && row.commit == base.commit) base.experiment = row.id;
  if (!base.experiment) return;  // no baseline of this base yet
  const auto path = workspace_.repo().first_parent_path(base.commit, best_.commit);
  bool rung0_busy = false;  // a GPU idles only once the proposer waits and nothing at rung 0 is left
  for (const auto& [key, c] : candidates_) rung0_busy |= c.rung == 0;
  RoundPlanInput in{.chain = chain_links(base, path.value_or(std::vector<std::string>{}), rows),
                    .labels = store_.current_change_labels(config_.tag),
                    .trials = store_.trials(config_.tag),
                    .every = config_.promote.every,
                    .max_share = config_.promote.max_share,
                    .open = open,
                    .proposer_waits = rung0_busy ? std::string() : proposer_waits_,
                    .calibration = repeats_.rounds().calibration()};
  in.rung_budgets_s = rung_budgets();
  if (std::optional<RoundPlan> plan = plan_round(in)) {
    const int64_t id = store_.start_promotion_round(open ? open->id : 0, config_.tag, plan->rung, plan->why);
    promotion_.emplace(id, plan->rung, plan->reference, std::move(plan->stack));
    log_("promotion round at rung " + std::to_string(plan->rung) + " (" +
         config_.rungs[static_cast<size_t>(plan->rung)].name + "): " + std::to_string(promotion_->stack().size()) +
         " kept change(s) against #" + std::to_string(plan->reference.experiment) + "; " + plan->why);
    return advance_promotion();
  }
  // A round left in progress with nothing left to promote ends; one asked for waits for a kept change
  // (or for the share under promote.max_share).
  if (open && open->started_at)
    store_.end_promotion_round(open->id, "nothing left to promote at rung " + std::to_string(open->rung));
}

void Engine::advance_promotion() {
  if (!promotion_ || stopping_) return;
  std::map<std::string, int> in_flight;
  for (const auto& [key, c] : candidates_)
    if (c.rung == promotion_->rung()) ++in_flight[c.commit];
  const std::vector<TrialRow> trials = store_.trials(config_.tag);
  const int waiting = kept_changes_waiting(store_.experiments(config_.tag), store_.current_change_labels(config_.tag),
                                           promotion_->rung(), promotion_->stack());
  const int room =
      confirmation_room(trials, rung_budgets(), promotion_->rung(), config_.promote.max_share, waiting);
  const std::vector<RungRunWanted> wanted = promotion_->advance(trials, repeats_.rounds().calibration(),
                                                                keep_settings(config_), in_flight, room);
  for (const std::string& line : promotion_->take_lines()) log_(line);
  const int rung = promotion_->rung();
  for (const RungRunWanted& w : wanted)
    for (int i = 0; i < w.runs; ++i)
      add({.experiment = w.experiment, .repeat = ++promotion_runs_, .parent = w.commit, .commit = w.commit,
           .description = "#" + std::to_string(w.experiment) + " at rung " + std::to_string(rung) + " (" +
                          config_.rungs[static_cast<size_t>(rung)].name + ")",
           .purpose = purpose::kPromote, .rung = rung});
  if (!promotion_->done()) return schedule_pump();
  // The labels first, then the round's end: a round killed between the two is replayed at the next start.
  if (promotion_->aborted().empty())
    for (const auto& [experiment, label] : promotion_->labels()) {
      store_.add_change_label({0, experiment, rung, to_string(label.kind), evidence_json(label.evidence), 0});
      if (label.kind == LabelKind::kScaleBound && config_.promote.on_fail == PromoteOnFail::kRevert)
        propose_revert(experiment, rung);
    }
  if (!promotion_->aborted().empty()) promotion_failed_at_ = best_.commit;
  // Its runs not started yet are not needed; those training end as they will (their trials count in a later round).
  for (int64_t key : keys_of(candidates_))
    if (Candidate& c = candidates_[key]; c.rung > 0 && !c.running && c.phase != Phase::kTraining) {
      release(c);
      erase(key);
    }
  const std::string outcome = promotion_->outcome();
  store_.end_promotion_round(promotion_->id(), outcome);
  log_("promotion round at rung " + std::to_string(rung) + " done: " + outcome);
  promotion_.reset();
  promotion_check_ = true;  // the next rung's round may be due now
  schedule_pump();
}

void Engine::propose_revert(int64_t experiment, int rung) {
  const auto row = store_.experiment(experiment);
  if (!row || row->commit.empty()) return;
  const std::string what = "#" + std::to_string(experiment) + " is scale-bound at " + config_.rungs[static_cast<size_t>(rung)].name;
  GitRepo::CherryPick undo = workspace_.repo().revert(
      row->commit, best_.commit, "Revert #" + std::to_string(experiment) + ": " + row->description + "\n\n" + what + "\n");
  if (undo.commit.empty())
    return log_(what + "; its revert does not apply onto the best " + short_commit(best_.commit) + ": conflicts in " +
                join_list(undo.conflicts, 5));
  // A try (`autoresearchd try`): the next experiment takes it, and the judge decides it like any other.
  const int64_t id = store_.add_try(config_.tag, undo.commit, best_.commit,
                                    "revert #" + std::to_string(experiment) + " (scale-bound at " +
                                        config_.rungs[static_cast<size_t>(rung)].name + ")");
  log_(what + "; its revert " + short_commit(undo.commit) + " is try " + std::to_string(id) + " (promote.on_fail = revert)");
}

void Engine::end_rung_run(Candidate& c, const std::string& final_status) {
  if (final_status == status::kTampered && c.slot >= 0) workspace_.slot(c.slot).discard_build = true;
  release(c);
  erase(c.key);
  advance_promotion();
  schedule_pump();
}

void Engine::fail(Candidate& c, const std::string& final_status, const std::string& error, const std::string& log_tail,
                  const std::string& failure_detail) {
  if (c.rung > 0) {
    if (c.trial) store_.end_trial(c.trial, final_status, std::nullopt, std::nullopt, "");
    log_(c.description + (c.run_gpu.empty() ? "" : " on GPU " + c.run_gpu) + ": " + final_status +
         (error.empty() ? "" : ": " + error));
    if (final_status == status::kTampered) workspace_.restore_refs(c.experiment, c.commit, best_.commit);
    return end_rung_run(c, final_status);
  }
  if (c.repeat) return end_repeat(c, final_status, std::nullopt);
  if (c.trial) store_.end_trial(c.trial, final_status, std::nullopt, std::nullopt, "");
  proposals_->record_end(c.experiment, final_status, error, log_tail, failure_detail);
  // A failed baseline stops the daemon: its fatal line says all of this, so it is logged once.
  const bool fatal_baseline = c.baseline && final_status != status::kInterrupted;
  if (!fatal_baseline) log_("#" + std::to_string(c.experiment) + " " + final_status + (error.empty() ? "" : ": " + error));
  // What a tampered experiment's children could reach is not trusted: its build output goes too,
  // and a ref it moved (possible unconfined) is put back, or every later experiment would be tampered.
  if (final_status == status::kTampered) {
    if (c.slot >= 0) workspace_.slot(c.slot).discard_build = true;
    workspace_.restore_refs(c.experiment, c.commit, best_.commit);
  }
  const int64_t id = c.experiment;
  release(c);
  erase(c.key);
  if (fatal_baseline)
    return fatal("the baseline #" + std::to_string(id) + " failed (" + final_status + ")" + (error.empty() ? "" : ": " + error));
  schedule_pump();
}

void Engine::release(Candidate& c) {
  if (c.worker >= 0) training_[c.worker] = 0;
  c.worker = -1;
  const int slot = std::exchange(c.slot, -1);
  // The daemon stops rather than run in a slot it cannot make clean.
  if (slot >= 0)
    if (std::string e = workspace_.release(slot, best_.commit); !e.empty()) fatal(e);
}

// ---------------------------------------------------------------- helpers

std::filesystem::path Engine::log_path(const Candidate& c, const std::string& name) const {
  return state_.logs() / log_file_name(c.experiment, c.repeat, c.reapplies, c.confirmations, c.purpose, name);
}

Candidate* Engine::find(int64_t key) {
  auto it = candidates_.find(key);
  return it == candidates_.end() ? nullptr : &it->second;
}

Candidate& Engine::add(Candidate c) {
  c.key = ++next_key_;
  return candidates_[c.key] = std::move(c);
}

}  // namespace ard
