// See experiment_loop.h. Ordering rule for every outcome: record it in the
// store first, then move the branch. A daemon killed between the two leaves a
// branch tip the next start resets to the best kept commit.
#include "daemon/experiment_loop.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "daemon/data_prep.h"
#include "daemon/fatal_error.h"
#include "daemon/summary.h"

namespace ard {
namespace {

std::string short_id(const std::string& commit) { return commit.substr(0, 7); }

std::string one_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  size_t a = line.find_first_not_of(" \t\r");
  size_t b = line.find_last_not_of(" \t\r");
  line = a == std::string::npos ? "" : line.substr(a, b - a + 1);
  if (line.size() > 200) line = line.substr(0, 197) + "...";
  return line.empty() ? "(no description)" : line;
}

std::string fmt_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string first_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) return line;
  return "";
}

/// Writes a file via a temporary beside it and a rename: never half-written.
void write_atomic(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::filesystem::path tmp = path;
  tmp += ".ard-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.close();
    if (!out) throw FatalError("cannot write " + tmp.string());
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

std::string substitute(const std::string& command, const std::string& data_dir, double budget_s,
                       const std::string& worktree) {
  const std::pair<std::string, std::string> vars[] = {
      {"{data_dir}", data_dir}, {"{budget}", fmt_number(budget_s)}, {"{worktree}", worktree}};
  std::string out = command;
  for (const auto& [key, value] : vars) {
    for (size_t pos = out.find(key); pos != std::string::npos; pos = out.find(key, pos + value.size()))
      out.replace(pos, key.size(), value);
  }
  return out;
}

std::string compiler_errors(const std::string& log) {
  std::istringstream in(log);
  std::string out;
  int n = 0;
  for (std::string line; std::getline(in, line) && n < 40;) {
    if (line.find("error") != std::string::npos || line.find("Error") != std::string::npos) {
      out += line + "\n";
      ++n;
    }
  }
  if (!out.empty()) return out;
  // No line says error: the tail is the best we have.
  std::vector<std::string> lines;
  std::istringstream again(log);
  for (std::string line; std::getline(again, line);) lines.push_back(line);
  for (size_t i = lines.size() > 30 ? lines.size() - 30 : 0; i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

ExperimentLoop::ExperimentLoop(const Config& config, const StateDir& state, Store& store, ProcessRunner& runner,
                               Proposer& proposer, Log& log, const std::atomic<bool>& stop)
    : config_(config),
      state_(state),
      store_(store),
      runner_(runner),
      proposer_(proposer),
      log_(log),
      stop_(stop),
      editable_(config.editable),
      env_(scrubbed_env(config.env_pass)) {}

void ExperimentLoop::run() {
  state_.create();
  repo_ = std::make_unique<GitRepo>(config_.repo);
  repo_->exclude("/.autoresearchd/");
  reconcile();
  session_ = store_.begin_session(config_.tag, getpid());
  log_("session " + std::to_string(session_) + ": tag " + config_.tag + ", branch autoresearch/" + config_.tag +
       ", best " + short_id(best_commit_) + ", proposer " + proposer_.name());
  try {
    if (config_.data.enabled) {
      data_dir_ = prepare_data(config_, worktree_->workdir(), state_, runner_, log_);
      store_.set_session_data_dir(session_, data_dir_);
    }
    bool need_baseline = true;
    for (const auto& r : store_.experiments(config_.tag))
      if (r.is_baseline && r.state != status::kInterrupted) need_baseline = false;
    if (need_baseline && !stop_) run_baseline();
    while (!stop_) run_experiment();
    if (pending_ && !store_.delete_if_empty(*pending_))
      store_.finish(*pending_, status::kInterrupted, "stopped while waiting for a proposal", "");
  } catch (const FatalError& e) {
    if (!stop_) {
      store_.end_session(session_, std::string("error: ") + e.what());
      throw;
    }
  } catch (const std::exception& e) {
    store_.end_session(session_, std::string("error: ") + e.what());
    throw;
  }
  store_.end_session(session_, "stopped");
  log_("stopped");
}

void ExperimentLoop::reconcile() {
  if (int n = store_.close_dead_sessions()) log_("reconcile: closed " + std::to_string(n) + " session(s) of a killed daemon");
  for (const auto& r : store_.unfinished()) {
    if (store_.delete_if_empty(r.id)) continue;  // was only waiting for a proposal
    if (r.pgid && kill_orphan_group(static_cast<pid_t>(*r.pgid), state_.root))
      log_("reconcile: killed orphaned process group " + std::to_string(*r.pgid) + " of #" + std::to_string(r.id));
    std::string where = r.state + (r.stage.empty() || r.state == "proposing" ? "" : " (stage " + r.stage + ")");
    store_.finish(r.id, status::kInterrupted, "the daemon stopped while the experiment was " + where, r.log_tail);
    log_("reconcile: #" + std::to_string(r.id) + " marked interrupted (was " + where + ")");
  }

  const std::string branch = "autoresearch/" + config_.tag;
  worktree_ = repo_->open_worktree(config_.tag, branch, state_.worktree(config_.tag));
  if (auto base = store_.run_base(config_.tag)) {
    base_commit_ = *base;
    if (!worktree_->has_commit(base_commit_))
      throw FatalError("base commit " + base_commit_ + " of tag " + config_.tag + " is not in the repo");
  } else {
    base_commit_ = worktree_->head();
    store_.add_run(config_.tag, branch, base_commit_);
  }
  auto best = store_.best(config_.tag);
  best_commit_ = best ? best->commit : base_commit_;
  best_val_ = best ? best->val_bpb : std::nullopt;
  if (!worktree_->has_commit(best_commit_))
    throw FatalError("kept commit " + best_commit_ + " of #" + std::to_string(best->id) + " is not in the repo");
  std::string tip = worktree_->head();
  if (tip != best_commit_)
    log_("reconcile: " + branch + " tip " + short_id(tip) + " is not the best kept commit; reset to " +
         short_id(best_commit_));
  worktree_->reset_hard(best_commit_);  // also drops edits an interrupted experiment left uncommitted
}

std::string ExperimentLoop::read_program(std::string& hash) {
  std::filesystem::path path = config_.repo / config_.program;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  if (in) ss << in.rdbuf();
  else log_("warning: cannot read " + path.string() + "; proposing without it");
  std::string content = ss.str();
  hash = blob_hash(content);
  store_.put_program(hash, content);
  return content;
}

std::vector<HistoryEntry> ExperimentLoop::history(int64_t exclude_id) {
  std::vector<HistoryEntry> out;
  for (const auto& r : store_.experiments(config_.tag)) {
    if (r.id == exclude_id || !is_final_state(r.state)) continue;
    HistoryEntry h;
    h.id = r.id;
    h.commit = short_id(r.commit);
    h.description = r.description;
    h.val_bpb = r.val_bpb;
    h.status = r.state;
    h.baseline = r.is_baseline;
    out.push_back(std::move(h));
  }
  return out;
}

void ExperimentLoop::wait(double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!stop_ && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

void ExperimentLoop::run_baseline() {
  std::string hash;
  read_program(hash);
  int64_t id = store_.create_experiment(config_.tag, true, best_commit_, hash, "baseline", std::nullopt);
  store_.set_proposal(id, "baseline");
  store_.set_commit(id, best_commit_, "");
  log_("#" + std::to_string(id) + " baseline at " + short_id(best_commit_));
  evaluate(id, best_commit_, true, 0);
}

void ExperimentLoop::run_experiment() {
  std::string hash;
  std::string program = read_program(hash);
  const std::optional<Fix> fix = fix_;
  int64_t id;
  if (pending_) {
    id = *pending_;
    store_.set_program(id, hash);
  } else {
    id = store_.create_experiment(config_.tag, false, best_commit_, hash, proposer_.name(),
                                  fix ? std::optional<int64_t>(fix->of) : std::nullopt);
    pending_ = id;
  }

  ProposalContext ctx;
  ctx.experiment_id = id;
  ctx.program_md = program;
  ctx.files = fix ? fix->files : worktree_->editable_files(best_commit_, editable_);
  ctx.history = history(id);
  ctx.best_val_bpb = best_val_;
  ctx.last_failure = last_failure_;
  ProposalResult result = proposer_.propose(ctx);

  const auto& attempts = result.ok() ? result.proposal->attempts : result.error->attempts;
  int n = static_cast<int>(store_.attempts(id).size());
  for (const auto& a : attempts) store_.add_attempt(id, ++n, a);

  if (!result.ok()) {
    const ProposalError& e = *result.error;
    switch (e.kind) {
      case ProposalError::Kind::kExhausted:
      case ProposalError::Kind::kUnavailable: {
        std::string msg = std::string(e.kind == ProposalError::Kind::kExhausted ? "nothing to propose"
                                                                                 : "proposer unavailable") +
                          ": " + e.message;
        if (msg != last_wait_message_) log_(msg + "; asking again every " + fmt_number(config_.retry_wait_s) + " s");
        last_wait_message_ = msg;
        wait(config_.retry_wait_s);
        return;
      }
      case ProposalError::Kind::kFatal:
        pending_.reset();
        store_.finish(id, status::kProposerError, e.message, "");
        throw FatalError("proposer: " + e.message);
      case ProposalError::Kind::kBadEdit:
        pending_.reset();
        fix_.reset();
        store_.finish(id, status::kProposerError, e.message, "");
        last_failure_ = Failure{status::kProposerError, e.message};
        log_("#" + std::to_string(id) + " proposer_error: " + e.message);
        return;
    }
  }
  pending_.reset();
  last_wait_message_.clear();
  fix_.reset();

  const Proposal& p = *result.proposal;
  const std::string description = one_line(p.description);
  store_.set_proposal(id, description);
  std::string rejected = p.writes.empty() ? "the proposal writes no file" : "";
  for (const auto& w : p.writes)
    if (rejected.empty()) rejected = editable_.check_write(w.path);
  if (!rejected.empty()) {
    fail(id, status::kPatchRejected, rejected, "");
    return;
  }

  std::set<std::string> paths;
  std::string commit;
  try {
    if (fix)
      for (const auto& f : fix->files) {
        write_atomic(worktree_->workdir() / f.path, f.content);
        paths.insert(f.path);
      }
    for (const auto& w : p.writes) {
      write_atomic(worktree_->workdir() / w.path, w.content);
      paths.insert(w.path);
    }
    commit = worktree_->commit_paths({paths.begin(), paths.end()}, description);
  } catch (const std::exception& e) {
    // A path that cannot be a file (an existing directory, say) is a bad edit, not a reason to stop.
    fail(id, status::kPatchRejected, std::string("the edit cannot be applied: ") + e.what(), "");
    return;
  }
  if (commit.empty()) {
    fail(id, status::kPatchRejected, "the edit changes nothing", "");
    return;
  }
  store_.set_commit(id, commit, worktree_->diff(best_commit_, commit));
  log_("#" + std::to_string(id) + " " + short_id(commit) + " " + description +
       (fix ? " (fix " + std::to_string(fix->round) + " of #" + std::to_string(fix->of) + ")" : ""));
  evaluate(id, commit, false, fix ? fix->round : 0);
}

std::string ExperimentLoop::tamper_check() {
  std::vector<std::string> bad;
  for (const auto& p : worktree_->changed_since(base_commit_))
    if (!editable_.contains(p)) bad.push_back(p);
  if (bad.empty()) return "";
  std::string list;
  for (size_t i = 0; i < bad.size() && i < 10; ++i) list += (i ? ", " : "") + bad[i];
  if (bad.size() > 10) list += ", ...";
  return "files outside the editable paths differ from the base commit: " + list;
}

ProcessResult ExperimentLoop::run_child(int64_t id, const std::string& command, double timeout_s,
                                        const std::filesystem::path& log) {
  ProcessSpec spec{command, worktree_->workdir(), env_, log, timeout_s};
  ProcessResult r = runner_.run(spec, [&](pid_t pgid) { store_.set_pgid(id, pgid); });
  store_.set_pgid(id, std::nullopt);
  return r;
}

void ExperimentLoop::fail(int64_t id, const std::string& final_status, const std::string& error,
                          const std::string& log_tail, const std::string& failure_detail) {
  store_.finish(id, final_status, error, log_tail);
  worktree_->reset_hard(best_commit_);
  if (final_status != status::kDiscarded && final_status != status::kInterrupted)
    last_failure_ = Failure{final_status, failure_detail.empty() ? error + "\n" + log_tail : failure_detail};
  log_("#" + std::to_string(id) + " " + final_status + (error.empty() ? "" : ": " + error));
}

void ExperimentLoop::evaluate(int64_t id, const std::string& commit, bool baseline, int fix_round) {
  auto stage_log = [&](const std::string& name) {
    return state_.logs() / (std::to_string(id) + "-" + name + ".log");
  };
  if (std::string t = tamper_check(); !t.empty()) {
    fail(id, status::kTampered, t, "");
    return;
  }

  double now = now_seconds();
  store_.set_stage(id, "building", "build", now, now + config_.build_timeout_s, now + config_.build_timeout_s);
  auto build_log = stage_log("build");
  ProcessResult b = run_child(id, config_.build_command, config_.build_timeout_s, build_log);
  std::string tail = file_tail(build_log);
  if (b.end == ProcessResult::End::kStopped) {
    fail(id, status::kInterrupted, "stopped during the build", tail);
    return;
  }
  if (!b.ok()) {
    std::string errors = compiler_errors(file_tail(build_log, 400, 65536));
    std::string error = b.end == ProcessResult::End::kTimedOut
                            ? "build " + b.describe()
                            : "build failed (" + b.describe() + "): " + first_line(errors);
    if (!baseline && fix_round < config_.max_fix_attempts)
      fix_ = Fix{id, fix_round + 1, worktree_->editable_files(commit, editable_)};
    fail(id, status::kBuildFail, error, tail, errors);
    return;
  }

  std::filesystem::path last_log;
  for (const StageConfig& s : config_.stages) {
    if (std::string t = tamper_check(); !t.empty()) {
      fail(id, status::kTampered, "before stage " + s.name + ": " + t, "");
      return;
    }
    now = now_seconds();
    store_.set_stage(id, "running", s.name, now, now + s.timeout_s, now + s.expected_s);
    last_log = stage_log(s.name);
    std::string cmd = substitute(s.command, data_dir_, config_.budget_s, worktree_->workdir().string());
    ProcessResult r = run_child(id, cmd, s.timeout_s, last_log);
    tail = file_tail(last_log);
    if (r.end == ProcessResult::End::kStopped) {
      fail(id, status::kInterrupted, "stopped during stage " + s.name, tail);
      return;
    }
    if (r.end == ProcessResult::End::kTimedOut) {
      fail(id, status::kTimeout, "stage " + s.name + " " + r.describe(), tail);
      return;
    }
    if (!r.ok()) {
      std::string fl = fail_line(file_tail(last_log, 400, 65536));
      fail(id, status::kCrash, "stage " + s.name + " failed (" + r.describe() + ")" + (fl.empty() ? "" : ": " + fl),
           tail);
      return;
    }
  }

  const std::string& last = config_.stages.back().name;
  auto summary = parse_summary(file_tail(last_log, 400, 65536), config_.summary_keys);
  if (!summary) {
    fail(id, status::kCrash, "stage " + last + " printed no summary block", tail);
    return;
  }
  auto it = summary->values.find(config_.metric);
  if (it == summary->values.end()) {
    fail(id, status::kCrash, "the summary of stage " + last + " has no " + config_.metric, tail);
    return;
  }
  double v = it->second;
  if (!std::isfinite(v)) {
    fail(id, status::kCrash, config_.metric + " is " + fmt_number(v), tail);
    return;
  }
  auto value_of = [&](const char* key) -> std::optional<double> {
    auto f = summary->values.find(key);
    if (f == summary->values.end()) return std::nullopt;
    return f->second;
  };
  store_.set_metrics(id, {v, value_of("peak_vram_mb"), value_of("training_seconds"), summary->to_json()});

  last_failure_.reset();
  bool keep = best_val_ ? (v < *best_val_ && *best_val_ - v >= config_.min_improvement) : true;
  std::ostringstream what;
  what << config_.metric << " " << v;
  if (best_val_) what << " vs best " << *best_val_;
  if (keep) {
    store_.finish(id, status::kKept, "", tail);
    best_commit_ = commit;
    best_val_ = v;
    log_("#" + std::to_string(id) + " kept: " + what.str());
  } else {
    fail(id, status::kDiscarded, what.str() + " is no improvement", tail);
  }
}

}  // namespace ard
