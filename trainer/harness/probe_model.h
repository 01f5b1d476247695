// What the integrity probes (probes.h) need from the model: the narrow, fixed
// interface the harness declares and the editable trainer implements. It is the
// model's whole surface toward the probes, so a change to the model cannot
// change what is asked of it.
#pragma once

#include <cstdint>
#include <vector>

namespace harness {

class ProbeModel {
 public:
  virtual ~ProbeModel() = default;

  /// The vocabulary size V of the logits.
  virtual int vocab_size() const = 0;

  /// The most rows one call of logits() or per_token_losses() takes.
  virtual int max_probe_rows() const = 0;

  /// The attention windows the model uses (tokens of context), if any: the probes
  /// test causality at their edges. The default: none beyond the fixed candidates.
  virtual std::vector<int> attention_windows() const { return {}; }

  /// rows: (B, T+1) host tokens, as evaluate_bpb passes them. logits_out: (B, T, V)
  /// host floats, row-major: at position t the logits that predict rows[b][t+1]
  /// from rows[b][0..t], exactly as the loss sees them (after any soft cap), so
  /// log_softmax(logits[b][t])[rows[b][t+1]] is minus the loss there.
  virtual void logits(const uint16_t* rows, int batch_rows, int seq_len, float* logits_out) = 0;

  /// The per-token losses (nats) the model hands to evaluate_bpb for the same
  /// rows: losses_out (B, T). Must be the very function the evaluation uses.
  virtual void per_token_losses(const uint16_t* rows, int batch_rows, int seq_len, float* losses_out) = 0;
};

}  // namespace harness
