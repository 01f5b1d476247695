// See promotion.h.
#include "daemon/decide/promotion.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "daemon/util/text.h"

namespace ard {

RungRuns rung_runs(const std::vector<TrialRow>& trials, const std::string& commit, int rung, int64_t calibration) {
  RungRuns r;
  for (const auto& t : trials) {
    if (t.commit != commit || t.rung != rung || t.calibration != calibration || !t.ended_at) continue;
    if (t.status == "ok" && t.val_bpb && std::isfinite(*t.val_bpb)) {
      r.values.push_back(*t.val_bpb);
      r.trials.push_back(t.id);
    } else if (t.status != "ok" && t.status != "environment_error" && t.status != "interrupted") {
      ++r.failed;
    }
  }
  return r;
}

std::optional<NoiseEstimate> rung_noise(const std::vector<TrialRow>& trials, int rung, int64_t min_calibration) {
  std::map<std::pair<std::string, int64_t>, std::vector<double>> groups;
  for (const auto& t : trials)
    if (t.rung == rung && t.calibration >= min_calibration && t.status == "ok" && t.val_bpb && std::isfinite(*t.val_bpb))
      groups[{t.commit, t.calibration}].push_back(*t.val_bpb);
  std::vector<std::vector<double>> values;
  for (auto& [key, v] : groups) values.push_back(std::move(v));
  return pooled_noise(values);
}

std::string promotion_due(int kept_since_last_round, int every, double gpu_seconds_at_rungs,
                          double gpu_seconds_total, double max_share, bool requested, double round_seconds,
                          const std::string& why_requested) {
  if (kept_since_last_round < 1) return "";
  every = std::max(every, 1);
  if (!requested && kept_since_last_round < every) return "";
  const double share = gpu_seconds_total > 0 ? gpu_seconds_at_rungs / gpu_seconds_total : 0;
  if (!(share < max_share)) return "";
  if (round_seconds > 0 &&
      !((gpu_seconds_at_rungs + round_seconds) / (gpu_seconds_total + round_seconds) <= max_share))
    return "";  // the round would take the night past its share: it waits for more work at rung 0
  const std::string used = "rungs above 0 have used " + format_number(std::round(share * 1000) / 10) +
                           "% of the GPU time (promote.max_share " + format_number(max_share * 100) + "%)";
  if (requested) return why_requested + " with " + std::to_string(kept_since_last_round) + " kept change(s) to promote; " + used;
  return std::to_string(kept_since_last_round) + " kept change(s) since the last round (promote.every " +
         std::to_string(every) + "); " + used;
}

namespace {

/// Why a size is not usable, or "".
std::string missing_size(const ModelSize& size, const std::string& whose) {
  if (!size.depth || !std::isfinite(*size.depth) || *size.depth <= 0) return whose + " reported no valid depth";
  if (!size.num_params_m || !std::isfinite(*size.num_params_m) || *size.num_params_m <= 0)
    return whose + " reported no valid num_params_M";
  return "";
}

}  // namespace

ModelSize model_size(const Summary& summary) {
  ModelSize size;
  if (auto it = summary.values.find("depth"); it != summary.values.end()) size.depth = it->second;
  if (auto it = summary.values.find("num_params_M"); it != summary.values.end()) size.num_params_m = it->second;
  return size;
}

ModelSize model_size(const std::string& summary_json) {
  ModelSize size;
  const nlohmann::json j = nlohmann::json::parse(summary_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return size;
  if (j.contains("depth") && j["depth"].is_number()) size.depth = j["depth"].get<double>();
  if (j.contains("num_params_M") && j["num_params_M"].is_number()) size.num_params_m = j["num_params_M"].get<double>();
  return size;
}

std::string rung_size_check(const ModelSize& rung0, const ModelSize& rung, double depth_scale) {
  if (std::string why = missing_size(rung0, "the rung-0 run"); !why.empty()) return why;
  if (std::string why = missing_size(rung, "the run at the rung"); !why.empty()) return why;
  const double expected = *rung0.depth * depth_scale;
  if (*rung.depth != std::floor(expected) && *rung.depth != std::ceil(expected))
    return "depth " + format_number(*rung.depth) + " where the rung asks " + format_number(*rung0.depth) + " x " +
           format_number(depth_scale) + " = " + format_number(expected);
  if (depth_scale > 1 ? !(*rung.num_params_m > *rung0.num_params_m) : *rung.num_params_m < *rung0.num_params_m)
    return "num_params_M " + format_number(*rung.num_params_m) + (depth_scale > 1 ? " did not grow from " : " shrank from ") +
           format_number(*rung0.num_params_m) + " at rung 0";
  return "";
}

const char* to_string(LabelKind kind) {
  switch (kind) {
    case LabelKind::kTransfers: return "transfers";
    case LabelKind::kScaleBound: return "scale_bound";
    case LabelKind::kUntested: return "untested";
  }
  return "untested";
}

std::optional<LabelKind> parse_label_kind(const std::string& word) {
  for (LabelKind kind : {LabelKind::kTransfers, LabelKind::kScaleBound, LabelKind::kUntested})
    if (word == to_string(kind)) return kind;
  return std::nullopt;
}

std::string evidence_json(const std::optional<RungEvidence>& evidence) {
  if (!evidence) return "{}";
  nlohmann::json j = {{"best_mean", evidence->best_mean}, {"candidate_mean", evidence->candidate_mean},
                      {"best_n", evidence->best_n},       {"candidate_n", evidence->candidate_n},
                      {"sigma", evidence->sigma},         {"delta", evidence->delta},
                      {"trials", evidence->trials}};
  if (evidence->gain_at_rung0) j["gain_at_rung0"] = *evidence->gain_at_rung0;
  if (evidence->lambda) j["lambda"] = *evidence->lambda;
  return j.dump();
}

std::optional<RungEvidence> parse_evidence_json(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("label evidence: not a JSON object");
  if (j.empty()) return std::nullopt;
  const auto number = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_number()) throw std::invalid_argument(std::string("label evidence: ") + key + ": expected a number");
    return j[key].get<double>();
  };
  const auto count = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_number_integer()) throw std::invalid_argument(std::string("label evidence: ") + key + ": expected an integer");
    return j[key].get<int>();
  };
  RungEvidence e;
  e.best_mean = number("best_mean");
  e.candidate_mean = number("candidate_mean");
  e.best_n = count("best_n");
  e.candidate_n = count("candidate_n");
  e.sigma = number("sigma");
  e.delta = number("delta");
  if (!j.contains("trials") || !j["trials"].is_array()) throw std::invalid_argument("label evidence: trials: expected an array");
  for (const auto& t : j["trials"]) {
    if (!t.is_number_integer()) throw std::invalid_argument("label evidence: trials: expected trial ids");
    e.trials.push_back(t.get<int64_t>());
  }
  if (j.contains("gain_at_rung0")) e.gain_at_rung0 = number("gain_at_rung0");
  if (j.contains("lambda")) e.lambda = number("lambda");
  return e;
}

}  // namespace ard
