// The results store: <repo>/.autoresearchd/results.db, schema in
// results.db.schema (embedded at build time, applied by user_version
// migrations, WAL mode so `status` reads while the daemon writes).
//
// Every experiment is written as it moves through its states, so a daemon
// killed at any point leaves rows the next start can reconcile. The store is
// also the sink for LLM call records (llm_calls).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/store/experiment_state.h"
#include "daemon/store/sqlite.h"
#include "proposers/call_record.h"
#include "proposers/proposer.h"

namespace ard {

/// The final statuses by name, as the column holds them (experiment_state.h).
namespace status {
inline constexpr const char* kKept = to_string(ExperimentState::kKept);
inline constexpr const char* kDiscarded = to_string(ExperimentState::kDiscarded);
inline constexpr const char* kCrash = to_string(ExperimentState::kCrash);
inline constexpr const char* kTimeout = to_string(ExperimentState::kTimeout);
inline constexpr const char* kBuildFail = to_string(ExperimentState::kBuildFail);
inline constexpr const char* kTampered = to_string(ExperimentState::kTampered);
inline constexpr const char* kPatchRejected = to_string(ExperimentState::kPatchRejected);
inline constexpr const char* kProposerError = to_string(ExperimentState::kProposerError);
inline constexpr const char* kInterrupted = to_string(ExperimentState::kInterrupted);
inline constexpr const char* kConflict = to_string(ExperimentState::kConflict);
inline constexpr const char* kDuplicate = to_string(ExperimentState::kDuplicate);
inline constexpr const char* kEnvironmentError = to_string(ExperimentState::kEnvironmentError);
}  // namespace status

struct ExperimentRow {
  int64_t id = 0;
  std::string tag;
  bool is_baseline = false;
  std::string parent_commit;
  std::string commit;  ///< empty until committed
  std::string description;
  std::string program_hash;
  std::string proposer;
  std::optional<int64_t> fix_of;
  std::string state;
  std::string stage;
  std::optional<double> stage_started_at, stage_deadline, stage_expected;
  std::optional<int64_t> pgid;
  std::optional<int64_t> pgid_start;  ///< start time of the group's leader (clock ticks since boot)
  std::optional<double> val_bpb, peak_vram_mb, training_seconds;
  std::string summary_json;
  std::string diff;
  std::string error;
  std::string log_tail;
  double started_at = 0;
  std::optional<double> ended_at;
  std::string gpu;             ///< the GPU it trains or trained on; empty before one is assigned
  std::string reapplied_from;  ///< its own commit, when commit is that change re-applied onto a newer best
  int resumes = 0;             ///< times it was run again after a stop or restart interrupted it (resume.h)
  std::optional<int64_t> idea_id;  ///< the researcher's idea it was asked to try (ideas)
  std::string decision;            ///< the keep rule's reason line; empty before a decision
  std::string profile;             ///< the proposer profile it was drawn for; '' without profiles
};

/// A commit a researcher put forward (`autoresearchd try REV`).
struct TryRow {
  int64_t id = 0;
  std::string tag;
  std::string commit;  ///< full id
  std::string parent;  ///< its first parent
  std::string description;
  double created_at = 0;
  std::optional<int64_t> experiment;  ///< set once an ask took it
};

/// A researcher's idea (`autoresearchd idea`) and the experiments asked to try it.
struct IdeaRow {
  struct Experiment {
    int64_t id = 0;
    std::string state;
    bool committed = false;  ///< it made a change (has a commit)
  };
  int64_t id = 0;
  std::string tag;
  std::string text;
  std::string source;  ///< cli or dashboard
  double created_at = 0;
  std::vector<Experiment> experiments;  ///< oldest first
};

/// Proposals asked to try one idea before it is given up, when none made a change.
constexpr int kIdeaAttempts = 3;

/// The longest idea taken: a paragraph, not a document (it goes into the prompt as it is).
constexpr size_t kMaxIdeaBytes = 2000;

/// An idea's text as it is stored, surrounding blanks trimmed. Throws
/// std::invalid_argument with a one-line reason when it is blank or longer
/// than kMaxIdeaBytes.
std::string checked_idea_text(const std::string& text);

/// An idea the next proposal is asked to try: none of its experiments made a
/// change or is in flight, and fewer than kIdeaAttempts were asked.
bool idea_open(const IdeaRow& idea);

/// What became of an idea, for status: "#14 discarded", "#15 running",
/// "waiting for the next proposal", "given up: 3 proposal(s) made no change of it".
std::string idea_outcome(const IdeaRow& idea);

/// The description status and the model's history show: the row's own, or
/// for a row that never got one (a proposer error) "(proposer error: <the
/// first words of its error>)".
std::string display_description(const ExperimentRow& row);

/// One execution of an experiment's stages on one GPU.
struct TrialRow {
  int64_t id = 0;
  int64_t experiment_id = 0;
  std::string gpu;
  std::string purpose;  ///< baseline, candidate, reapplied
  std::string commit;
  double started_at = 0;
  std::optional<double> ended_at;
  std::optional<double> training_seconds;
  std::optional<double> val_bpb;
  std::string status;  ///< ok, or the failure status
  double budget_scale = 1;           ///< the board calibration the run was given
  int64_t calibration = 0;           ///< which calibration (0: none, every board at 1)
  std::optional<int64_t> num_steps;  ///< from its summary
  std::optional<double> tokens;
  std::string slurm_job_id;  ///< the Slurm job it ran as ('' : a local trial)
  std::string slurm_log;     ///< that job's output file
  std::string node;          ///< the node the job ran on, once known
  int rung = 0;              ///< the promotion rung it ran at (config.h, RungConfig); 0: as configured
};

/// A kept change's label at a rung (change_labels; decide/promotion.h gives
/// the words and the evidence's JSON).
struct ChangeLabelRow {
  int64_t id = 0;
  int64_t experiment_id = 0;
  int rung = 1;
  std::string label;             ///< transfers, scale_bound or untested
  std::string evidence = "{}";   ///< the comparison that decided it, as JSON
  double decided_at = 0;
};

/// A promotion round (promotion_rounds): asked for, in progress (started, not
/// ended) or ended with its outcome line.
struct PromotionRoundRow {
  int64_t id = 0;
  std::string tag;
  int rung = 1;
  std::string reason;
  std::optional<double> requested_at;  ///< set: `autoresearchd promote` asked for it
  std::optional<double> started_at;
  std::optional<double> ended_at;
  std::string outcome;
};

/// One noise round's result (noise_estimates).
struct NoiseRow {
  int64_t id = 0;
  double created_at = 0;
  std::optional<double> sigma;  ///< nullopt: no commit has two runs yet
  int64_t df = 0;
  int64_t calibration = 0;
  std::string scales;  ///< "gpu=scale,..."
  std::string reason;
};

struct SessionRow {
  int64_t id = 0;
  std::string tag;
  int64_t pid = 0;
  std::string data_dir;
  double started_at = 0;
  std::optional<double> ended_at;
  std::string end_reason;
  std::string gpus;  ///< comma-separated worker GPUs ('' : one worker with no device)
  std::string paused;  ///< why the daemon does not propose now, '' when it does
};

struct ProcessGroupRow {
  int64_t id = 0;
  int64_t pgid = 0;
  int64_t leader_start = 0;
  std::string what;
  double started_at = 0;
};

struct LlmTotals {
  int64_t calls = 0;
  int64_t input_tokens = 0;       ///< not read from or written to the cache
  int64_t output_tokens = 0;
  int64_t cache_read_tokens = 0;
  int64_t cache_write_tokens = 0;
  double cost_usd = 0;
  int64_t estimated_calls = 0;  ///< calls whose usage was estimated (the response had none)
  /// Cached reads over every prompt token; 0 with no prompt tokens.
  double cache_hit_rate() const;
};

/// One row of llm_calls, for `show`.
struct LlmCallRow {
  int attempt = 0, retry = 0;
  std::string status, error, partial_text;
  double latency_s = 0, wait_s = 0, cost_usd = 0;
  int64_t input_tokens = 0, output_tokens = 0, cache_read_tokens = 0, cache_write_tokens = 0;
  bool usage_estimated = false;
};

/// A request limit a server taught a provider (llm_limits).
struct LearntLimit {
  std::string provider;
  int64_t tokens = 0;
  std::string reason;
  double learnt_at = 0;
};

/// One stored program.md version.
struct ProgramVersion {
  std::string hash;
  std::string content;
  double first_seen = 0;
};

/// Parsed metrics of one evaluated run.
struct RunMetrics {
  double val_bpb = 0;
  std::optional<double> peak_vram_mb;
  std::optional<double> training_seconds;
  std::string summary_json;
};

class Store : public llm::CallSink {
 public:
  /// Opens the database, switches it to WAL and applies pending migrations.
  explicit Store(const std::string& path, BusyPolicy busy = {});

  const std::string& path() const { return db_.path(); }
  /// Why results.db is no longer the file this store has open (deleted,
  /// replaced), or nullopt. Every write checks it and throws DatabaseFileLost;
  /// the daemon also calls it between experiments so a lost file is noticed
  /// even while nothing is written.
  std::optional<std::string> file_problem() { return db_.file_problem(); }
  /// See Database::check_writable.
  void check_writable() { db_.check_writable(); }

  /// Opens an existing database without writing to it and without migrating
  /// (the dashboard, whether or not a daemon runs). Throws SqliteError when the
  /// file is missing or its schema version is not the one this binary knows.
  static std::unique_ptr<Store> open_read_only(const std::string& path);

  /// The schema version this binary writes (the last "-- version N").
  static int latest_version();
  int version();

  // Runs.
  std::optional<std::string> run_base(const std::string& tag);
  void add_run(const std::string& tag, const std::string& branch, const std::string& base_commit);
  /// The tag's base after `start --rebase` moved its kept chain onto a newer commit.
  void set_run_base(const std::string& tag, const std::string& base_commit);

  // program.md versions, stored once each.
  void put_program(const std::string& hash, const std::string& content);
  std::optional<std::string> program(const std::string& hash);
  int64_t program_count();

  // Experiments, written as they move.
  int64_t create_experiment(const std::string& tag, bool is_baseline, const std::string& parent_commit,
                            const std::string& program_hash, const std::string& proposer,
                            std::optional<int64_t> fix_of);
  void set_program(int64_t id, const std::string& program_hash);
  void set_proposal(int64_t id, const std::string& description);
  void set_state(int64_t id, ExperimentState state);
  void set_commit(int64_t id, const std::string& commit, const std::string& diff);
  void set_stage(int64_t id, ExperimentState state, const std::string& stage, double started_at,
                 double deadline, double expected_end);
  void set_pgid(int64_t id, std::optional<int64_t> pgid);
  /// The group and its leader's start time (process_start_time), recorded
  /// before the group's command runs, so a restart kills that group and no
  /// other that reuses the id.
  void set_pgid(int64_t id, int64_t pgid, int64_t leader_start);
  void set_metrics(int64_t id, const RunMetrics& metrics);
  void set_gpu(int64_t id, const std::string& gpu);
  /// The experiment's change re-applied onto a newer best: its commit, parent
  /// and diff become the new ones, its own commit is kept in reapplied_from,
  /// and it is back in state committed.
  void set_reapplied(int64_t id, const std::string& commit, const std::string& parent, const std::string& diff);

  // Trials: every execution of an experiment's stages on a GPU.
  int64_t begin_trial(int64_t experiment_id, const std::string& tag, const std::string& gpu,
                      const std::string& purpose, const std::string& commit, double budget_scale = 1,
                      int64_t calibration = 0, int rung = 0);
  /// The run's step count and tokens, from its summary.
  void set_trial_steps(int64_t trial_id, std::optional<int64_t> num_steps, std::optional<double> tokens);
  /// The keep rule's reason line, and the value the decision rests on (the mean of the runs).
  void set_decision(int64_t id, const std::string& reason, std::optional<double> mean_val_bpb);
  std::string decision(int64_t id);

  // Promotion labels.
  /// Records a change's label at a rung (decided_at: now when 0); returns its
  /// id. A label outside the schema's words or a rung below 1 is a SqliteError.
  int64_t add_change_label(const ChangeLabelRow& row);
  /// Every label of the experiment, oldest first.
  std::vector<ChangeLabelRow> change_labels(int64_t experiment_id);
  /// The experiment's label at rung: the last decided, or nullopt when none was.
  std::optional<ChangeLabelRow> change_label(int64_t experiment_id, int rung);
  /// `autoresearchd promote`: a round asked for (the engine takes it up at its next step); returns its id.
  int64_t request_promotion(const std::string& tag);
  /// A round begins (id 0: a new row, due after promote.every kept changes; else the request's row).
  int64_t start_promotion_round(int64_t id, const std::string& tag, int rung, const std::string& reason);
  void end_promotion_round(int64_t id, const std::string& outcome);
  /// Every round of tag, oldest first.
  std::vector<PromotionRoundRow> promotion_rounds(const std::string& tag);
  /// The last label of every experiment of tag at every rung, by experiment then rung.
  std::vector<ChangeLabelRow> current_change_labels(const std::string& tag);

  // Noise rounds.
  void add_noise_estimate(const std::string& tag, const NoiseRow& row);
  /// The last round's row of the tag, or nullopt before the first.
  std::optional<NoiseRow> last_noise_estimate(const std::string& tag);
  void end_trial(int64_t trial_id, const std::string& status, std::optional<double> training_seconds,
                 std::optional<double> val_bpb, const std::string& summary_json);
  /// Oldest first.
  std::vector<TrialRow> trials(const std::string& tag);
  /// The Slurm job a trial runs as, recorded as soon as sbatch returns.
  void set_trial_job(int64_t trial_id, const std::string& job_id, const std::string& log);
  void set_trial_node(int64_t trial_id, const std::string& node);
  /// Trials still open (any tag) that run as Slurm jobs: what a restart
  /// adopts or cancels. Oldest first.
  std::vector<TrialRow> open_slurm_trials();
  /// Closes trials a killed daemon left open (status interrupted), ended at
  /// ended_at (when the dead daemon was last known to run), or now.
  void close_open_trials(std::optional<double> ended_at = std::nullopt);
  /// Moves the experiment to a final status, with a one-line error and a log
  /// tail; ended at ended_at (never before it started), or now.
  void finish(int64_t id, const std::string& final_status, const std::string& error,
              const std::string& log_tail, std::optional<double> ended_at = std::nullopt);
  /// Queues a researcher's commit for tag; returns its id.
  int64_t add_try(const std::string& tag, const std::string& commit, const std::string& parent,
                  const std::string& description);
  /// Tag's tries, oldest first.
  std::vector<TryRow> tries(const std::string& tag);
  /// Try `id` is taken by experiment (nullopt: by none, to be taken again).
  void take_try(int64_t id, std::optional<int64_t> experiment);
  /// Queues a researcher's idea for tag; returns its id.
  int64_t add_idea(const std::string& tag, const std::string& text, const std::string& source);
  /// Tag's ideas, oldest first, each with its experiments.
  std::vector<IdeaRow> ideas(const std::string& tag);
  /// The proposer profile experiment was drawn for.
  void set_profile(int64_t experiment, const std::string& profile);
  /// Links an experiment to the idea it is asked to try.
  void set_experiment_idea(int64_t experiment, int64_t idea);
  /// An interrupted experiment is taken up again (resume.h): back to
  /// `committed`, its error, end and stage cleared, `resumes` counted up. Its
  /// commit, diff, decision line and trials stay.
  void resume(int64_t id);
  /// The experiment's clock starts again now: it is asked for again after its
  /// proposer was unavailable, and the wait is no part of its duration.
  void restart_clock(int64_t id);
  /// Deletes an experiment that never got a proposal and recorded nothing
  /// (no attempts, no LLM calls); returns whether it did.
  bool delete_if_empty(int64_t id);
  void add_attempt(int64_t id, int attempt, const ProposalAttempt& a);
  std::vector<ProposalAttempt> attempts(int64_t id);

  std::optional<ExperimentRow> experiment(int64_t id);
  /// Oldest first; every tag when tag is empty.
  std::vector<ExperimentRow> experiments(const std::string& tag = "");
  /// Experiments not in a final state (any tag).
  std::vector<ExperimentRow> unfinished();
  /// The last kept experiment of the tag: the branch tip it must have.
  std::optional<ExperimentRow> best(const std::string& tag);

  // Sessions.
  int64_t begin_session(const std::string& tag, int64_t pid);
  void set_session_data_dir(int64_t id, const std::string& data_dir);
  void set_session_gpus(int64_t id, const std::string& gpus);
  void set_session_paused(int64_t id, const std::string& why);
  /// The session's daemon runs now (sessions.alive_at).
  void set_session_alive(int64_t id);
  /// When the daemon of a session left open (killed) was last known to run:
  /// the latest alive_at among them; nullopt when none has one.
  std::optional<double> dead_sessions_alive_at();
  /// Every session of the tag, oldest first.
  std::vector<SessionRow> sessions(const std::string& tag);
  void end_session(int64_t id, const std::string& reason);
  /// Closes sessions a killed daemon left open, ended when they were last
  /// known to run (alive_at, else now); returns how many.
  int close_dead_sessions();
  std::optional<SessionRow> last_session();

  // Process groups not tied to an experiment (the data step's prepare).
  /// Records a group before its command runs; returns the record's id.
  int64_t add_process_group(int64_t pgid, int64_t leader_start, const std::string& what);
  /// The group ended (or was killed): forgets it.
  void end_process_group(int64_t record_id);
  /// Groups recorded and not ended: what a restart must kill.
  std::vector<ProcessGroupRow> live_process_groups();

  // LLM calls. A call's tag is its experiment's.
  /// The call's final row: replaces its 'started' row (same call_key) or adds one.
  void record(const llm::CallRecord& call) override;
  /// The call's row as it starts (status 'started').
  void call_started(const llm::CallRecord& call) override;
  /// Marks the calls a killed daemon left 'started' as 'interrupted'; returns how many.
  int close_started_calls();
  /// The calls of one tag; every tag when tag is empty.
  LlmTotals llm_totals(const std::string& tag = "");
  /// The tag's cost so far and its calls of the last hour (for the caps).
  llm::Spend spend(const std::string& tag) override;
  std::vector<LlmCallRow> llm_calls(int64_t experiment_id);
  /// The limit learnt for provider within the last 7 days, if any.
  std::optional<long> learnt_limit(const std::string& provider) override;
  /// Remembers (replaces) the provider's limit.
  void learn_limit(const std::string& provider, long tokens, const std::string& reason) override;
  /// Every limit honoured now, for status.
  std::vector<LearntLimit> learnt_limits();
  /// What the tag's latest first prompt left out, the line the proposer put
  /// at its top ("prompt within 24000 tokens ...: cut ..."); empty when that
  /// prompt was whole.
  std::string last_prompt_cut(const std::string& tag);

  // Reads for the dashboard.
  /// The trials of one experiment, oldest first.
  std::vector<TrialRow> experiment_trials(int64_t id);
  /// Every stored program.md version, oldest first.
  std::vector<ProgramVersion> programs();

 private:
  struct ReadOnlyTag {};
  Store(const std::string& path, ReadOnlyTag);
  void migrate();
  Database db_;
};

}  // namespace ard
