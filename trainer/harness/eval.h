// Bits-per-byte evaluation, owned by the harness so every experiment is judged
// the same way. The model only supplies per-token cross-entropy for a batch.
//
// val_bpb = sum(loss_nats[t]) / (ln 2 * sum(token_bytes[target[t]])) over the
// first EVAL_TOKENS target tokens of the validation shard in fixed order;
// targets of byte length 0 (special tokens) are excluded from both sums.
// The rows are packed as the reference trainer packs its validation batches
// (ValidationPacking::kReference), so our val_bpb and its figures are taken
// over the same tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/dataset.h"
#include "harness/probe_model.h"
#include "harness/probes.h"

namespace harness {

class BpbMeter {
 public:
  explicit BpbMeter(std::vector<int32_t> token_bytes);
  /// Adds n tokens: losses in nats and their target ids.
  void add(const float* losses, const uint16_t* targets, size_t n);  // (n,), (n,)
  double bpb() const;          // NaN if no bytes were counted
  double nats() const { return nats_; }
  long bytes() const { return bytes_; }
  long tokens() const { return tokens_; }

 private:
  std::vector<int32_t> token_bytes_;
  double nats_ = 0;
  long bytes_ = 0;
  long tokens_ = 0;
};

/// Computes per-token losses (nats) for one batch of rows.
/// rows: (B, T+1) host tokens; losses_out: (B, T) host floats, row-major,
/// loss of predicting rows[b][t+1] from rows[b][0..t].
using BatchLossFn = std::function<void(const uint16_t* rows, int batch_rows, int seq_len,
                                       float* losses_out)>;

/// How validation rows are packed (best-fit over 1000 documents either way).
enum class ValidationPacking {
  /// As the reference: the rest of a cropped document is dropped, and the shard
  /// is read again from its start when it runs out (the pinned validation file
  /// gives 6 such batches of 128 x 2048; EVAL_TOKENS' 8 take 2 from a second pass).
  kReference,
  /// Every token once: a cropped rest goes back into the buffer behind a new BOS;
  /// no second pass (throws when the shard is too short).
  kEveryToken,
};

/// Runs the model over the validation shard with a loader of batch_rows x
/// seq_len until eval_tokens target tokens are scored (rounded up to whole
/// batches) and returns val_bpb.
double evaluate_bpb(const TokenShard& val, const std::vector<int32_t>& token_bytes,
                    long eval_tokens, int batch_rows, int seq_len, const BatchLossFn& losses,
                    ValidationPacking packing = ValidationPacking::kReference);

/// Thrown by the probed evaluation when an integrity probe fails; what() is
/// "tampered: <probe message>", so the trainer's `FAIL: <what()>` line is the
/// daemon's `FAIL: tampered: ...` (docs/CONTRACTS.md).
class TamperedError : public std::runtime_error {
 public:
  explicit TamperedError(const std::string& probe_message) : std::runtime_error("tampered: " + probe_message) {}
};

/// The evaluation the trainer uses: the integrity probes (probes.h) on the trained
/// model, then val_bpb through model.per_token_losses, the very losses the probes
/// checked. Throws TamperedError for a failed probe.
double evaluate_bpb(const TokenShard& val, const std::vector<int32_t>& token_bytes, long eval_tokens,
                    int batch_rows, int seq_len, ProbeModel& model, const ProbeSettings& probes,
                    ValidationPacking packing = ValidationPacking::kReference);

}  // namespace harness
