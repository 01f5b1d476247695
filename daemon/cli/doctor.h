// The health checks of `autoresearchd doctor`, which `start` also runs before
// it builds anything: the GPU and its driver, nvcc, CMake and Ninja, free
// disk, the data inputs (or their fetch), the sandbox, the LLM settings.
//
// Each check is one function returning a Check: what it found on one line,
// and for a failure, what to do. A check is needed when the configuration
// uses what it checks; a needed failure makes `doctor` exit 1 and `start`
// refuse with the same line. Tools are found on the PATH the children get
// (env.pass), and run through a ProcessRunner with a timeout.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/exec/process_runner.h"

namespace ard {

struct Check {
  /// kWarning: works, but likely not as meant; never blocks.
  enum class State { kOk, kFailed, kSkipped, kWarning };
  std::string name;  ///< "gpu", "nvcc", "disk", ...
  State state = State::kOk;
  bool needed = true;  ///< a failure refuses start
  std::string line;    ///< what was found, one line
  std::string fix;     ///< for a failure: what to do
  /// "✓ gpu: ...", "✗ gpu: ...; fix: ...", "- llm: ..." for a skipped check,
  /// "! gpu: ...; fix: ..." for a warning.
  std::string text() const;
  bool blocks() const { return needed && state == State::kFailed; }
};

/// Runs a tool for a check: /bin/sh -c command, its output and exit code.
class Probe {
 public:
  Probe(const Config& config, ProcessRunner& runner);
  ~Probe();
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;
  struct Result {
    int code = -1;       ///< exit code; 127: not found; -1: did not run or end
    std::string output;  ///< stdout and stderr, the last lines
    std::string last_line() const;
  };
  Result run(const std::string& command, double timeout_s = 30);

 private:
  ProcessRunner& runner_;
  std::vector<std::string> env_;
  std::filesystem::path scratch_;
  int count_ = 0;
};

/// Under preflight.gpu = "off": skipped, or a warning when a stage runs the
/// CUDA trainer (build/trainer/train, as the default stages do).
Check check_gpu(const Config& config, Probe& probe);
Check check_nvcc(const Config& config, Probe& probe);
Check check_cmake(const Config& config, Probe& probe);
Check check_ninja(const Config& config, Probe& probe);
/// The data cache's filesystem: room for the dataset (and the fetch, when due).
Check check_cache_disk(const Config& config);
/// The state directory's: worktree, trainer build, logs, results.db.
Check check_state_disk(const Config& config);
/// The inputs readable, or the fetch that replaces them: then a HEAD request
/// of the first file still to fetch (head_timeout_s) must reach its server; the
/// line gives that file's size when the server sends its Content-Length.
Check check_data(const Config& config, double head_timeout_s = 10);
/// bwrap's probe, the one `start` refuses on (sandbox_unavailable): a failure
/// blocks under [sandbox] mode = "bwrap"; skipped under "off".
Check check_sandbox(const Config& config);
/// The tools the commands run by name (their first words, nvcc, cmake, ninja), found
/// on the children's PATH as the sandbox shows it: one that only a hidden directory
/// holds (a toolchain under the home) blocks, naming sandbox.read_only as the fix;
/// one that the sandbox finds elsewhere on PATH than the user's shell does is a
/// warning. Skipped under mode "off".
Check check_sandbox_tools(const Config& config);
Check check_llm_key(const Config& config);
/// GET the model list (OpenAI: {base_url}/models; Anthropic: /v1/models).
Check check_llm_server(const Config& config);

/// Every check, in the order doctor prints them.
std::vector<Check> run_checks(const Config& config, ProcessRunner& runner);

/// Prints one line per check; returns doctor's exit code (1 when one blocks).
int print_checks(const std::vector<Check>& checks, std::ostream& out);

}  // namespace ard
