// Benchmark of candidates for the MLP: product kernels of our own (wgmma, sm_90a) with relu²
// in their epilogue, against what the trainer runs now (cuBLAS, then the relu² kernel), at
// one micro-batch's shapes (262144 tokens, 512 -> 2048; `mlp_gemm_bench ROWS` for fewer rows):
//   forward:  h = x · W_fcᵀ and a = relu(h)², both written    x (M, K), W_fc (N, K)
//   backward: dh = (dy · W_proj) * 2 relu(h), h read back       dy (M, K), W_proj (K, N)
// The fused kernels write what the two-kernel path writes (h rounded to bf16 before relu²,
// dy · W_proj rounded before the product with 2 relu(h)), so their outputs must match it to
// the products' own rounding. Prints the times, TFLOP/s and the relative L2 difference from
// the two-kernel path on every element; exits 1 when a difference exceeds 1e-2, 77 without a
// GPU. Candidates (docs/PERF.md, run 27 and after):
//   cp.async  copies by every thread, one product group in flight, stores from registers:
//             slower than the two-kernel path (2.35 against 1.32 ms forward, 2.08 against
//             1.56 backward), its epilogue as long as its main loop;
//   tma       persistent, TMA loads from a producer warp and TMA stores from a staging tile,
//             two blocks a multiprocessor so that one's epilogue overlaps the other's products
//             (written 2026-12-03, not yet run on the GPU).
// Not wired into train.cu.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <cuda.h>
#include <cudaTypedefs.h>

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
    load_tile_sw128_async<BM, BK, THREADS>(sA + st * A_STAGE, A + m0 * K + kt * BK, K, threadIdx.x);
    if constexpr (E == Epilogue::Relu2Forward)
      load_tile_sw128_async<BN, BK, THREADS>(sB + st * B_STAGE, B + long(n0) * K + kt * BK, K, threadIdx.x);
    else
      load_tile_sw128_async<BK, BN, THREADS>(sB + st * B_STAGE, B + long(kt) * BK * N + n0, N, threadIdx.x);
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

// ---- candidate 2: a persistent kernel fed and drained by the tensor-memory accelerator ----
// A block is one consumer warpgroup (threads 0-127) and one producer warp (128-159); two blocks
// share a multiprocessor, so one's epilogue runs while the other's products do. The consumer
// owns a 128 x 128 tile (two 64-row halves, 128 accumulator registers a thread); the producer's
// lane 0 streams its (A, B) k-steps through a ring of TMA_STAGES stages, each guarded by a
// full / empty mbarrier pair. The epilogue writes the tile in bf16 into a staging buffer in
// the sw128 layout (what TMA's 128-byte swizzle reads), and TMA stores it; the backward's h
// tile comes in the same way.
// A stage holds A (128 rows, 64 columns) then B's 128 x 64: 32 KB, a (128, 128) bf16 tile's size.
constexpr int TMA_STAGES = 2, TMA_THREADS = 160, TILE_BYTES = 128 * 128 * 2;
constexpr int TMA_SMEM = (TMA_STAGES + 1) * TILE_BYTES + 1024 + 64;  // ring, staging, alignment, barriers

__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
// Box (x = column, y = row) of the tensor map into shared memory; completes on bar.
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(smem_addr(bar))
      : "memory");
}
__device__ __forceinline__ void tma_store(const CUtensorMap* map, int x, int y, const void* src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(x), "r"(y), "r"(smem_addr(src))
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void tma_store_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
__device__ __forceinline__ void tma_store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void consumer_sync() { asm volatile("bar.sync 1, 128;\n" ::: "memory"); }

// Byte offset of element (r, c) of a (128, 128) bf16 tile in the sw128 layout.
__device__ __forceinline__ int staged(int r, int c) { return sw128_offset<128>(r, c / 8) + (c % 8) * 2; }

template <Epilogue E>
__global__ void __launch_bounds__(TMA_THREADS, 2) mlp_product_tma_kernel(
    const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
    const __grid_constant__ CUtensorMap map_out0, const __grid_constant__ CUtensorMap map_out1,
    const __grid_constant__ CUtensorMap map_h, int M, int N, int K) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char* base = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
  unsigned char* ring = base;                                 // stage s at s * TILE_BYTES: A, then B
  unsigned char* stage_out = base + TMA_STAGES * TILE_BYTES;  // the epilogue's tile
  uint64_t* full = reinterpret_cast<uint64_t*>(stage_out + TILE_BYTES);
  uint64_t* empty = full + TMA_STAGES;
  uint64_t* h_ready = empty + TMA_STAGES;
  const int tiles_n = N / 128, tiles = (M / 128) * tiles_n, steps = K / 64;
  if (threadIdx.x == 0) {
    for (int s = 0; s < TMA_STAGES; s++) mbar_init(&full[s], 1), mbar_init(&empty[s], 128);
    mbar_init(h_ready, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    fence_proxy_async();
  }
  __syncthreads();
  if (threadIdx.x >= 128) {  // producer warp: lane 0 issues every load
    if (threadIdx.x != 128) return;
    int it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const int m0 = (tile / tiles_n) * 128, n0 = (tile % tiles_n) * 128;
      for (int kt = 0; kt < steps; kt++, it++) {
        const int s = it % TMA_STAGES;
        if (it >= TMA_STAGES) mbar_wait(&empty[s], ((it / TMA_STAGES) - 1) & 1);  // the consumer freed it
        unsigned char* sa = ring + s * TILE_BYTES;  // A (128 rows, 64 columns): 16 KB
        unsigned char* sb = sa + TILE_BYTES / 2;     // B: 16 KB
        mbar_expect_tx(&full[s], TILE_BYTES);
        tma_load(sa, &map_a, kt * 64, m0, &full[s]);
        if constexpr (E == Epilogue::Relu2Forward) {
          tma_load(sb, &map_b, kt * 64, n0, &full[s]);  // W_fc rows n0.., columns (K) kt * 64..
        } else {  // W_proj rows (K) kt * 64.., columns n0..: two 64-column halves of 64 rows
          tma_load(sb, &map_b, n0, kt * 64, &full[s]);
          tma_load(sb + 64 * 128, &map_b, n0 + 64, kt * 64, &full[s]);
        }
      }
    }
    return;
  }
  // consumer warpgroup
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  int it = 0, h_parity = 0;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int m0 = (tile / tiles_n) * 128, n0 = (tile % tiles_n) * 128;
    float acc[2][16][4] = {};
    for (int kt = 0; kt < steps; kt++, it++) {
      const int s = it % TMA_STAGES;
      mbar_wait(&full[s], (it / TMA_STAGES) & 1);
      const bf16* sa = reinterpret_cast<const bf16*>(ring + s * TILE_BYTES);
      const bf16* sb = sa + 128 * 64;
      wgmma_fence();
#pragma unroll
      for (int half = 0; half < 2; half++)
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
          if constexpr (E == Epilogue::Relu2Forward)
            wgmma_m64n128k16_ss(acc[half], k_major_desc<128>(sa + half * 64 * 64, kk), k_major_desc<128>(sb, kk), 1);
          else
            wgmma_m64n128k16_ss_mn(acc[half], k_major_desc<128>(sa + half * 64 * 64, kk), mn_major_desc<64>(sb, kk), 1);
        }
      wgmma_commit();
      wgmma_wait<0>();
      wgmma_fence_regs(acc[0]);
      wgmma_fence_regs(acc[1]);
      mbar_arrive(&empty[s]);
    }
    // epilogue: the staging tile must be free (the last tile's stores have read it)
    if (threadIdx.x == 0) tma_store_wait_read();
    consumer_sync();
    if constexpr (E == Epilogue::Relu2Backward) {
      if (threadIdx.x == 0) {
        mbar_expect_tx(h_ready, TILE_BYTES);
        tma_load(stage_out, &map_h, n0, m0, h_ready);
        tma_load(stage_out + TILE_BYTES / 2, &map_h, n0 + 64, m0, h_ready);
      }
      mbar_wait(h_ready, h_parity);
      h_parity ^= 1;
    }
    for (int pass = 0; pass < (E == Epilogue::Relu2Forward ? 2 : 1); pass++) {
      if (pass == 1) {  // relu(h)² into the staging tile once h's stores have read it
        if (threadIdx.x == 0) tma_store_wait_read();
        consumer_sync();
      }
#pragma unroll
      for (int half = 0; half < 2; half++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
          const int row = 64 * half + 16 * warp + g + 8 * r;
#pragma unroll
          for (int n = 0; n < 16; n++) {
            __nv_bfloat162* at = reinterpret_cast<__nv_bfloat162*>(stage_out + staged(row, 8 * n + 2 * t));
            const float2 v = __bfloat1622float2(__floats2bfloat162_rn(acc[half][n][2 * r], acc[half][n][2 * r + 1]));
            if constexpr (E == Epilogue::Relu2Forward) {
              const float a0 = fmaxf(v.x, 0.f), a1 = fmaxf(v.y, 0.f);
              *at = pass == 0 ? __floats2bfloat162_rn(v.x, v.y) : __floats2bfloat162_rn(a0 * a0, a1 * a1);
            } else {
              const float2 hv = __bfloat1622float2(*at);
              *at = __floats2bfloat162_rn(v.x * 2.f * fmaxf(hv.x, 0.f), v.y * 2.f * fmaxf(hv.y, 0.f));
            }
          }
        }
      fence_proxy_async();  // the staging writes, visible to TMA
      consumer_sync();
      if (threadIdx.x == 0) {
        const CUtensorMap* out = pass == 0 ? &map_out0 : &map_out1;
        tma_store(out, n0, m0, stage_out);
        tma_store(out, n0 + 64, m0, stage_out + TILE_BYTES / 2);
        tma_store_commit();
      }
    }
  }
  if (threadIdx.x == 0) tma_store_wait_all();
}

// A row-major (rows, cols) bf16 matrix as a TMA map of (box_rows, 64) boxes, 128-byte swizzled.
CUtensorMap tensor_map(const bf16* p, long rows, long cols, int box_rows) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    cudaCheck(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !fn) {
      std::fprintf(stderr, "FAIL: the driver has no cuTensorMapEncodeTiled\n");
      std::exit(1);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  CUtensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)}, strides[1] = {cuuint64_t(cols) * sizeof(bf16)};
  const cuuint32_t box[2] = {64, cuuint32_t(box_rows)}, elem_strides[2] = {1, 1};
  const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<bf16*>(p), dims, strides, box,
                            elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "FAIL: cuTensorMapEncodeTiled returned %d\n", int(r));
    std::exit(1);
  }
  return map;
}

template <Epilogue E>
void mlp_product_tma(bf16* out0, bf16* out1, const bf16* h, const bf16* A, const bf16* B, int M, int N, int K) {
  static const bool configured = [] {
    cudaCheck(cudaFuncSetAttribute(mlp_product_tma_kernel<E>, cudaFuncAttributeMaxDynamicSharedMemorySize, TMA_SMEM));
    cudaCheck(cudaFuncSetAttribute(mlp_product_tma_kernel<E>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                   cudaSharedmemCarveoutMaxShared));
    return true;
  }();
  (void)configured;
  int sms = 0;
  cudaCheck(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const CUtensorMap map_a = tensor_map(A, M, K, 128);
  const CUtensorMap map_b = E == Epilogue::Relu2Forward ? tensor_map(B, N, K, 128) : tensor_map(B, K, N, 64);
  const CUtensorMap map_out0 = tensor_map(out0, M, N, 128);
  const CUtensorMap map_out1 = tensor_map(out1 ? out1 : out0, M, N, 128);
  const CUtensorMap map_h = tensor_map(h ? h : out0, M, N, 128);
  const int tiles = (M / 128) * (N / 128);
  mlp_product_tma_kernel<E><<<std::min(tiles, 2 * sms), TMA_THREADS, TMA_SMEM>>>(map_a, map_b, map_out0, map_out1,
                                                                                map_h, M, N, K);
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

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as soon as it is known
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: benchmark skipped\n");
    return 77;
  }
  const int M = argc > 1 ? std::atoi(argv[1]) : 262144, K = 512, N = 2048;  // M: a multiple of 128
  if (M <= 0 || M % 128 != 0) {
    std::fprintf(stderr, "FAIL: rows must be a positive multiple of 128 (got %s)\n", argv[1]);
    return 2;
  }
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
  forward_ref();  // h_ref, a_ref as the backward timing left them; dh_ref after the last run
  backward_ref();
  cudaCheck(cudaDeviceSynchronize());
  std::printf("rows %d: cuBLAS + relu²: forward %.3f ms (%.0f TFLOP/s), backward %.3f ms (%.0f TFLOP/s)\n", M, f_ref,
              flops / f_ref / 1e9, b_ref, flops / b_ref / 1e9);
  bool ok = true;
  auto candidate = [&](const char* name, auto forward, auto backward) {
    for (Buffer* b : {&h, &a, &dh}) cudaCheck(cudaMemset(b->p, 0, b->n * sizeof(bf16)));
    const float f = median_gpu_ms(forward), b = median_gpu_ms(backward);
    cudaCheck(cudaDeviceSynchronize());
    const double dh_diff = rel_diff(h, h_ref), da_diff = rel_diff(a, a_ref), ddh_diff = rel_diff(dh, dh_ref);
    std::printf("%-9s forward %.3f ms (%.0f TFLOP/s), backward %.3f ms (%.0f TFLOP/s); rel diff h %.2e, relu²(h) %.2e, dh %.2e\n",
                name, f, flops / f / 1e9, b, flops / b / 1e9, dh_diff, da_diff, ddh_diff);
    ok = ok && dh_diff < 1e-2 && da_diff < 1e-2 && ddh_diff < 1e-2;
  };
  candidate(
      "cp.async", [&] { mlp_product<Epilogue::Relu2Forward>(h.p, a.p, nullptr, x.p, w_fc.p, M, N, K); },
      [&] { mlp_product<Epilogue::Relu2Backward>(dh.p, nullptr, h_ref.p, dy.p, w_proj.p, M, N, K); });
  candidate(
      "tma", [&] { mlp_product_tma<Epilogue::Relu2Forward>(h.p, a.p, nullptr, x.p, w_fc.p, M, N, K); },
      [&] { mlp_product_tma<Epilogue::Relu2Backward>(dh.p, nullptr, h_ref.p, dy.p, w_proj.p, M, N, K); });
  std::printf(ok ? "mlp products: outputs agree\n" : "mlp products: outputs DIFFER\n");
  return ok ? 0 : 1;
}
