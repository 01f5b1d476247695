// See proposals.h.
#include "daemon/engine/proposals.h"

#include "daemon/decide/memory.h"
#include "daemon/duration.h"
#include "daemon/util/clock.h"
#include "daemon/util/text.h"

namespace ard {

std::string record_program(Store& store, const std::string& content) {
  std::string hash = blob_hash(content);
  store.put_program(hash, content);
  return hash;
}

Proposals::Proposals(boost::asio::io_context& io, const Config& config, Store& store, Proposer& proposer, Log& log,
                     OnOutcome on_outcome, std::function<void()> on_unblocked)
    : config_(config),
      store_(store),
      proposer_(proposer),
      log_(log),
      on_outcome_(std::move(on_outcome)),
      on_unblocked_(std::move(on_unblocked)),
      block_timer_(io),
      editable_(config.editable),
      mailbox_(std::make_shared<Mailbox>(io)),
      cancel_(std::make_shared<std::atomic<bool>>(false)),
      inside_(std::make_shared<std::atomic<int>>(0)),
      profiles_(proposer.profiles()),
      breaker_(BreakerConfig{}, now_seconds) {
  std::vector<double> weights;
  for (const auto& p : profiles_) weights.push_back(p.weight);
  if (!weights.empty()) draw_.emplace(std::move(weights));
}

size_t Proposals::draw_profile() {
  if (config_.profiles_settings.adapt) {
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < profiles_.size(); ++i) index[profiles_[i].name] = i;
    std::vector<ProfileRecord> records(profiles_.size());
    std::map<int64_t, size_t> of_experiment;
    for (const auto& r : store_.experiments(config_.tag))
      if (auto it = index.find(r.profile); it != index.end()) {
        of_experiment[r.id] = it->second;
        if (r.state == status::kKept) ++records[it->second].keeps;
      }
    for (const auto& t : store_.trials(config_.tag))
      if (auto it = of_experiment.find(t.experiment_id); it != of_experiment.end())
        records[it->second].gpu_seconds += t.training_seconds.value_or(0);
    std::vector<double> base;
    for (const auto& p : profiles_) base.push_back(p.weight);
    draw_->set_weights(adapted_shares(base, records, config_.profiles_settings.floor));
  }
  return draw_->next();
}

Proposals::~Proposals() { mailbox_->close(); }

int64_t Proposals::ask(const AskContext& a) {
  const std::string hash = record_program(store_, a.program);
  std::optional<FixOwed> fix;
  if (!fixes_.empty()) {
    fix = std::move(fixes_.front());
    fixes_.pop_front();
  }
  std::string profile;
  std::optional<TryRow> attempt;
  if (!fix)
    for (const TryRow& t : store_.tries(config_.tag))
      if (!attempt && !t.experiment) attempt = t;
  int64_t id;
  if (attempt) {
    id = store_.create_experiment(config_.tag, false, attempt->parent, hash, "user", std::nullopt);
    store_.take_try(attempt->id, id);
    log_("#" + std::to_string(id) + " takes try " + std::to_string(attempt->id) + ": " +
         short_commit(attempt->commit) + " " + attempt->description);
  } else if (!fix && !asked_again_.empty()) {
    id = asked_again_.front();
    asked_again_.erase(asked_again_.begin());
    store_.set_program(id, hash);
    store_.restart_clock(id);  // the wait for the provider is no part of its duration
    if (auto row = store_.experiment(id)) profile = row->profile;  // it keeps the profile it was drawn for
  } else {
    if (draw_) profile = profiles_[draw_profile()].name;
    id = store_.create_experiment(config_.tag, false, a.parent, hash,
                                  profile.empty() ? proposer_.name() : proposer_.proposer_of(profile),
                                  fix ? std::optional<int64_t>(fix->of) : std::nullopt);
    if (!profile.empty()) store_.set_profile(id, profile);
  }
  Row& row = rows_[id];
  row.fix = fix;
  row.attempt = attempt;
  row.profile = profile;
  row.parent = attempt ? attempt->parent : a.parent;
  row.running = true;
  ++running_;
  if (attempt) {  // its answer is the commit itself, handled on the loop as any other
    mailbox_->post([this, id] { answered(id, ProposalResult{}); });
    return id;
  }

  ProposalContext ctx;
  ctx.experiment_id = id;
  ctx.program_md = a.program;
  ctx.files = fix ? fix->files : repo_->editable_files(a.parent, editable_);
  const std::vector<ExperimentRow> rows = store_.experiments(config_.tag);
  std::vector<std::string> rung_names;
  for (const RungConfig& r : config_.rungs) rung_names.push_back(r.name);
  ctx.history = proposal_history(rows, store_.current_change_labels(config_.tag), rung_names);
  ctx.tried = tried_memory(rows, ctx.files);
  if (!fix) ctx.idea = idea_for(id);
  ctx.in_flight = a.in_flight;
  ctx.best_val_bpb = a.best_value;
  ctx.metric = config_.metric;
  ctx.goal = config_.goal;
  ctx.noise_note = a.noise_note;
  ctx.last_failure = last_failure_;
  ctx.profile = profile;
  for (const auto& p : profiles_)
    if (p.name == profile) ctx.focus = p.addendum;
  propose_on_thread(proposer_, std::move(ctx), cancel_, inside_, mailbox_,
                    [this, id](ProposalResult r) { answered(id, std::move(r)); });
  return id;
}

void Proposals::cancel() {
  cancelled_ = true;
  cancel_->store(true);
  block_timer_.cancel();
}

void Proposals::block(double wait_s) {
  if (blocked_) return;
  blocked_ = true;
  block_timer_.expires_after(steady_seconds(wait_s));
  block_timer_.async_wait([this](const boost::system::error_code& err) {
    if (err) return;
    blocked_ = false;
    on_unblocked_();
  });
}

void Proposals::answered(int64_t id, ProposalResult result) {
  if (running_ == 0) return;  // given up at stop
  --running_;
  auto it = rows_.find(id);
  if (it != rows_.end()) it->second.running = false;
  record_attempts(store_, id, result);
  if (it == rows_.end()) return;
  it->second.result = std::move(result);
  if (cancelled_) {
    ProposalOutcome stopped;
    stopped.kind = ProposalOutcome::Kind::kStopped;
    stopped.experiment = id;
    return on_outcome_(stopped);
  }
  deliver(handle(id));
}

void Proposals::deliver(const ProposalOutcome& o) {
  using Kind = ProposalOutcome::Kind;
  const std::string id = "#" + std::to_string(o.experiment);
  if (o.kind == Kind::kWaiting) {
    if (o.wait->message != last_wait_message_) log_(o.wait->log_line);
    last_wait_message_ = o.wait->message;
    block(o.wait->wait_s);
  } else if (o.kind == Kind::kEnded && o.final_status == status::kProposerError) {
    log_(id + " proposer_error: " + o.error);  // a bad edit: its row is finished, the wait goes on
  } else if (o.kind == Kind::kEnded) {
    last_wait_message_.clear();
    record_end(o.experiment, o.final_status, o.error, "", o.failure_detail);
    log_(id + " " + o.final_status + (o.error.empty() ? "" : ": " + o.error));
  } else if (o.kind == Kind::kCommitted) {
    last_wait_message_.clear();
  }
  on_outcome_(o);
}

ProposalOutcome Proposals::handle(int64_t id) {
  using Kind = ProposalOutcome::Kind;
  Row& row = rows_.at(id);
  ProposalOutcome o;
  o.experiment = id;
  o.parent = row.parent;
  if (row.fix) {
    o.fix_round = row.fix->round;
    o.fix_of = row.fix->of;
  }
  const ProposalResult& result = row.result;
  if (!row.attempt && !result.ok()) {
    const ProposalError& e = *result.error;
    o.error = e.message;
    if (auto wait = proposer_wait(e, config_.retry_wait_s, now_seconds())) {
      if (row.fix) fixes_.push_front(*row.fix);  // the fix is still owed
      else asked_again_.push_back(id);
      const bool fix = row.fix.has_value();
      rows_.erase(id);
      if (fix && !drop_empty_row(id, "while the proposer waits (its fix is asked again later)"))
        store_.finish(id, status::kProposerError, e.message, "");
      o.kind = Kind::kWaiting;
      o.wait = std::move(wait);
      return o;
    }
    rows_.erase(id);
    if (e.kind == ProposalError::Kind::kFatal) {
      store_.finish(id, status::kProposerError, e.message, "");
      o.kind = Kind::kFatal;
      return o;
    }
    o.kind = Kind::kEnded;  // a bad edit: told as it is to the next proposal, not counted by the breaker
    o.final_status = status::kProposerError;
    store_.finish(id, status::kProposerError, e.message, "");
    last_failure_ = Failure{status::kProposerError, e.message};
    return o;
  }
  o.description = description_line(row.attempt ? row.attempt->description : result.proposal->description);
  store_.set_proposal(id, o.description);
  const std::string ref = "refs/autoresearch/" + config_.tag + "/exp/" + std::to_string(id);
  const std::filesystem::path objects = config_.repo / ".git" / "objects";
  const ProposalCommit made =
      row.attempt ? commit_try(*repo_, editable_, row.attempt->commit, row.parent, ref, objects)
                  : commit_proposal(*repo_, editable_, row.parent, row.fix ? row.fix->files : std::vector<EditableFile>{},
                                    result.proposal->writes, o.description, ref, objects);
  if (made.fault) {
    row.held = true;
    o.kind = Kind::kHeld;
    o.fault = made.fault;
    return o;
  }
  const bool row_was_try = row.attempt.has_value();
  rows_.erase(id);
  if (!made.rejected.empty()) {
    o.kind = Kind::kEnded;
    o.final_status = status::kPatchRejected;
    o.error = (row_was_try ? "the try's commit: " : "") + made.rejected;
    return o;
  }
  const std::string diff = repo_->diff(o.parent, made.commit);
  store_.set_commit(id, made.commit, diff);
  o.commit = made.commit;
  if (auto dup = duplicate_among(store_.experiments(config_.tag), id, diff, config_.dedup.threshold)) {
    o.kind = Kind::kEnded;
    o.final_status = status::kDuplicate;
    o.error = dup->reason;
    o.failure_detail = "this change " + dup->reason + ": it was not run. Propose a change not tried before.";
    return o;
  }
  o.kind = Kind::kCommitted;
  return o;
}

void Proposals::recover() {
  for (auto it = rows_.begin(); it != rows_.end();) {
    if (it->second.running || it->second.held) {
      ++it;
      continue;
    }
    if (it->second.attempt) {  // a try needs no proposer: handled again once the fault clears
      it->second.held = true;
      ++it;
      continue;
    }
    asked_again_.push_back(it->first);
    it = rows_.erase(it);
  }
}

void Proposals::replay_held() {
  std::vector<int64_t> held;
  for (auto& [id, row] : rows_)
    if (row.held) held.push_back(id);
  for (int64_t id : held) {
    rows_.at(id).held = false;
    deliver(handle(id));
  }
}

void Proposals::end_rows_at_stop() {
  std::vector<int64_t> ids = std::exchange(asked_again_, {});
  for (const auto& [id, row] : rows_) {
    ids.push_back(id);
    if (row.attempt) store_.take_try(row.attempt->id, std::nullopt);  // taken again at the next start
  }
  rows_.clear();
  for (int64_t id : ids)
    if (!drop_empty_row(id, "at stop")) store_.finish(id, status::kInterrupted, "stopped while waiting for a proposal", "");
}

std::string Proposals::idea_for(int64_t id) {
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

bool Proposals::drop_empty_row(int64_t id, const std::string& when) {
  if (!store_.delete_if_empty(id)) return false;
  log_("#" + std::to_string(id) + " removed " + when + ": it had no proposal and no LLM call; its id stays unused");
  return true;
}

void Proposals::record_end(int64_t id, const std::string& final_status, const std::string& error,
                           const std::string& log_tail, const std::string& failure_detail) {
  store_.finish(id, final_status, error, log_tail);
  breaker_.record_end(final_status, error);
  if (final_status == status::kKept) last_failure_.reset();
  else if (auto told = failure_to_tell(final_status, error, log_tail, failure_detail)) last_failure_ = std::move(told);
}

}  // namespace ard
