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
void linear_backward_input_relu2_fused(bf16* dh, const bf16* dy, const bf16* w, const bf16* a, int rows, int in,
                                       int out, cudaStream_t st);

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
