// start's preflight: it refuses with the doctor's line before anything is
// built, and fetches missing inputs from the source list (a loopback server).
#include "daemon/cli/preflight.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daemon/data/data_inputs.h"
#include "daemon/fatal_error.h"
#include "testing/test_util.h"
#include "tests/data/fake_data_server.h"

namespace ard {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::TempDir;
using testing::gzip;
using testing::write_file;

std::string error_of(const Config& c, ProcessRunner& runner) {
  try {
    preflight(c, runner, FetchOptions{});
  } catch (const FatalError& e) {
    return e.what();
  }
  return "no error";
}

class Preflight : public ::testing::Test {
 protected:
  Preflight() : path_("PATH", (tmp / "bin").string() + ":/usr/bin:/bin") {
    std::filesystem::create_directories(tmp / "bin");
  }
  TempDir tmp;
  testing::ScopedEnv path_;  // no nvidia-smi on it
  PosixProcessRunner runner;
};

TEST_F(Preflight, NoGpuRefusesWithTheDoctorsLine) {
  Config c = parse_config("", tmp / "repo");
  EXPECT_THAT(error_of(c, runner), StartsWith("\u2717 gpu: no GPU visible: nvidia-smi not found (no NVIDIA driver); "
                                              "fix: install the NVIDIA driver"));
  EXPECT_THAT(error_of(c, runner), HasSubstr("(autoresearchd doctor lists every check)"));
}

TEST_F(Preflight, AMissingInputWithoutTheFetchNamesTheKeyAndFile) {
  Config c = parse_config("[preflight]\ngpu = \"off\"\n[data]\nfetch = false\n", tmp / "repo");
  EXPECT_THAT(error_of(c, runner), StartsWith("\u2717 data: data.train[0]: " +
                                              (tmp / "shared/corpus/train.jsonl.xz").string() + ": no such file; fix:"));
  EXPECT_THROW(fetch_missing_inputs(c, FetchOptions{}), FatalError);
}

TEST_F(Preflight, MissingInputsAreFetchedAndReadInstead) {
  write_file(tmp / "served/t0.json.gz", gzip("{\"text\":\"zero\"}\n"));
  write_file(tmp / "served/t1.json.gz", gzip("{\"text\":\"one\"}\n"));
  write_file(tmp / "served/v.json.gz", gzip("{\"text\":\"val\"}\n"));
  testing::FakeDataServer server(tmp / "served", nlohmann::json::object(), tmp / "server");
  write_file(tmp / "repo/mirror.urls", "train " + server.base() + "/t{0..1}.json.gz\nval " + server.url("v.json.gz") + "\n");
  Config c = parse_config("[preflight]\ngpu = \"off\"\n[data]\nsources = \"mirror.urls\"\nshards = 2\ncache = \"" +
                              (tmp / "cache").string() + "\"\n",
                          tmp / "repo");
  std::ostringstream progress;
  FetchOptions o;
  o.progress = &progress;
  Config ready = preflight(c, runner, o);
  std::filesystem::path dir = tmp / "cache/sources/mirror";
  EXPECT_EQ(ready.data.train, (std::vector<std::string>{(dir / "t0.json.gz").string(), (dir / "t1.json.gz").string()}));
  EXPECT_EQ(ready.data.val, std::vector<std::string>{(dir / "v.json.gz").string()});
  EXPECT_EQ(testing::read_file(dir / "t1.json.gz"), testing::read_file(tmp / "served/t1.json.gz"));
  EXPECT_THAT(progress.str(), StartsWith("data: data.train[0]: " + (tmp / "shared/corpus/train.jsonl.xz").string() +
                                         ": no such file; fetching 2 train and 1 val files of " +
                                         (tmp / "repo/mirror.urls").string() + " (data.fetch) into " + dir.string()));
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u) << "the doctor's HEAD, then the three files";
  EXPECT_EQ(requests[0]["method"], "HEAD");
  EXPECT_EQ(requests[0]["path"], "/t0.json.gz");

  // Readable inputs are used as configured: nothing is fetched.
  Config own = with_inputs(c, data_fetch_plan(c));
  EXPECT_EQ(fetch_missing_inputs(own, o).data.train, own.data.train);
  EXPECT_EQ(server.requests().size(), 4u);
}

}  // namespace
}  // namespace ard
