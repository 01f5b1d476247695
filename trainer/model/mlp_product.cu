// The fused relu² products (mlp_product.cuh): their launchers over product_kernel.cuh's kernel,
// with the relu² forward and backward epilogues.
#include "model/mlp_product.cuh"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "model/product_kernel.cuh"

namespace {

template <Epilogue E>
void relu2_product(const char* who, bf16* out, const bf16* act, const bf16* A, const bf16* B, int M, int N, int K,
                   cudaStream_t st) {
  if (!product_kernel_fits(M, N, K, {out, act, A, B}))
    throw std::invalid_argument(std::string(who) + ": shape (" + std::to_string(M) + " rows, " + std::to_string(N) +
                                " wide, " + std::to_string(K) + " summed) or alignment does not fit the kernel's " +
                                std::to_string(TILE_M) + " x " + std::to_string(TILE_N) + " x " +
                                std::to_string(TILE_K) + " tiles");
  launch_product<E>(out, act, A, B, M, N, K, CeOperands{}, RopeOperands{}, st);
}

}  // namespace

bool relu2_product_fits(int rows, int width, int summed, std::initializer_list<const void*> ptrs) {
  return product_kernel_fits(rows, width, summed, ptrs);
}

void linear_relu2_forward_fused(bf16* a, const bf16* x, const bf16* w, int rows, int in, int out, cudaStream_t st) {
  relu2_product<Epilogue::Relu2Forward>("linear_relu2_forward", a, nullptr, x, w, rows, out, in, st);
}

void linear_backward_input_relu2_fused(bf16* dh, const bf16* dy, const bf16* w, const bf16* a, int rows, int in,
                                       int out, cudaStream_t st) {
  relu2_product<Epilogue::Relu2Backward>("linear_backward_input_relu2", dh, a, dy, w, rows, in, out, st);
}
