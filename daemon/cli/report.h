// What `status`, `show` and `export --tsv` print, rendered from the store.
// Pure functions of the rows and the clock, so tests can check them exactly.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/ladder_report.h"
#include "daemon/decide/run_evidence.h"
#include "daemon/store/store.h"
#include "proposers/metric_goal.h"

namespace ard {

/// The throughput figures that `status` prints and the dashboard shows.
struct StatusFigures {
  int finished = 0;         ///< experiments in a final state, interrupted ones aside
  double wall_s = 0;        ///< first start to now, or to the last end when no daemon runs
  double per_hour = 0;      ///< finished experiments per wall-clock hour (0 without wall time)
  int gpus = 1;             ///< distinct GPUs the trials ran on (1 when none recorded)
  double training_share = 0;              ///< sum of training_seconds / (wall × gpus), at most 1
  bool training_share_clamped = false;    ///< the trainers reported more than that: the share is 1
  std::optional<double> gpu_busy_share;   ///< sum of trial durations / (wall × gpus); none without trials
  LlmTotals llm;
};

/// The figures of the tag's rows (oldest first), its trials and the LLM totals.
StatusFigures status_figures(Store& store, const std::string& tag, const std::vector<ExperimentRow>& rows,
                             bool daemon_running, double now);

/// The error for a tag the store knows nothing of (no experiment, no run), one
/// line naming it and the tags that exist: "no experiments with tag nope (tags:
/// e2e, main)". nullopt: the tag is known.
std::optional<std::string> unknown_tag(Store& store, const std::string& tag);

/// Whether the row's stage is under way (a build or a stage running): only then
/// do status and the dashboard show its elapsed time, timeout and expected end.
/// A candidate waiting (for a build slot, a GPU, a decision) shows none of them.
bool stage_under_way(const ExperimentRow& row);

/// The expected end that status and the dashboard show: while the stage is
/// under way, and only when it is the stage's own estimate (expected_s); one
/// equal to the timeout (a build, a stage without expected_s) is no estimate.
std::optional<double> shown_expected_end(const ExperimentRow& row);

/// The history table, the best result, throughput, LLM usage and what runs now.
/// daemon_pid: the running daemon, or nullopt when none runs.
/// noise: what the screens need of [noise] to judge σ as the engine does.
/// metric: the value column's name, and under MetricGoal::kMax a best line
/// that says higher is better (delta is always value − the best's value).
/// ladder: the rungs and [promote]; with a rung above 0, the section
/// "promotion ladder" (ladder_report.h) follows the noise lines.
std::string render_status(Store& store, const std::string& tag, std::optional<pid_t> daemon_pid, double now,
                          const NoiseSettings& noise = {}, const MetricSpec& metric = {},
                          const LadderSettings& ladder = {});

/// One experiment in full; nullopt when there is no such id. When the row has
/// no log tail (the daemon died before storing it), the tail comes from the
/// experiment's newest log in logs_dir (<id>-<stage>.log), when given.
/// ladder: the rungs, to name them; its labels and runs at rungs above 0
/// follow its runs (ladder_report.h, render_rung_standing).
std::optional<std::string> render_show(Store& store, int64_t id, const std::filesystem::path& logs_dir = {},
                                       const LadderSettings& ladder = {});

/// The history as results.tsv: commit, val_bpb, memory_gb, status, description.
/// Experiments that never got a commit of their own are left out.
std::string render_tsv(Store& store, const std::string& tag);

/// Where the GPUs' time went, over every session of a tag.
struct EngineFigures {
  double wall_s = 0;       ///< the sessions' wall time
  double gpu_seconds = 0;  ///< wall time x the GPUs of each session
  double busy_s = 0;       ///< time in stages (the trials)
  double training_s = 0;   ///< the trainers' reported training_seconds
  int gpus = 1;            ///< the most GPUs any session used
};
EngineFigures engine_figures(Store& store, const std::string& tag, double now);

/// The status line of one tag's LLM calls: calls, tokens (cached too), the
/// cache hit rate and the cost.
std::string llm_status_line(const LlmTotals& totals);

/// The LLM calls of one experiment for `show`: each call, its retry, the wait
/// after it, a broken stream's partial text.
std::string render_llm_calls(const std::vector<LlmCallRow>& calls);

/// "1h02m", "4m05s", "12.3s".
std::string format_duration(double seconds);

/// What the data step runs now, before any experiment exists ("the data step:
/// building the trainer at the branch tip (1m17s)"), read from the store's live
/// process groups; nullopt when it runs nothing. status and the dashboard show it.
std::optional<std::string> data_step_line(Store& store, double now);

}  // namespace ard
