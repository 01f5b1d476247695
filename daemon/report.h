// What `status`, `show` and `export --tsv` print, rendered from the store.
// Pure functions of the rows and the clock, so tests can check them exactly.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "daemon/store.h"

namespace ard {

/// The history table, the best result, throughput, LLM usage and what runs now.
/// daemon_pid: the running daemon, or nullopt when none runs.
std::string render_status(Store& store, const std::string& tag, std::optional<pid_t> daemon_pid, double now);

/// One experiment in full; nullopt when there is no such id. When the row has
/// no log tail (the daemon died before storing it), the tail comes from the
/// experiment's newest log in logs_dir (<id>-<stage>.log), when given.
std::optional<std::string> render_show(Store& store, int64_t id, const std::filesystem::path& logs_dir = {});

/// The description status and the model's history show: the row's own, or
/// for a row that never got one (a proposer error) "(proposer error: <the
/// first words of its error>)".
std::string display_description(const ExperimentRow& row);

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

/// "1h02m", "4m05s", "12.3s".
std::string format_duration(double seconds);

}  // namespace ard
