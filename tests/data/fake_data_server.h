// Starts tests/data/fake_data_server.py on loopback over a directory of files
// with scripted faults, and reads back the requests it received.
#pragma once

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/python_server.h"

namespace ard::testing {

/// text as one gzip member, as the server's files are.
inline std::string gzip(const std::string& text) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("zlib");
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  return out;
}

class FakeDataServer {
 public:
  /// Serves root; faults: {"NAME": {"drop_after": N} | {"corrupt": true} | ...};
  /// dir: where the fault file and the request log live.
  FakeDataServer(const std::filesystem::path& root, const nlohmann::json& faults, const std::filesystem::path& dir)
      : log_(dir / "data_requests.jsonl"), server_(ARD_SOURCE_DIR "/tests/data/fake_data_server.py", args(root, faults, dir)) {}

  std::string url(const std::string& name) const { return server_.url() + "/" + name; }
  std::string base() const { return server_.url(); }

  /// Every request so far: {"method", "path", "range"}.
  std::vector<nlohmann::json> requests() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
  }

 private:
  static std::vector<std::string> args(const std::filesystem::path& root, const nlohmann::json& faults,
                                       const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "data_faults.json") << faults.dump();
    return {"--root", root.string(), "--log", (dir / "data_requests.jsonl").string(), "--faults",
            (dir / "data_faults.json").string()};
  }
  std::filesystem::path log_;
  PythonServer server_;
};

}  // namespace ard::testing
