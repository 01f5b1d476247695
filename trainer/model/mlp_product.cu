// The fused MLP products (mlp_product.cuh): their launchers over product_kernel.cuh's kernel,
// with the relu² forward and backward epilogues and the RMSNorm backward's, and the RMSNorm
// backward's per-row coefficients.
#include "model/mlp_product.cuh"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "model/product_kernel.cuh"

namespace {

// coef = rstd² (sum of the row's dots) / C, one thread a row (the partials in order).
__global__ void norm_coef_kernel(float* coef, const float* rstd, const float* row_dots, int rows, int parts, int C) {
  const long r = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float dot = 0.f;
  for (int p = 0; p < parts; p++) dot += row_dots[r * parts + p];
  coef[r] = rstd[r] * rstd[r] * dot / float(C);
}

template <Epilogue E>
void fused_product(const char* who, bf16* out, const bf16* act, const bf16* A, const bf16* B, int M, int N, int K,
                   const EpilogueOperands& ops, cudaStream_t st) {
  if (!product_kernel_fits(M, N, K, {out, act, A, B}))
    throw std::invalid_argument(std::string(who) + ": shape (" + std::to_string(M) + " rows, " + std::to_string(N) +
                                " wide, " + std::to_string(K) + " summed) or alignment does not fit the kernel's " +
                                std::to_string(TILE_M) + " x " + std::to_string(TILE_N) + " x " +
                                std::to_string(TILE_K) + " tiles");
  launch_product<E>(out, act, A, B, M, N, K, ops, st);
}

}  // namespace

bool relu2_product_fits(int rows, int width, int summed, std::initializer_list<const void*> ptrs) {
  return product_kernel_fits(rows, width, summed, ptrs);
}

void linear_relu2_forward_fused(bf16* a, const bf16* x, const bf16* w, int rows, int in, int out, cudaStream_t st) {
  fused_product<Epilogue::Relu2Forward>("linear_relu2_forward", a, nullptr, x, w, rows, out, in, {}, st);
}

void linear_backward_input_relu2_fused(bf16* dh, const bf16* dy, const bf16* w, const bf16* a, int rows, int in,
                                       int out, cudaStream_t st, float* row_dots) {
  EpilogueOperands ops;
  ops.partial_sums = row_dots;
  fused_product<Epilogue::Relu2Backward>("linear_backward_input_relu2", dh, a, dy, w, rows, in, out, ops, st);
}

void rmsnorm_backward_product_fused(bf16* dx, const bf16* dh, const bf16* w_fc, const bf16* xa, const float* rstd,
                                    const float* row_dots, float* row_coef, int rows, int C, int F, cudaStream_t st) {
  if (!row_dots || !row_coef) throw std::invalid_argument("rmsnorm_backward_product: needs row_dots and row_coef");
  if (rows > 0) {
    norm_coef_kernel<<<ceil_div(rows, 256), 256, 0, st>>>(row_coef, rstd, row_dots, rows, F / TILE_N, C);
    cudaLaunchCheck();
  }
  EpilogueOperands ops;
  ops.row_s = rstd, ops.row_c = row_coef;
  fused_product<Epilogue::NormBackward>("rmsnorm_backward_product", dx, xa, dh, w_fc, rows, C, F, ops, st);
}
