// Starts tests/llm/fake_llm_server.py as a real child process on a loopback
// port, with a script of answers, and reads back the requests it received.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/python_server.h"

namespace llm::testing {

class FakeLlmServer {
 public:
  /// steps: the script (see the server's docstring). key: the only key it
  /// accepts, or empty for any. dir: where the script and log live.
  /// max_body: request bodies longer than this get a 413 (0: no limit).
  FakeLlmServer(const nlohmann::json& steps, const std::string& key, const std::filesystem::path& dir,
                long max_body = 0)
      : log_(dir / "fake_llm_requests.jsonl"), server_(ARD_FAKE_LLM_SERVER, args(steps, key, dir, max_body)) {}

  int port() const { return server_.port(); }
  std::string base_url(bool anthropic) const { return server_.url() + (anthropic ? "" : "/v1"); }

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
  static std::vector<std::string> args(const nlohmann::json& steps, const std::string& key,
                                       const std::filesystem::path& dir, long max_body) {
    std::filesystem::path script = dir / "fake_llm_script.json";
    std::ofstream(script) << steps.dump(2);
    std::vector<std::string> a = {"--script", script.string(), "--log", (dir / "fake_llm_requests.jsonl").string()};
    if (!key.empty()) a.insert(a.end(), {"--key", key});
    if (max_body > 0) a.insert(a.end(), {"--max-body", std::to_string(max_body)});
    return a;
  }

  std::filesystem::path log_;
  ard::testing::PythonServer server_;
};

/// The model's answer in the whole-file edit format: trainer/train.cu replaced by train_cu.
inline std::string whole_file_answer(const std::string& description, const std::string& train_cu) {
  return "DESCRIPTION: " + description + "\n\n=== FILE: trainer/train.cu ===\n" + train_cu + "=== END FILE ===\n";
}

/// The [proposer] and [llm] tables of a config whose LLM is server (OpenAI protocol, no key, no retries).
inline std::string proposer_toml(const FakeLlmServer& server) {
  return "[proposer]\nkind = \"llm\"\n[llm]\nprovider = \"openai\"\nmodel = \"fake-model\"\nbase_url = \"" +
         server.base_url(false) + "\"\napi_key_env = \"\"\nretries = 0\n";
}

/// Sets a flag after a delay, from a thread of its own: `stop` while a call is
/// in flight. Joins when destroyed.
class SetLater {
 public:
  SetLater(std::atomic<bool>& flag, std::chrono::milliseconds delay)
      : thread_([&flag, delay] {
          std::this_thread::sleep_for(delay);
          flag = true;
        }) {}
  ~SetLater() { thread_.join(); }

 private:
  std::thread thread_;
};

}  // namespace llm::testing
