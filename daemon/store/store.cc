// See store.h.
#include "daemon/store/store.h"
#include "daemon/util/clock.h"

#include <chrono>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "daemon/schema_sql.h"  // generated from results.db.schema: kSchemaSql

namespace ard {
namespace {

constexpr const char* kExperimentColumns =
    "id, tag, is_baseline, parent_commit, commit_hash, description, program_hash, proposer, fix_of, "
    "state, stage, stage_started_at, stage_deadline, stage_expected, pgid, val_bpb, peak_vram_mb, "
    "training_seconds, summary_json, diff, error, log_tail, started_at, ended_at, gpu, reapplied_from, pgid_start, resumes, idea_id, decision, profile";

ExperimentRow read_experiment(const Statement& s) {
  ExperimentRow r;
  r.id = s.integer(0);
  r.tag = s.text(1);
  r.is_baseline = s.integer(2) != 0;
  r.parent_commit = s.text(3);
  r.commit = s.text(4);
  r.description = s.text(5);
  r.program_hash = s.text(6);
  r.proposer = s.text(7);
  r.fix_of = s.opt_integer(8);
  r.state = s.text(9);
  r.stage = s.text(10);
  r.stage_started_at = s.opt_real(11);
  r.stage_deadline = s.opt_real(12);
  r.stage_expected = s.opt_real(13);
  r.pgid = s.opt_integer(14);
  r.val_bpb = s.opt_real(15);
  r.peak_vram_mb = s.opt_real(16);
  r.training_seconds = s.opt_real(17);
  r.summary_json = s.text(18);
  r.diff = s.text(19);
  r.error = s.text(20);
  r.log_tail = s.text(21);
  r.started_at = s.real(22);
  r.ended_at = s.opt_real(23);
  r.gpu = s.text(24);
  r.reapplied_from = s.text(25);
  r.pgid_start = s.opt_integer(26);
  r.resumes = static_cast<int>(s.integer(27));
  r.idea_id = s.opt_integer(28);
  r.profile = s.text(30);
  r.decision = s.text(29);
  return r;
}

struct Section {
  int version;
  std::string sql;
};

/// Splits the schema at its "-- version N" lines.
std::vector<Section> schema_sections() {
  std::vector<Section> out;
  std::istringstream in(kSchemaSql);
  static const std::regex header(R"(^--\s*version\s+(\d+)\s*$)");
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, header)) {
      out.push_back({std::stoi(m[1]), {}});
    } else if (!out.empty()) {
      out.back().sql += line + "\n";
    }
  }
  return out;
}

/// A state's word as a quoted SQL literal (the words are fixed, never user text).
std::string sql_word(ExperimentState state) { return "'" + std::string(to_string(state)) + "'"; }

}  // namespace

std::string display_description(const ExperimentRow& row) {
  if (!row.description.empty() || row.state != status::kProposerError) return row.description;
  std::string line = row.error.substr(0, row.error.find('\n'));
  for (char& c : line)
    if (c == '\t' || c == '\r') c = ' ';
  // The first words: enough to tell failures apart in a table row.
  constexpr size_t kMax = 60;
  if (line.size() > kMax) {
    size_t cut = line.rfind(' ', kMax);
    line = line.substr(0, cut == std::string::npos || cut < kMax / 2 ? kMax : cut) + "...";
  }
  return "(proposer error" + (line.empty() ? std::string() : ": " + line) + ")";
}


Store::Store(const std::string& path, BusyPolicy busy) : db_(path, busy) {
  {
    auto s = db_.prepare("PRAGMA journal_mode=WAL");
    s.step();
  }
  db_.exec("PRAGMA foreign_keys=ON");
  migrate();
}

Store::Store(const std::string& path, ReadOnlyTag) : db_(path, OpenMode::kReadOnly) {
  int v = version();
  if (v == 0) throw SqliteError(path + " is not an autoresearchd results store");
  if (v != latest_version())
    throw SqliteError(path + " has schema version " + std::to_string(v) + ", this autoresearchd reads version " +
                      std::to_string(latest_version()) +
                      (v < latest_version() ? " (start the daemon once to migrate it)" : ""));
}

std::unique_ptr<Store> Store::open_read_only(const std::string& path) {
  return std::unique_ptr<Store>(new Store(path, ReadOnlyTag{}));
}

int Store::latest_version() {
  auto sections = schema_sections();
  return sections.empty() ? 0 : sections.back().version;
}

int Store::version() {
  auto s = db_.prepare("PRAGMA user_version");
  s.step();
  return static_cast<int>(s.integer(0));
}

void Store::migrate() {
  if (version() > latest_version())
    throw SqliteError(db_.path() + " has schema version " + std::to_string(version()) +
                      ", newer than this autoresearchd (" + std::to_string(latest_version()) + ")");
  if (version() == latest_version()) return;  // readers never take the write lock
  for (const Section& sec : schema_sections()) {
    // The version is read again inside the write lock: a second process
    // opening the same new database must not apply a section twice.
    Transaction t(db_);
    if (sec.version <= version()) continue;
    db_.exec(sec.sql);
    db_.exec("PRAGMA user_version=" + std::to_string(sec.version));
    t.commit();
  }
}

std::optional<std::string> Store::run_base(const std::string& tag) {
  auto s = db_.prepare("SELECT base_commit FROM runs WHERE tag=?");
  s.bind(1, tag);
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

void Store::set_run_base(const std::string& tag, const std::string& base_commit) {
  db_.prepare("UPDATE runs SET base_commit=? WHERE tag=?").bind(1, base_commit).bind(2, tag).run();
}

void Store::add_run(const std::string& tag, const std::string& branch, const std::string& base_commit) {
  db_.prepare("INSERT INTO runs(tag, branch, base_commit, created_at) VALUES(?,?,?,?)")
      .bind(1, tag).bind(2, branch).bind(3, base_commit).bind(4, now_seconds()).run();
}

void Store::put_program(const std::string& hash, const std::string& content) {
  db_.prepare("INSERT OR IGNORE INTO program_versions(hash, content, first_seen) VALUES(?,?,?)")
      .bind(1, hash).bind(2, content).bind(3, now_seconds()).run();
}

std::optional<std::string> Store::program(const std::string& hash) {
  auto s = db_.prepare("SELECT content FROM program_versions WHERE hash=?");
  s.bind(1, hash);
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

int64_t Store::program_count() {
  auto s = db_.prepare("SELECT count(*) FROM program_versions");
  s.step();
  return s.integer(0);
}

int64_t Store::create_experiment(const std::string& tag, bool is_baseline, const std::string& parent_commit,
                                 const std::string& program_hash, const std::string& proposer,
                                 std::optional<int64_t> fix_of) {
  auto s = db_.prepare(
      "INSERT INTO experiments(tag, is_baseline, parent_commit, program_hash, proposer, fix_of, state, "
      "started_at) VALUES(?,?,?,?,?,?," + sql_word(ExperimentState::kProposing) + ",?)");
  s.bind(1, tag).bind(2, is_baseline ? 1 : 0).bind(3, parent_commit);
  if (program_hash.empty()) s.bind_null(4); else s.bind(4, program_hash);
  s.bind(5, proposer).bind(6, fix_of).bind(7, now_seconds()).run();
  return db_.last_insert_id();
}

void Store::set_program(int64_t id, const std::string& program_hash) {
  db_.prepare("UPDATE experiments SET program_hash=? WHERE id=?").bind(1, program_hash).bind(2, id).run();
}

void Store::set_proposal(int64_t id, const std::string& description) {
  db_.prepare("UPDATE experiments SET description=?, state=" + sql_word(ExperimentState::kApplied) + " WHERE id=?")
      .bind(1, description).bind(2, id).run();
}

void Store::set_state(int64_t id, ExperimentState state) {
  db_.prepare("UPDATE experiments SET state=? WHERE id=?").bind(1, to_string(state)).bind(2, id).run();
}

void Store::set_commit(int64_t id, const std::string& commit, const std::string& diff) {
  db_.prepare("UPDATE experiments SET commit_hash=?, diff=?, state=" + sql_word(ExperimentState::kCommitted) + " WHERE id=?")
      .bind(1, commit).bind(2, diff).bind(3, id).run();
}

void Store::set_stage(int64_t id, ExperimentState state, const std::string& stage, double started_at,
                      double deadline, double expected_end) {
  db_.prepare(
         "UPDATE experiments SET state=?, stage=?, stage_started_at=?, stage_deadline=?, stage_expected=? "
         "WHERE id=?")
      .bind(1, to_string(state)).bind(2, stage).bind(3, started_at).bind(4, deadline).bind(5, expected_end)
      .bind(6, id).run();
}

void Store::set_pgid(int64_t id, std::optional<int64_t> pgid) {
  db_.prepare("UPDATE experiments SET pgid=?, pgid_start=NULL WHERE id=?").bind(1, pgid).bind(2, id).run();
}

void Store::set_pgid(int64_t id, int64_t pgid, int64_t leader_start) {
  db_.prepare("UPDATE experiments SET pgid=?, pgid_start=? WHERE id=?")
      .bind(1, pgid).bind(2, leader_start).bind(3, id).run();
}

void Store::set_metrics(int64_t id, const RunMetrics& m) {
  db_.prepare(
         "UPDATE experiments SET state=" + sql_word(ExperimentState::kEvaluated) + ", val_bpb=?, peak_vram_mb=?, training_seconds=?, "
         "summary_json=? WHERE id=?")
      .bind(1, m.val_bpb).bind(2, m.peak_vram_mb).bind(3, m.training_seconds).bind(4, m.summary_json)
      .bind(5, id).run();
}

void Store::set_gpu(int64_t id, const std::string& gpu) {
  db_.prepare("UPDATE experiments SET gpu=? WHERE id=?").bind(1, gpu).bind(2, id).run();
}

void Store::set_reapplied(int64_t id, const std::string& commit, const std::string& parent, const std::string& diff) {
  db_.prepare(
         "UPDATE experiments SET reapplied_from=coalesce(reapplied_from, commit_hash), commit_hash=?, "
         "parent_commit=?, diff=?, state=" + sql_word(ExperimentState::kCommitted) + ", val_bpb=NULL, peak_vram_mb=NULL, training_seconds=NULL, "
         "summary_json=NULL WHERE id=?")
      .bind(1, commit).bind(2, parent).bind(3, diff).bind(4, id).run();
}

int64_t Store::begin_trial(int64_t experiment_id, const std::string& tag, const std::string& gpu,
                           const std::string& purpose, const std::string& commit, double budget_scale,
                           int64_t calibration, int rung) {
  db_.prepare(
         "INSERT INTO trials(experiment_id, tag, gpu, purpose, commit_hash, started_at, budget_scale, calibration, rung) "
         "VALUES(?,?,?,?,?,?,?,?,?)")
      .bind(1, experiment_id).bind(2, tag).bind(3, gpu).bind(4, purpose).bind(5, commit).bind(6, now_seconds())
      .bind(7, budget_scale).bind(8, static_cast<long long>(calibration)).bind(9, static_cast<long long>(rung))
      .run();
  return db_.last_insert_id();
}

void Store::set_trial_steps(int64_t trial_id, std::optional<int64_t> num_steps, std::optional<double> tokens) {
  std::optional<long long> steps;
  if (num_steps) steps = *num_steps;
  db_.prepare("UPDATE trials SET num_steps=?, tokens=? WHERE id=?").bind(1, steps).bind(2, tokens).bind(3, trial_id).run();
}

void Store::set_decision(int64_t id, const std::string& reason, std::optional<double> mean_val_bpb) {
  db_.prepare("UPDATE experiments SET decision=?, val_bpb=coalesce(?, val_bpb) WHERE id=?")
      .bind(1, reason).bind(2, mean_val_bpb).bind(3, id).run();
}

std::string Store::decision(int64_t id) {
  auto s = db_.prepare("SELECT decision FROM experiments WHERE id=?");
  s.bind(1, id);
  return s.step() ? s.text(0) : "";
}

int64_t Store::add_change_label(const ChangeLabelRow& row) {
  db_.prepare("INSERT INTO change_labels(experiment_id, rung, label, evidence, decided_at) VALUES(?,?,?,?,?)")
      .bind(1, row.experiment_id).bind(2, static_cast<long long>(row.rung)).bind(3, row.label).bind(4, row.evidence)
      .bind(5, row.decided_at > 0 ? row.decided_at : now_seconds()).run();
  return db_.last_insert_id();
}

namespace {
constexpr const char* kLabelColumns = "SELECT l.id, l.experiment_id, l.rung, l.label, l.evidence, l.decided_at FROM change_labels l ";

std::vector<ChangeLabelRow> read_labels(Statement& s) {
  std::vector<ChangeLabelRow> out;
  while (s.step())
    out.push_back({s.integer(0), s.integer(1), static_cast<int>(s.integer(2)), s.text(3), s.text(4), s.real(5)});
  return out;
}
}  // namespace

std::vector<ChangeLabelRow> Store::change_labels(int64_t experiment_id) {
  auto s = db_.prepare(std::string(kLabelColumns) + "WHERE l.experiment_id=? ORDER BY l.id");
  s.bind(1, experiment_id);
  return read_labels(s);
}

std::optional<ChangeLabelRow> Store::change_label(int64_t experiment_id, int rung) {
  auto s = db_.prepare(std::string(kLabelColumns) + "WHERE l.experiment_id=? AND l.rung=? ORDER BY l.id DESC LIMIT 1");
  s.bind(1, experiment_id).bind(2, static_cast<long long>(rung));
  auto rows = read_labels(s);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::vector<ChangeLabelRow> Store::current_change_labels(const std::string& tag) {
  auto s = db_.prepare(std::string(kLabelColumns) +
                       "JOIN experiments e ON e.id = l.experiment_id WHERE e.tag=? AND l.id = "
                       "(SELECT max(id) FROM change_labels m WHERE m.experiment_id = l.experiment_id AND m.rung = l.rung) "
                       "ORDER BY l.experiment_id, l.rung");
  s.bind(1, tag);
  return read_labels(s);
}

int64_t Store::request_promotion(const std::string& tag) {
  db_.prepare("INSERT INTO promotion_rounds(tag, requested_at) VALUES(?,?)").bind(1, tag).bind(2, now_seconds()).run();
  return db_.last_insert_id();
}

int64_t Store::start_promotion_round(int64_t id, const std::string& tag, int rung, const std::string& reason) {
  if (id == 0) {
    db_.prepare("INSERT INTO promotion_rounds(tag, rung, reason, started_at) VALUES(?,?,?,?)")
        .bind(1, tag).bind(2, static_cast<long long>(rung)).bind(3, reason).bind(4, now_seconds()).run();
    return db_.last_insert_id();
  }
  db_.prepare("UPDATE promotion_rounds SET rung=?, reason=?, started_at=coalesce(started_at, ?) WHERE id=?")
      .bind(1, static_cast<long long>(rung)).bind(2, reason).bind(3, now_seconds()).bind(4, id).run();
  return id;
}

void Store::end_promotion_round(int64_t id, const std::string& outcome) {
  db_.prepare("UPDATE promotion_rounds SET ended_at=?, outcome=? WHERE id=?")
      .bind(1, now_seconds()).bind(2, outcome).bind(3, id).run();
}

std::vector<PromotionRoundRow> Store::promotion_rounds(const std::string& tag) {
  auto s = db_.prepare(
      "SELECT id, tag, rung, reason, requested_at, started_at, ended_at, outcome FROM promotion_rounds WHERE tag=? "
      "ORDER BY id");
  s.bind(1, tag);
  std::vector<PromotionRoundRow> out;
  while (s.step())
    out.push_back({s.integer(0), s.text(1), static_cast<int>(s.integer(2)), s.text(3), s.opt_real(4), s.opt_real(5),
                   s.opt_real(6), s.text(7)});
  return out;
}

void Store::add_noise_estimate(const std::string& tag, const NoiseRow& r) {
  db_.prepare("INSERT INTO noise_estimates(tag, created_at, sigma, df, calibration, scales, reason) VALUES(?,?,?,?,?,?,?)")
      .bind(1, tag).bind(2, r.created_at).bind(3, r.sigma).bind(4, static_cast<long long>(r.df))
      .bind(5, static_cast<long long>(r.calibration)).bind(6, r.scales).bind(7, r.reason).run();
}

std::optional<NoiseRow> Store::last_noise_estimate(const std::string& tag) {
  auto s = db_.prepare(
      "SELECT id, created_at, sigma, df, calibration, scales, reason FROM noise_estimates WHERE tag=? "
      "ORDER BY id DESC LIMIT 1");
  s.bind(1, tag);
  if (!s.step()) return std::nullopt;
  return NoiseRow{s.integer(0), s.real(1), s.opt_real(2), s.integer(3), s.integer(4), s.text(5), s.text(6)};
}

void Store::end_trial(int64_t trial_id, const std::string& status, std::optional<double> training_seconds,
                      std::optional<double> val_bpb, const std::string& summary_json) {
  db_.prepare("UPDATE trials SET ended_at=?, status=?, training_seconds=?, val_bpb=?, summary_json=? WHERE id=?")
      .bind(1, now_seconds()).bind(2, status).bind(3, training_seconds).bind(4, val_bpb).bind(5, summary_json)
      .bind(6, trial_id).run();
}

namespace {
constexpr const char* kTrialColumns =
    "SELECT id, experiment_id, gpu, purpose, commit_hash, started_at, ended_at, training_seconds, val_bpb, "
    "coalesce(status, ''), budget_scale, calibration, num_steps, tokens, slurm_job_id, slurm_log, node, rung FROM trials ";

std::vector<TrialRow> read_trials(Statement& s) {
  std::vector<TrialRow> out;
  while (s.step()) {
    std::optional<int64_t> steps;
    if (auto v = s.opt_real(12)) steps = static_cast<int64_t>(*v);
    out.push_back({s.integer(0), s.integer(1), s.text(2), s.text(3), s.text(4), s.real(5), s.opt_real(6),
                   s.opt_real(7), s.opt_real(8), s.text(9), s.real(10), s.integer(11), steps, s.opt_real(13),
                   s.text(14), s.text(15), s.text(16), static_cast<int>(s.integer(17))});
  }
  return out;
}
}  // namespace

std::vector<TrialRow> Store::trials(const std::string& tag) {
  auto s = db_.prepare(std::string(kTrialColumns) + "WHERE tag=? ORDER BY id");
  s.bind(1, tag);
  return read_trials(s);
}

void Store::set_trial_job(int64_t trial_id, const std::string& job_id, const std::string& log) {
  db_.prepare("UPDATE trials SET slurm_job_id=?, slurm_log=? WHERE id=?").bind(1, job_id).bind(2, log)
      .bind(3, trial_id).run();
}

void Store::set_trial_node(int64_t trial_id, const std::string& node) {
  db_.prepare("UPDATE trials SET node=? WHERE id=?").bind(1, node).bind(2, trial_id).run();
}

std::vector<TrialRow> Store::open_slurm_trials() {
  auto s = db_.prepare(std::string(kTrialColumns) + "WHERE ended_at IS NULL AND slurm_job_id != '' ORDER BY id");
  return read_trials(s);
}

void Store::close_open_trials(std::optional<double> ended_at) {
  db_.prepare("UPDATE trials SET ended_at=MAX(started_at, ?), status='interrupted' WHERE ended_at IS NULL")
      .bind(1, ended_at.value_or(now_seconds()))
      .run();
}

void Store::finish(int64_t id, const std::string& final_status, const std::string& error,
                   const std::string& log_tail, std::optional<double> ended_at) {
  db_.prepare(
         "UPDATE experiments SET state=?, error=?, log_tail=?, pgid=NULL, pgid_start=NULL, "
         "ended_at=MAX(started_at, ?) WHERE id=?")
      .bind(1, final_status).bind(2, error).bind(3, log_tail).bind(4, ended_at.value_or(now_seconds())).bind(5, id)
      .run();
}

int64_t Store::add_try(const std::string& tag, const std::string& commit, const std::string& parent,
                       const std::string& description) {
  db_.prepare("INSERT INTO tries(tag, commit_hash, parent, description, created_at) VALUES(?,?,?,?,?)")
      .bind(1, tag).bind(2, commit).bind(3, parent).bind(4, description).bind(5, now_seconds()).run();
  return db_.last_insert_id();
}

std::vector<TryRow> Store::tries(const std::string& tag) {
  std::vector<TryRow> out;
  auto s = db_.prepare(
      "SELECT id, tag, commit_hash, parent, description, created_at, experiment_id FROM tries WHERE tag=? ORDER BY id");
  s.bind(1, tag);
  while (s.step()) out.push_back({s.integer(0), s.text(1), s.text(2), s.text(3), s.text(4), s.real(5), s.opt_integer(6)});
  return out;
}

void Store::take_try(int64_t id, std::optional<int64_t> experiment) {
  db_.prepare("UPDATE tries SET experiment_id=? WHERE id=?").bind(1, experiment).bind(2, id).run();
}

int64_t Store::add_idea(const std::string& tag, const std::string& text, const std::string& source) {
  db_.prepare("INSERT INTO ideas(tag, text, source, created_at) VALUES(?,?,?,?)")
      .bind(1, tag).bind(2, text).bind(3, source).bind(4, now_seconds()).run();
  return db_.last_insert_id();
}

std::vector<IdeaRow> Store::ideas(const std::string& tag) {
  std::vector<IdeaRow> out;
  auto s = db_.prepare("SELECT id, tag, text, source, created_at FROM ideas WHERE tag=? ORDER BY id");
  s.bind(1, tag);
  while (s.step()) out.push_back({s.integer(0), s.text(1), s.text(2), s.text(3), s.real(4), {}});
  for (auto& idea : out) {
    auto e = db_.prepare("SELECT id, state, commit_hash FROM experiments WHERE idea_id=? ORDER BY id");
    e.bind(1, idea.id);
    while (e.step()) idea.experiments.push_back({e.integer(0), e.text(1), !e.text(2).empty()});
  }
  return out;
}

void Store::set_profile(int64_t experiment, const std::string& profile) {
  db_.prepare("UPDATE experiments SET profile=? WHERE id=?").bind(1, profile).bind(2, experiment).run();
}

void Store::set_experiment_idea(int64_t experiment, int64_t idea) {
  db_.prepare("UPDATE experiments SET idea_id=? WHERE id=?").bind(1, idea).bind(2, experiment).run();
}

std::string checked_idea_text(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n"), last = text.find_last_not_of(" \t\r\n");
  if (first == std::string::npos)
    throw std::invalid_argument("an idea needs its text, e.g. autoresearchd idea \"try rotary embeddings\"");
  std::string idea = text.substr(first, last - first + 1);
  if (idea.size() > kMaxIdeaBytes)
    throw std::invalid_argument("the idea is " + std::to_string(idea.size()) + " bytes; at most " +
                                std::to_string(kMaxIdeaBytes) + " (a paragraph: it goes into the prompt as it is)");
  return idea;
}

bool idea_open(const IdeaRow& idea) {
  if (idea.experiments.size() >= static_cast<size_t>(kIdeaAttempts)) return false;
  for (const auto& e : idea.experiments)
    if (e.committed || !is_final_state(e.state)) return false;
  return true;
}

std::string idea_outcome(const IdeaRow& idea) {
  std::string made;  // its experiments that made a change, or the one in flight
  for (const auto& e : idea.experiments)
    if (e.committed || !is_final_state(e.state))
      made += (made.empty() ? "" : ", ") + ("#" + std::to_string(e.id) + " " + e.state);
  if (!made.empty()) return made;
  if (idea.experiments.empty()) return "waiting for the next proposal";
  const std::string tries = std::to_string(idea.experiments.size()) + " proposal(s) made no change of it";
  return idea_open(idea) ? "asked again (" + tries + ")" : "given up: " + tries;
}

void Store::resume(int64_t id) {
  db_.prepare("UPDATE experiments SET state=" + sql_word(ExperimentState::kCommitted) +
              ", stage='', stage_started_at=NULL, stage_deadline=NULL, stage_expected=NULL, pgid=NULL, pgid_start=NULL, "
              "error='', ended_at=NULL, resumes=resumes+1 WHERE id=?")
      .bind(1, id)
      .run();
}

void Store::restart_clock(int64_t id) {
  db_.prepare("UPDATE experiments SET started_at=? WHERE id=?").bind(1, now_seconds()).bind(2, id).run();
}

bool Store::delete_if_empty(int64_t id) {
  db_.prepare(
         "DELETE FROM experiments WHERE id=? AND state=" + sql_word(ExperimentState::kProposing) + " "
         "AND NOT EXISTS (SELECT 1 FROM proposal_attempts WHERE experiment_id=?) "
         "AND NOT EXISTS (SELECT 1 FROM llm_calls WHERE experiment_id=?)")
      .bind(1, id).bind(2, id).bind(3, id).run();
  return sqlite3_changes(db_.handle()) > 0;
}

void Store::add_attempt(int64_t id, int attempt, const ProposalAttempt& a) {
  db_.prepare(
         "INSERT OR REPLACE INTO proposal_attempts(experiment_id, attempt, prompt, response, error, "
         "created_at) VALUES(?,?,?,?,?,?)")
      .bind(1, id).bind(2, attempt).bind(3, a.prompt).bind(4, a.response).bind(5, a.error)
      .bind(6, now_seconds()).run();
}

std::vector<ProposalAttempt> Store::attempts(int64_t id) {
  auto s = db_.prepare(
      "SELECT prompt, response, error FROM proposal_attempts WHERE experiment_id=? ORDER BY attempt");
  s.bind(1, id);
  std::vector<ProposalAttempt> out;
  while (s.step()) out.push_back({s.text(0), s.text(1), s.text(2)});
  return out;
}

std::optional<ExperimentRow> Store::experiment(int64_t id) {
  auto s = db_.prepare(std::string("SELECT ") + kExperimentColumns + " FROM experiments WHERE id=?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_experiment(s);
}

std::vector<ExperimentRow> Store::experiments(const std::string& tag) {
  std::string sql = std::string("SELECT ") + kExperimentColumns + " FROM experiments";
  if (!tag.empty()) sql += " WHERE tag=?";
  sql += " ORDER BY id";
  auto s = db_.prepare(sql);
  if (!tag.empty()) s.bind(1, tag);
  std::vector<ExperimentRow> out;
  while (s.step()) out.push_back(read_experiment(s));
  return out;
}

std::vector<ExperimentRow> Store::unfinished() {
  std::vector<ExperimentRow> out;
  for (auto& r : experiments())
    if (!is_final_state(r.state)) out.push_back(std::move(r));
  return out;
}

std::optional<ExperimentRow> Store::best(const std::string& tag) {
  auto s = db_.prepare(std::string("SELECT ") + kExperimentColumns +
                       " FROM experiments WHERE tag=? AND state=" + sql_word(ExperimentState::kKept) + " ORDER BY id DESC LIMIT 1");
  s.bind(1, tag);
  if (!s.step()) return std::nullopt;
  return read_experiment(s);
}

int64_t Store::begin_session(const std::string& tag, int64_t pid) {
  db_.prepare("INSERT INTO sessions(tag, pid, started_at) VALUES(?,?,?)")
      .bind(1, tag).bind(2, pid).bind(3, now_seconds()).run();
  return db_.last_insert_id();
}

void Store::set_session_data_dir(int64_t id, const std::string& data_dir) {
  db_.prepare("UPDATE sessions SET data_dir=? WHERE id=?").bind(1, data_dir).bind(2, id).run();
}

void Store::set_session_alive(int64_t id) {
  db_.prepare("UPDATE sessions SET alive_at=? WHERE id=?").bind(1, now_seconds()).bind(2, id).run();
}

std::optional<double> Store::dead_sessions_alive_at() {
  auto s = db_.prepare("SELECT MAX(alive_at) FROM sessions WHERE ended_at IS NULL");
  s.step();
  return s.opt_real(0);
}

void Store::set_session_paused(int64_t id, const std::string& why) {
  db_.prepare("UPDATE sessions SET paused=? WHERE id=?").bind(1, why).bind(2, id).run();
}

void Store::set_session_gpus(int64_t id, const std::string& gpus) {
  db_.prepare("UPDATE sessions SET gpus=? WHERE id=?").bind(1, gpus).bind(2, id).run();
}

std::vector<SessionRow> Store::sessions(const std::string& tag) {
  auto s = db_.prepare(
      "SELECT id, tag, pid, data_dir, started_at, ended_at, coalesce(end_reason, ''), gpus, paused FROM sessions "
      "WHERE tag=? ORDER BY id");
  s.bind(1, tag);
  std::vector<SessionRow> out;
  while (s.step())
    out.push_back(SessionRow{s.integer(0), s.text(1), s.integer(2), s.text(3), s.real(4), s.opt_real(5), s.text(6),
                             s.text(7), s.text(8)});
  return out;
}

void Store::end_session(int64_t id, const std::string& reason) {
  db_.prepare("UPDATE sessions SET ended_at=?, end_reason=? WHERE id=?")
      .bind(1, now_seconds()).bind(2, reason).bind(3, id).run();
}

int Store::close_dead_sessions() {
  db_.prepare("UPDATE sessions SET ended_at=COALESCE(alive_at, ?), end_reason='killed' WHERE ended_at IS NULL")
      .bind(1, now_seconds()).run();
  return sqlite3_changes(db_.handle());
}

std::optional<SessionRow> Store::last_session() {
  auto s = db_.prepare(
      "SELECT id, tag, pid, data_dir, started_at, ended_at, end_reason, gpus, paused FROM sessions ORDER BY id DESC "
      "LIMIT 1");
  if (!s.step()) return std::nullopt;
  return SessionRow{s.integer(0), s.text(1), s.integer(2), s.text(3), s.real(4), s.opt_real(5), s.text(6),
                    s.text(7), s.text(8)};
}

void Store::record(const llm::CallRecord& c) {
  if (!c.call_key.empty()) {
    db_.prepare(
           "UPDATE llm_calls SET latency_s=?, input_tokens=?, output_tokens=?, status=?, cost_usd=?, error=?, "
           "cache_read_tokens=?, cache_write_tokens=?, wait_s=?, partial_text=?, usage_estimated=? WHERE call_key=?")
        .bind(1, c.latency_s).bind(2, c.input_tokens).bind(3, c.output_tokens).bind(4, c.status)
        .bind(5, c.cost_usd).bind(6, c.error).bind(7, c.cache_read_tokens).bind(8, c.cache_write_tokens)
        .bind(9, c.wait_s).bind(10, c.response).bind(11, static_cast<int64_t>(c.usage_estimated))
        .bind(12, c.call_key).run();
    if (sqlite3_changes(db_.handle()) > 0) return;
  }
  call_started(c);
}

void Store::call_started(const llm::CallRecord& c) {
  db_.prepare(
         "INSERT INTO llm_calls(experiment_id, attempt, provider, model, latency_s, input_tokens, "
         "output_tokens, status, cost_usd, error, created_at, cache_read_tokens, cache_write_tokens, retry, "
         "wait_s, partial_text, usage_estimated, call_key, tag) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
         "coalesce((SELECT tag FROM experiments WHERE id=?1), ''))")
      .bind(1, c.experiment_id).bind(2, c.attempt).bind(3, c.provider).bind(4, c.model)
      .bind(5, c.latency_s).bind(6, c.input_tokens).bind(7, c.output_tokens).bind(8, c.status)
      .bind(9, c.cost_usd).bind(10, c.error).bind(11, now_seconds()).bind(12, c.cache_read_tokens)
      .bind(13, c.cache_write_tokens).bind(14, c.retry).bind(15, c.wait_s).bind(16, c.response)
      .bind(17, static_cast<int64_t>(c.usage_estimated)).bind(18, c.call_key).run();
}

int Store::close_started_calls() {
  db_.prepare("UPDATE llm_calls SET status='interrupted', error='the daemon was killed during the call' "
              "WHERE status='started'")
      .run();
  return sqlite3_changes(db_.handle());
}

namespace {
constexpr double kLimitMemoryS = 7 * 86400;  // a learnt limit is honoured this long
}

std::optional<long> Store::learnt_limit(const std::string& provider) {
  auto s = db_.prepare("SELECT tokens FROM llm_limits WHERE provider=? AND learnt_at > ?");
  s.bind(1, provider).bind(2, now_seconds() - kLimitMemoryS);
  if (!s.step()) return std::nullopt;
  return static_cast<long>(s.integer(0));
}

void Store::learn_limit(const std::string& provider, long tokens, const std::string& reason) {
  db_.prepare("INSERT OR REPLACE INTO llm_limits(provider, tokens, reason, learnt_at) VALUES(?,?,?,?)")
      .bind(1, provider).bind(2, static_cast<int64_t>(tokens)).bind(3, reason).bind(4, now_seconds()).run();
}

std::string Store::last_prompt_cut(const std::string& tag) {
  // A round that starts a conversation stores it whole ("[system]..."), after
  // the note in brackets when something was cut.
  auto s = db_.prepare(
      "SELECT substr(a.prompt, 1, 2000) FROM proposal_attempts a JOIN experiments e ON e.id = a.experiment_id "
      "WHERE e.tag = ? AND (a.prompt LIKE '[system]%' OR a.prompt LIKE '[prompt within %') "
      "ORDER BY a.created_at DESC, a.experiment_id DESC, a.attempt DESC LIMIT 1");
  s.bind(1, tag);
  if (!s.step()) return "";
  std::string head = s.text(0);
  if (head.rfind("[prompt within ", 0) != 0) return "";
  head = head.substr(1, head.find('\n') - 1);
  if (!head.empty() && head.back() == ']') head.pop_back();
  return head;
}

std::vector<LearntLimit> Store::learnt_limits() {
  auto s = db_.prepare("SELECT provider, tokens, reason, learnt_at FROM llm_limits WHERE learnt_at > ? ORDER BY provider");
  s.bind(1, now_seconds() - kLimitMemoryS);
  std::vector<LearntLimit> out;
  while (s.step()) out.push_back({s.text(0), s.integer(1), s.text(2), s.real(3)});
  return out;
}

int64_t Store::add_process_group(int64_t pgid, int64_t leader_start, const std::string& what) {
  db_.prepare("INSERT INTO process_groups(pgid, leader_start, what, started_at) VALUES(?,?,?,?)")
      .bind(1, pgid).bind(2, leader_start).bind(3, what).bind(4, now_seconds()).run();
  return db_.last_insert_id();
}

void Store::end_process_group(int64_t record_id) {
  db_.prepare("DELETE FROM process_groups WHERE id=?").bind(1, record_id).run();
}

std::vector<ProcessGroupRow> Store::live_process_groups() {
  auto s = db_.prepare("SELECT id, pgid, leader_start, what, started_at FROM process_groups ORDER BY id");
  std::vector<ProcessGroupRow> out;
  while (s.step()) out.push_back({s.integer(0), s.integer(1), s.integer(2), s.text(3), s.real(4)});
  return out;
}

double LlmTotals::cache_hit_rate() const {
  int64_t prompt = input_tokens + cache_read_tokens + cache_write_tokens;
  return prompt > 0 ? static_cast<double>(cache_read_tokens) / prompt : 0;
}

LlmTotals Store::llm_totals(const std::string& tag) {
  auto s = db_.prepare(
      "SELECT count(*), coalesce(sum(input_tokens),0), coalesce(sum(output_tokens),0), "
      "coalesce(sum(cache_read_tokens),0), coalesce(sum(cache_write_tokens),0), coalesce(sum(cost_usd),0), "
      "coalesce(sum(usage_estimated),0) FROM llm_calls WHERE ?1 = '' OR tag = ?1");
  s.bind(1, tag);
  s.step();
  return {s.integer(0), s.integer(1), s.integer(2), s.integer(3), s.integer(4), s.real(5), s.integer(6)};
}

llm::Spend Store::spend(const std::string& tag) {
  llm::Spend out;
  out.cost_usd = llm_totals(tag).cost_usd;
  auto s = db_.prepare("SELECT created_at FROM llm_calls WHERE tag=? AND created_at > ? ORDER BY created_at");
  s.bind(1, tag).bind(2, now_seconds() - 3600);
  while (s.step()) out.call_times.push_back(s.real(0));
  return out;
}

std::vector<LlmCallRow> Store::llm_calls(int64_t experiment_id) {
  auto s = db_.prepare(
      "SELECT attempt, retry, status, error, partial_text, latency_s, wait_s, cost_usd, input_tokens, "
      "output_tokens, cache_read_tokens, cache_write_tokens, usage_estimated FROM llm_calls WHERE experiment_id=? "
      "ORDER BY id");
  s.bind(1, experiment_id);
  std::vector<LlmCallRow> out;
  while (s.step())
    out.push_back({static_cast<int>(s.integer(0)), static_cast<int>(s.integer(1)), s.text(2), s.text(3), s.text(4),
                   s.real(5), s.real(6), s.real(7), s.integer(8), s.integer(9), s.integer(10), s.integer(11),
                   s.integer(12) != 0});
  return out;
}

std::vector<TrialRow> Store::experiment_trials(int64_t id) {
  auto row = experiment(id);
  if (!row) return {};
  std::vector<TrialRow> out;
  for (auto& t : trials(row->tag))
    if (t.experiment_id == id) out.push_back(std::move(t));
  return out;
}

std::vector<ProgramVersion> Store::programs() {
  auto s = db_.prepare("SELECT hash, content, first_seen FROM program_versions ORDER BY first_seen, hash");
  std::vector<ProgramVersion> out;
  while (s.step()) out.push_back({s.text(0), s.text(1), s.real(2)});
  return out;
}

}  // namespace ard
