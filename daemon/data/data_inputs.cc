// See data_inputs.h.
#include "daemon/data/data_inputs.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ard {

std::string input_path(const Config& config, const std::string& p) {
  std::filesystem::path path = expand_home(p);
  if (path.is_relative()) path = config.repo / path;
  return path.lexically_normal().string();
}

std::optional<std::string> unreadable_input(const Config& config) {
  auto first_bad = [&](const std::vector<std::string>& files, const std::string& key) -> std::optional<std::string> {
    for (size_t i = 0; i < files.size(); ++i) {
      std::string path = input_path(config, files[i]);
      std::string name = key + "[" + std::to_string(i) + "]: " + path + ": ";
      std::error_code ec;
      auto st = std::filesystem::status(path, ec);
      if (!std::filesystem::exists(st)) return name + "no such file";
      if (std::filesystem::is_directory(st)) return name + "is a directory, not a file";
      if (access(path.c_str(), R_OK) != 0) return name + "cannot read: " + strerror(errno);
    }
    return std::nullopt;
  };
  if (auto bad = first_bad(config.data.train, "data.train")) return bad;
  return first_bad(config.data.val, "data.val");
}

std::filesystem::path sources_path(const Config& config) { return input_path(config, config.data.sources); }

FetchPlan data_fetch_plan(const Config& config, int shards) {
  std::filesystem::path list = sources_path(config);
  return plan_fetch(read_source_list(list), shards > 0 ? shards : config.data.shards,
                    fetch_dir(expand_home(config.data.cache), list));
}

Config with_inputs(const Config& config, const FetchPlan& plan) {
  Config c = config;
  c.data.train.clear();
  c.data.val.clear();
  for (const auto& f : plan.train) c.data.train.push_back(f.dest.string());
  for (const auto& f : plan.val) c.data.val.push_back(f.dest.string());
  return c;
}

}  // namespace ard
