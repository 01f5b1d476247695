// See summary.h.
#include "daemon/summary.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
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

std::optional<Summary> parse_summary(const std::string& output, const std::vector<std::string>& keys) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  auto sep = std::find_if(lines.rbegin(), lines.rend(), [](const std::string& l) { return trim(l) == "---"; });
  if (sep == lines.rend()) return std::nullopt;
  Summary s;
  for (auto it = sep.base(); it != lines.end(); ++it) {
    size_t colon = it->find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(it->substr(0, colon));
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
    std::string value = trim(it->substr(colon + 1));
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || end == value.c_str() || *end != '\0') continue;  // not a number: not a summary value
    s.values[key] = v;
  }
  if (s.values.empty()) return std::nullopt;
  return s;
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

}  // namespace ard
