// Bits-per-byte: the meter that sums losses and target bytes, and the fixed
// walk over the validation shard that feeds it.
#include "harness/eval.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

#include "harness/loader.h"

namespace harness {

BpbMeter::BpbMeter(std::vector<int32_t> token_bytes) : token_bytes_(std::move(token_bytes)) {}

void BpbMeter::add(const float* losses, const uint16_t* targets, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t id = targets[i];
    if (id >= token_bytes_.size())
      throw std::out_of_range("bpb: target id " + std::to_string(id) + " outside the token_bytes table");
    const int32_t bytes = token_bytes_[id];
    if (bytes > 0) {  // specials (BOS) carry no bytes: excluded from both sums
      nats_ += static_cast<double>(losses[i]);
      bytes_ += bytes;
    }
  }
  tokens_ += static_cast<long>(n);
}

double BpbMeter::bpb() const {
  if (bytes_ == 0) return std::numeric_limits<double>::quiet_NaN();
  return nats_ / (std::log(2.0) * static_cast<double>(bytes_));
}

double evaluate_bpb(const TokenShard& val, const std::vector<int32_t>& token_bytes, long eval_tokens,
                    int batch_rows, int seq_len, const BatchLossFn& losses, ValidationPacking packing) {
  if (eval_tokens <= 0) throw std::invalid_argument("eval: eval_tokens must be positive");
  LoaderOptions options;
  options.batch_rows = batch_rows;
  options.seq_len = seq_len;
  options.cycle = packing == ValidationPacking::kReference;
  options.requeue_crops = packing == ValidationPacking::kEveryToken;
  PackedLoader loader(val, options);
  BpbMeter meter(token_bytes);
  const size_t row_tokens = static_cast<size_t>(seq_len) + 1;
  std::vector<float> batch_losses(static_cast<size_t>(batch_rows) * seq_len);  // (B, T)
  while (meter.tokens() < eval_tokens) {
    Batch batch = loader.next();
    if (batch.rows == nullptr)
      throw std::runtime_error("eval: validation shard yields only " + std::to_string(meter.tokens()) +
                               " target tokens in batches of " + std::to_string(batch_rows) + " x " +
                               std::to_string(seq_len) + ", fewer than eval_tokens " +
                               std::to_string(eval_tokens));
    losses(batch.rows, batch_rows, seq_len, batch_losses.data());
    for (int b = 0; b < batch_rows; ++b)
      meter.add(batch_losses.data() + static_cast<size_t>(b) * seq_len,
                batch.rows + static_cast<size_t>(b) * row_tokens + 1, static_cast<size_t>(seq_len));
  }
  return meter.bpb();
}

double evaluate_bpb(const TokenShard& val, const std::vector<int32_t>& token_bytes, long eval_tokens,
                    int batch_rows, int seq_len, ProbeModel& model, const ProbeSettings& probes,
                    ValidationPacking packing) {
  const auto probes_start = std::chrono::steady_clock::now();
  const ProbeResult result = run_integrity_probes(model, val, seq_len, probes);
  if (!result.ok) throw TamperedError(result.message);
  // Their cost is part of every experiment's time outside training: printed so it is measured.
  std::printf("probes: passed in %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - probes_start).count());
  std::fflush(stdout);
  return evaluate_bpb(
      val, token_bytes, eval_tokens, batch_rows, seq_len,
      [&](const uint16_t* rows, int b, int t, float* losses_out) { model.per_token_losses(rows, b, t, losses_out); },
      packing);
}

}  // namespace harness
