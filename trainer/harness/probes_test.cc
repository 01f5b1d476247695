// Tests of the integrity probes against fake models on the CPU: an honest one
// passes; one whose logits see one future token, one that leaks only at a window
// edge, and one that scales its reported losses by 0.9 are each caught.
#include "harness/probes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "harness/constants.h"
#include "harness/eval.h"
#include "harness/test_util.h"

namespace harness {
namespace {

/// A deterministic stand-in for a causal language model: the logits at t are a
/// function of the prefix rows[0..t] only, through a rolling hash.
class FakeModel : public ProbeModel {
 public:
  enum class Cheat { kNone, kSeesNextToken, kSeesNextTokenAtWindowEdge, kScalesLosses };
  explicit FakeModel(Cheat cheat, int max_rows = 8) : cheat_(cheat), max_rows_(max_rows) {}
  int vocab_size() const override { return VOCAB_SIZE; }
  int max_probe_rows() const override { return max_rows_; }
  std::vector<int> attention_windows() const override { return {kWindow}; }

  void logits(const uint16_t* rows, int batch_rows, int seq_len, float* out) override {
    EXPECT_LE(batch_rows, max_rows_);
    for (int b = 0; b < batch_rows; ++b) {
      const uint16_t* row = rows + b * (seq_len + 1);
      uint64_t h = 1469598103934665603ull;
      for (int t = 0; t < seq_len; ++t) {
        h = (h ^ row[t]) * 1099511628211ull;
        uint64_t seen = h;
        bool leak = cheat_ == Cheat::kSeesNextToken ||
                    (cheat_ == Cheat::kSeesNextTokenAtWindowEdge && t == kWindow - 1);
        if (leak && t + 1 < seq_len) seen = (h ^ row[t + 1]) * 1099511628211ull;  // one input token ahead
        fill(seen, out + (static_cast<size_t>(b) * seq_len + t) * VOCAB_SIZE);
      }
    }
  }

  void per_token_losses(const uint16_t* rows, int batch_rows, int seq_len, float* out) override {
    std::vector<float> l(static_cast<size_t>(batch_rows) * seq_len * VOCAB_SIZE);
    logits(rows, batch_rows, seq_len, l.data());
    for (int b = 0; b < batch_rows; ++b)
      for (int t = 0; t < seq_len; ++t) {
        const float* x = l.data() + (static_cast<size_t>(b) * seq_len + t) * VOCAB_SIZE;
        float mx = x[0];
        for (int v = 1; v < VOCAB_SIZE; ++v) mx = std::max(mx, x[v]);
        float sum = 0;
        for (int v = 0; v < VOCAB_SIZE; ++v) sum += std::exp(x[v] - mx);
        float ce = mx + std::log(sum) - x[rows[b * (seq_len + 1) + t + 1]];
        out[b * seq_len + t] = cheat_ == Cheat::kScalesLosses ? 0.9f * ce : ce;
      }
  }

  static constexpr int kWindow = 32;

 private:
  static void fill(uint64_t h, float* out) {
    const double phase = static_cast<double>(h % 100003) * 1e-3, freq = 1e-3 * static_cast<double>(1 + h % 7);
    for (int v = 0; v < VOCAB_SIZE; ++v) out[v] = static_cast<float>(4.0 * std::sin(freq * v + phase));
  }
  Cheat cheat_;
  int max_rows_;
};

constexpr int kSeqLen = 64;

/// A validation shard of documents of 10 to 60 random learned tokens.
struct Shard {
  testing::TempDir dir;
  std::unique_ptr<TokenShard> shard;
  Shard() {
    std::mt19937 rng(5);
    std::vector<std::vector<uint16_t>> docs(60);
    for (auto& d : docs) {
      d.resize(10 + rng() % 50);
      for (auto& t : d) t = static_cast<uint16_t>(rng() % NUM_LEARNED_TOKENS);
    }
    testing::write_shard(dir.path(), "val", docs);
    shard = std::make_unique<TokenShard>(dir.path(), "val");
  }
};

ProbeSettings settings(uint64_t seed = 1) {
  ProbeSettings s;
  s.seed = seed;
  return s;
}

TEST(Probes, HonestModelPasses) {
  Shard s;
  for (uint64_t seed : {1, 2, 3}) {
    FakeModel honest(FakeModel::Cheat::kNone, 3);  // 3 rows a call: the 7 causality rows go in three calls
    ProbeResult r = run_integrity_probes(honest, *s.shard, kSeqLen, settings(seed));
    EXPECT_TRUE(r.ok) << r.message;
  }
}

TEST(Probes, ALeakOfOneFutureTokenIsCaught) {
  Shard s;
  FakeModel leaky(FakeModel::Cheat::kSeesNextToken);
  ProbeResult r = run_integrity_probes(leaky, *s.shard, kSeqLen, settings());
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.message.rfind("causality: changing the tokens after position ", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("the model sees later tokens"), std::string::npos) << r.message;
  EXPECT_EQ(tampered_fail_line(r), "FAIL: tampered: " + r.message);
}

TEST(Probes, ALeakOnlyAtAWindowEdgeIsCaught) {
  Shard s;
  FakeModel leaky(FakeModel::Cheat::kSeesNextTokenAtWindowEdge);
  ProbeResult r = run_integrity_probes(leaky, *s.shard, kSeqLen, settings());
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.message.find("changed the logits at position " + std::to_string(FakeModel::kWindow - 1)),
            std::string::npos)
      << r.message;
}

TEST(Probes, LossesScaledByPointNineAreCaught) {
  Shard s;
  FakeModel scaled(FakeModel::Cheat::kScalesLosses);
  ProbeResult r = run_integrity_probes(scaled, *s.shard, kSeqLen, settings());
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.message.rfind("honest losses: probe row 0: the model reports a mean loss of ", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("(-10.0%)"), std::string::npos) << r.message;
}

TEST(Probes, RowsStraddleADocumentBoundaryAndPositionsIncludeIt) {
  Shard s;
  ProbeSettings p = settings(9);
  p.rows = 4;
  auto rows = pick_probe_rows(*s.shard, kSeqLen, p);
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) {
    ASSERT_EQ(row.tokens.size(), static_cast<size_t>(kSeqLen + 1));
    ASSERT_GE(row.boundary, 1);
    EXPECT_EQ(row.tokens[row.boundary], BOS_ID);
    auto pos = causality_positions(row, kSeqLen, {FakeModel::kWindow}, p);
    EXPECT_EQ(pos.size(), static_cast<size_t>(p.positions_per_row));
    for (int t : {row.boundary - 1, FakeModel::kWindow - 1, FakeModel::kWindow})
      if (t >= 0 && t <= kSeqLen - 2) EXPECT_NE(std::find(pos.begin(), pos.end(), t), pos.end()) << t;
    for (int t : pos) EXPECT_TRUE(t >= 0 && t <= kSeqLen - 2) << t;
  }
}

TEST(Probes, TheProbedEvaluationRunsThemFirst) {
  Shard s;
  std::vector<int32_t> token_bytes(VOCAB_SIZE, 1);
  token_bytes[BOS_ID] = 0;
  FakeModel honest(FakeModel::Cheat::kNone);
  double bpb = evaluate_bpb(*s.shard, token_bytes, 2 * kSeqLen, 2, kSeqLen, honest, settings());
  EXPECT_TRUE(std::isfinite(bpb));
  FakeModel scaled(FakeModel::Cheat::kScalesLosses);
  try {
    evaluate_bpb(*s.shard, token_bytes, 2 * kSeqLen, 2, kSeqLen, scaled, settings());
    FAIL() << "a model that scales its losses was evaluated";
  } catch (const TamperedError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("tampered: honest losses: probe row 0: ", 0), 0u) << e.what();
  }
}

TEST(Probes, AShardShorterThanARowIsAnError) {
  testing::TempDir dir;
  testing::write_shard(dir.path(), "val", {{1, 2, 3}});
  TokenShard tiny(dir.path(), "val");
  FakeModel honest(FakeModel::Cheat::kNone);
  EXPECT_THROW(run_integrity_probes(honest, tiny, kSeqLen, settings()), std::runtime_error);
}

}  // namespace
}  // namespace harness
