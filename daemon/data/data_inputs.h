// The data step's inputs: the [data] train and val files as the data step
// reads them, which of them is missing, and the fetched files of the source
// list (data.sources) that replace them when data.fetch is set.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "daemon/config.h"
#include "daemon/data/data_fetch.h"
#include "daemon/data/source_list.h"

namespace ard {

/// An input path resolved as prepare gets it: `~` expanded, relative to the repo.
std::string input_path(const Config& config, const std::string& path);

/// The first input that cannot be read, as one line naming its key and file:
/// "data.train[0]: /abs/train.jsonl.xz: no such file". nullopt: all readable.
std::optional<std::string> unreadable_input(const Config& config);

/// The source list's path (data.sources resolved against the repo).
std::filesystem::path sources_path(const Config& config);

/// The fetch that replaces the inputs: data.shards (or shards, when > 0)
/// train files and every val file of the list, in its cache directory.
/// Throws ConfigError naming the key or the list's file and line.
FetchPlan data_fetch_plan(const Config& config, int shards = 0);

/// config with data.train and data.val set to the plan's files.
Config with_inputs(const Config& config, const FetchPlan& plan);

}  // namespace ard
