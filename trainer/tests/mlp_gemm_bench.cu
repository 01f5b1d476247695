// Benchmark of a candidate for the MLP: a product kernel of our own (wgmma, sm_90a) with
// relu² in its epilogue, against what the trainer runs now (cuBLAS, then the relu² kernel),
// at one micro-batch's shapes (262144 tokens, 512 -> 2048):
//   forward:  h = x · W_fcᵀ and a = relu(h)², both written    x (M, K), W_fc (N, K)
//   backward: dh = (dy · W_proj) * 2 relu(h), h read back       dy (M, K), W_proj (K, N)
// The fused kernels write what the two-kernel path writes (h rounded to bf16 before relu²,
// dy · W_proj rounded before the product with 2 relu(h)), so their outputs must match it to
// the products' own rounding. Prints the times, TFLOP/s and the relative L2 difference from
// the two-kernel path on every element; exits 1 when a difference exceeds 1e-2, 77 without a
// GPU. Not wired into train.cu: it is slower (docs/PERF.md, run 27: 2.35 ms against 1.32 for
// the forward, 2.08 against 1.56 for the backward); a kernel that wins needs TMA loads, more
// products in flight and an epilogue that overlaps the next tile.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "model/async_copy.cuh"
#include "model/layers.cuh"
#include "model/matmul.cuh"
#include "model/wgmma.cuh"
#include "tests/gpu_timer.h"

namespace {

// Block tile BM x BN, K in steps of BK through STAGES shared-memory stages; two warpgroups,
// warpgroup w owning rows 64 w .. 64 w + 63 of the tile, both issuing the copies.
constexpr int BM = 128, BN = 128, BK = 64, STAGES = 3, THREADS = 256;
constexpr int A_STAGE = BM * BK, B_STAGE = BN * BK;  // bf16 elements of a stage's tiles
constexpr int SMEM = STAGES * (A_STAGE + B_STAGE) * 2 + 1024;

// Copies a (ROWS, COLS) bf16 tile (row r at src + r * stride) into the sw128 tile s.
template <int ROWS, int COLS>
__device__ __forceinline__ void load_tile(bf16* s, const bf16* src, long stride) {
  constexpr int PER_ROW = COLS / 8;
  static_assert(ROWS * PER_ROW % THREADS == 0, "tile copy must split evenly over the threads");
#pragma unroll
  for (int n = 0; n < ROWS * PER_ROW / THREADS; n++) {
    const int i = threadIdx.x + n * THREADS, r = i / PER_ROW, c = i % PER_ROW;
    cp_async16(reinterpret_cast<char*>(s) + sw128_offset<ROWS>(r, c), src + r * stride + c * 8);
  }
}

enum class Epilogue { Relu2Forward, Relu2Backward };

// grid (N / BN, M / BM). FORWARD: B is W_fc (N, K), K-major; out0 = h, out1 = relu(h)².
// BACKWARD: B is W_proj (K, N), MN-major; out0 = dh, h read from `h`.
template <Epilogue E>
__global__ void __launch_bounds__(THREADS, 2) mlp_product_kernel(bf16* out0, bf16* out1, const bf16* h,
                                                                 const bf16* A, const bf16* B, int N, int K) {
  extern __shared__ unsigned char smem_raw[];
  bf16* sA = reinterpret_cast<bf16*>(smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023));
  bf16* sB = sA + STAGES * A_STAGE;
  const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int n0 = blockIdx.x * BN;
  const long m0 = long(blockIdx.y) * BM;
  auto load = [&](int kt, int st) {  // one cp.async group: A (BM, BK) and B's tile of step kt
    load_tile<BM, BK>(sA + st * A_STAGE, A + m0 * K + kt * BK, K);
    if constexpr (E == Epilogue::Relu2Forward) load_tile<BN, BK>(sB + st * B_STAGE, B + long(n0) * K + kt * BK, K);
    else load_tile<BK, BN>(sB + st * B_STAGE, B + long(kt) * BK * N + n0, N);
    cp_async_commit();
  };
  const int steps = K / BK;
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < steps) load(s, s);
    else cp_async_commit();  // empty groups keep the count that cp_async_wait expects
  }
  float acc[BN / 8][4] = {};
  for (int kt = 0; kt < steps; kt++) {
    cp_async_wait<STAGES - 2>();  // this thread's part of step kt has landed
    fence_proxy_async();
    __syncthreads();  // everyone's part; and nobody still reads the stage refilled below
    if (kt + STAGES - 1 < steps) load(kt + STAGES - 1, (kt + STAGES - 1) % STAGES);
    else cp_async_commit();
    const bf16* a_tile = sA + (kt % STAGES) * A_STAGE + wg * 64 * BK;  // this warpgroup's 64 rows
    const bf16* b_tile = sB + (kt % STAGES) * B_STAGE;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) {
      if constexpr (E == Epilogue::Relu2Forward)
        wgmma_m64n128k16_ss(acc, k_major_desc<BM>(a_tile, kk), k_major_desc<BN>(b_tile, kk), 1);
      else
        wgmma_m64n128k16_ss_mn(acc, k_major_desc<BM>(a_tile, kk), mn_major_desc<BK>(b_tile, kk), 1);
    }
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_regs(acc);
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const long row = m0 + 64 * wg + 16 * warp + g + 8 * r;
#pragma unroll
    for (int n = 0; n < BN / 8; n++) {
      const long i = row * N + n0 + 8 * n + 2 * t;
      const float2 v = __bfloat1622float2(__floats2bfloat162_rn(acc[n][2 * r], acc[n][2 * r + 1]));
      if constexpr (E == Epilogue::Relu2Forward) {
        *reinterpret_cast<__nv_bfloat162*>(out0 + i) = __floats2bfloat162_rn(v.x, v.y);
        const float a0 = fmaxf(v.x, 0.f), a1 = fmaxf(v.y, 0.f);
        *reinterpret_cast<__nv_bfloat162*>(out1 + i) = __floats2bfloat162_rn(a0 * a0, a1 * a1);
      } else {
        const float2 hv = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(h + i));
        *reinterpret_cast<__nv_bfloat162*>(out0 + i) =
            __floats2bfloat162_rn(v.x * 2.f * fmaxf(hv.x, 0.f), v.y * 2.f * fmaxf(hv.y, 0.f));
      }
    }
  }
}

template <Epilogue E>
void mlp_product(bf16* out0, bf16* out1, const bf16* h, const bf16* A, const bf16* B, int M, int N, int K) {
  static const bool configured = [] {
    cudaCheck(cudaFuncSetAttribute(mlp_product_kernel<E>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    cudaCheck(cudaFuncSetAttribute(mlp_product_kernel<E>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                   cudaSharedmemCarveoutMaxShared));  // two blocks a multiprocessor
    return true;
  }();
  (void)configured;
  mlp_product_kernel<E><<<dim3(N / BN, M / BM), THREADS, SMEM>>>(out0, out1, h, A, B, N, K);
  cudaLaunchCheck();
}

struct Buffer {  // device bf16 buffer
  bf16* p = nullptr;
  long n;
  explicit Buffer(long count) : n(count) { cudaCheck(cudaMalloc(&p, n * sizeof(bf16))); }
  ~Buffer() { cudaFree(p); }
  void fill(std::mt19937_64& rng, float scale) {
    std::vector<bf16> h(n);
    std::normal_distribution<float> d(0.f, scale);
    for (auto& x : h) x = __float2bfloat16(d(rng));
    cudaCheck(cudaMemcpy(p, h.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
  }
  std::vector<float> get() const {
    std::vector<bf16> h(n);
    cudaCheck(cudaMemcpy(h.data(), p, n * sizeof(bf16), cudaMemcpyDeviceToHost));
    std::vector<float> f(n);
    for (long i = 0; i < n; i++) f[i] = __bfloat162float(h[i]);
    return f;
  }
};

double rel_diff(const Buffer& got, const Buffer& ref) {
  const auto a = got.get(), b = ref.get();
  double num = 0, den = 0;
  for (long i = 0; i < long(a.size()); i++) {
    num += double(a[i] - b[i]) * (a[i] - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: benchmark skipped\n");
    return 77;
  }
  const int M = 262144, K = 512, N = 2048;
  std::mt19937_64 rng(7);
  Buffer x(long(M) * K), w_fc(long(N) * K), dy(long(M) * K), w_proj(long(K) * N);
  Buffer h_ref(long(M) * N), a_ref(long(M) * N), dh_ref(long(M) * N), h(long(M) * N), a(long(M) * N), dh(long(M) * N);
  x.fill(rng, 1.f), dy.fill(rng, 1.f), w_fc.fill(rng, 0.04f), w_proj.fill(rng, 0.04f);
  Blas blas(nullptr);
  const double flops = 2.0 * M * N * K;
  auto forward_ref = [&] {
    linear_forward(blas, h_ref.p, x.p, w_fc.p, M, K, N);
    relu2_forward(a_ref.p, h_ref.p, long(M) * N, nullptr);
  };
  auto backward_ref = [&] {
    linear_backward_input(blas, dh_ref.p, dy.p, w_proj.p, M, N, K);
    relu2_backward(dh_ref.p, h_ref.p, long(M) * N, nullptr);
  };
  const float f_ref = median_gpu_ms(forward_ref), b_ref = median_gpu_ms(backward_ref);
  const float f_new = median_gpu_ms([&] { mlp_product<Epilogue::Relu2Forward>(h.p, a.p, nullptr, x.p, w_fc.p, M, N, K); });
  const float b_new = median_gpu_ms([&] { mlp_product<Epilogue::Relu2Backward>(dh.p, nullptr, h_ref.p, dy.p, w_proj.p, M, N, K); });
  forward_ref();
  backward_ref();
  cudaCheck(cudaDeviceSynchronize());
  const double dh_diff = rel_diff(h, h_ref), da_diff = rel_diff(a, a_ref), ddh_diff = rel_diff(dh, dh_ref);
  std::printf("forward  (h, relu(h)²):  cuBLAS + relu² %.3f ms (%.0f TFLOP/s), fused %.3f ms (%.0f TFLOP/s); rel diff h %.2e, a %.2e\n",
              f_ref, flops / f_ref / 1e9, f_new, flops / f_new / 1e9, dh_diff, da_diff);
  std::printf("backward (dh):           cuBLAS + relu² %.3f ms (%.0f TFLOP/s), fused %.3f ms (%.0f TFLOP/s); rel diff dh %.2e\n",
              b_ref, flops / b_ref / 1e9, b_new, flops / b_new / 1e9, ddh_diff);
  const bool ok = dh_diff < 1e-2 && da_diff < 1e-2 && ddh_diff < 1e-2;
  std::printf(ok ? "mlp products: outputs agree\n" : "mlp products: outputs DIFFER\n");
  return ok ? 0 : 1;
}
