// The throwaway research repo of `autoresearchd demo`: a night of research on
// any machine, without a GPU, a compiler or an LLM.
//
// The repo holds, in one first commit on `main`:
//   trainer/train.sim   the simulated trainer's file (sim_trainer.h): its world
//                       (val_bpb ≈ 0.99, noise σ 0.0015, 0.3 s a run)
//                       and one `effect 0 cNN knob = old` line per candidate
//   night.json          the scripted proposer's night (proposers/scripted_proposer.h):
//                       candidate NN replaces its line with `effect E cNN knob = new`,
//                       E its known true effect; one candidate breaks the build
//   program.md          what the research is for
//   autoresearch.toml   one GPU slot, the daemon binary itself as build and
//                       stage (`autoresearchd sim-trainer`), preflight.gpu off,
//                       the data step off, the dashboard on a loopback port
//   .gitignore          build/
// so that the real daemon runs the loop unchanged: commits, builds, runs in the
// sandbox, the keep rule, the store. Every candidate's description states its
// true effect, so what was kept can be checked against the truth.
#pragma once

#include <filesystem>
#include <string>
#include <variant>
#include <vector>

namespace ard {

/// One candidate of the demo's night.
struct DemoCandidate {
  std::string knob;          ///< the setting it changes, e.g. "matrix_lr"
  std::string from, to;      ///< its value before and after
  double effect = 0;         ///< the true improvement of val_bpb: > 0 a gain, 0 none, < 0 a regression
  bool build_error = false;  ///< the change does not build (its effect is never measured)
};

/// The night: 40 candidates, in the order the proposer hands them out. The
/// first is a clear gain, so the first keep comes early.
const std::vector<DemoCandidate>& demo_candidates();

/// What the repo is made for.
struct DemoSettings {
  std::filesystem::path dir;     ///< where the repo goes: absent or an empty directory
  std::filesystem::path daemon;  ///< the autoresearchd binary the stages run (absolute)
  int port = 0;                  ///< the dashboard's loopback port (1-65535)
  bool sandbox = true;           ///< [sandbox] mode "bwrap"; false: "off"
};

/// The repo made.
struct DemoRepo {
  std::filesystem::path root;  ///< absolute
  std::string commit;          ///< its first commit
  size_t candidates = 0;       ///< entries in night.json
};

/// The files' texts (exposed for the tests).
std::string demo_trainer_file();
std::string demo_script_json();
std::string demo_config_toml(const DemoSettings& settings);
std::string demo_program();

/// Writes the files into settings.dir and commits them. Returns the repo, or
/// one line why not: a dir that is not empty, a daemon path the stage command
/// cannot name (relative, or with a space or quote), a port out of range, a
/// write or git failure.
std::variant<DemoRepo, std::string> make_demo_repo(const DemoSettings& settings);

}  // namespace ard
