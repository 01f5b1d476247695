// See gpus.h.
#include "daemon/gpus.h"

#include <stdio.h>

#include <regex>
#include <sstream>

namespace ard {

std::vector<std::string> parse_visible_devices(const std::string& value) {
  std::vector<std::string> out;
  std::stringstream in(value);
  for (std::string id; std::getline(in, id, ',');) {
    size_t a = id.find_first_not_of(" \t"), b = id.find_last_not_of(" \t");
    if (a != std::string::npos) out.push_back(id.substr(a, b - a + 1));
  }
  return out;
}

std::vector<std::string> parse_nvidia_smi_list(const std::string& output) {
  static const std::regex line_re(R"(^GPU (\d+):)");
  std::vector<std::string> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, line_re)) out.push_back(m[1]);
  }
  return out;
}

std::vector<std::string> resolve_gpus(const std::vector<std::string>& configured,
                                      const std::optional<std::string>& visible_devices,
                                      const std::optional<std::string>& nvidia_smi_output) {
  if (!configured.empty()) return configured;
  if (visible_devices) return parse_visible_devices(*visible_devices);
  if (nvidia_smi_output) return parse_nvidia_smi_list(*nvidia_smi_output);
  return {};
}

std::optional<std::string> nvidia_smi_list() {
  FILE* p = popen("nvidia-smi -L 2>/dev/null", "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  if (rc != 0) return std::nullopt;
  return out;
}

}  // namespace ard
