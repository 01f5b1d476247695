// See slurm_doctor.h.
#include "daemon/slurm/slurm_doctor.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include "daemon/slurm/slurm_client.h"
#include "daemon/store/state_dir.h"

namespace ard {

namespace fs = std::filesystem;

Check check_slurm(const Config& config, Probe& probe, double timeout_s) {
  if (config.executor != ExecutorKind::kSlurm) return {"slurm", Check::State::kSkipped, false, "executor is local", ""};
  auto fail = [](std::string line, std::string fix) {
    return Check{"slurm", Check::State::kFailed, true, std::move(line), std::move(fix)};
  };
  fs::path dir = StateDir(config.repo).root / "worktrees";
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(getpid()));
  std::string token = std::to_string(rng());
  fs::path token_file = dir / (".slurm-probe-" + token);
  fs::path out_file = dir / (".slurm-probe-" + token + ".out");
  {
    std::ofstream out(token_file);
    out << token << "\n";
    if (!out.flush()) return fail("cannot write " + token_file.string(), "check the repo's filesystem");
  }
  SubmitSpec spec{"ard-doctor", "", out_file, dir, 2};
  SlurmConfig slurm = config.slurm;
  slurm.gres.clear();
  std::vector<std::string> argv = sbatch_argv(spec, slurm);
  argv.pop_back();  // no script file: --wrap
  argv.insert(argv.begin() + 1, "--wait");
  argv.push_back("--wrap=echo \"node=${SLURMD_NODENAME:-$(hostname)}\"; cat " + shell_quote(token_file.string()));
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + shell_quote(a);
  Probe::Result r = probe.run(command, timeout_s);
  std::ifstream in(out_file);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string output = ss.str();
  fs::remove(token_file, ec);
  fs::remove(out_file, ec);
  if (r.code == 127) return fail("sbatch not found", "apt-get install slurm-client (or set executor = \"local\")");
  std::string node;
  if (size_t at = output.find("node="); at != std::string::npos)
    node = output.substr(at + 5, output.find('\n', at) - at - 5);
  if (output.find(token) != std::string::npos)
    return {"slurm", Check::State::kOk, true, "a probe job on " + node + " read a token file in " + dir.string(), ""};
  if (r.code != 0 && node.empty())
    return fail("the probe job did not run: " + r.last_line(),
                "check [slurm] partition, account and extra_args against `sinfo`, and SLURM_CONF");
  return fail("the probe job on " + (node.empty() ? std::string("its node") : node) + " cannot read " +
                  token_file.string(),
              "put the repo (and its .autoresearchd) on a filesystem every node mounts at the same path");
}

}  // namespace ard
