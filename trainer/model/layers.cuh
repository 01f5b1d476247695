// The memory-bound layers of the model, forward and backward: token batches,
// embeddings, RMSNorm, the residual/x0 mix (fused with the RMSNorm after it),
// rotary + QK-norm, value-embedding gates, relu², the soft-capped cross-entropy,
// casts and reductions.
// Templated on the activation type T: float (the --check model) or bf16.
// Reductions are in a fixed order, so a run is reproducible bit for bit.
#pragma once

#include <cstdint>

#include "model/common.cuh"

/// rows (B, T+1) -> inputs (B*T,) = rows[:, :T], targets (B*T,) = rows[:, 1:].
void split_rows(int* inputs, int* targets, const uint16_t* rows, int B, int T, cudaStream_t st);

/// out (N, C) = table[tok[n]] (table (V, C)).
template <typename T>
void embedding_forward(T* out, const int* tok, const T* table, int N, int C, cudaStream_t st);

/// Positions grouped by token (host-built by BatchStager). Each token's positions are cut
/// into segments of at most EMBED_SEGMENT, so the gradient of a frequent token is summed
/// by many blocks (then their partial sums in order: still deterministic).
constexpr int EMBED_SEGMENT = 64;
struct TokenIndex {
  const int* unique_tokens;  // (U,)
  const int* offsets;        // (U+1,) into positions
  const int* positions;      // (N,) row indices sorted by token, ascending within a token
  const int* seg_begin;      // (S+1,) segment k is positions[seg_begin[k] .. seg_begin[k+1])
  const int* seg_first;      // (U+1,) token u owns segments seg_first[u] .. seg_first[u+1)
  int U, S;
};
/// At most this many segments for N positions over a vocabulary of V.
inline long max_embed_segments(long N, int V) { return N / EMBED_SEGMENT + V; }
/// dtable[tok] += sum of the dout rows at tok's positions (C % 8 == 0).
/// partials: (idx.S, C) floats of scratch (size it with max_embed_segments).
template <typename T>
void embedding_backward(float* dtable, const T* dout, TokenIndex idx, int C, float* partials,
                        cudaStream_t st);

/// y = x * rstd, rstd = rsqrt(mean(x²) + eps) per row of C. rstd: (N,).
template <typename T>
void rmsnorm_forward(T* y, float* rstd, const T* x, int N, int C, float eps, cudaStream_t st);
/// dx = (dres ? dres : 0) + rstd * (dy - y * mean(dy * y)); dx may alias dres. With
/// dy_scale (N,), row i of dy is dy_scale[i] times the row given (lm_head_ce.cuh's row factor).
template <typename T>
void rmsnorm_backward(T* dx, const T* dres, const T* dy, const T* x, const float* rstd, int N, int C,
                      cudaStream_t st, const float* dy_scale = nullptr);

/// The residual mix and the RMSNorm after it, in one pass over rows of C:
/// xm = lam_r[0] * x + lam_0[0] * x0 (lambdas on the device, one layer's entries; saved in T),
/// y = rmsnorm(xm) as rmsnorm_forward, rstd (N,).
template <typename T>
void residual_mix_rmsnorm_forward(T* xm, T* y, float* rstd, const T* x, const T* x0, const float* lam_r,
                                  const float* lam_0, int N, int C, float eps, cudaStream_t st);
/// Where the mix backward puts lam_0 g, x0's share of a layer's gradient. `started`: dx0 holds
/// the later layers' shares (otherwise this share starts it, and dx0 is not read). `fold`: the
/// layer whose x is x0 itself; its dx becomes x0's whole gradient, lam_r g + lam_0 g (+ dx0 when
/// started), and dx0 is left as it was. Each saves a pass over dx0 (the zeroing, the final sum).
struct X0Grad {
  bool started = true, fold = false;
};
/// Their backward: g = dres + rmsnorm_backward(dy) (the gradient of xm, rounded to T), then
/// dx = lam_r * g (dx may alias dres); dx0 += lam_0 * g (or as x0_grad says); dlam_r[0] +=
/// sum(g * x); dlam_0[0] += sum(g * x0). xm is recomputed from x and x0, to the bit the forward
/// saved. partials: (2 * 1024,) floats of scratch.
template <typename T>
void residual_mix_rmsnorm_backward(T* dx, T* dx0, float* dlam_r, float* dlam_0, float* partials,
                                   const T* dres, const T* dy, const float* rstd, const T* x, const T* x0,
                                   const float* lam_r, const float* lam_0, int N, int C, cudaStream_t st,
                                   X0Grad x0_grad = {});

/// Per (row, head): out = rmsnorm(rope(in)) over D; rows are B*T tokens, position = row % T.
/// in and out: (rows, heads * D), rows ld apart (ld >= heads * D, a multiple of 8); out may be
/// in. cos_sin: (T, D/2) cos then (T, D/2) sin. rstd: (rows * heads,). D: a multiple of 16, at
/// most 256.
template <typename T>
void rope_qknorm_forward(T* out, float* rstd, const T* in, const float* cos_sin, int rows, int seq_len,
                         int heads, int D, long ld, float eps, cudaStream_t st);
/// din = ropeᵀ(rmsnorm_backward(dout)) using the normalized output `out`; all three ld apart,
/// din may be dout.
template <typename T>
void rope_qknorm_backward(T* din, const T* dout, const T* out, const float* rstd,
                          const float* cos_sin, int rows, int seq_len, int heads, int D, long ld,
                          cudaStream_t st);

/// v (N, Hkv*D), rows ld apart, += 2 * sigmoid(logits (N, Hkv)) * ve_table[tok[n]].
template <typename T>
void ve_gate_forward(T* v, const T* logits, const T* ve_table, const int* tok, int N, int Hkv, int D,
                     long ld, cudaStream_t st);
/// dlogits (N, Hkv) and dve (N, Hkv*D) packed (per position, before the table scatter) from dv
/// (rows ld apart).
template <typename T>
void ve_gate_backward(T* dlogits, T* dve, const T* dv, const T* logits, const T* ve_table,
                      const int* tok, int N, int Hkv, int D, long ld, cudaStream_t st);

/// a = relu(h)² (a may be h); backward from the saved a: dh = da * 2 sqrt(a) (= 2 relu(h)),
/// in place over da.
template <typename T>
void relu2_forward(T* a, const T* h, long n, cudaStream_t st);
template <typename T>
void relu2_backward(T* dh, const T* a, long n, cudaStream_t st);

/// Per row of V logits (T, as the bf16 lm_head product leaves them; V % 8 == 0, V <= 8192):
/// z = cap * tanh(l / cap); losses[n] = logsumexp(z) - z[target] (NaN for a target outside
/// [0, V)).
/// With dlogits: dlogits = dscale * (softmax(z) - onehot) * (1 - (z/cap)²); dlogits may be
/// logits (in place).
template <typename T>
void softcap_cross_entropy(T* dlogits, float* losses, const T* logits, const int* targets, int N,
                           int V, float cap, float dscale, cudaStream_t st);

/// out = float -> T (the bf16 shadows of the fp32 weights).
template <typename T>
void cast_from_float(T* out, const float* in, long n, cudaStream_t st);
/// out[0] += sum(in[0..n)) in a fixed order (one block).
void sum_into(float* out, const float* in, long n, cudaStream_t st);
