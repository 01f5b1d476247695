// See source_list.h.
#include "daemon/data/source_list.h"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "daemon/config.h"

namespace ard {
namespace {

/// Expands the one `{A..B}` range a URL may hold; a URL without one as is.
std::vector<std::string> expand_range(const std::string& url, const std::string& where) {
  static const std::regex range_re(R"(\{([0-9]+)\.\.([0-9]+)\})");
  std::smatch m;
  if (!std::regex_search(url, m, range_re)) {
    if (url.find('{') != std::string::npos || url.find('}') != std::string::npos)
      throw ConfigError(where + ": a range is written {00000..01023}");
    return {url};
  }
  std::string rest = m.suffix().str();
  if (rest.find('{') != std::string::npos) throw ConfigError(where + ": at most one range a line");
  size_t width = m[1].length();
  long lo = std::stol(m[1].str()), hi = std::stol(m[2].str());
  if (hi < lo || hi - lo >= 100000) throw ConfigError(where + ": bad range {" + m[1].str() + ".." + m[2].str() + "}");
  std::vector<std::string> out;
  for (long i = lo; i <= hi; ++i) {
    std::string n = std::to_string(i);
    if (n.size() < width) n.insert(0, width - n.size(), '0');
    out.push_back(m.prefix().str() + n + rest);
  }
  return out;
}

std::string file_name_of(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("?#"));
  return path.substr(path.find_last_of('/') + 1);
}

}  // namespace

SourceList parse_source_list(const std::string& text, const std::string& source_name) {
  SourceList list;
  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    std::string where = source_name + ":" + std::to_string(line_no);
    if (size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string kind, url, extra;
    if (!(words >> kind)) continue;
    if (!(words >> url) || (words >> extra)) throw ConfigError(where + ": expected `train URL` or `val URL`");
    if (kind != "train" && kind != "val") throw ConfigError(where + ": '" + kind + "' is neither train nor val");
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
      throw ConfigError(where + ": '" + url + "' is not an http:// or https:// URL");
    for (auto& u : expand_range(url, where)) {
      std::string name = file_name_of(u);
      if (name.empty() || name == "." || name == "..")
        throw ConfigError(where + ": '" + u + "' does not end in a file name");
      if (!name.ends_with(".gz")) throw ConfigError(where + ": '" + name + "' is not a .gz file");
      (kind == "train" ? list.train : list.val).push_back(std::move(u));
    }
  }
  return list;
}

SourceList read_source_list(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("data.sources: " + path.string() + ": cannot read the source list");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_source_list(ss.str(), path.string());
}

FetchPlan plan_fetch(const SourceList& list, int shards, const std::filesystem::path& dest_dir) {
  if (shards < 1 || static_cast<size_t>(shards) > list.train.size())
    throw ConfigError("data.shards: " + std::to_string(shards) + " train files asked, the source list has " +
                      std::to_string(list.train.size()));
  if (list.val.empty()) throw ConfigError("data.sources: the source list has no val file");
  FetchPlan plan;
  std::set<std::string> names;
  auto add = [&](std::vector<SourceFile>& out, const std::string& url) {
    std::string name = file_name_of(url);
    if (!names.insert(name).second) throw ConfigError("data.sources: two files are named '" + name + "'");
    out.push_back({url, dest_dir / name});
  };
  for (int i = 0; i < shards; ++i) add(plan.train, list.train[static_cast<size_t>(i)]);
  for (const auto& u : list.val) add(plan.val, u);
  return plan;
}

std::filesystem::path fetch_dir(const std::filesystem::path& cache, const std::filesystem::path& list_path) {
  return cache / "sources" / list_path.stem();
}

}  // namespace ard
