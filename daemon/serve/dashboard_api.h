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

#include "daemon/decide/ladder_report.h"
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
  LadderSettings ladder;                ///< the rungs and [promote]: the promotion ladder
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
/// the most first); `ladder` (null without a rung above 0): the promotion
/// ladder as `status` shows it (ladder_report.h), see api_ladder.
nlohmann::json api_status(Store& store, const DashboardView& view, double now);

/// The tag's experiments with id > since, oldest first, without the large
/// texts (diff, log tail, prompts): what the chart and the table draw.
nlohmann::json api_experiments(Store& store, const DashboardView& view, int64_t since);

/// The promotion ladder: {"rungs": [{rung, name, depth_scale, budget_s,
/// reference: {id, commit} or null (the base), base_commit, sigma, df (null:
/// not measured yet)}], "promotion_share", "max_share", "every", "on_fail",
/// "gpus", "changes": [{id, commit, description, labels: [{rung, name, label,
/// words}]}]}, the kept changes oldest first with one label per rung above 0
/// ("transfers", "scale_bound" or "untested"; words: "transfers at 2x").
/// null when the ladder has no rung above 0.
nlohmann::json api_ladder(Store& store, const std::string& tag, const LadderSettings& ladder);

/// One experiment in full: its row, diff, log tail, attempts and trials (each
/// with its rung), and `labels`: its labels at rungs above 0, oldest first,
/// {rung, name, label, evidence (the JSON of promotion.h, null for none),
/// decided_at}; nullopt when there is no such id. ladder names the rungs.
std::optional<nlohmann::json> api_experiment(Store& store, int64_t id, const LadderSettings& ladder = {});

/// Every program.md version, oldest first, with the ids of the experiments that used it.
nlohmann::json api_programs(Store& store, const DashboardView& view);

}  // namespace ard
