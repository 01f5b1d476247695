// The lm_head product and the soft-capped cross-entropy over its logits, as one step of the
// forward, and what the backward of lm_head then takes.
//
// With z = cap tanh(l / cap) (l the bf16 logits), e = exp(z - cap) and se = sum_j e_j a row,
//   loss = cap + log(se) - z[target],
//   d loss / d l_j = dscale (e_j / se - onehot_j) (1 - (z_j / cap)²)
//                  = (dscale / se) u'_j,   u'_j = e_j (1 - (z_j/cap)²) - se onehot_j (1 - (z_j/cap)²).
// The bf16 path computes u' in the epilogue of its own product kernel (product_kernel.cuh): the
// logits are neither written nor read again, and the cross-entropy kernel's pass over them is
// gone. The row factor dscale / se reaches the backward as `row_scale`: folded into lm_head's
// input for the weight gradient (dW = u'ᵀ (row_scale x)), and applied to the input gradient
// (u' · W) by the final RMSNorm's backward. Other shapes and fp32 (the --check model) take
// cuBLAS and softcap_cross_entropy, whose dlogits need no factor.
#pragma once

#include <initializer_list>

#include "model/matmul.cuh"

/// What the backward of lm_head takes from lm_head_softcap_ce.
template <typename T>
struct LmHeadGrad {
  const T* dlogits = nullptr;        // (N, V): d loss / d logits, row i times row_scale[i]
  const T* x_scaled = nullptr;       // (N, C): lm_head's input, row i times row_scale[i]
  const float* row_scale = nullptr;  // (N), or nullptr where every factor is 1
};

/// The buffers lm_head_softcap_ce writes (allocated by the caller; lm_head_ce_partials_size).
template <typename T>
struct LmHeadCEBuffers {
  T* logits;             // (N, V): the logits, then their gradient (u' on the fused path)
  T* x_scaled;           // (N, C)
  float* row_scale;      // (N)
  float* partial_sums;   // lm_head_ce_partials_size(N, V) floats
  float* target_z;       // (N)
};
/// Floats of LmHeadCEBuffers::partial_sums for N rows of V logits.
long lm_head_ce_partials_size(long N, long V);

/// Whether the bf16 kernel takes lm_head (x (N, C), W (V, C)): N % 256 == 0, V % 128 == 0,
/// C % 64 == 0, 16-byte aligned pointers.
bool lm_head_ce_fused_fits(long N, int C, int V, std::initializer_list<const void*> ptrs);

/// logits = x · Wᵀ (x (N, C), W (V, C)), then losses (N) of the soft-capped cross-entropy at
/// `targets` (N). With dscale > 0 also the gradient of dscale * sum(losses), in the form above;
/// with dscale == 0 (evaluation) the returned dlogits is nullptr. A target outside [0, V) gets a
/// NaN loss (and no gradient on the fused path).
template <typename T>
LmHeadGrad<T> lm_head_softcap_ce(const Blas& b, const LmHeadCEBuffers<T>& buf, float* losses, const T* x, const T* w,
                                 const int* targets, int N, int C, int V, float cap, float dscale);
