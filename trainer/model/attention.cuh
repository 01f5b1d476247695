// Causal self-attention with a sliding window, forward and backward.
//   bf16: flash-style tiled kernels on Hopper's warpgroup products (wgmma, sm_90a),
//         head_dim 128, seq_len a multiple of 64; deterministic (no atomics):
//         the dk/dv kernel writes dS once, and the dq kernel reads it back.
//   float: plain reference kernels (head_dim a multiple of 8), used by the --check model.
// Query i attends to keys j with j <= i and i - j <= window (window >= T: full
// causal). Scores are scaled by 1/sqrt(head_dim). Grouped-query attention:
// query head h reads kv head h / (n_head / n_kv_head).
#pragma once

#include "model/common.cuh"

struct AttnShape {
  int B, T, H, Hkv, D;
  int window;  // max distance i - j attended
};

/// o: (B, T, H, D); lse: (B, H, T) natural-log sum of exp of the scaled scores;
/// q: (B, T, H, D); k, v: (B, T, Hkv, D).
template <typename T>
void attention_forward(T* o, float* lse, const T* q, const T* k, const T* v, AttnShape s,
                       cudaStream_t stream);

/// Bytes of device scratch attention_backward<T> needs at shape s: rowsum(dout * o), (B, H, T)
/// floats, and for bf16 the band of dS tiles that the dk/dv kernel hands to the dq kernel.
template <typename T>
size_t attention_scratch_bytes(AttnShape s);

/// dq: (B, T, H, D); dk, dv: (B, T, Hkv, D), overwritten.
/// scratch: attention_scratch_bytes<T>(s) bytes, 16-byte aligned.
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, void* scratch, const T* dout, const T* o,
                        const float* lse, const T* q, const T* k, const T* v, AttnShape s,
                        cudaStream_t stream);
