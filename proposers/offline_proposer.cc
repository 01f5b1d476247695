// See offline_proposer.h.
#include "proposers/offline_proposer.h"
#include "proposers/table_reader.h"
#include "proposers/text_lines.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>

namespace ard {
namespace {

const std::regex kConstant(
    R"(^(\s*constexpr\s+(int|long|float|double)\s+([A-Z][A-Z0-9_]*)\s*=\s*)([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fFlL]?)(\s*;.*)$)");

bool has(const std::string& name, const char* part) { return name.find(part) != std::string::npos; }
bool is_integer(const Hyperparameter& h) { return h.type == "int" || h.type == "long"; }
bool depth_like(const Hyperparameter& h) {
  return is_integer(h) && (has(h.name, "DEPTH") || has(h.name, "LAYER"));
}
bool power_of_two(double v) { return v >= 2 && std::fabs(std::exp2(std::round(std::log2(v))) - v) < 1e-9; }

/// A factor in [1/max, max] whose log is at least a tenth of log(max) from 0.
double random_factor(double max_factor, std::mt19937_64& rng) {
  double lim = std::log(max_factor);
  std::uniform_real_distribution<double> mag(0.1 * lim, lim);
  double f = std::exp(mag(rng));
  return std::bernoulli_distribution(0.5)(rng) ? f : 1.0 / f;
}

/// Four significant digits: "0.04 -> 0.05227", not "0.0522719...".
double round_sig(double v) {
  if (v == 0) return 0;
  double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}

bool mutable_constant(const Hyperparameter& h, const OfflineConfig& c) {
  if (std::find(c.exclude.begin(), c.exclude.end(), h.name) != c.exclude.end()) return false;
  if (!c.names.empty()) return std::find(c.names.begin(), c.names.end(), h.name) != c.names.end();
  if (has(h.name, "SEED") || h.value == 0) return false;  // scaling a seed or a zero means nothing
  if (is_integer(h) && h.value == 1 && !depth_like(h)) return false;  // likely a switch
  return true;
}

}  // namespace

std::vector<Hyperparameter> find_hyperparameters(const std::string& content) {
  std::vector<Hyperparameter> out;
  std::vector<std::string> lines = split_lines(content);
  std::smatch m;
  // Only the block at the top: it ends at the first line after it starts
  // that is neither a constant, a comment nor blank (later constants, such
  // as kernel epsilons, are not hyperparameters).
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!std::regex_match(lines[i], m, kConstant)) {
      std::string t = trim(lines[i]);
      if (!out.empty() && !t.empty() && t.rfind("//", 0) != 0) break;
      continue;
    }
    Hyperparameter h;
    h.type = m[2].str();
    h.name = m[3].str();
    h.literal = m[4].str();
    h.value = std::strtod(h.literal.c_str(), nullptr);
    h.line = i;
    out.push_back(h);
  }
  return out;
}

std::string format_literal(const Hyperparameter& h, double value) {
  std::string suffix;
  if (!h.literal.empty() && std::isalpha(static_cast<unsigned char>(h.literal.back()))) suffix = h.literal.back();
  char buf[64];
  if (is_integer(h)) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(std::llround(value)));
    return buf + suffix;
  }
  std::snprintf(buf, sizeof buf, "%.6g", value);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // "2f" is not a float literal
  return s + suffix;
}

double mutate_value(const Hyperparameter& h, double max_factor, std::mt19937_64& rng) {
  double v = h.value;
  bool up = std::bernoulli_distribution(0.5)(rng);
  if (depth_like(h)) {
    int step = std::uniform_int_distribution<int>(1, 2)(rng);
    double next = up ? v + step : v - step;
    return next < 1 ? v + step : next;
  }
  if (is_integer(h) && (power_of_two(v) || has(h.name, "BATCH"))) {
    if (power_of_two(v)) return up || v < 4 ? v * 2 : v / 2;
  }
  double f = random_factor(max_factor, rng);
  if (is_integer(h)) {
    double next = std::round(v * f);
    if (next == v) next = f > 1 ? v + 1 : v - 1;
    return std::max(1.0, next);
  }
  if ((has(h.name, "BETA") || has(h.name, "MOMENTUM")) && v > 0 && v < 1)
    return std::min(0.9999, round_sig(1 - (1 - v) * f));  // move the distance to 1
  double next = round_sig(v * f);
  if ((has(h.name, "RATIO") || has(h.name, "FRAC")) && v >= 0 && v <= 1) next = std::clamp(next, 0.0, 1.0);
  return next == v ? round_sig(v * (f > 1 ? 1.1 : 0.9)) : next;
}

ard::ProposalResult OfflineProposer::propose(const ard::ProposalContext& context) {
  ard::ProposalResult result;
  auto fail = [&](std::string why) {
    result.error = ard::ProposalError{ard::ProposalError::Kind::kFatal, std::move(why), {}};
    return result;
  };
  if (context.last_failure && context.last_failure->kind == "build_fail") {
    // The daemon hands a build failure back for a fix, with the broken files.
    // Mutating those would stack a new change on an unexplained broken one.
    result.error = ard::ProposalError{ard::ProposalError::Kind::kBadEdit,
                                      "offline: a build failure is not something it can fix; the next experiment "
                                      "starts again from the best",
                                      {}};
    return result;
  }
  auto file = std::find_if(context.files.begin(), context.files.end(),
                           [&](const ard::EditableFile& f) { return f.path == config_.file; });
  if (file == context.files.end()) return fail("offline.file: " + config_.file + " is not among the editable files");
  std::vector<Hyperparameter> all = find_hyperparameters(file->content), candidates;
  for (const auto& h : all)
    if (mutable_constant(h, config_)) candidates.push_back(h);
  if (candidates.empty())
    return fail("offline: no hyperparameter constants to mutate in " + config_.file +
                " (lines 'constexpr <int|long|float|double> NAME = <number>;')");

  const long seed = config_.seed + context.experiment_id;
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  std::vector<std::string> lines = split_lines(file->content);
  std::string change;
  std::vector<std::string> new_lines;
  // Resample (same seed, later draws) while the change repeats a past experiment.
  for (int tries = 0; tries < 20; ++tries) {
    int most = std::min<int>(config_.max_changes, static_cast<int>(candidates.size()));
    int count = std::uniform_int_distribution<int>(1, most)(rng);
    std::vector<Hyperparameter> picked = candidates;
    std::shuffle(picked.begin(), picked.end(), rng);
    picked.resize(count);
    std::sort(picked.begin(), picked.end(), [](const auto& a, const auto& b) { return a.line < b.line; });
    new_lines = lines;
    change.clear();
    for (const auto& h : picked) {
      std::string lit = format_literal(h, mutate_value(h, config_.max_factor, rng));
      std::smatch m;
      std::regex_match(lines[h.line], m, kConstant);
      new_lines[h.line] = m[1].str() + lit + m[5].str();
      change += (change.empty() ? "" : ", ") + h.name + " " + h.literal + " -> " + lit;
    }
    auto tried = [&](const ard::HistoryEntry& e) { return e.description.find(change + " (seed") != std::string::npos; };
    bool seen = std::any_of(context.history.begin(), context.history.end(), tried) ||
                std::any_of(context.in_flight.begin(), context.in_flight.end(), tried);
    if (!seen) break;
  }
  std::string content;
  for (const auto& l : new_lines) content += l + "\n";
  if (!file->content.empty() && file->content.back() != '\n') content.pop_back();

  ard::Proposal p;
  p.description = "offline: " + change + " (seed " + std::to_string(seed) + ")";
  p.writes.push_back({file->path, content});
  p.attempts.push_back({"", p.description, ""});
  result.proposal = std::move(p);
  return result;
}

OfflineConfig parse_offline_config(const toml::table& table) {
  TableReader r(table, "offline");
  OfflineConfig c;
  c.seed = r.integer("seed", 0, 1L << 40).value_or(c.seed);
  if (auto v = r.str("file")) {
    if (v->empty()) r.fail("file", "must not be empty");
    c.file = *v;
  }
  c.max_factor = r.num("max_factor", 1, 100).value_or(c.max_factor);
  if (c.max_factor <= 1.0) r.fail("max_factor", "must be > 1");
  c.max_changes = static_cast<int>(r.integer("max_changes", 1, 100).value_or(c.max_changes));
  c.names = r.strings("names").value_or(c.names);
  c.exclude = r.strings("exclude").value_or(c.exclude);
  r.reject_unknown();
  return c;
}

}  // namespace ard
