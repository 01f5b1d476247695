// The simulated trainer: a stand-in for the CUDA trainer that needs no GPU and
// no compiler, shipped inside the daemon binary as the hidden subcommand
// `autoresearchd sim-trainer` (what `autoresearchd demo` configures as its
// build and stage; the fake trainer of tests/daemon/ calls the same code for
// its simulation mode).
//
// Why a hidden subcommand and not a binary of its own: the demo must work from
// any built or installed daemon, and the one executable a daemon can always
// find is itself (/proc/self/exe). Nothing else ships, nothing can be missing
// or out of step with the daemon, and the sandbox shows the binary because
// the stage command names it by its absolute path. The code lives in the small
// library ard_sim (this file, sim_board.h), which links nothing of the daemon.
//
// The trainer file (the file the proposer edits) is read line by line; a line
// that starts with one of these keys sets it, every other line is ignored:
//
//   effect 0.0045     a true improvement of val_bpb (> 0: better). Every such
//                     line counts, so changes kept one after another add up;
//                     text after the number is free (a name, a note), but
//                     `effect 0.0045 scaled 0.001` gives the effect at a larger
//                     rung (--depth-scale > 1) too: without it the effect is the same there
//   bpb_a, bpb_b      the world's val_bpb line a + b·steps (sim_board.h)
//   noise_sigma       run-to-run noise σ of val_bpb
//   step_cost         seconds per step at speed 1
//   seconds 0.5       how long a run sleeps (wall time; default 0.05)
//   vram 2048         peak_vram_mb to report (default 1024)
//   BUILD_ERROR msg   `build` fails with a compiler-style error at that line
//
// The board's speed is FAKE_GPU_SPEED, or entry k of the comma list
// FAKE_GPU_SPEEDS where k = CUDA_VISIBLE_DEVICES (default 1). A run computes
// steps = floor(budget × scale × speed / step_cost) and val_bpb = a + b·steps
// − Σeffect + N(0, σ), the draw seeded by the file's content and --nonce (a run
// without --nonce takes the clock's nanoseconds: a fresh draw), and prints the
// trainer's summary block (docs/CONTRACTS.md). --depth-scale S is a larger
// rung: steps cost S times as much, the line's a is lower by 0.02·log2(S), the
// effects are the lines' scaled ones, and the summary reports depth 2·S and
// num_params_M 0.1·S³ (the size a rung's run must show).
//
//   autoresearchd sim-trainer build FILE
//   autoresearchd sim-trainer run FILE [--check] [--data DIR] [--budget S] [--budget-scale F]
//                                     [--depth-scale S] [--nonce N]
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

namespace ard {

/// The flags of `run FILE ...`.
struct SimRunFlags {
  bool check = false;              ///< --check: print `check: ok` and exit 0
  std::string data;                ///< --data DIR: must be a directory (empty: not given)
  double budget_s = 300;           ///< --budget
  double budget_scale = 1;         ///< --budget-scale
  double depth_scale = 1;          ///< --depth-scale: a larger rung, 1 to 64
  std::optional<uint64_t> nonce;   ///< --nonce: the noise draw's nonce (none: the clock)
};

/// Parses the words after `run FILE`. A trailing `--data` without a value is
/// accepted (a stage's `--data {data_dir}` with the data step off). Returns the
/// flags, or one line naming the bad flag.
std::variant<SimRunFlags, std::string> parse_sim_run_flags(const std::vector<std::string>& words);

/// `build FILE`: prints a compiler-like progress and returns 0, or prints
/// `FILE:LINE:1: error: MSG` on err for the first BUILD_ERROR line and returns 1.
/// A file that cannot be read: one line on err, 2.
int sim_build(const std::string& file, std::ostream& out, std::ostream& err);

/// The simulated run of FILE (the `effect` model above): a progress line,
/// `seconds` of sleep, then the summary block on out; returns 0. A bad board
/// speed, step cost or unreadable file: one line on err, 2.
int sim_simulate(const std::string& file, const SimRunFlags& flags, std::ostream& out, std::ostream& err);

/// `autoresearchd sim-trainer ARGS...` (args after the subcommand's name):
/// build, or run with --data checked and --check answered before simulating.
/// Usage errors: one line on err, 2.
int sim_trainer_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ard
