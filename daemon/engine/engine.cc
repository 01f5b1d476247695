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
#include <thread>

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
#include "daemon/exec/process_groups.h"
#include "daemon/fatal_error.h"
#include "daemon/program_file.h"
#include "daemon/slurm/slurm_client.h"
#include "daemon/slurm/slurm_recovery.h"
#include "daemon/store/evaluated_reconcile.h"
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

}  // namespace

struct Engine::ProposalDone {
  int64_t id = 0;
  std::optional<Fix> fix;
  ProposalResult result;
};

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
      retry_timer_(io),
      stop_deadline_(io),
      fault_timer_(io),
      store_check_timer_(io),
      mailbox_(std::make_shared<Mailbox>(io)),
      breaker_(BreakerConfig{}, now_seconds),
      fault_pause_(config.retry_wait_s),
      cancel_(std::make_shared<std::atomic<bool>>(false)),
      threads_inside_(std::make_shared<std::atomic<int>>(0)),
      executor_(executor ? std::move(executor) : std::make_unique<LocalExecutor>(io)) {
  if (gpus.empty()) gpus.push_back("");
  for (auto& g : gpus) workers_.push_back({std::move(g), 0});
  std::vector<std::string> ids;
  for (const auto& w : workers_) ids.push_back(w.gpu);
  rounds_ = std::make_unique<NoiseRounds>(ids, calibrates_boards(config_));
}

Engine::~Engine() { mailbox_->close(); }

int Engine::run() {
  state_.create();
  repo_ = std::make_unique<GitRepo>(config_.repo);
  repo_->exclude("/.autoresearchd/");
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
    return threads_inside_->load();
  }
  session_ = store_.begin_session(config_.tag, getpid());
  std::string gpu_list;
  for (const auto& w : workers_) gpu_list += (gpu_list.empty() ? "" : ",") + w.gpu;
  store_.set_session_gpus(session_, gpu_list);
  log_("session " + std::to_string(session_) + ": tag " + config_.tag + ", branch autoresearch/" + config_.tag +
       ", best " + short_commit(best_commit_) + ", proposer " + proposer_.name() + ", " +
       (workers_.front().gpu.empty() ? std::string("one worker (no GPU id)")
                                     : std::to_string(workers_.size()) + " GPU worker(s): " + gpu_list));
  if (config_.data.enabled) prepare_data_then_begin();
  else asio::post(io_, [this] { begin(); });
  check_store_file();
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
  return threads_inside_->load();
}

void Engine::reconcile() {
  SettleSettings settle{config_.tag, config_.metric, keep_settings(config_), config_.noise.prior_sigma, state_.root};
  resumes_ = settle_last_sessions(store_, settle, [this](const std::string& line) { log_(line); });

  std::optional<std::string> tip = repo_->ref_target(branch_ref_);
  if (!tip) {
    tip = repo_->head();
    repo_->set_ref(branch_ref_, *tip, "autoresearchd: new run");
  }
  if (auto base = store_.run_base(config_.tag)) {
    base_commit_ = *base;
    if (!repo_->has_commit(base_commit_))
      throw FatalError("base commit " + base_commit_ + " of tag " + config_.tag + " is not in the repo");
  } else {
    base_commit_ = *tip;
    store_.add_run(config_.tag, "autoresearch/" + config_.tag, base_commit_);
  }
  auto best = store_.best(config_.tag);
  best_commit_ = best ? best->commit : base_commit_;
  best_val_ = best ? best->val_bpb : std::nullopt;
  best_id_ = best ? best->id : 0;
  if (!repo_->has_commit(best_commit_))
    throw FatalError("kept commit " + best_commit_ + " of #" + std::to_string(best->id) + " is not in the repo");
  if (rebase_) {
    const RebasedTag r = rebase_onto_head(*repo_, config_.tag, base_commit_, best_commit_);
    log_(r.log_line);
    if (r.moved) {
      store_.set_run_base(config_.tag, r.head);
      base_commit_ = r.head;
      best_commit_ = r.onto;
      best_val_.reset();
      best_id_ = 0;
      rebased_ = true;
    }
  } else if (std::string note = newer_head_note(*repo_, config_.tag, base_commit_, best_commit_); !note.empty()) {
    log_(note);
  }
  if (*tip != best_commit_) {
    log_("reconcile: autoresearch/" + config_.tag + " tip " + short_commit(*tip) + " is not the best kept commit; reset to " +
         short_commit(best_commit_));
    repo_->set_ref(branch_ref_, best_commit_, "autoresearchd: reset to the best kept commit");
  }
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
  std::filesystem::path worktree = slots_.front().path;
  std::thread([this, box, worktree, stop = data_stop_.get()] {
    std::string dir, error;
    try {
      PosixProcessRunner runner(stop);
      // The store records prepare's groups from this thread: the connection is
      // in SQLite's serialized mode, and these are its only writes meanwhile.
      dir = prepare_data(config_, worktree, state_, runner, log_, &store_);
    } catch (const std::exception& e) {
      error = e.what();
    }
    box->post([this, dir, error] {
      data_running_ = false;
      if (stopping_) return maybe_finish_stop();
      if (!error.empty()) return fatal(error);
      data_dir_ = dir;
      store_.set_session_data_dir(session_, data_dir_);
      begin();
    });
  }).detach();
}

void Engine::begin() {
  if (stopping_) return;
  started_ = true;
  bool need_baseline = true;
  for (const auto& r : store_.experiments(config_.tag))
    if (r.is_baseline && r.state != status::kInterrupted) need_baseline = false;
  if (rebased_) need_baseline = true;  // the moved chain was never measured on its new base
  if (need_baseline) {
    // The baseline asks no proposer: the program it records is the file as it is, or "".
    const std::string hash =
        record_program(read_program_file(config_.repo / config_.program, config_.max_program_bytes).content);
    int64_t id = store_.create_experiment(config_.tag, true, best_commit_, hash, "baseline", std::nullopt);
    store_.set_proposal(id, rebased_ ? "baseline on " + short_commit(base_commit_) + " (--rebase)" : "baseline");
    store_.set_commit(id, best_commit_, "");
    repo_->set_ref(exp_ref(id), best_commit_, "autoresearchd: baseline");
    Candidate c;
    c.id = id;
    c.baseline = true;
    c.phase = Phase::kCommitted;
    c.parent = c.commit = best_commit_;
    c.description = "baseline";
    c.purpose = purpose::kBaseline;
    c.pin_gpu = workers_.front().gpu;
    c.in_round = config_.noise.rounds;
    candidates_[id] = std::move(c);
    baseline_pending_ = true;
    best_id_ = id;
    log_("#" + std::to_string(id) + " baseline at " + short_commit(best_commit_));
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
    Candidate c;
    c.id = r.id;
    c.phase = Phase::kCommitted;
    c.parent = row->parent_commit;
    c.commit = row->commit;
    c.description = row->description;
    c.fix_round = r.fix_round;
    c.reapplies = row->reapplied_from.empty() ? 0 : 1;
    c.confirmations = std::max(0, r.runs - 1);
    Candidate& resumed = candidates_[r.id] = std::move(c);
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
  cancel_->store(true);
  if (data_stop_) data_stop_->request();
  retry_timer_.cancel();
  fault_timer_.cancel();
  store_check_timer_.cancel();
  std::vector<std::string> waits;
  for (auto& [id, c] : candidates_)
    if (c.running && (c.phase == Phase::kBuilding || !slurm_))  // Slurm jobs are waited for as one
      waits.push_back("#" + std::to_string(c.id > 0 ? c.id : c.row) + "'s " +
                      (c.phase == Phase::kBuilding ? std::string("build") : "stage " + config_.stages[c.stage].name));
  executor_->stop_all();
  if (slurm_) slurm_->stop_all();
  if (slurm_ && slurm_->active()) waits.push_back("the Slurm jobs' cancellation");
  if (data_running_) waits.push_back("the data step");
  if (proposals_running_ > 0)
    waits.push_back(std::to_string(proposals_running_) + " proposal call(s) (at most " + format_number(kProposalGraceS) +
                    " s)");
  // `stop` prints this line: what the daemon waits for before it exits.
  log_("stopping: waiting for " + (waits.empty() ? std::string("nothing") : join_list(waits, 10)));
  stop_deadline_.expires_after(seconds(kProposalGraceS));
  stop_deadline_.async_wait([this](const boost::system::error_code& e) {
    if (!e) {
      proposals_running_ = 0;  // given up: their results go nowhere
      maybe_finish_stop();
    }
  });
  maybe_finish_stop();
}

void Engine::maybe_finish_stop() {
  if (!stopping_) return;
  if (executor_->active() || (slurm_ && slurm_->active())) return;  // on_run_end comes back here
  if (data_running_ || proposals_running_ > 0) return;
  stop_deadline_.cancel();
  if (store_lost_) {  // nothing can be recorded: the next start's reconcile has nothing of this session
    log_.file_only(stop_reason_);
    signals_.cancel();
    return io_.stop();
  }
  std::vector<int64_t> ids;
  for (const auto& [id, c] : candidates_) ids.push_back(id);
  for (int64_t id : ids) {
    Candidate& c = candidates_[id];
    if (c.phase == Phase::kProposing && drop_empty_row(id, "at stop")) {
      erase(id);
      continue;
    }
    const char* where = c.phase == Phase::kProposing ? "stopped while waiting for a proposal"
                        : c.phase == Phase::kMeasured ? "stopped before the baseline it is compared with was measured"
                                                      : "stopped before it ran";
    store_.finish(id, status::kInterrupted, where, "");
    release(c);
    erase(id);
  }
  for (int64_t id : idle_rows_)
    if (!drop_empty_row(id, "at stop")) store_.finish(id, status::kInterrupted, "stopped while waiting for a proposal", "");
  idle_rows_.clear();
  if (session_) {
    const auto sessions = store_.sessions(config_.tag);
    const size_t n = sessions.empty() ? 0
                     : plan_resumes(store_.experiments(config_.tag), store_.trials(config_.tag), sessions.back().started_at)
                           .resume.size();
    if (n > 0) log_(std::to_string(n) + " interrupted experiment(s) run again at the next start, from their commits");
  }
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

bool Engine::drop_empty_row(int64_t id, const std::string& when) {
  if (!store_.delete_if_empty(id)) return false;
  log_("#" + std::to_string(id) + " removed " + when + ": it had no proposal and no LLM call; its id stays unused");
  return true;
}

void Engine::pause_proposals(const std::string& reason, double until) {
  if (reason != paused_) {
    paused_ = reason;
    store_.set_session_paused(session_, reason);
    if (!reason.empty()) log_(reason);
  }
  if (!reason.empty()) block_proposals(std::max(0.0, until - now_seconds()));
}

void Engine::block_proposals(double wait_s) {
  if (proposals_blocked_) return;
  proposals_blocked_ = true;
  retry_timer_.expires_after(seconds(wait_s));
  retry_timer_.async_wait([this](const boost::system::error_code& err) {
    if (err) return;
    proposals_blocked_ = false;
    schedule_pump();
  });
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
  store_.set_state(c.id, ExperimentState::kCommitted);
  log_("#" + std::to_string(c.id) + " " + where + " met a fault of the machine; it runs again once it clears: " +
       fault.what());
  environment_fault(fault);
}

void Engine::recover(const EnvironmentFault& fault) {
  log_(std::string("a write failed: ") + fault.what());
  std::vector<int64_t> ids;
  for (const auto& [id, c] : candidates_) ids.push_back(id);
  for (int64_t id : ids) {
    Candidate& c = candidates_[id];
    if (c.running || c.asking) continue;  // its handler comes back
    if (c.phase == Phase::kProposing) {
      idle_rows_.push_back(id);  // asked again once the fault clears
      erase(id);
    } else if (c.phase == Phase::kBuilding || c.phase == Phase::kTraining) {
      try {
        rerun(c, fault);
      } catch (const EnvironmentFault&) {
        // The row is set right at the next start's reconcile.
      }
    } else if (c.phase == Phase::kCommitted && c.slot >= 0) {
      release(c);  // cut short before its build started
    }
  }
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
  std::vector<std::shared_ptr<ProposalDone>> held;
  held.swap(held_proposals_);
  for (auto& done : held) {
    ++proposals_running_;
    on_proposal(done);
  }
  return !stopping_ && !fault_pause_.active();  // a held commit may have met the fault again
}

void Engine::check_store_file() {
  if (auto problem = store_.file_problem()) {
    store_lost_ = true;
    return fatal(*problem + "; stopping so nothing is written to the lost file");
  }
  store_check_timer_.expires_after(seconds(kStoreCheckS));
  store_check_timer_.async_wait([this](const boost::system::error_code& err) {
    if (!err) check_store_file();
  });
  try {
    store_.set_session_alive(session_);  // a restart after kill -9 ends this session's experiments here
  } catch (const EnvironmentFault&) {
    // A store that takes no write pauses the engine where the write mattered.
  }
}

void Engine::request_proposals() {
  if (proposals_blocked_) return;
  // The breaker: experiments that keep failing the same way cost no more calls.
  if (auto p = breaker_.paused()) return pause_proposals(breaker_.status_line(), p->until);
  // An editor's save may remove program.md for a moment: never propose without it.
  ProgramFile program = read_program_file(config_.repo / config_.program, config_.max_program_bytes);
  if (!program.ok())
    return pause_proposals("paused: " + program.message + "; waiting for it", now_seconds() + config_.retry_wait_s);
  if (!paused_.empty() && proposals_running_ == 0) pause_proposals("", 0);
  const size_t target = workers_.size() * (1 + static_cast<size_t>(config_.lookahead));
  const int limit = proposer_.concurrent() ? static_cast<int>(workers_.size()) : 1;
  // The content checked above is the one every proposal of this round records and sends:
  // the file is read once, never again after the check.
  while (candidates_.size() < target && proposals_running_ < limit) request_proposal(program.content);
}

void Engine::request_proposal(const std::string& program) {
  const std::string hash = record_program(program);
  std::optional<Fix> fix;
  if (!fixes_.empty()) {
    fix = std::move(fixes_.front());
    fixes_.pop_front();
  }
  int64_t id;
  if (!fix && !idle_rows_.empty()) {
    id = idle_rows_.front();
    idle_rows_.erase(idle_rows_.begin());
    store_.set_program(id, hash);
    store_.restart_clock(id);  // the wait for the provider is no part of its duration
  } else {
    id = store_.create_experiment(config_.tag, false, best_commit_, hash, proposer_.name(),
                                  fix ? std::optional<int64_t>(fix->of) : std::nullopt);
  }
  Candidate c;
  c.id = id;
  c.parent = best_commit_;
  c.fix_round = fix ? fix->round : 0;
  c.asking = true;
  candidates_[id] = c;

  ProposalContext ctx;
  ctx.experiment_id = id;
  ctx.program_md = program;
  ctx.files = fix ? fix->files : repo_->editable_files(best_commit_, editable_);
  const std::vector<ExperimentRow> rows = store_.experiments(config_.tag);
  ctx.history = proposal_history(rows);
  ctx.tried = tried_memory(rows, ctx.files);
  if (!fix) ctx.idea = idea_for(id);
  for (const auto& [other, c] : candidates_)
    if (other > 0 && !c.baseline && !c.commit.empty()) {
      HistoryEntry h;
      h.id = other;
      h.commit = short_commit(c.commit);
      h.description = c.description;
      h.status = c.phase == Phase::kMeasured ? "measured" : c.phase == Phase::kTraining ? "running" : "committed";
      ctx.in_flight.push_back(std::move(h));
    }
  ctx.best_val_bpb = best_val_;
  ctx.metric = config_.metric;
  ctx.goal = config_.goal;
  if (auto noise = decision_noise(store_.trials(config_.tag))) ctx.noise_note = noise_note(config_.noise.z, *noise);
  ctx.last_failure = last_failure_;
  ++proposals_running_;
  auto done = std::make_shared<ProposalDone>();
  done->id = id;
  done->fix = std::move(fix);
  propose_on_thread(proposer_, std::move(ctx), cancel_, threads_inside_, mailbox_, [this, done](ProposalResult r) {
    done->result = std::move(r);
    on_proposal(done);
  });
}

void Engine::on_proposal(const std::shared_ptr<ProposalDone>& done) {
  if (proposals_running_ == 0) return;  // given up at stop
  --proposals_running_;
  const int64_t id = done->id;
  if (Candidate* asked = find(id)) asked->asking = false;
  record_attempts(store_, id, done->result);
  const ProposalResult& result = done->result;
  Candidate* c = find(id);
  if (!c) return;
  if (stopping_) return schedule_pump();

  if (!result.ok()) {
    const ProposalError& e = *result.error;
    if (auto wait = proposer_wait(e, config_.retry_wait_s, now_seconds())) {
      if (wait->pauses && paused_ != wait->message) {
        paused_ = wait->message;
        store_.set_session_paused(session_, paused_);
      }
      if (wait->message != last_wait_message_) log_(wait->log_line);
      last_wait_message_ = wait->message;
      if (done->fix) fixes_.push_front(*done->fix);  // the fix is still owed
      else idle_rows_.push_back(id);
      if (done->fix && !drop_empty_row(id, "while the proposer waits (its fix is asked again later)"))
        store_.finish(id, status::kProposerError, e.message, "");
      erase(id);
      block_proposals(wait->wait_s);
      return schedule_pump();
    }
    store_.finish(id, status::kProposerError, e.message, "");
    erase(id);
    if (e.kind == ProposalError::Kind::kFatal) return fatal("proposer: " + e.message);
    last_failure_ = Failure{status::kProposerError, e.message};  // a bad edit
    log_("#" + std::to_string(id) + " proposer_error: " + e.message);
    return schedule_pump();
  }
  last_wait_message_.clear();
  if (!paused_.empty()) pause_proposals("", 0);

  const Proposal& p = *result.proposal;
  c->description = description_line(p.description);
  store_.set_proposal(id, c->description);
  const ProposalCommit made =
      commit_proposal(*repo_, editable_, c->parent, done->fix ? done->fix->files : std::vector<EditableFile>{}, p.writes,
                      c->description, exp_ref(id), config_.repo / ".git" / "objects");
  if (made.fault) {
    held_proposals_.push_back(done);
    c->asking = true;  // its proposal waits in held_proposals_
    log_("#" + std::to_string(id) + " cannot be committed now; it is committed once the fault clears");
    return environment_fault(*made.fault);
  }
  if (!made.rejected.empty()) return fail(*c, status::kPatchRejected, made.rejected, "");
  const std::string& commit = made.commit;
  const std::string diff = repo_->diff(c->parent, commit);
  store_.set_commit(id, commit, diff);
  c->commit = commit;
  if (auto dup = duplicate_among(store_.experiments(config_.tag), id, diff, config_.dedup.threshold))
    return fail(*c, status::kDuplicate, dup->reason, "",
                "this change " + dup->reason + ": it was not run. Propose a change not tried before.");
  c->phase = Phase::kCommitted;
  log_("#" + std::to_string(id) + " " + short_commit(commit) + " " + c->description +
       (done->fix ? " (fix " + std::to_string(done->fix->round) + " of #" + std::to_string(done->fix->of) + ")" : ""));
  schedule_pump();
}

std::string Engine::idea_for(int64_t id) {
  const auto row = store_.experiment(id);
  const std::vector<IdeaRow> ideas = store_.ideas(config_.tag);
  for (const auto& idea : ideas)  // a row asked again keeps its idea
    if (row && row->idea_id == idea.id) return idea.text;
  for (const auto& idea : ideas)
    if (idea_open(idea)) {
      store_.set_experiment_idea(id, idea.id);
      log_("#" + std::to_string(id) + " is asked to try idea " + std::to_string(idea.id) + ": " +
           flatten_to_one_line(idea.text));
      return idea.text;
    }
  return "";
}

// ---------------------------------------------------------------- builds

void Engine::open_slurm() {
  slurm_client_ = std::make_unique<SlurmClient>(io_, slurm_env(env_), state_.root / "slurm");
  slurm_ = std::make_unique<SlurmRunExecutor>(io_, config_, *slurm_client_, log_, state_.root / "slurm");
}

void Engine::built_in_job(Candidate& c) {
  c.phase = Phase::kBuilt;
  store_.set_state(c.id, ExperimentState::kBuilt);
  schedule_pump();
}

void Engine::start_builds() {
  std::vector<int64_t> ready;
  for (const auto& [id, c] : candidates_)
    if (c.phase == Phase::kCommitted) ready.push_back(id);
  for (int64_t id : ready) {
    if (builds_running_ >= config_.max_builds) return;
    Candidate* c = find(id);
    if (!c || c->phase != Phase::kCommitted) continue;
    int slot = free_slot(slots_);
    if (slot < 0) return;
    start_build(*c, slot);
  }
}

void Engine::start_build(Candidate& c, int slot) {
  // A candidate made against an older best is moved onto the best of the
  // moment before it is built, so it is measured against what it must beat.
  if (!c.baseline && c.id > 0 && c.parent != best_commit_) {
    GitRepo::CherryPick pick = repo_->cherry_pick(c.commit, best_commit_, exp_ref(c.id));
    if (pick.commit.empty())
      return fail(c, status::kConflict,
                  "made against " + short_commit(c.parent) + ", its change does not apply onto the best " +
                      short_commit(best_commit_) + ": conflicts in " + join_list(pick.conflicts, 5),
                  "", "this change conflicts with the best commit:\n" + repo_->diff(c.parent, c.commit));
    store_.set_reapplied(c.id, pick.commit, best_commit_, repo_->diff(best_commit_, pick.commit));
    log_("#" + std::to_string(c.id) + " made against " + short_commit(c.parent) + ", moved onto the best " +
         short_commit(best_commit_) + " as " + short_commit(pick.commit));
    c.commit = pick.commit;
    c.parent = best_commit_;
    ++c.reapplies;
  }
  c.slot = slot;
  c.build_listing.reset();
  slots_[slot].holder = c.id;
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
    for (auto& [id, c] : candidates_)  // repeats (ids < 0) first
      if (c.phase == Phase::kBuilt && may_train(c, workers_[w]) &&
          (!c.pin_gpu.empty() || !awaited.count(workers_[w].gpu))) {
        next = &c;
        break;
      }
    if (!next) continue;
    next->phase = Phase::kTraining;
    next->worker = static_cast<int>(w);
    next->stage = 0;
    next->run_gpu = workers_[w].gpu;
    workers_[w].candidate = next->id;
    if (next->id > 0) store_.set_gpu(next->id, workers_[w].gpu);
    const std::string run_purpose = trial_purpose(next->purpose, next->reapplies);
    next->trial = store_.begin_trial(next->id > 0 ? next->id : next->row, config_.tag, workers_[w].gpu, run_purpose,
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
    run.name = "ard-" + config_.tag + "-" + std::to_string(c.id) + "-t" + std::to_string(c.trial);
    run.title = "experiment " + std::to_string(c.id) + ", trial " + std::to_string(c.trial) + ", commit " + c.commit;
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
  run.experiment = c.id > 0 ? c.id : c.row;
  run.commit = c.commit;
  run.slot = c.slot;
  run.worktree = slots_[c.slot].path;
  run.logs_dir = state_.logs();
  run.last_stage = config_.stages.back().name;
  run.end_settings = end_settings();
  return run;
}

void Engine::start_run(Candidate& c, const Run& run, Executor& executor) {
  const int64_t id = c.id;
  const bool build = run.build.has_value();
  // A callback that throws (a store write met a fault) leaves the candidate without a run, for recover.
  auto not_running = [this, id] {
    if (Candidate* c = find(id)) c->running = false;
  };
  RunCallbacks callbacks;
  callbacks.group = [this, id](pid_t pgid) { record_group(id, pgid); };
  callbacks.step_started = [this, id, build, not_running](size_t index, const RunStep& step) {
    Candidate* c = find(id);
    if (!c) return;
    try {
      if (index > 0) {  // the previous stage's group is gone
        store_.set_pgid(id, std::nullopt);
        if (c->group_record) store_.end_process_group(std::exchange(c->group_record, 0));
      }
      c->stage = index;
      const double now = now_seconds();
      store_.set_stage(id, build ? ExperimentState::kBuilding : ExperimentState::kRunning, step.name, now,
                       now + step.timeout_s, now + step.expected_s);
    } catch (...) {
      not_running();
      throw;
    }
  };
  callbacks.check_slot = [this, id, not_running]() -> std::string {
    Candidate* c = find(id);
    if (!c) return "";
    try {
      return tamper_check(*c);
    } catch (...) {
      not_running();
      throw;
    }
  };
  callbacks.ended = [this, id, build](const RunEnd& end) { on_run_end(id, build, end); };
  const std::filesystem::path job_log = run.stages.empty() ? std::filesystem::path() : run.stages.front().log;
  callbacks.job = [this, id, job_log](const std::string& job, const std::string& node) {
    Candidate* c = find(id);
    if (!c || !c->trial) return;
    if (node.empty()) store_.set_trial_job(c->trial, job, job_log.string());
    else store_.set_trial_node(c->trial, node);
  };
  callbacks.fatal = [this](const std::string& why) { fatal(why); };
  c.running = true;
  executor.start(run, std::move(callbacks));
}

void Engine::on_run_end(int64_t id, bool build, const RunEnd& end) {
  if (build) --builds_running_;
  Candidate* c = find(id);
  if (!c) return;
  c->running = false;
  store_.set_pgid(id, std::nullopt);
  if (c->group_record) store_.end_process_group(std::exchange(c->group_record, 0));
  if (!build || end.kind != RunEnd::Kind::kOk) return end_run(*c, end);
  // Listed as the stages will see it: a build that made no build directory gets its empty one
  // now, not from the stage's sandbox, which would count as a change.
  c->build_listing = stat_listing(build_output(slots_[c->slot], config_.build_dir));
  c->phase = Phase::kBuilt;
  store_.set_state(id, ExperimentState::kBuilt);
  schedule_pump();
}

EndSettings Engine::end_settings() const { return EndSettings{config_.metric, config_.summary_keys}; }

void Engine::end_run(Candidate& c, const RunEnd& end) {
  using Kind = RunEnd::Kind;
  switch (end.kind) {
    case Kind::kMachineFault: return rerun(c, *end.fault);
    case Kind::kBuildFailed:
      if (proposer_.fixes_builds() && !c.baseline && c.id > 0 && c.fix_round < config_.max_fix_attempts)
        fixes_.push_back(Fix{c.id, c.fix_round + 1, repo_->editable_files(c.commit, editable_)});
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
  if (c.id < 0) return end_repeat(c, "ok", figures.steps);
  store_.set_metrics(c.id, {v, figures.peak_vram_mb, figures.training_seconds, summary.to_json()});
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
  Evidence e;
  e.metric = config_.metric;
  e.baseline = c.baseline;
  e.value = v;
  e.baseline_pending = baseline_pending_;
  e.round_holds = rounds_->holds();
  e.incumbent_pending = incumbent_pending();
  e.parent = c.parent;
  e.best = best_commit_;
  const std::vector<TrialRow> trials = store_.trials(config_.tag);
  const int64_t calibration = rounds_->calibration();
  e.runs = runs_of(trials, c.commit, calibration);
  e.parent_runs = runs_of(trials, c.parent, calibration);
  e.best_runs = runs_of(trials, best_commit_, calibration);
  e.noise = decision_noise(trials);
  auto row = store_.experiment(c.id);
  const DiffLines lines = count_diff_lines(row ? row->diff : "");
  e.lines_added = lines.added;
  e.lines_removed = lines.removed;
  e.confirmations_done = c.confirmations;
  e.reapplies_done = c.reapplies;
  for (const auto& w : workers_) e.gpus.push_back(w.gpu);
  e.run_gpus = gpus_of(trials, c.commit, calibration);
  const Ruling r = judge(e, keep_settings(config_));

  // The ruling applied: the store's decision line first, then the branch or the next run.
  switch (r.action) {
    case Action::defer:
      deferred_.push_back(c.id);
      c.phase = Phase::kMeasured;
      release(c);  // its slot and GPU; the decision needs no files
      return;
    case Action::remeasure:
      log_("#" + std::to_string(c.id) + " " + r.reason);
      c.pin_gpu.clear();
      c.phase = c.slot >= 0 ? Phase::kBuilt : Phase::kCommitted;
      return schedule_pump();
    case Action::confirm:
      store_.set_decision(c.id, r.reason, r.value);
      ++c.confirmations;
      c.purpose = purpose::kConfirm;
      c.pin_gpu = r.gpu;
      c.phase = c.slot >= 0 ? Phase::kBuilt : Phase::kCommitted;
      log_("#" + std::to_string(c.id) + " runs again" + (c.pin_gpu.empty() ? "" : " on GPU " + c.pin_gpu) + ": " +
           r.reason);
      return schedule_pump();
    case Action::reapply:
      store_.set_decision(c.id, r.reason, r.value);
      return reapply(c, *r.value);
    case Action::discard:
      ++since_round_;
      store_.set_decision(c.id, r.reason, r.value);
      return fail(c, status::kDiscarded, r.reason, file_tail(log_path(c, config_.stages.back().name)));
    case Action::keep:
      store_.set_decision(c.id, r.reason, r.value);
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
  for (int64_t id : waiting)
    if (Candidate* d = find(id)) {
      auto row = store_.experiment(id);
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
  GitRepo::CherryPick pick = repo_->cherry_pick(c.commit, best_commit_, exp_ref(c.id));
  if (pick.commit.empty())
    return fail(c, status::kConflict,
                what.str() + "; its change does not apply onto " + short_commit(best_commit_) + ": conflicts in " +
                    join_list(pick.conflicts, 5),
                tail, "this change conflicts with the best commit:\n" + repo_->diff(c.parent, c.commit));
  store_.set_reapplied(c.id, pick.commit, best_commit_, repo_->diff(best_commit_, pick.commit));
  log_("#" + std::to_string(c.id) + " " + what.str() + "; re-applied onto " + short_commit(best_commit_) + " as " +
       short_commit(pick.commit) + ", to be measured again");
  c.commit = pick.commit;
  c.parent = best_commit_;
  ++c.reapplies;
  c.phase = Phase::kCommitted;
  c.stage = 0;
  c.purpose.clear();
  c.pin_gpu.clear();
  c.confirmations = 0;
  schedule_pump();
}

void Engine::keep(Candidate& c, double v, const std::string& why) {
  std::string tail = file_tail(log_path(c, config_.stages.back().name));
  store_.finish(c.id, status::kKept, "", tail);
  breaker_.record_success();
  repo_->set_ref(branch_ref_, c.commit, "autoresearchd: keep #" + std::to_string(c.id));
  best_commit_ = c.commit;
  best_val_ = v;
  best_id_ = c.id;
  last_failure_.reset();
  // The keep rule's reasons say "kept: ..." themselves; the baseline's is its value alone.
  log_("#" + std::to_string(c.id) + " " + (why.rfind("kept: ", 0) == 0 ? why : "kept: " + why));
  release(c);
  erase(c.id);
  if (!rounds_->active()) top_up_incumbent();
  schedule_pump();
}

// ---------------------------------------------------------------- repeats

void Engine::add_repeat(const std::string& what, const std::string& gpu, bool in_round) {
  Candidate c;
  c.id = --next_repeat_;
  c.row = best_id_;
  c.purpose = what;
  c.pin_gpu = gpu;
  c.in_round = in_round;
  c.phase = Phase::kCommitted;
  c.parent = c.commit = best_commit_;
  c.description = what + " run of #" + std::to_string(best_id_);
  candidates_[c.id] = std::move(c);
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
  const double now = now_seconds();
  const NoiseDue due = rounds_->due(since_round_, now, config_.noise.every, config_.noise.max_age_s);
  if (due == NoiseDue::not_due) return;
  const double age = rounds_->last_round_at() ? now - *rounds_->last_round_at() : 0;
  start_round(false, describe(due, since_round_, age));
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
    if (id < 0 && c.commit == best_commit_) used.push_back(c.pin_gpu);  // on its way
  std::vector<std::string> gpus;
  for (const auto& w : workers_) gpus.push_back(w.gpu);
  for (const auto& gpu : incumbent_rerun_gpus(gpus, used)) add_repeat(purpose::kIncumbent, gpu, false);
}

void Engine::end_repeat(Candidate& c, const std::string& final_status, std::optional<long> steps) {
  if (c.trial) store_.end_trial(c.trial, final_status, std::nullopt, std::nullopt, "");
  c.trial = 0;
  if (c.in_round) rounds_->run_done(c.run_gpu, rounds_->scale(c.run_gpu), final_status == "ok" ? steps : std::nullopt);
  if (final_status == "ok" && c.commit == best_commit_) {
    // The best's value is the mean of its runs under the current calibration.
    const auto runs = runs_of(store_.trials(config_.tag), best_commit_, rounds_->calibration());
    if (!runs.empty()) {
      best_val_ = spread_of(runs).mean;
      store_.set_decision(best_id_, store_.decision(best_id_), best_val_);
    }
  }
  if (final_status != "ok")
    log_(c.description + " on GPU " + c.run_gpu + ": " + final_status);
  release(c);
  erase(c.id);
  maybe_end_round();
  if (!incumbent_pending()) decide_deferred();
  schedule_pump();
}

bool Engine::incumbent_pending() const {
  for (const auto& [id, c] : candidates_)
    if (id < 0 && c.purpose == purpose::kIncumbent && c.commit == best_commit_) return true;
  return false;
}

bool Engine::may_train(const Candidate& c, const Worker& w) const {
  if (c.id > 0 && !c.baseline && rounds_->holds()) return false;  // a round measures the best first
  return c.pin_gpu.empty() || c.pin_gpu == w.gpu;
}

std::optional<NoiseEstimate> Engine::decision_noise(const std::vector<TrialRow>& trials) const {
  return noise_status(trials, rounds_->noise_from(), config_.noise.prior_sigma, config_.noise.z).used;
}

void Engine::fail(Candidate& c, const std::string& final_status, const std::string& error, const std::string& log_tail,
                  const std::string& failure_detail) {
  if (c.id < 0) return end_repeat(c, final_status, std::nullopt);
  const int64_t id = c.id;
  const bool baseline = c.baseline;
  if (c.trial) store_.end_trial(c.trial, final_status, std::nullopt, std::nullopt, "");
  store_.finish(id, final_status, error, log_tail);
  if (final_status == status::kDiscarded) breaker_.record_success();
  // A conflict says only that another worker moved the best meanwhile: no failure the breaker counts.
  // A duplicate ran nothing: the proposer is told, but nothing failed.
  else if (final_status != status::kInterrupted && final_status != status::kConflict &&
           final_status != status::kDuplicate)
    breaker_.record_failure(final_status, error);
  if (auto told = failure_to_tell(final_status, error, log_tail, failure_detail)) last_failure_ = std::move(told);
  // A failed baseline stops the daemon: its fatal line below says all of this, so it is logged once.
  const bool fatal_baseline = baseline && final_status != status::kInterrupted;
  if (!fatal_baseline) log_("#" + std::to_string(id) + " " + final_status + (error.empty() ? "" : ": " + error));
  // What a tampered experiment's children could reach is not trusted: its build output goes too,
  // and a ref it moved (possible unconfined) is put back, or every later experiment would be tampered.
  if (final_status == status::kTampered) {
    if (c.slot >= 0) slots_[c.slot].discard_build = true;
    restore_refs(c);
  }
  release(c);
  erase(id);
  if (fatal_baseline)
    return fatal("the baseline #" + std::to_string(id) + " failed (" + final_status + ")" + (error.empty() ? "" : ": " + error));
  schedule_pump();
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

void Engine::record_group(int64_t id, pid_t pgid) {
  if (id < 0) {  // a repeat belongs to no experiment in flight: its group is recorded on its own
    if (Candidate* c = find(id))
      c->group_record = store_.add_process_group(pgid, process_start_time(pgid).value_or(0), c->description);
    return;
  }
  // The leader is held at the gate, so its start time is readable here.
  if (auto start = process_start_time(pgid)) store_.set_pgid(id, pgid, *start);
  else store_.set_pgid(id, pgid);
}

std::string Engine::tamper_check(const Candidate& c) {
  std::vector<std::string> bad = slot_differences(slots_[c.slot], c.commit, config_.build_dir, c.build_listing);
  if (repo_->ref_target(branch_ref_) != best_commit_) bad.push_back("autoresearch/" + config_.tag + " (moved)");
  const int64_t row = c.id > 0 ? c.id : c.row;
  if (repo_->ref_target(exp_ref(row)) != c.commit) bad.push_back(exp_ref(row) + " (moved)");
  if (bad.empty()) return "";
  return "the worktree differs from the experiment's commit: " + join_list(bad, 10);
}

void Engine::restore_refs(const Candidate& c) {
  try {
    if (repo_->ref_target(branch_ref_) != best_commit_) {
      repo_->set_ref(branch_ref_, best_commit_, "autoresearchd: put back after a tampered experiment");
      log_("autoresearch/" + config_.tag + " was moved by #" + std::to_string(c.id) + "; put back at " +
           short_commit(best_commit_));
    }
    const int64_t row = c.id > 0 ? c.id : c.row;
    if (!c.commit.empty() && repo_->ref_target(exp_ref(row)) != c.commit)
      repo_->set_ref(exp_ref(row), c.commit, "autoresearchd: put back after a tampered experiment");
  } catch (const GitError& e) {
    log_(std::string("warning: cannot put a moved ref back: ") + e.what());
  }
}

std::string Engine::reset_slot(int slot, const std::string& commit) {
  return ard::reset_slot(slots_[slot], *repo_, commit, config_.build_dir, log_);
}

std::string Engine::record_program(const std::string& content) {
  std::string hash = blob_hash(content);
  store_.put_program(hash, content);
  return hash;
}

std::filesystem::path Engine::log_path(const Candidate& c, const std::string& name) const {
  return state_.logs() / log_file_name(c.id, c.row, c.reapplies, c.confirmations, c.purpose, name);
}

std::string Engine::exp_ref(int64_t id) const {
  return "refs/autoresearch/" + config_.tag + "/exp/" + std::to_string(id);
}

size_t Engine::count(Phase phase) const {
  size_t n = 0;
  for (const auto& [id, c] : candidates_) n += c.phase == phase ? 1 : 0;
  return n;
}

Engine::Candidate* Engine::find(int64_t id) {
  auto it = candidates_.find(id);
  return it == candidates_.end() ? nullptr : &it->second;
}

void Engine::erase(int64_t id) { candidates_.erase(id); }

}  // namespace ard
