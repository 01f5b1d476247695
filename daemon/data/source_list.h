// The data source list (data.sources, e.g. data_sources/c4-en.urls): which
// files `data fetch` downloads, and where each one lands in the data cache.
//
// One file a line, `train URL` or `val URL`; `#` starts a comment. A range
// `{00000..01023}` in a URL expands to every number in it, zero-padded to the
// width written, so 1024 shards take one line.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ard {

struct SourceList {
  std::vector<std::string> train;  ///< every train URL, ranges expanded, in order
  std::vector<std::string> val;
};

/// Parses the list. Throws ConfigError "<source_name>:<line>: <cause>".
SourceList parse_source_list(const std::string& text, const std::string& source_name);

/// Reads and parses a list file. Throws ConfigError naming the key and file.
SourceList read_source_list(const std::filesystem::path& path);

struct SourceFile {
  std::string url;
  std::filesystem::path dest;  ///< where the verified file lives
};

struct FetchPlan {
  std::vector<SourceFile> train;  ///< the first `shards` train files
  std::vector<SourceFile> val;    ///< every val file
};

/// The files to fetch: the first `shards` train URLs and every val URL, each
/// stored in dest_dir under its URL's last path segment. Throws ConfigError
/// when the list has fewer train files than asked or no val file.
FetchPlan plan_fetch(const SourceList& list, int shards, const std::filesystem::path& dest_dir);

/// Where the files of a list go in the cache: <cache>/sources/<list file stem>.
std::filesystem::path fetch_dir(const std::filesystem::path& cache, const std::filesystem::path& list_path);

}  // namespace ard
