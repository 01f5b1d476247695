// Starts tests/llm/fake_llm_server.py as a real child process on a loopback
// port, with a script of answers, and reads back the requests it received.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace llm::testing {

class FakeLlmServer {
 public:
  /// steps: the script (see the server's docstring). key: the only key it
  /// accepts, or empty for any. dir: where the script and log live.
  FakeLlmServer(const nlohmann::json& steps, const std::string& key, const std::filesystem::path& dir)
      : log_(dir / "fake_llm_requests.jsonl") {
    std::filesystem::path script = dir / "fake_llm_script.json";
    std::ofstream(script) << steps.dump(2);
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    std::vector<std::string> args = {"python3", ARD_FAKE_LLM_SERVER, "--script", script.string(), "--log",
                                     log_.string()};
    if (!key.empty()) args.insert(args.end(), {"--key", key});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = posix_spawnp(&pid_, "python3", &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (rc != 0) throw std::runtime_error("cannot start python3");
    FILE* f = fdopen(out[0], "r");
    char line[128] = {0};
    if (!fgets(line, sizeof line, f) || sscanf(line, "port %d", &port_) != 1) {
      fclose(f);
      throw std::runtime_error("the fake LLM server did not start");
    }
    fclose(f);
  }
  ~FakeLlmServer() {
    kill(pid_, SIGTERM);
    int st;
    waitpid(pid_, &st, 0);
  }
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  int port() const { return port_; }
  std::string base_url(bool anthropic) const {
    return "http://127.0.0.1:" + std::to_string(port_) + (anthropic ? "" : "/v1");
  }

  /// Every request received so far, in order.
  std::vector<nlohmann::json> requests() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(log_);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
  }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace llm::testing
