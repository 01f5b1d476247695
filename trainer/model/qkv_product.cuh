// The q, k, v product with rope + QK-norm in its epilogue, so that the rotary pass's read and
// write of q and k (a third of a layer's (rows, 3 C) qkv, twice) disappears:
//   qkv (rows, width) = x (rows, in) · Wᵀ (W (width, in)); then, per 128-wide head of the first
//   roped_heads, out = rmsnorm(rope(head)) with rstd saved, as rope_qknorm_forward leaves it.
// The bf16 kernel is our own (product_kernel.cuh, whose 128-column tile is one head); it rounds
// the product to bf16 before rope, as cuBLAS + rope_qknorm_forward do, and takes a row's angles
// as its first row's turned by table rows 8, 64 or 72 (within about 1e-7 of the table's).
// kernels_test holds the two paths to each other and to double precision.
// linear_rope_qknorm_forward takes the fused kernel where the shapes fit and the two-kernel path
// otherwise (fp32, other head sizes).
#pragma once

#include <initializer_list>
#include <type_traits>

#include "model/layers.cuh"
#include "model/matmul.cuh"

/// Whether the fused kernel takes `rows` rows of width `width` summed over `in`, with heads of
/// `head_dim` in sequences of seq_len: head_dim == 128, seq_len % 128 == 0, rows % 256 == 0,
/// width % 128 == 0, in % 64 == 0, every pointer 16-byte aligned.
bool rope_qknorm_product_fits(int rows, int in, int width, int head_dim, int seq_len,
                              std::initializer_list<const void*> ptrs);

/// The fused product (shapes as above; roped_heads * 128 <= width); throws
/// std::invalid_argument where they do not fit.
void linear_rope_qknorm_forward_fused(bf16* qkv, float* rstd, const bf16* x, const bf16* w, const float* cos_sin,
                                      int rows, int in, int width, int seq_len, int roped_heads, float eps,
                                      cudaStream_t st);

/// qkv (rows, width) = x · Wᵀ, then rope_qknorm_forward (layers.cuh) over its first roped_heads
/// heads of head_dim in place: rstd (rows, roped_heads), cos_sin (seq_len, head_dim / 2) cos then
/// sin, a row's position row % seq_len.
template <typename T>
void linear_rope_qknorm_forward(const Blas& b, T* qkv, float* rstd, const T* x, const T* w, const float* cos_sin,
                                int rows, int in, int width, int seq_len, int roped_heads, int head_dim, float eps) {
  if constexpr (std::is_same_v<T, bf16>) {
    if (rope_qknorm_product_fits(rows, in, width, head_dim, seq_len, {qkv, x, w}))
      return linear_rope_qknorm_forward_fused(qkv, rstd, x, w, cos_sin, rows, in, width, seq_len, roped_heads, eps,
                                              b.stream);
  }
  linear_forward(b, qkv, x, w, rows, in, width);
  rope_qknorm_forward(qkv, rstd, qkv, cos_sin, rows, seq_len, roped_heads, head_dim, width, eps, b.stream);
}
