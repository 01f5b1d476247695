// See dashboard_api.h.
#include "daemon/serve/dashboard_api.h"

#include <algorithm>
#include <map>

#include "daemon/cli/report.h"
#include "daemon/decide/decision_report.h"
#include "daemon/decide/memory.h"

namespace ard {
namespace {

using nlohmann::json;

template <typename T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

/// The fields the chart, the table and the lanes use.
json experiment_summary(const ExperimentRow& r) {
  return {
      {"id", r.id},
      {"tag", r.tag},
      {"baseline", r.is_baseline},
      {"commit", text_or_null(r.commit)},
      {"description", r.description},
      {"state", r.state},
      {"final", is_final_state(r.state)},
      {"stage", text_or_null(r.stage)},
      {"gpu", text_or_null(r.gpu)},
      {"fix_of", or_null(r.fix_of)},
      {"val_bpb", or_null(r.val_bpb)},
      {"peak_vram_mb", or_null(r.peak_vram_mb)},
      {"training_seconds", or_null(r.training_seconds)},
      {"error", text_or_null(r.error)},
      {"program_hash", text_or_null(r.program_hash)},
      {"started_at", r.started_at},
      {"ended_at", or_null(r.ended_at)},
  };
}

/// Share of the stage's expected duration already spent, in [0, 1]; null while
/// the candidate waits or the stage has no estimate of its own (report.h).
json stage_progress(const ExperimentRow& r, double now) {
  const std::optional<double> end = shown_expected_end(r);
  if (!end || *end <= *r.stage_started_at) return nullptr;
  double p = (now - *r.stage_started_at) / (*end - *r.stage_started_at);
  return std::clamp(p, 0.0, 1.0);
}

}  // namespace

json api_status(Store& store, const DashboardView& view, double now) {
  auto rows = store.experiments(view.tag);
  StatusFigures f = status_figures(store, view.tag, rows, view.daemon_pid.has_value(), now);

  json best = nullptr;
  for (const auto& r : rows)
    if (r.state == status::kKept && r.val_bpb)
      best = {{"id", r.id}, {"val_bpb", *r.val_bpb}, {"commit", r.commit}, {"description", r.description}};

  // One lane per GPU holding experiments in flight; experiments not placed on
  // a GPU (proposing, or a single-GPU daemon) share the lane "-".
  std::map<std::string, json> lanes;
  for (const auto& r : rows) {
    if (is_final_state(r.state)) continue;
    std::string gpu = r.gpu.empty() ? "-" : r.gpu;
    json& lane = lanes[gpu];
    if (lane.is_null()) lane = {{"gpu", gpu}, {"experiments", json::array()}};
    lane["experiments"].push_back({{"id", r.id},
                                   {"state", r.state},
                                   {"stage", text_or_null(r.stage)},
                                   {"description", r.description},
                                   {"started_at", r.started_at},
                                   {"stage_started_at", or_null(r.stage_started_at)},
                                   {"stage_expected", or_null(shown_expected_end(r))},
                                   {"stage_deadline", stage_under_way(r) ? or_null(r.stage_deadline) : json(nullptr)},
                                   {"progress", stage_progress(r, now)}});
  }
  json lane_list = json::array();
  for (auto& [gpu, lane] : lanes) lane_list.push_back(std::move(lane));

  json ideas = json::array();  // the researcher's ideas (autoresearchd idea), oldest first
  for (const auto& idea : store.ideas(view.tag))
    ideas.push_back({{"id", idea.id},
                     {"text", idea.text},
                     {"source", idea.source},
                     {"created_at", idea.created_at},
                     {"open", idea_open(idea)},
                     {"outcome", idea_outcome(idea)}});

  // The most tried regions of the research memory (decide/memory.h), as `status` lists them.
  json regions = json::array();
  for (const TriedRegion& region : tally_regions(rows)) {
    if (regions.size() >= kTopRegions) break;
    const int kept = kept_count(region);
    json outcomes = json::array();  // the most first
    for (const auto& o : region.outcomes) outcomes.push_back({{"status", o.status}, {"count", o.count}});
    regions.push_back({{"region", region.region},
                       {"tries", region.tries},
                       {"kept", kept},
                       {"keep_rate", static_cast<double>(kept) / region.tries},
                       {"outcomes", outcomes}});
  }

  // σ judged as the engine and `status` judge it (run_evidence.h).
  const auto last_round = store.last_noise_estimate(view.tag);
  const NoiseStatus noise = noise_status(store.trials(view.tag), last_round && last_round->calibration > 0 ? 1 : 0,
                                         view.noise.prior_sigma, view.noise.z);

  return {
      {"tag", view.tag},
      {"now", now},
      {"daemon", {{"running", view.daemon_pid.has_value()}, {"pid", or_null(view.daemon_pid)}}},
      // The data step before the first experiment (minutes on a cold GPU box): what the lanes show then.
      {"data_step", view.daemon_pid ? or_null(data_step_line(store, now)) : json(nullptr)},
      {"allow_actions", view.allow_actions},
      {"metric", {{"name", view.metric.name}, {"goal", to_string(view.metric.goal)}}},
      {"experiments", rows.size()},
      {"latest_id", rows.empty() ? json(nullptr) : json(rows.back().id)},
      {"best", best},
      {"figures",
       {{"finished", f.finished},
        {"wall_s", f.wall_s},
        {"per_hour", f.per_hour},
        {"gpus", f.gpus},
        {"training_share", f.training_share},
        {"training_share_clamped", f.training_share_clamped},
        {"gpu_busy_share", or_null(f.gpu_busy_share)}}},
      {"llm",
       {{"calls", f.llm.calls},
        {"input_tokens", f.llm.input_tokens},
        {"output_tokens", f.llm.output_tokens},
        {"cost_usd", f.llm.cost_usd}}},
      {"lanes", lane_list},
      {"ideas", ideas},
      {"regions", regions},
      {"noise",
       {{"sigma", noise.used ? json(noise.used->sigma) : json(nullptr)},
        {"df", noise.measured ? json(noise.measured->df) : json(nullptr)},
        {"measured_sigma", noise.measured ? json(noise.measured->sigma) : json(nullptr)},
        {"usable", noise.usable()},
        {"source", !noise.used ? json(nullptr) : json(noise.used->from_prior ? "prior" : "measured")},
        {"keep_margin", noise.usable() ? json(noise.margin) : json(nullptr)},
        {"line", describe(noise)}}},
      {"sigma", noise.used ? json(noise.used->sigma) : json(nullptr)},
      {"ladder", api_ladder(store, view.tag, view.ladder)},
  };
}

json api_ladder(Store& store, const std::string& tag, const LadderSettings& settings) {
  const Ladder ladder = ladder_of(store, tag, settings);
  if (ladder.rungs.empty()) return nullptr;
  json rungs = json::array();
  for (const RungStanding& r : ladder.rungs)
    rungs.push_back({{"rung", r.rung},
                     {"name", r.name},
                     {"depth_scale", r.depth_scale},
                     {"budget_s", r.budget_s},
                     {"reference", r.reference ? json{{"id", *r.reference}, {"commit", r.reference_commit}} : json(nullptr)},
                     {"base_commit", r.reference ? json(nullptr) : text_or_null(r.reference_commit)},
                     {"sigma", r.sigma ? json(r.sigma->sigma) : json(nullptr)},
                     {"df", r.sigma ? json(r.sigma->df) : json(nullptr)}});
  json changes = json::array();
  for (const ChangeStanding& c : ladder.changes) {
    json labels = json::array();
    for (size_t i = 0; i < c.labels.size(); ++i)
      labels.push_back({{"rung", ladder.rungs[i].rung},
                        {"name", ladder.rungs[i].name},
                        {"label", to_string(c.labels[i])},
                        {"words", label_words(c.labels[i], ladder.rungs[i].name)}});
    changes.push_back({{"id", c.experiment_id}, {"commit", c.commit}, {"description", c.description}, {"labels", labels}});
  }
  return {{"rungs", rungs},
          {"promotion_share", ladder.promotion_share},
          {"max_share", ladder.promote.max_share},
          {"every", ladder.promote.every},
          {"on_fail", to_string(ladder.promote.on_fail)},
          {"gpus", ladder.promote.gpus},
          {"changes", changes}};
}

json api_experiments(Store& store, const DashboardView& view, int64_t since) {
  json out = json::array();
  for (const auto& r : store.experiments(view.tag))
    if (r.id > since) out.push_back(experiment_summary(r));
  return out;
}

std::optional<json> api_experiment(Store& store, int64_t id, const LadderSettings& ladder) {
  auto r = store.experiment(id);
  if (!r) return std::nullopt;
  json doc = experiment_summary(*r);
  doc["parent_commit"] = r->parent_commit;
  doc["reapplied_from"] = text_or_null(r->reapplied_from);
  doc["resumes"] = r->resumes;
  doc["proposer"] = r->proposer;
  doc["diff"] = r->diff;
  doc["log_tail"] = r->log_tail;
  json summary = json::parse(r->summary_json, nullptr, false);
  doc["summary"] = r->summary_json.empty() ? json(nullptr) : summary.is_discarded() ? json(r->summary_json) : summary;
  json attempts = json::array();
  for (const auto& a : store.attempts(id))
    attempts.push_back({{"prompt", a.prompt}, {"response", a.response}, {"error", text_or_null(a.error)}});
  doc["attempts"] = attempts;
  json trials = json::array();
  for (const auto& t : store.experiment_trials(id))
    trials.push_back({{"id", t.id},
                      {"gpu", t.gpu},
                      {"purpose", t.purpose},
                      {"commit", t.commit},
                      {"started_at", t.started_at},
                      {"ended_at", or_null(t.ended_at)},
                      {"training_seconds", or_null(t.training_seconds)},
                      {"val_bpb", or_null(t.val_bpb)},
                      {"status", text_or_null(t.status)},
                      {"rung", t.rung}});
  doc["trials"] = trials;
  json labels = json::array();
  for (const ChangeLabelRow& l : store.change_labels(id)) {
    json evidence = json::parse(l.evidence, nullptr, false);
    labels.push_back({{"rung", l.rung},
                      {"name", rung_name(ladder.rungs, l.rung)},
                      {"label", l.label},
                      {"evidence", evidence.is_object() && !evidence.empty() ? evidence : json(nullptr)},
                      {"decided_at", l.decided_at}});
  }
  doc["labels"] = labels;
  // Why it was kept or not: the keep rule's line as `show` prints it, which
  // rule made it, and the runs of its own commit as mean ± spread (n).
  const std::string decision = store.decision(id);
  doc["decision"] = text_or_null(decision);
  doc["decision_rule"] = text_or_null(decision_rule(decision));
  std::vector<double> own;
  for (const auto& t : store.experiment_trials(id))
    if (t.commit == r->commit && t.rung == 0 && t.status == "ok" && t.val_bpb) own.push_back(*t.val_bpb);
  const Spread runs = spread_of(own);
  doc["runs"] = runs.n == 0 ? json(nullptr)
                            : json{{"mean", runs.mean}, {"spread", runs.spread}, {"n", runs.n},
                                   {"text", mean_spread(store.experiment_trials(id), *r)}};
  return doc;
}

json api_programs(Store& store, const DashboardView& view) {
  std::map<std::string, json> used;
  for (const auto& r : store.experiments(view.tag))
    if (!r.program_hash.empty()) used[r.program_hash].push_back(r.id);
  json out = json::array();
  for (const auto& p : store.programs()) {
    auto u = used.find(p.hash);
    out.push_back({{"hash", p.hash},
                   {"content", p.content},
                   {"first_seen", p.first_seen},
                   {"experiments", u == used.end() ? json::array() : u->second}});
  }
  return out;
}

}  // namespace ard
