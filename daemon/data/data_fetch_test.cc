// The fetch against tests/data/fake_data_server.py on loopback, serving gzip
// JSONL files each test makes: a clean fetch, a dropped connection resumed
// with a Range request, a 404, corrupt bytes, a file truncated on disk.
#include "daemon/data/data_fetch.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daemon/fatal_error.h"
#include "testing/test_util.h"
#include "tests/data/fake_data_server.h"

namespace ard {
namespace {

using testing::read_file;
using testing::TempDir;
using testing::write_file;

/// gzip of `documents` JSONL lines of pseudo-random hex text (barely compressible).
std::string make_gzip_jsonl(int documents, unsigned seed) {
  std::string jsonl;
  uint64_t x = seed * 2654435761u + 1;
  for (int d = 0; d < documents; ++d) {
    std::string text;
    for (int i = 0; i < 200; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      text += "0123456789abcdef"[(x >> 33) & 15];
    }
    jsonl += nlohmann::json{{"text", text}}.dump() + "\n";
  }
  return testing::gzip(jsonl);
}

class DataFetch : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(root() / "train-0.json.gz", make_gzip_jsonl(1000, 1));
    write_file(root() / "train-1.json.gz", make_gzip_jsonl(300, 2));
    write_file(root() / "val-0.json.gz", make_gzip_jsonl(50, 3));
  }
  std::filesystem::path root() const { return tmp / "served"; }
  std::filesystem::path cache() const { return tmp / "cache" / "sources" / "test"; }

  void start(const nlohmann::json& faults = nlohmann::json::object()) {
    server = std::make_unique<testing::FakeDataServer>(root(), faults, tmp / "server");
  }
  std::string url(const std::string& name) const { return server->url(name); }
  std::vector<nlohmann::json> requests() const { return server->requests(); }
  FetchOptions quick() const {
    FetchOptions o;
    o.retry_wait_s = 0.01;
    o.connect_timeout_s = 5;
    return o;
  }

  TempDir tmp;
  std::unique_ptr<testing::FakeDataServer> server;
};

TEST_F(DataFetch, CleanFetchPutsEveryFileInPlaceAndASecondFetchDownloadsNothing) {
  start();
  SourceList list = parse_source_list("train " + server->base() + "/train-{0..1}.json.gz\nval " + url("val-0.json.gz"),
                                      "test.urls");
  FetchPlan plan = plan_fetch(list, 2, cache());
  std::ostringstream progress;
  FetchOptions o = quick();
  o.progress = &progress;
  fetch_plan(plan, o);
  for (const char* name : {"train-0.json.gz", "train-1.json.gz", "val-0.json.gz"}) {
    EXPECT_EQ(read_file(cache() / name), read_file(root() / name)) << name;
    EXPECT_FALSE(std::filesystem::exists(cache() / (std::string(name) + ".part")));
  }
  auto reqs = requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (const auto& r : reqs) EXPECT_TRUE(r["range"].is_null());
  EXPECT_NE(progress.str().find("data fetch: [1/3] " + url("train-0.json.gz")), std::string::npos) << progress.str();
  EXPECT_NE(progress.str().find("val-0.json.gz: "), std::string::npos);
  EXPECT_NE(progress.str().find(", done"), std::string::npos);

  fetch_plan(plan, o);
  EXPECT_EQ(requests().size(), 3u) << "whole files are not fetched again";
}

TEST_F(DataFetch, ResumesWithARangeRequestAfterTheServerDropsTheConnection) {
  std::string whole = read_file(root() / "train-0.json.gz");
  ASSERT_GT(whole.size(), 60000u);
  start({{"train-0.json.gz", {{"drop_after", 50000}}}});
  std::ostringstream progress;
  FetchOptions o = quick();
  o.progress = &progress;
  FetchOutcome r = fetch_file(url("train-0.json.gz"), cache() / "train-0.json.gz", o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.downloaded);
  EXPECT_EQ(read_file(cache() / "train-0.json.gz"), whole);
  auto reqs = requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_TRUE(reqs[0]["range"].is_null());
  EXPECT_EQ(reqs[1]["range"], "bytes=50000-");
  EXPECT_NE(progress.str().find("curl error 18"), std::string::npos) << progress.str();
  EXPECT_NE(progress.str().find("try 1 of 5, resuming"), std::string::npos) << progress.str();
}

TEST_F(DataFetch, AServerThatIgnoresTheRangeStartsTheFileOver) {
  std::string whole = read_file(root() / "train-0.json.gz");
  start({{"train-0.json.gz", {{"drop_after", 50000}, {"ignore_range", true}}}});
  FetchOutcome r = fetch_file(url("train-0.json.gz"), cache() / "train-0.json.gz", quick());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(read_file(cache() / "train-0.json.gz"), whole);
  auto reqs = requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[1]["range"], "bytes=50000-");
  EXPECT_TRUE(reqs[2]["range"].is_null()) << "the refused resume starts over from byte 0";
}

TEST_F(DataFetch, A404NamesTheUrlAndTheStatusAndLeavesNothing) {
  start();
  FetchOutcome r = fetch_file(url("missing.json.gz"), cache() / "missing.json.gz", quick());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error.find('\n'), std::string::npos);
  EXPECT_NE(r.error.find(url("missing.json.gz") + ": HTTP 404 Not Found"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("fix: check the URL in the source list (data.sources)"), std::string::npos) << r.error;
  EXPECT_EQ(requests().size(), 1u) << "a 404 is not retried";
  EXPECT_FALSE(std::filesystem::exists(cache() / "missing.json.gz"));
  EXPECT_FALSE(std::filesystem::exists(cache() / "missing.json.gz.part"));
}

TEST_F(DataFetch, CorruptBytesAreRefusedAndNothingIsMovedIntoPlace) {
  start({{"train-1.json.gz", {{"corrupt", true}}}});
  FetchOutcome r = fetch_file(url("train-1.json.gz"), cache() / "train-1.json.gz", quick());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find(url("train-1.json.gz") + ": the download is corrupt (not a valid gzip stream"),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("nothing was moved into place"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(cache() / "train-1.json.gz"));
  EXPECT_FALSE(std::filesystem::exists(cache() / "train-1.json.gz.part"));

  // fetch_plan stops at it with the same line.
  FetchPlan plan{{{url("train-1.json.gz"), cache() / "train-1.json.gz"}}, {{url("val-0.json.gz"), cache() / "val-0.json.gz"}}};
  try {
    fetch_plan(plan, quick());
    FAIL() << "no error";
  } catch (const FatalError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("data fetch: " + url("train-1.json.gz") + ": the download is corrupt", 0), 0u)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(cache() / "val-0.json.gz")) << "the fetch stops at the first failure";
}

TEST_F(DataFetch, AFileTruncatedOnDiskIsFetchedAgain) {
  start();
  std::filesystem::path dest = cache() / "train-0.json.gz";
  ASSERT_TRUE(fetch_file(url("train-0.json.gz"), dest, quick()).ok);
  std::string whole = read_file(dest);
  std::filesystem::resize_file(dest, whole.size() / 2);
  EXPECT_FALSE(is_whole(dest));
  FetchOutcome r = fetch_file(url("train-0.json.gz"), dest, quick());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.downloaded);
  EXPECT_EQ(read_file(dest), whole);
  EXPECT_EQ(requests().size(), 2u);
}

TEST_F(DataFetch, AServerErrorIsRetriedThenReported) {
  start({{"val-0.json.gz", {{"status", 503}}}});
  FetchOptions o = quick();
  o.attempts = 3;
  FetchOutcome r = fetch_file(url("val-0.json.gz"), cache() / "val-0.json.gz", o);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("HTTP 503 Service Unavailable (scripted failure); fix: the server is busy"), std::string::npos)
      << r.error;
  EXPECT_EQ(requests().size(), 3u);
}

TEST(DataFetchNetwork, NoServerGivesTheCurlErrorAndWhatToDoAtOnce) {
  TempDir tmp;
  std::string u = "http://127.0.0.1:" + std::to_string(testing::closed_loopback_port()) + "/x.json.gz";
  std::ostringstream progress;
  FetchOptions o;
  o.progress = &progress;
  FetchOutcome r = fetch_file(u, tmp / "x.json.gz", o);
  EXPECT_EQ(progress.str(), "") << "a refused connection is not tried again";
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error.rfind(u + ": curl error 7: ", 0), 0u) << r.error;
  EXPECT_NE(r.error.find("fix: check the network (or set https_proxy)"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("set data.train and data.val to local files"), std::string::npos);
}

TEST(VerifyGzip, AcceptsConcatenatedMembersAndRefusesTruncationAndGarbage) {
  TempDir tmp;
  std::string a = make_gzip_jsonl(10, 1), b = make_gzip_jsonl(10, 2);
  write_file(tmp / "two.gz", a + b);
  EXPECT_EQ(verify_gzip(tmp / "two.gz"), std::nullopt);
  write_file(tmp / "cut.gz", (a + b).substr(0, a.size() + b.size() - 3));
  ASSERT_TRUE(verify_gzip(tmp / "cut.gz"));
  EXPECT_NE(verify_gzip(tmp / "cut.gz")->find("truncated"), std::string::npos);
  std::string bad = a;
  bad[bad.size() - 6] ^= 1;  // the CRC-32 in the trailer
  write_file(tmp / "crc.gz", bad);
  ASSERT_TRUE(verify_gzip(tmp / "crc.gz"));
  EXPECT_NE(verify_gzip(tmp / "crc.gz")->find("incorrect data check"), std::string::npos) << *verify_gzip(tmp / "crc.gz");
  write_file(tmp / "empty.gz", "");
  EXPECT_EQ(verify_gzip(tmp / "empty.gz"), "empty file");
}

TEST(HumanBytes, DecimalUnits) {
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(305.2e6), "305.2 MB");
  EXPECT_EQ(human_bytes(3.7e9), "3.7 GB");
}

}  // namespace
}  // namespace ard
