// See summary.h.
#include "daemon/decide/summary.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <sstream>

namespace ard {
namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

}  // namespace

std::string Summary::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : values) {
    if (std::isfinite(v)) j[k] = v;
    else j[k] = std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  }
  return j.dump();
}

std::optional<SummaryRange> summary_range(const std::string& key) {
  static const std::map<std::string, SummaryRange> ranges = {
      {"val_bpb", {0, 20, false, false, false}},
      {"training_seconds", {0, 1e7, true, true, false}},
      {"total_seconds", {0, 1e7, true, true, false}},
      {"peak_vram_mb", {0, 1e7, true, true, false}},
      {"mfu_percent", {0, 100, true, true, false}},
      {"total_tokens_M", {0, 1e9, true, true, false}},
      {"num_steps", {0, 1e12, true, true, true}},
      {"num_params_M", {0, 1e7, true, true, false}},
      {"depth", {0, 1e4, true, true, true}},
      {"budget_scale", {0, 100, false, true, false}},
  };
  auto it = ranges.find(key);
  if (it == ranges.end()) return std::nullopt;
  return it->second;
}

SummaryParse parse_summary(const std::string& output, const std::vector<std::string>& keys) {
  // Blocks: each `---` line starts one; a block counts when it holds a wanted key.
  struct Line {
    std::string key, value;
  };
  std::vector<std::vector<Line>> blocks;
  bool in_block = false;
  std::istringstream in(output);
  for (std::string raw; std::getline(in, raw);) {
    std::string line = trim(raw);
    if (line == "---") {
      blocks.emplace_back();
      in_block = true;
      continue;
    }
    if (!in_block) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon));
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
    blocks.back().push_back({key, trim(line.substr(colon + 1))});
  }
  std::erase_if(blocks, [](const std::vector<Line>& b) { return b.empty(); });
  SummaryParse out;
  if (blocks.empty()) return out;
  if (blocks.size() > 1) {
    out.tampered = std::to_string(blocks.size()) + " summary blocks in the output (the harness prints one)";
    return out;
  }
  static const std::regex decimal("[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?");
  static const std::regex non_finite("[+-]?(nan|inf)", std::regex::icase);
  Summary s;
  for (const Line& l : blocks.front()) {
    if (s.values.count(l.key)) {
      out.tampered = "the summary gives " + l.key + " twice";
      return out;
    }
    double v;
    if (l.value.size() <= 4 && std::regex_match(l.value, non_finite)) {
      const bool negative = l.value[0] == '-';
      v = std::tolower(static_cast<unsigned char>(l.value[negative || l.value[0] == '+' ? 1 : 0])) == 'n'
              ? std::numeric_limits<double>::quiet_NaN()
              : (negative ? -1 : 1) * std::numeric_limits<double>::infinity();
    } else {
      if (l.value.size() > 64 || !std::regex_match(l.value, decimal)) {
        out.tampered = l.key + ": '" + l.value.substr(0, 64) + "' is not a decimal number";
        return out;
      }
      const char* first = l.value.c_str() + (l.value[0] == '+' ? 1 : 0);
      auto [end, ec] = std::from_chars(first, l.value.c_str() + l.value.size(), v);
      if (ec != std::errc() || end != l.value.c_str() + l.value.size()) {
        out.tampered = l.key + ": '" + l.value + "' is out of a double's range";
        return out;
      }
    }
    if (auto r = summary_range(l.key); r && std::isfinite(v)) {
      const bool above_low = r->low_inclusive ? v >= r->low : v > r->low;
      const bool below_high = r->high_inclusive ? v <= r->high : v < r->high;
      if (!above_low || !below_high || (r->whole && v != std::floor(v))) {
        std::ostringstream os;
        os << l.key << " " << v << " is outside its range " << (r->low_inclusive ? "[" : "(") << r->low << ", "
           << r->high << (r->high_inclusive ? "]" : ")") << (r->whole ? " of whole numbers" : "");
        out.tampered = os.str();
        return out;
      }
    }
    s.values[l.key] = v;
  }
  out.summary = std::move(s);
  return out;
}

std::string fail_line(const std::string& output) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("FAIL", 0) == 0) return trim(line);
  return "";
}

std::optional<std::string> tampered_reason(const std::string& fail_line) {
  static constexpr std::string_view kPrefix = "FAIL: tampered: ";
  if (!fail_line.starts_with(kPrefix)) return std::nullopt;
  return fail_line.substr(kPrefix.size());
}

TrialFigures trial_figures(const Summary& summary) {
  auto value_of = [&](const char* key) -> std::optional<double> {
    auto f = summary.values.find(key);
    if (f == summary.values.end()) return std::nullopt;
    return f->second;
  };
  TrialFigures out;
  out.training_seconds = value_of("training_seconds");
  out.peak_vram_mb = value_of("peak_vram_mb");
  if (auto n = value_of("num_steps")) out.steps = static_cast<long>(*n);
  if (auto t = value_of("total_tokens_M")) out.tokens = *t * 1e6;
  return out;
}

}  // namespace ard
