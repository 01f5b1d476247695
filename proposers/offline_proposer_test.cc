// Tests for offline_proposer.h: the constants it finds, how each kind of
// constant moves, that proposals are seeded and recorded, and its errors.
#include "proposers/offline_proposer.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ard {
namespace {

const char* kTrain =
    "#include \"harness/constants.h\"\n"
    "\n"
    "constexpr int DEPTH = 8;                    // transformer blocks\n"
    "constexpr float MATRIX_LR = 0.04f;          // Muon learning rate\n"
    "constexpr double WARMDOWN_RATIO = 0.5;      // share of steps spent decaying\n"
    "constexpr int DEVICE_BATCH_ROWS = 128;      // rows per micro-batch\n"
    "constexpr long TOTAL_BATCH_TOKENS = 524288; // tokens per step\n"
    "constexpr float ADAM_BETA2 = 0.95f;         // AdamW beta2\n"
    "constexpr int SEED = 42;                    // not a hyperparameter to tune\n"
    "constexpr int USE_FLASH = 1;                // a switch\n"
    "constexpr int WEIGHT_DECAY = 0;             // zero: nothing to scale\n"
    "\n"
    "int main() { return DEPTH; }\n"
    "constexpr float NORM_EPS = 0.0078125f;       // after the block: not a hyperparameter\n";

ard::ProposalContext context(long id) {
  ard::ProposalContext c;
  c.experiment_id = id;
  c.files = {{"trainer/train.cu", kTrain}};
  return c;
}

TEST(OfflineProposer, FindsTheConstantBlock) {
  auto hs = find_hyperparameters(kTrain);
  ASSERT_EQ(hs.size(), 9u);
  EXPECT_EQ(hs[0].name, "DEPTH");
  EXPECT_EQ(hs[0].type, "int");
  EXPECT_EQ(hs[0].value, 8);
  EXPECT_EQ(hs[0].line, 2u);
  EXPECT_EQ(hs[1].literal, "0.04f");
  EXPECT_FLOAT_EQ(hs[1].value, 0.04);
  EXPECT_EQ(hs[4].type, "long");
}

TEST(OfflineProposer, LiteralsKeepTheirStyle) {
  auto hs = find_hyperparameters(kTrain);
  EXPECT_EQ(format_literal(hs[1], 0.05227), "0.05227f");
  EXPECT_EQ(format_literal(hs[1], 2), "2.0f");
  EXPECT_EQ(format_literal(hs[2], 0.25), "0.25");
  EXPECT_EQ(format_literal(hs[0], 10), "10");
}

TEST(OfflineProposer, StepsAreSensiblePerKind) {
  auto hs = find_hyperparameters(kTrain);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 300; ++i) {
    double depth = mutate_value(hs[0], 2.0, rng);
    EXPECT_TRUE(depth == 6 || depth == 7 || depth == 9 || depth == 10) << depth;
    double lr = mutate_value(hs[1], 2.0, rng);
    EXPECT_NE(lr, 0.04);
    EXPECT_GE(lr, 0.02 - 1e-9);
    EXPECT_LE(lr, 0.08 + 1e-9);
    double ratio = mutate_value(hs[2], 4.0, rng);
    EXPECT_GE(ratio, 0);
    EXPECT_LE(ratio, 1);
    double rows = mutate_value(hs[3], 2.0, rng);
    EXPECT_TRUE(rows == 64 || rows == 256) << rows;
    double tokens = mutate_value(hs[4], 2.0, rng);
    EXPECT_TRUE(tokens == 262144 || tokens == 1048576) << tokens;
    double beta = mutate_value(hs[5], 2.0, rng);
    EXPECT_GT(beta, 0.9 - 1e-9);  // 1 - 0.05 * 2
    EXPECT_LT(beta, 1.0);
    EXPECT_NE(beta, 0.95);
  }
}

TEST(OfflineProposer, ProposesOneOrTwoChangesSeededAndRecorded) {
  OfflineConfig cfg;
  cfg.seed = 100;
  OfflineProposer p(cfg);
  EXPECT_EQ(p.name(), "offline");
  EXPECT_FALSE(p.fixes_builds());  // it mutates the best's constants and never reads a failure
  ard::ProposalResult a = p.propose(context(5)), b = p.propose(context(5)), c = p.propose(context(6));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.proposal->description, b.proposal->description);  // same seed, same proposal
  EXPECT_EQ(a.proposal->writes[0].content, b.proposal->writes[0].content);
  EXPECT_NE(a.proposal->description.find("(seed 105)"), std::string::npos) << a.proposal->description;
  EXPECT_NE(c.proposal->description.find("(seed 106)"), std::string::npos);

  for (long id = 1; id <= 40; ++id) {
    ard::ProposalResult r = p.propose(context(id));
    ASSERT_TRUE(r.ok());
    const std::string& out = r.proposal->writes[0].content;
    auto before = find_hyperparameters(kTrain), after = find_hyperparameters(out);
    ASSERT_EQ(after.size(), before.size());
    int changed = 0;
    for (size_t i = 0; i < before.size(); ++i) {
      if (before[i].literal != after[i].literal) {
        ++changed;
        EXPECT_NE(r.proposal->description.find(before[i].name + " " + before[i].literal + " -> " + after[i].literal),
                  std::string::npos);
        EXPECT_NE(before[i].name, "SEED");
        EXPECT_NE(before[i].name, "USE_FLASH");
        EXPECT_NE(before[i].name, "WEIGHT_DECAY");
      }
    }
    EXPECT_GE(changed, 1);
    EXPECT_LE(changed, 2);
    // Everything but the literals stays as it was.
    EXPECT_NE(out.find("int main() { return DEPTH; }\n"), std::string::npos);
    EXPECT_NE(out.find("// Muon learning rate\n"), std::string::npos);
  }
}

TEST(OfflineProposer, NamesAndExcludeRestrictTheChoice) {
  OfflineConfig cfg;
  cfg.names = {"MATRIX_LR"};
  cfg.max_changes = 2;
  OfflineProposer p(cfg);
  for (long id = 1; id <= 10; ++id) {
    ard::ProposalResult r = p.propose(context(id));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.proposal->description.rfind("offline: MATRIX_LR 0.04f -> ", 0), 0u) << r.proposal->description;
  }
}

TEST(OfflineProposer, AvoidsRepeatingAPastExperiment) {
  OfflineConfig cfg;
  cfg.names = {"DEPTH"};
  OfflineProposer p(cfg);
  ard::ProposalContext c = context(1);
  std::string first = p.propose(c).proposal->description;
  c.history.push_back({1, "", first, 1.0, "discarded"});
  std::string second = p.propose(c).proposal->description;
  EXPECT_NE(first.substr(0, first.find(" (seed")), second.substr(0, second.find(" (seed")));
}

// An experiment in flight (another worker's, or one resumed after a restart) counts as tried.
TEST(OfflineProposer, AvoidsRepeatingAnExperimentInFlight) {
  OfflineConfig cfg;
  cfg.names = {"DEPTH"};
  OfflineProposer p(cfg);
  ard::ProposalContext c = context(1);
  std::string first = p.propose(c).proposal->description;
  c.in_flight.push_back({1, "", first, std::nullopt, "running"});
  std::string second = p.propose(c).proposal->description;
  EXPECT_NE(first.substr(0, first.find(" (seed")), second.substr(0, second.find(" (seed")));
}

TEST(OfflineProposer, DoesNotTryToFixABuildFailure) {
  ard::ProposalContext c = context(4);
  c.last_failure = ard::Failure{"build_fail", "train.cu:3: error: static assertion failed"};
  auto r = OfflineProposer(OfflineConfig{}).propose(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ard::ProposalError::Kind::kBadEdit);
  c.last_failure = ard::Failure{"crash", "FAIL: loss is NaN at step 12"};  // other failures: carry on from the best
  EXPECT_TRUE(OfflineProposer(OfflineConfig{}).propose(c).ok());
}

TEST(OfflineProposer, Errors) {
  OfflineConfig cfg;
  cfg.file = "trainer/other.cu";
  auto r = OfflineProposer(cfg).propose(context(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ard::ProposalError::Kind::kFatal);
  EXPECT_EQ(r.error->message, "offline.file: trainer/other.cu is not among the editable files");
  ard::ProposalContext none = context(1);
  none.files[0].content = "int main() {}\n";
  auto r2 = OfflineProposer(OfflineConfig{}).propose(none);
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error->message.find("no hyperparameter constants"), std::string::npos);
}

TEST(OfflineConfig, DefaultsKeysAndErrors) {
  OfflineConfig d = parse_offline_config(toml::table{});
  EXPECT_EQ(d.seed, 1);
  EXPECT_EQ(d.file, "trainer/train.cu");
  EXPECT_EQ(d.max_changes, 2);
  EXPECT_EQ(d.exclude, (std::vector<std::string>{"HEAD_DIM", "VE_GATE_CHANNELS"}));
  OfflineConfig c = parse_offline_config(
      toml::parse("seed = 7\nfile = 'a.cu'\nmax_factor = 1.5\nmax_changes = 1\nnames = ['A']\nexclude = ['B']\n"));
  EXPECT_EQ(c.seed, 7);
  EXPECT_EQ(c.file, "a.cu");
  EXPECT_DOUBLE_EQ(c.max_factor, 1.5);
  EXPECT_EQ(c.max_changes, 1);
  EXPECT_EQ(c.names, std::vector<std::string>{"A"});
  EXPECT_EQ(c.exclude, std::vector<std::string>{"B"});
  auto err = [](const std::string& t) {
    try {
      parse_offline_config(toml::parse(t));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(err("max_factor = 1"), "offline.max_factor: must be > 1");
  EXPECT_EQ(err("max_changes = 0"), "offline.max_changes: must be in [1, 100], got 0");
  EXPECT_EQ(err("names = [1]"), "offline.names: expected an array of non-empty strings");
  EXPECT_EQ(err("sed = 1"), "offline.sed: unknown key");
}

}  // namespace
}  // namespace ard
