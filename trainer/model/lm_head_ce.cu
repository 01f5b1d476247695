// lm_head_softcap_ce (lm_head_ce.cuh): the bf16 path (product_kernel.cuh's cross-entropy
// epilogue, then one warp a row to finish), and the cuBLAS + softcap_cross_entropy path.
#include "model/lm_head_ce.cuh"

#include <cmath>
#include <type_traits>

#include "model/layers.cuh"
#include "model/product_kernel.cuh"

namespace {

constexpr int FINISH_BLOCK = 256;  // 8 rows a block

// One warp a row, after the product: se from the row's partial sums (in a fixed order), the
// loss; with u: the row factor dscale / se, u' at the target (u there still holds e (1 - th²),
// recomputed here from z in fp32), and x_scaled = x * dscale / se. A target outside [0, V)
// gets a NaN loss (the training loop stops on it) and a zero factor, and u is not written.
__global__ void __launch_bounds__(FINISH_BLOCK)
    ce_finish_kernel(float* losses, bf16* u, float* row_scale, bf16* x_scaled, const bf16* x,
                     const float* partial_sums, const float* target_z, const int* targets, int N, int C, int V,
                     int parts, float cap, float dscale) {
  const long r = (long(blockIdx.x) * FINISH_BLOCK + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (r >= N) return;
  const int tgt = targets[r];
  const bool valid = tgt >= 0 && tgt < V;
  float se = 0.f;
  for (int p = lane; p < parts; p += 32) se += partial_sums[r * parts + p];
  se = warp_sum(se);
  const float zt = target_z[r];  // (not written by the product for an invalid target)
  if (lane == 0) losses[r] = valid ? cap + logf(se) - zt : NAN;
  if (!u) return;
  const float scale = valid ? dscale / se : 0.f;
  if (lane == 0) {
    const float th = zt / cap, et = exp2f((zt - cap) * LOG2E);
    if (valid) u[r * V + tgt] = __float2bfloat16((et - se) * (1.f - th * th));
    row_scale[r] = scale;
  }
  float f[8];
  for (int c = 8 * lane; c < C; c += 256) {
    load8(f, x + r * C + c);
#pragma unroll
    for (int e = 0; e < 8; e++) f[e] *= scale;
    store8(x_scaled + r * C + c, f);
  }
}

}  // namespace

long lm_head_ce_partials_size(long N, long V) { return N * ((V + TILE_N - 1) / TILE_N); }

bool lm_head_ce_fused_fits(long N, int C, int V, std::initializer_list<const void*> ptrs) {
  return product_kernel_fits(N, V, C, ptrs);
}

template <typename T>
LmHeadGrad<T> lm_head_softcap_ce(const Blas& b, const LmHeadCEBuffers<T>& buf, float* losses, const T* x, const T* w,
                                 const int* targets, int N, int C, int V, float cap, float dscale) {
  const bool grad = dscale > 0;
  if constexpr (std::is_same_v<T, bf16>) {
    if (lm_head_ce_fused_fits(N, C, V, {buf.logits, buf.x_scaled, x, w})) {
      bf16* u = grad ? buf.logits : nullptr;
      launch_product<Epilogue::SoftcapCE>(u, nullptr, x, w, N, V, C,
                                          CeOperands{targets, buf.partial_sums, buf.target_z, cap, grad}, RopeOperands{},
                                          b.stream);
      ce_finish_kernel<<<ceil_div(long(N) * 32, FINISH_BLOCK), FINISH_BLOCK, 0, b.stream>>>(
          losses, u, buf.row_scale, buf.x_scaled, x, buf.partial_sums, buf.target_z, targets, N, C, V, V / TILE_N,
          cap, dscale);
      cudaLaunchCheck();
      if (!grad) return {};
      return {buf.logits, buf.x_scaled, buf.row_scale};
    }
  }
  linear_forward<T, T>(b, buf.logits, x, w, N, C, V);
  // in place: each thread of the kernel writes only the logits it has read
  softcap_cross_entropy(grad ? buf.logits : (T*)nullptr, losses, buf.logits, targets, N, V, cap, dscale, b.stream);
  if (!grad) return {};
  return {buf.logits, x, nullptr};
}

template LmHeadGrad<float> lm_head_softcap_ce<float>(const Blas&, const LmHeadCEBuffers<float>&, float*, const float*,
                                                     const float*, const int*, int, int, int, float, float);
template LmHeadGrad<bf16> lm_head_softcap_ce<bf16>(const Blas&, const LmHeadCEBuffers<bf16>&, float*, const bf16*,
                                                   const bf16*, const int*, int, int, int, float, float);
