// The offline proposer: research without an LLM. It mutates the named
// hyperparameter constants of the trainer (one per line at the top of
// trainer/train.cu: `constexpr <int|long|float|double> NAME = <literal>;`)
// by random multiplicative steps from the current best, one or two at a time.
// It is also the baseline a user can compare LLM research against.
//
// Integers stay sensible: depth-like counts move by 1 or 2, batch sizes and
// other powers of two are doubled or halved, ratios stay in [0, 1] and
// betas/momenta move their distance to 1. Experiment i uses seed + i, and the
// description records it, so any proposal can be reproduced.
//
// It does not attempt fixes: handed a build failure, it answers kBadEdit so the
// daemon drops the broken edit and the next experiment starts from the best.
#pragma once

#include <random>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "proposers/config_error.h"
#include "proposers/proposer.h"

namespace ard {

/// The [offline] table of autoresearch.toml (docs/llm.md lists its keys).
struct OfflineConfig {
  long seed = 1;                       ///< experiment i uses seed + i, recorded in its description
  std::string file = "trainer/train.cu";  ///< the file whose constants are mutated
  double max_factor = 2.0;             ///< multiplicative steps lie in [1/max_factor, max_factor]
  int max_changes = 2;                 ///< constants changed per experiment: 1..max_changes
  std::vector<std::string> names;      ///< only these constants; empty: all of them
  std::vector<std::string> exclude = {"HEAD_DIM", "VE_GATE_CHANNELS"};  ///< never these (kernel shapes)
};

/// Parses the [offline] table. Throws ConfigError naming the key.
OfflineConfig parse_offline_config(const toml::table& table);


/// One constant of the hyperparameter block.
struct Hyperparameter {
  std::string type;     ///< int, long, float or double
  std::string name;
  std::string literal;  ///< as written, e.g. "0.04f", "524288"
  double value = 0;
  size_t line = 0;      ///< 0-based line in the file
};

/// The constants of the file, in order.
std::vector<Hyperparameter> find_hyperparameters(const std::string& content);

/// The literal for a new value, in the style of the old one (suffixes kept).
std::string format_literal(const Hyperparameter& h, double value);

/// A new value for h: a random step from its current value, never the same.
double mutate_value(const Hyperparameter& h, double max_factor, std::mt19937_64& rng);

class OfflineProposer : public ard::Proposer {
 public:
  explicit OfflineProposer(OfflineConfig config) : config_(std::move(config)) {}
  std::string name() const override { return "offline"; }
  ard::ProposalResult propose(const ard::ProposalContext& context) override;

 private:
  OfflineConfig config_;
};

}  // namespace ard
