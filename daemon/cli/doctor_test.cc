// Every check's ✓ and ✗ lines that this machine can produce: tools found on a
// PATH of stub scripts (nvidia-smi, nvcc, cmake, bwrap), the data inputs, the
// disk, and the LLM server check against the fake LLM server on loopback.
#include "daemon/cli/doctor.h"
#include "daemon/exec/environment_fault.h"
#include "daemon/exec/sandbox.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "fake_llm_server.h"
#include "testing/test_util.h"
#include "tests/data/fake_data_server.h"

namespace ard {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::ScopedEnv;
using testing::TempDir;
using testing::write_file;

class Doctor : public ::testing::Test {
 protected:
  Doctor() : path_(("PATH"), (tmp / "bin").string()) { std::filesystem::create_directories(tmp / "bin"); }

  /// A stub tool on the test's PATH: a shell script with this body.
  void stub(const std::string& name, const std::string& body) {
    write_file(tmp / "bin" / name, "#!/bin/sh\n" + body + "\n");
    std::filesystem::permissions(tmp / "bin" / name, std::filesystem::perms::owner_all);
  }
  Config config(const std::string& toml = "") { return parse_config(toml, tmp / "repo"); }
  Check gpu(const std::string& toml = "") {
    Config c = config(toml);
    Probe p(c, runner);
    return check_gpu(c, p);
  }
  Check nvcc(const std::string& toml = "") {
    Config c = config(toml);
    Probe p(c, runner);
    return check_nvcc(c, p);
  }
  Check sandbox(const std::string& toml = "") { return check_sandbox(config(toml)); }

  TempDir tmp;
  ScopedEnv path_;  // only the stubs: nothing of this machine's PATH
  PosixProcessRunner runner;
};

TEST_F(Doctor, NoNvidiaSmiIsTheGpuLineWithItsFix) {
  Check c = gpu();
  EXPECT_TRUE(c.blocks());
  EXPECT_EQ(c.text(),
            "\u2717 gpu: no GPU visible: nvidia-smi not found (no NVIDIA driver); fix: install the NVIDIA driver on a "
            "machine with a Hopper GPU (H100/H200), or set preflight.gpu = \"off\" in autoresearch.toml if the stages "
            "need no GPU");
}

TEST_F(Doctor, NvidiaSmiListsTheGpusAndTheDriver) {
  stub("nvidia-smi", "echo \"$@\" > " + (tmp / "args").string() +
                         "\necho '0, NVIDIA H200, 570.86.15'\necho '1, NVIDIA H200, 570.86.15'");
  Check c = gpu();
  EXPECT_EQ(c.text(), "\u2713 gpu: 2 GPUs (NVIDIA H200, ...), driver 570.86.15");
  EXPECT_EQ(testing::read_file(tmp / "args"), "--query-gpu=index,name,driver_version --format=csv,noheader\n");
}

TEST_F(Doctor, AFailingDriverIsQuoted) {
  stub("nvidia-smi",
       "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"\nexit 9");
  Check c = gpu();
  EXPECT_TRUE(c.blocks());
  EXPECT_THAT(c.text(), StartsWith("\u2717 gpu: no GPU visible: nvidia-smi failed: NVIDIA-SMI has failed because it "
                                   "couldn't communicate with the NVIDIA driver.; fix: check the NVIDIA driver"));
  stub("nvidia-smi", "exit 0");
  EXPECT_THAT(gpu().text(), StartsWith("\u2717 gpu: no GPU visible: nvidia-smi lists none"));
}

TEST_F(Doctor, PreflightGpuOffSkipsTheGpuAndCudaChecksAndACommandReplacesNvidiaSmi) {
  Check c = gpu("[preflight]\ngpu = \"off\"\n[[stage]]\nname = \"run\"\ncommand = \"./fake_trainer\"\n");
  EXPECT_FALSE(c.blocks());
  EXPECT_EQ(c.text(), "- gpu: not checked (preflight.gpu = \"off\")");
  EXPECT_EQ(nvcc("[preflight]\ngpu = \"off\"\n").text(), "- nvcc: not checked (preflight.gpu = \"off\")");
  stub("rocm-ok", "exit 0");
  EXPECT_EQ(gpu("[preflight]\ngpu = \"rocm-ok --quiet\"\n").text(),
            "\u2713 gpu: `rocm-ok --quiet` (preflight.gpu) passed");
  stub("rocm-bad", "echo 'no device' >&2; exit 3");
  EXPECT_THAT(gpu("[preflight]\ngpu = \"rocm-bad\"\n").text(),
              StartsWith("\u2717 gpu: `rocm-bad` (preflight.gpu) failed: no device; fix:"));
}

// The default stages run the CUDA trainer: with the GPU check off, that is a warning.
TEST_F(Doctor, PreflightGpuOffWithStagesThatRunTheCudaTrainerWarns) {
  Check c = gpu("[preflight]\ngpu = \"off\"\n");
  EXPECT_FALSE(c.blocks());
  EXPECT_EQ(c.state, Check::State::kWarning);
  EXPECT_EQ(c.text(), "! gpu: not checked (preflight.gpu = \"off\"), but stage \"check\" runs build/trainer/train, the "
                      "CUDA trainer, which needs a GPU; fix: set preflight.gpu = \"nvidia-smi\" on a GPU machine, or "
                      "give [[stage]] commands that need no GPU");
  Check train = gpu("[preflight]\ngpu = \"off\"\n[[stage]]\nname = \"prep\"\ncommand = \"true\"\n[[stage]]\nname = "
                    "\"train\"\ncommand = \"build/trainer/train --data {data_dir}\"\n");
  EXPECT_THAT(train.text(), StartsWith("! gpu: not checked (preflight.gpu = \"off\"), but stage \"train\" runs"));
  std::ostringstream out;
  EXPECT_EQ(print_checks({c}, out), 0) << "a warning never fails doctor";
}

TEST_F(Doctor, NvccVersionIsRead) {
  Check missing = nvcc();
  EXPECT_TRUE(missing.blocks());
  EXPECT_THAT(missing.text(), StartsWith("\u2717 nvcc: nvcc is not on PATH"));
  EXPECT_THAT(missing.text(), HasSubstr(std::filesystem::exists("/usr/local/cuda/bin/nvcc")
                                            ? "fix: export PATH=/usr/local/cuda/bin:$PATH"
                                            : "fix: install the CUDA 13 toolkit"));
  stub("nvcc", "echo 'Cuda compilation tools, release 13.0, V13.0.88'");
  EXPECT_EQ(nvcc().text(), "\u2713 nvcc: CUDA 13.0");
  stub("nvcc", "echo 'Cuda compilation tools, release 11.8, V11.8.89'");
  EXPECT_THAT(nvcc().text(), StartsWith("\u2717 nvcc: CUDA 11.8 cannot build sm_90a (needs 12.0 or later); fix:"));
}

TEST_F(Doctor, CmakeAndNinjaWhenTheBuildUsesThem) {
  Config c = config();
  Probe p(c, runner);
  EXPECT_EQ(check_cmake(c, p).text(), "\u2717 cmake: cmake is not on PATH; fix: apt-get install cmake (scripts/setup.sh does)");
  EXPECT_EQ(check_ninja(c, p).text(),
            "\u2717 ninja: ninja is not on PATH; fix: apt-get install ninja-build (scripts/setup.sh does)");
  stub("cmake", "echo 'cmake version 3.25.1'");
  stub("ninja", "echo '1.11.1'");
  EXPECT_EQ(check_cmake(c, p).text(), "\u2713 cmake: cmake 3.25.1");
  EXPECT_EQ(check_ninja(c, p).text(), "\u2713 ninja: ninja 1.11.1");
  stub("cmake", "echo 'cmake version 3.18.4'");
  EXPECT_THAT(check_cmake(c, p).text(), StartsWith("\u2717 cmake: cmake 3.18.4 is older than 3.22; fix:"));
  Config make = config("[build]\ncommand = \"make -C trainer\"\n");
  EXPECT_EQ(check_cmake(make, p).text(), "- cmake: not used by build.command");
}

TEST_F(Doctor, DataInputsNameTheKeyAndTheFile) {
  Config off = config("[data]\nenabled = false\n");
  EXPECT_EQ(check_data(off).text(), "- data: the data step is off (data.enabled = false)");

  write_file(tmp / "t.jsonl", "{\"text\":\"a\"}\n");
  Config present = config("[data]\ntrain = [\"" + (tmp / "t.jsonl").string() + "\"]\nval = [\"../v.jsonl\"]\nfetch = false\n");
  Check c = check_data(present);
  EXPECT_TRUE(c.blocks());
  std::string val = (tmp / "v.jsonl").string();
  EXPECT_EQ(c.text(), "\u2717 data: data.val[0]: " + val +
                          ": no such file; fix: put the file there, set data.train and data.val to your own files, or "
                          "set data.fetch = true to download the default corpus");
  write_file(tmp / "v.jsonl", "{\"text\":\"b\"}\n");
  EXPECT_EQ(check_data(present).text(), "\u2713 data: 1 train and 1 val input(s) readable (data.train, data.val)");
}

// The fetch's server on loopback (python3 must be on PATH: this fixture keeps the PATH).
class DoctorData : public ::testing::Test {
 protected:
  Config config(const std::string& toml) { return parse_config(toml, tmp / "repo"); }
  /// A list of 4 train files (t.0.gz ...) and a val file at base, 2 shards fetched.
  Config fetching_from(const std::string& base) {
    write_file(tmp / "repo/list.urls", "train " + base + "/t.{0..3}.gz\nval " + base + "/v.gz\n");
    return config("[data]\nsources = \"list.urls\"\nshards = 2\ncache = \"" + (tmp / "cache").string() + "\"\n");
  }
  std::string will_fetch() const {
    return "data.train[0]: " + (tmp / "shared/corpus/train.jsonl.xz").string() + ": no such file; start fetches 3 of 3 files of " +
           (tmp / "repo/list.urls").string() + " (data.fetch) into " + (tmp / "cache/sources/list").string();
  }
  TempDir tmp;
};

TEST_F(DoctorData, MissingInputsWithTheFetchOnSayWhatStartWillFetchAndTheFirstFilesSize) {
  write_file(tmp / "served/t.0.gz", std::string(123456, 'x'));
  testing::FakeDataServer server(tmp / "served", nlohmann::json::object(), tmp / "server");
  Check d = check_data(fetching_from(server.base()));
  EXPECT_FALSE(d.blocks());
  EXPECT_EQ(d.text(), "\u2713 data: " + will_fetch() + "; the first, t.0.gz, is 123.5 kB");
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0]["method"], "HEAD");
  EXPECT_EQ(requests[0]["path"], "/t.0.gz");
  EXPECT_FALSE(std::filesystem::exists(tmp / "cache/sources/list/t.0.gz")) << "doctor downloads nothing";

  // A file the server does not have.
  std::filesystem::remove(tmp / "served/t.0.gz");
  Check gone = check_data(fetching_from(server.base()));
  EXPECT_TRUE(gone.blocks());
  EXPECT_EQ(gone.text(), "\u2717 data: " + will_fetch() + ", but HEAD " + server.url("t.0.gz") +
                             " answered HTTP 404; fix: check the URL in the source list (data.sources), or point "
                             "data.sources at a mirror");

  Config bad = config("[data]\nsources = \"none.urls\"\n");
  EXPECT_EQ(check_data(bad).text(), "\u2717 data: data.sources: " + (tmp / "repo/none.urls").string() +
                                        ": cannot read the source list; fix: fix the source list or data.sources / "
                                        "data.shards");
}

TEST_F(DoctorData, AServerThatCannotBeReachedIsTheDataLineWithTheFix) {
  std::string base = "http://127.0.0.1:" + std::to_string(testing::closed_loopback_port());
  auto begin = std::chrono::steady_clock::now();
  Check d = check_data(fetching_from(base), 2);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  EXPECT_TRUE(d.blocks());
  EXPECT_THAT(d.text(), StartsWith("\u2717 data: " + will_fetch() + ", but HEAD " + base + "/t.0.gz failed: curl error 7: "));
  EXPECT_THAT(d.text(), HasSubstr("; fix: check the network (or set https_proxy), point data.sources at a reachable "
                                  "mirror, or set data.train and data.val to local files"));
}

TEST_F(Doctor, DiskNeedsRoomForTheFetchAndTheState) {
  std::filesystem::create_directories(tmp / "repo/data_sources");
  std::filesystem::copy_file(ARD_SOURCE_DIR "/data_sources/c4-en.urls", tmp / "repo/data_sources/c4-en.urls");
  Config c = config("[data]\ncache = \"" + (tmp / "cache").string() + "\"\n");
  Check cache = check_cache_disk(c);
  EXPECT_THAT(cache.text(), StartsWith("\u2713 disk: data cache (data.cache) " + (tmp / "cache").string() + ": "));
  // 1 GB for each of the 12 shards and the val file still to fetch, 2 GB for the dataset.
  EXPECT_THAT(cache.text(), HasSubstr("GB free, needs 15.0 GB"));
  Config huge = config("[data]\nshards = 100000\ncache = \"" + (tmp / "cache").string() + "\"\n");
  Check full = check_cache_disk(huge);
  EXPECT_TRUE(full.blocks());
  EXPECT_THAT(full.text(), HasSubstr("GB free, needs 100002.0 GB; fix: free space there, or point data.cache at a larger disk"));
  EXPECT_THAT(check_state_disk(c).text(),
              StartsWith("\u2713 disk: state (worktree, trainer build, logs) " + (tmp / "repo/.autoresearchd").string()));
  EXPECT_EQ(check_cache_disk(config("[data]\nenabled = false\n")).text(),
            "- disk: data cache not used (data.enabled = false)");
  EXPECT_GT(free_bytes(tmp / "no/such/dir").value_or(0), 0u);
}

TEST_F(Doctor, ABrokenSandboxBlocksAsItMakesStartRefuse) {
  Check missing = sandbox();
  EXPECT_TRUE(missing.blocks());
  EXPECT_THAT(missing.text(), StartsWith("\u2717 sandbox: bwrap not found: install bubblewrap"));
  stub("bwrap", "echo 'bwrap: No permissions to create new namespace' >&2; exit 1");
  Check broken = sandbox();
  EXPECT_TRUE(broken.blocks());
  EXPECT_THAT(broken.text(), StartsWith("\u2717 sandbox: bwrap cannot create its namespaces (bwrap: No permissions to "
                                        "create new namespace): allow unprivileged user namespaces"));
  // start refuses on the same probe, with the same reason.
  auto refusal = sandbox_start_refusal(SandboxMode::kBwrap);
  ASSERT_TRUE(refusal);
  EXPECT_THAT(*refusal, HasSubstr(broken.line));
  // Under mode "off" nothing needs it: neither refuses.
  EXPECT_FALSE(sandbox("[sandbox]\nmode = \"off\"\n").blocks());
  EXPECT_EQ(sandbox("[sandbox]\nmode = \"off\"\n").text(),
            "- sandbox: off ([sandbox] mode = \"off\"): builds and stages run unconfined");
  EXPECT_FALSE(sandbox_start_refusal(SandboxMode::kOff));
  stub("bwrap", "exit 0");
  EXPECT_EQ(sandbox().text(), "\u2713 sandbox: bwrap creates the sandbox's namespaces");
}

std::string llm_toml(const std::string& provider, const std::string& base_url) {
  return "[llm]\nprovider = \"" + provider + "\"\nmodel = \"fake-model\"\nbase_url = \"" + base_url +
         "\"\napi_key_env = \"ARD_DOCTOR_TEST_KEY\"\nconnect_timeout_s = 5\n";
}

TEST_F(Doctor, LlmKeyIsCheckedAndNeverPrinted) {
  EXPECT_EQ(check_llm_key(config()).text(), "- llm key: no LLM used (proposer.kind = \"offline\")");
  EXPECT_EQ(check_llm_server(config()).text(), "- llm server: no LLM used");
  unsetenv("ARD_DOCTOR_TEST_KEY");
  Config c = config(llm_toml("anthropic", "http://127.0.0.1:9"));
  Check k = check_llm_key(c);
  EXPECT_TRUE(k.blocks());
  EXPECT_EQ(k.text(), "\u2717 llm key: $ARD_DOCTOR_TEST_KEY is not set (llm.api_key_env); fix: export "
                      "ARD_DOCTOR_TEST_KEY=<your key> before start, or name another variable in llm.api_key_env");
  EXPECT_EQ(check_llm_server(c).text(), "- llm server: not asked: no key");
  ScopedEnv key("ARD_DOCTOR_TEST_KEY", "sk-secret-123");
  EXPECT_EQ(check_llm_key(c).text(), "\u2713 llm key: $ARD_DOCTOR_TEST_KEY is set");
  EXPECT_THAT(check_llm_key(config("[llm]\nprovider = \"openai\"\n")).text(),
              StartsWith("\u2717 llm key: llm.model: missing"));
}

// python3 must be on PATH to start the server: this fixture keeps the PATH.
class DoctorLlm : public ::testing::TestWithParam<std::string> {
 protected:
  Config config(const std::string& toml) { return parse_config(toml, tmp / "repo"); }
  TempDir tmp;
};

TEST_P(DoctorLlm, TheServerAnswersOrRefusesTheKey) {
  bool anthropic = GetParam() == "anthropic";
  TempDir server_dir;
  llm::testing::FakeLlmServer server(nlohmann::json::array(), "sk-right", server_dir.path());
  std::string base = server.base_url(anthropic);
  Config c = config(llm_toml(GetParam(), base));
  {
    ScopedEnv key("ARD_DOCTOR_TEST_KEY", "sk-right");
    Check s = check_llm_server(c);
    EXPECT_EQ(s.text(), "\u2713 llm server: " + GetParam() + " at " + base + " answers (GET " +
                            server.base_url(false) + "/models: HTTP 200), model fake-model");
  }
  ScopedEnv key("ARD_DOCTOR_TEST_KEY", "sk-wrong-456");
  Check s = check_llm_server(c);
  EXPECT_TRUE(s.blocks());
  EXPECT_EQ(s.text(), "\u2717 llm server: GET " + server.base_url(false) +
                          "/models: HTTP 401: the key was refused; fix: check the key in $ARD_DOCTOR_TEST_KEY");
  EXPECT_EQ(s.text().find("sk-wrong"), std::string::npos);
  EXPECT_TRUE(server.requests().empty()) << "the check makes no chat call";
}

INSTANTIATE_TEST_SUITE_P(Protocols, DoctorLlm, ::testing::Values("openai", "anthropic"));

TEST_F(Doctor, AnLlmServerThatIsNotThereIsNamed) {
  std::string base = "http://127.0.0.1:" + std::to_string(testing::closed_loopback_port()) + "/v1";
  ScopedEnv key("ARD_DOCTOR_TEST_KEY", "k");
  Check s = check_llm_server(config(llm_toml("openai", base)));
  EXPECT_TRUE(s.blocks());
  EXPECT_THAT(s.text(), StartsWith("\u2717 llm server: GET " + base + "/models: "));
  EXPECT_THAT(s.text(), HasSubstr("; fix: check llm.base_url and the network (https_proxy); a local server must be running"));
}

TEST_F(Doctor, AllChecksPrintOneLineEachAndOnlyNeededFailuresFail) {
  stub("nvidia-smi", "echo '0, NVIDIA H200, 570.86.15'");
  stub("nvcc", "echo 'Cuda compilation tools, release 13.0, V13.0.88'");
  stub("cmake", "echo 'cmake version 3.25.1'");
  stub("ninja", "echo '1.11.1'");
  stub("bwrap", "exit 0");
  write_file(tmp / "t.jsonl", "{}\n");
  Config c = config("[data]\ntrain = [\"" + (tmp / "t.jsonl").string() + "\"]\nval = [\"" + (tmp / "t.jsonl").string() +
                    "\"]\ncache = \"" + (tmp / "cache").string() + "\"\n" +
                    // the stubs are this test's toolchain, outside the system paths
                    "[sandbox]\nread_only = [\"" + (tmp / "bin").string() + "\"]\n");
  auto checks = run_checks(c, runner);
  std::ostringstream out;
  EXPECT_EQ(print_checks(checks, out), 0) << out.str();
  std::vector<std::string> names;
  for (const auto& k : checks) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"gpu", "nvcc", "cmake", "ninja", "disk", "disk", "data", "sandbox",
                                             "sandbox tools", "llm key", "llm server"}));
  std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 11) << text;
  std::filesystem::remove(tmp / "bin/nvidia-smi");
  std::ostringstream again;
  EXPECT_EQ(print_checks(run_checks(c, runner), again), 1);
  EXPECT_THAT(again.str(), StartsWith("\u2717 gpu: no GPU visible"));
}

// A tool the commands run by name that only a directory the sandbox hides holds (here the
// test's PATH under /tmp; for a user, a toolchain under the home) blocks, naming the fix;
// sandbox.read_only shows it; one the sandbox finds elsewhere on PATH is a warning.
TEST_F(Doctor, AToolTheSandboxCannotSeeBlocksWithTheFix) {
  stub("mytool", "exit 0");
  const std::string bin = (tmp / "bin").string();
  const std::string build = "[build]\ncommand = \"mkdir -p build && FOO=1 mytool build\"\n";
  Check hidden = check_sandbox_tools(config(build));
  EXPECT_TRUE(hidden.blocks());
  EXPECT_EQ(hidden.text(), "\u2717 sandbox tools: `mytool` is on PATH only as " + bin +
                               "/mytool, which the sandbox does not show; fix: add " + bin +
                               " (or the directory of its install) to [sandbox] read_only in autoresearch.toml");
  Check listed = check_sandbox_tools(config(build + "[sandbox]\nread_only = [\"" + bin + "\"]\n"));
  EXPECT_FALSE(listed.blocks());
  EXPECT_THAT(listed.text(), StartsWith("\u2713 sandbox tools: "));
  EXPECT_FALSE(check_sandbox_tools(config(build + "[sandbox]\nmode = \"off\"\n")).blocks());

  // env is in /usr/bin too: the sandbox runs that one, which is worth a warning, not a refusal.
  stub("env", "exit 0");
  ScopedEnv both("PATH", bin + ":/usr/bin");
  Check elsewhere = check_sandbox_tools(config("[build]\ncommand = \"env make\"\n"));
  EXPECT_FALSE(elsewhere.blocks());
  EXPECT_THAT(elsewhere.text(), HasSubstr("`env` runs as /usr/bin/env, not " + bin + "/env"));
}

}  // namespace
}  // namespace ard
