// A fresh clone of this repo with no ../shared beside it, as a new user has
// it: `start` stops before anything is built with the doctor's GPU line; with
// the GPU check off, the doctor's data line: the first file of the default
// corpus cannot be reached (here: a loopback port nothing listens on), one line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::read_file;
using testing::sh_quote;
using testing::shell;
using testing::TempDir;
using testing::write_file;

const std::string kDaemon = AUTORESEARCHD;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(FreshClone, StartStopsAtTheGpuLineThenAtTheFetchBeforeBuildingAnything) {
  TempDir tmp;
  if (!std::filesystem::exists(ARD_SOURCE_DIR "/.git")) GTEST_SKIP() << "the source tree is not a git checkout";
  auto clone = shell("git clone -q " + sh_quote(ARD_SOURCE_DIR) + " " + sh_quote((tmp / "clone").string()));
  ASSERT_EQ(clone.code, 0) << clone.out;
  ASSERT_FALSE(std::filesystem::exists(tmp / "shared"));
  std::filesystem::create_directories(tmp / "empty-bin");
  std::string cd = "cd " + sh_quote((tmp / "clone").string()) + " && HOME=" + sh_quote((tmp / "home").string()) + " ";

  // No nvidia-smi on the PATH: the doctor's GPU line, and nothing else.
  auto no_gpu = shell(cd + "PATH=" + sh_quote((tmp / "empty-bin").string()) + " " + kDaemon + " start");
  EXPECT_EQ(no_gpu.code, 1);
  EXPECT_EQ(no_gpu.out,
            "autoresearchd: error: \u2717 gpu: no GPU visible: nvidia-smi not found (no NVIDIA driver); fix: install the "
            "NVIDIA driver on a machine with a Hopper GPU (H100/H200), or set preflight.gpu = \"off\" in "
            "autoresearch.toml if the stages need no GPU (autoresearchd doctor lists every check)\n");
  EXPECT_FALSE(std::filesystem::exists(tmp / "clone/.autoresearchd")) << "nothing is built or created";

  // The GPU check off, the shipped source list pointed at a dead mirror.
  int port = testing::closed_loopback_port();
  std::string mirror = "http://127.0.0.1:" + std::to_string(port);
  std::string list = read_file(tmp / "clone/data_sources/c4-en.urls");
  list = std::regex_replace(list, std::regex("https://huggingface.co"), mirror);
  write_file(tmp / "mirror.urls", list);
  std::string config = read_file(tmp / "clone/autoresearch.toml");
  config = std::regex_replace(config, std::regex("gpu = \"nvidia-smi\""), "gpu = \"off\"");
  config = std::regex_replace(config, std::regex("sources = \"data_sources/c4-en.urls\""),
                              "sources = \"" + (tmp / "mirror.urls").string() + "\"");
  write_file(tmp / "override.toml", config);
  auto no_net = shell(cd + kDaemon + " start --config " + sh_quote((tmp / "override.toml").string()));
  EXPECT_EQ(no_net.code, 1);
  auto lines = lines_of(no_net.out);
  ASSERT_EQ(lines.size(), 1u) << no_net.out;
  std::string cache = (tmp / "home/.cache/autoresearchd/sources/mirror").string();
  std::string first = mirror + "/datasets/allenai/c4/resolve/main/en/c4-train.00000-of-01024.json.gz";
  EXPECT_THAT(lines[0], StartsWith("autoresearchd: error: \u2717 data: data.train[0]: " +
                                   (tmp / "shared/corpus/train.jsonl.xz").string() + ": no such file; start fetches 13 of 13 files of " +
                                   (tmp / "mirror.urls").string() + " (data.fetch) into " + cache + ", but HEAD " + first +
                                   " failed: curl error 7: "));
  EXPECT_THAT(lines[0], HasSubstr("; fix: check the network (or set https_proxy), point data.sources at a reachable "
                                  "mirror, or set data.train and data.val to local files (autoresearchd doctor lists "
                                  "every check)"));
  EXPECT_FALSE(std::filesystem::exists(tmp / "clone/.autoresearchd")) << "nothing is built or created";
}

}  // namespace
}  // namespace ard
