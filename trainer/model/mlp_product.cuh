// The two matrix products next to the MLP's relu², with relu² in their epilogues, so that
// relu²'s own passes over the (rows, 4 C) activations disappear:
//   forward:  a (rows, out) = relu(x (rows, in) · W_fcᵀ)² (W_fc (out, in)); only a is written;
//   backward: dh (rows, in) = (dy (rows, out) · W_proj) * 2 sqrt(a) (W_proj (out, in), a (rows, in)).
// The backward takes relu(h) as sqrt(a): a = relu(h)² is saved for the next product anyway,
// and h itself (as many bytes again) is then neither written nor kept. sqrt(a) differs from
// relu(h) by at most half of a's bf16 rounding (2^-9 relative), under dh's own rounding.
// bf16 kernels of our own (product_kernel.cuh: warpgroup products fed by TMA loads from a
// producer warp, a persistent grid, the output staged in shared memory and written by TMA
// stores). They round
// as cuBLAS + relu2_forward / relu2_backward do (the product rounded to bf16 before relu²);
// kernels_test holds the two paths to each other and to a double-precision product.
// linear_relu2_forward / linear_backward_input_relu2 take the fused kernels where the shapes
// fit and the two-kernel path otherwise (fp32, odd shapes).
//
// mlp_backward_input also ends c_fc's input gradient in the backward of the RMSNorm before
// the MLP (n2 = rstd xa), so that its dn is never written. The norm's row dot needs dn whole;
// it is had earlier instead: sum_j dn_j xa_j = sum_k dh_k (W_fc xa)_k = sum_k dh_k h_k / rstd,
// and dh_k h_k = dh_k sqrt(a_k) (dh_k is 0 where h_k <= 0), summed in dh's epilogue. Then
// dx += rstd dn - (rstd² dot / C) xa is elementwise, and c_fc's product adds it into dx by TMA.
#pragma once

#include <initializer_list>
#include <type_traits>

#include "model/layers.cuh"
#include "model/matmul.cuh"

/// Whether the fused kernels take a product with `rows` rows, an output `width` and a summed
/// dimension `summed`: rows % 256 == 0, width % 128 == 0, summed % 64 == 0, every pointer
/// 16-byte aligned.
bool relu2_product_fits(int rows, int width, int summed, std::initializer_list<const void*> ptrs);

/// The fused forward (shapes as above); throws std::invalid_argument where they do not fit.
void linear_relu2_forward_fused(bf16* a, const bf16* x, const bf16* w, int rows, int in, int out, cudaStream_t st);
/// The fused backward input product; throws std::invalid_argument where the shapes do not fit.
/// With row_dots: also (rows, in / 128) partial sums over 128 columns of dh * sqrt(a) a row.
void linear_backward_input_relu2_fused(bf16* dh, const bf16* dy, const bf16* w, const bf16* a, int rows, int in,
                                       int out, cudaStream_t st, float* row_dots = nullptr);
/// dx (rows, C) += rstd (dh · W_fc) - coef(row_dots) xa (W_fc (F, C); row_dots from
/// linear_backward_input_relu2_fused; row_coef (rows) scratch); throws std::invalid_argument
/// where the shapes do not fit.
void rmsnorm_backward_product_fused(bf16* dx, const bf16* dh, const bf16* w_fc, const bf16* xa, const float* rstd,
                                    const float* row_dots, float* row_coef, int rows, int C, int F, cudaStream_t st);

/// mlp_backward_input's scratch: row_dots (rows, F / 128) and row_coef (rows) floats.
struct MlpBackwardScratch {
  float* row_dots;
  float* row_coef;
};

/// a = relu(x · Wᵀ)² (a: (rows, out)); the two-kernel path computes the product into a and
/// squares it in place.
template <typename T>
void linear_relu2_forward(const Blas& b, T* a, const T* x, const T* w, int rows, int in, int out) {
  if constexpr (std::is_same_v<T, bf16>) {
    if (relu2_product_fits(rows, out, in, {a, x, w})) return linear_relu2_forward_fused(a, x, w, rows, in, out, b.stream);
  }
  linear_forward(b, a, x, w, rows, in, out);
  relu2_forward(a, a, long(rows) * out, b.stream);
}
/// dh (rows, in) = (dy · W) * 2 sqrt(a): the input gradient of a = relu(h)² through the layer
/// y = a · Wᵀ (W (out, in)).
template <typename T>
void linear_backward_input_relu2(const Blas& b, T* dh, const T* dy, const T* w, const T* a, int rows, int in,
                                 int out) {
  if constexpr (std::is_same_v<T, bf16>) {
    if (relu2_product_fits(rows, in, out, {dh, dy, w, a}))
      return linear_backward_input_relu2_fused(dh, dy, w, a, rows, in, out, b.stream);
  }
  linear_backward_input(b, dh, dy, w, rows, in, out);
  relu2_backward(dh, a, long(rows) * in, b.stream);
}

/// The MLP's backward up to the RMSNorm before it (a = relu(n2 · W_fcᵀ)², n2 = rstd xa,
/// x_out = xa + a · W_projᵀ):
///   dh (rows, F) = (dx · W_proj) * 2 sqrt(a)             (c_fc's weight gradient reads it after)
///   dx (rows, C) = dx + rmsnorm_backward(dh · W_fc)       (in: d x_out; out: d xa)
/// dn (rows, C) is the two-kernel path's scratch for dh · W_fc.
template <typename T>
void mlp_backward_input(const Blas& b, T* dx, T* dh, T* dn, const T* w_proj, const T* w_fc, const T* a, const T* xa,
                        const float* rstd, const MlpBackwardScratch& scratch, int rows, int C, int F) {
  if constexpr (std::is_same_v<T, bf16>) {
    if (relu2_product_fits(rows, F, C, {dh, dx, w_proj, a}) && relu2_product_fits(rows, C, F, {dx, dh, w_fc, xa})) {
      linear_backward_input_relu2_fused(dh, dx, w_proj, a, rows, F, C, b.stream, scratch.row_dots);
      return rmsnorm_backward_product_fused(dx, dh, w_fc, xa, rstd, scratch.row_dots, scratch.row_coef, rows, C, F,
                                            b.stream);
    }
  }
  linear_backward_input_relu2(b, dh, dx, w_proj, a, rows, F, C);
  linear_backward_input(b, dn, dh, w_fc, rows, C, F);
  rmsnorm_backward(dx, dx, dn, xa, rstd, rows, C, b.stream);
}
