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
  int ld = 0;  // row stride (elements) of q, k, v and of dq, dk, dv; 0: packed (H*D for q, Hkv*D for k, v)
  __host__ __device__ long q_ld() const { return ld ? ld : long(H) * D; }
  __host__ __device__ long kv_ld() const { return ld ? ld : long(Hkv) * D; }
};

/// o: (B, T, H, D) packed; lse: (B, H, T) natural-log sum of exp of the scaled scores;
/// q: (B, T, H, D); k, v: (B, T, Hkv, D), rows s.q_ld() and s.kv_ld() apart (so q, k and v
/// may be column slices of one (B*T, H*D + 2*Hkv*D) product).
template <typename T>
void attention_forward(T* o, float* lse, const T* q, const T* k, const T* v, AttnShape s,
                       cudaStream_t stream);

/// Bytes of device scratch attention_backward<T> needs at shape s: rowsum(dout * o), (B, H, T)
/// floats, and for bf16 the band of dS tiles that the dk/dv kernel hands to the dq kernel.
template <typename T>
size_t attention_scratch_bytes(AttnShape s);

/// Where q and k came out of rope_qknorm_forward (layers.cuh) run over q's heads then k's in
/// each row (the trainer's qkv buffer), attention_backward can undo it as well: dq and dk then
/// come out as rope_qknorm_backward would leave them, the gradients of that kernel's input,
/// without a pass of their own over dq and dk (the bf16 kernels do it in their epilogues).
struct RopeQkNorm {
  const float* rstd;     // (B * T, H + Hkv): rope_qknorm_forward's rstd, q's heads then k's
  const float* cos_sin;  // (T, D / 2) cos, then (T, D / 2) sin, 8-byte aligned
};

/// dq: (B, T, H, D); dk, dv: (B, T, Hkv, D), overwritten, with the row strides of q, k, v;
/// dout: (B, T, H, D) packed, as o. With rope: dq and dk as RopeQkNorm says; the float path
/// then needs k's heads right after q's in each row (k = q + H * D, dk = dq + H * D).
/// scratch: attention_scratch_bytes<T>(s) bytes, 16-byte aligned; for bf16 so are q, k, v, dout
/// and lse (TMA reads them; cudaMalloc's pointers are). Throws std::invalid_argument (bf16)
/// where they are not, or where the dS band would be over 2^31 rows of 64, or where rope's
/// layout does not hold (before any work).
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, void* scratch, const T* dout, const T* o,
                        const float* lse, const T* q, const T* k, const T* v, AttnShape s,
                        cudaStream_t stream, const RopeQkNorm* rope = nullptr);
