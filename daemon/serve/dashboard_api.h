// The dashboard's JSON API, built from the store: the documents that
// /api/status, /api/experiments, /api/experiments/<id> and /api/programs
// return (docs/dashboard.md describes every field). Pure functions of the
// store and the clock, so tests check them exactly; the server only routes.
//
// Every string is passed through as data (JSON-escaped by the serializer);
// the pages put it into the DOM as text, never as markup.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "daemon/decide/run_evidence.h"
#include "daemon/store/store.h"
#include "proposers/metric_goal.h"

namespace ard {

/// What the API needs besides the store.
struct DashboardView {
  std::string tag;                      ///< the run shown
  std::optional<pid_t> daemon_pid;      ///< the running daemon, if any
  bool allow_actions = false;           ///< whether stop and program edits are offered
  NoiseSettings noise;                  ///< [noise], to judge σ as the engine does
  MetricSpec metric;                    ///< `summary.metric` (what val_bpb fields hold) and `summary.goal`
};

/// The run at a glance: daemon, `metric` ({name, goal}: the metric that the
/// val_bpb fields hold and "min" or "max", which way is better), best, figures,
/// LLM spend, one lane per GPU
/// with what runs there and its progress to the expected end, and `noise`:
/// σ as the keep rule uses it (`sigma`, null while not usable), its df,
/// whether it is usable, its source ("measured", "prior" or null), the keep
/// margin in σΔ and the line `status` prints; `regions`: the most tried
/// regions of the research memory (decide/memory.h), at most kTopRegions,
/// each with its tries, kept, keep_rate and its outcomes ({status, count},
/// the most first).
nlohmann::json api_status(Store& store, const DashboardView& view, double now);

/// The tag's experiments with id > since, oldest first, without the large
/// texts (diff, log tail, prompts): what the chart and the table draw.
nlohmann::json api_experiments(Store& store, const DashboardView& view, int64_t since);

/// One experiment in full: its row, diff, log tail, attempts and trials;
/// nullopt when there is no such id.
std::optional<nlohmann::json> api_experiment(Store& store, int64_t id);

/// Every program.md version, oldest first, with the ids of the experiments that used it.
nlohmann::json api_programs(Store& store, const DashboardView& view);

}  // namespace ard
