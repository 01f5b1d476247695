// Our own bf16 product kernel with a fused epilogue, and its launcher: the MLP's two products
// next to relu² (mlp_product.cu), the lm_head product with the soft-capped cross-entropy's
// exponentials (lm_head_ce.cu) and the q, k, v product with rope + QK-norm (qkv_product.cu) are
// its four epilogues. Included by those three files only; each compiles the epilogues it
// launches.
//
// A block (one a multiprocessor: 209 KB of shared memory) is two consumer warpgroups and a
// producer warpgroup, and walks the output tiles blockIdx.x, + gridDim.x, ... (a tile is 256
// rows by 128 columns, columns fastest, so the blocks running at once share the same rows of A
// in L2). The producer warpgroup hands most of its registers to the consumers (setmaxnreg: 232
// a consumer thread where 168 would be the share of each; their accumulators alone are 128),
// and lane 0 of its first warp streams the (A, B) k-steps of its tiles through a ring of 3
// shared-memory stages, each guarded by a `full` (TMA bytes landed) and an `empty` (every
// consumer thread done reading) mbarrier. Consumer warpgroup w owns rows 128 w .. 128 w + 127
// of the tile (two 64-row halves, 128 fp32 accumulators a thread), both reading the same B
// tile of a stage (85 FLOP a loaded byte, against 64 for 128-row tiles). In its epilogue a
// warpgroup writes its rows in bf16 into its own (128, 128) staging tile in the sw128 layout,
// which its leader stores by TMA while the next tile's products run. The relu² backward's tile
// of a is loaded by TMA into the same staging tile once the tile's products are done, and read
// back in place.
#pragma once

#include <algorithm>
#include <initializer_list>

#include "model/common.cuh"
#include "model/tma.cuh"
#include "model/wgmma.cuh"

namespace {

enum class Epilogue {
  Relu2Forward,   // out = relu(A · Bᵀ)²                          (B (N, K))
  Relu2Backward,  // out = (A · B) * 2 sqrt(act)                  (B (K, N), act (M, N))
  SoftcapCE,      // out = u = e (1 - th²), th = tanh(A · Bᵀ / cap), e = exp(cap th - cap)  (B (N, K))
  RopeQkNorm,     // out = rmsnorm(rope(A · Bᵀ)) a 128-wide head left of rope_width, A · Bᵀ right of it (B (N, K))
};

// The cross-entropy epilogue's operands (unused by the others). z = cap th is the soft-capped
// logit; cap bounds it, so exp(z - cap) needs no row maximum.
struct CeOperands {
  const int* targets;   // (M)
  float* partial_sums;  // (M, N / TILE_N): the sum of e over each tile's 128 columns
  float* target_z;      // (M): z at the target's column
  float cap;
  int store_u;          // 0: only the sums and target_z (evaluation); the output is not written
};

// The rope + QK-norm epilogue's operands (unused by the others), as rope_qknorm_forward
// (layers.cuh) takes them; a head is one tile's 128 columns.
struct RopeOperands {
  const float* cos_sin;  // (seq_len, 64) cos, then (seq_len, 64) sin
  float* rstd;           // (M, rope_width / 128): each roped head's 1 / rms
  int seq_len;           // a row's position is row % seq_len
  int rope_width;        // columns 0 .. rope_width - 1 (q's heads, then k's) take rope + QK-norm
  float eps;
};

// Tiles: (TILE_M, TILE_N) of the output a block at a time, TILE_K of the summed dimension a stage.
constexpr int WGS = 2;                                        // consumer warpgroups a block
constexpr int TILE_M = 128 * WGS, TILE_N = 128, TILE_K = 64;
constexpr int A_BYTES = TILE_M * TILE_K * 2, B_BYTES = TILE_N * TILE_K * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int STAGES = 3;                                     // what fits beside the staging tiles
constexpr int OUT_TILE_BYTES = 128 * 128 * 2;                 // a warpgroup's (128, 128) bf16 staging tile
constexpr int THREADS = 128 * WGS + 128;                      // and the producer warpgroup
// Registers a thread after the producer warpgroup gives most of its own to the consumers
// (setmaxnreg; 168 each at launch: 2 x 128 x 232 + 128 x 40 = 384 x 168).
constexpr int CONSUMER_REGS = 232, PRODUCER_REGS = 40;
constexpr int SMEM = STAGES * STAGE_BYTES + WGS * OUT_TILE_BYTES + 1024 + 128;  // 209 KB: one block an SM

// Byte offset of element (r, c) of a (128, 128) bf16 tile in the sw128 layout.
__device__ __forceinline__ int staged(int r, int c) { return sw128_offset<128>(r, c / 8) + (c % 8) * 2; }

// Barrier of the 128 threads of consumer warpgroup wg (barrier 0 is __syncthreads).
__device__ __forceinline__ void warpgroup_sync(int wg) { asm volatile("bar.sync %0, 128;\n" ::"r"(wg + 1) : "memory"); }

// The rotary angles of this thread's columns (8 n + 2 t and + 1, n < 8) at position pos: cos
// into c, sin into s.
__device__ __forceinline__ void rope_angles(float2 (&c)[8], float2 (&s)[8], const RopeOperands& rope, int pos,
                                            int t) {
  const float* cs = rope.cos_sin + long(pos) * 64 + 2 * t;
  const float* sn = rope.cos_sin + long(rope.seq_len + pos) * 64 + 2 * t;
#pragma unroll
  for (int n = 0; n < 8; n++)
    c[n] = *reinterpret_cast<const float2*>(cs + 8 * n), s[n] = *reinterpret_cast<const float2*>(sn + 8 * n);
}

// rope + QK-norm over one row of a (128-wide) head in the accumulators acc (one 64-row half of a
// warpgroup's tile; row r of this thread's two, columns 8 n + 2 t and + 1), in place: the
// product rounded to bf16 first, as cuBLAS leaves it for rope_qknorm_forward, then that
// kernel's fp32 arithmetic. The angles: (c, s) at this thread's first row, turned by those of
// `ahead` positions more (the table's row `ahead`; none for 0). Column f < 64 rotates with
// f + 64, which this same thread holds (n + 8); the four threads t of a row sum the squares.
// `row` is the row of the whole product.
__device__ __forceinline__ void rope_qknorm_row(float (&acc)[16][4], int r, int t, const float2 (&c0)[8],
                                                const float2 (&s0)[8], int ahead, int row, int n0,
                                                const RopeOperands& rope) {
  float ss = 0.f;
#pragma unroll
  for (int n = 0; n < 8; n++) {
    float2 c = c0[n], s = s0[n];
    if (ahead) {
      const float2 dc = *reinterpret_cast<const float2*>(rope.cos_sin + ahead * 64 + 8 * n + 2 * t);
      const float2 ds =
          *reinterpret_cast<const float2*>(rope.cos_sin + long(rope.seq_len + ahead) * 64 + 8 * n + 2 * t);
      c = make_float2(c0[n].x * dc.x - s0[n].x * ds.x, c0[n].y * dc.y - s0[n].y * ds.y);
      s = make_float2(s0[n].x * dc.x + c0[n].x * ds.x, s0[n].y * dc.y + c0[n].y * ds.y);
    }
    const float2 a = __bfloat1622float2(__floats2bfloat162_rn(acc[n][2 * r], acc[n][2 * r + 1]));
    const float2 b = __bfloat1622float2(__floats2bfloat162_rn(acc[n + 8][2 * r], acc[n + 8][2 * r + 1]));
    acc[n][2 * r] = a.x * c.x + b.x * s.x, acc[n + 8][2 * r] = -a.x * s.x + b.x * c.x;
    acc[n][2 * r + 1] = a.y * c.y + b.y * s.y, acc[n + 8][2 * r + 1] = -a.y * s.y + b.y * c.y;
    ss += acc[n][2 * r] * acc[n][2 * r] + acc[n + 8][2 * r] * acc[n + 8][2 * r] +
          acc[n][2 * r + 1] * acc[n][2 * r + 1] + acc[n + 8][2 * r + 1] * acc[n + 8][2 * r + 1];
  }
  ss += __shfl_xor_sync(0xffffffffu, ss, 1);
  ss += __shfl_xor_sync(0xffffffffu, ss, 2);
  const float rs = rsqrtf(ss / 128.f + rope.eps);
#pragma unroll
  for (int n = 0; n < 16; n++) acc[n][2 * r] *= rs, acc[n][2 * r + 1] *= rs;
  if (t == 0) rope.rstd[long(row) * (rope.rope_width / 128) + n0 / 128] = rs;
}

template <Epilogue E>
__global__ void __launch_bounds__(THREADS, 1)
    product_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                   const __grid_constant__ CUtensorMap map_out, const __grid_constant__ CUtensorMap map_act,
                   int M, int N, int K, CeOperands ce, RopeOperands rope) {
  constexpr bool b_mn_major = E == Epilogue::Relu2Backward;  // B is (K, N): loaded and read MN-major
  extern __shared__ unsigned char smem_raw[];
  unsigned char* ring = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);  // stage s: A, then B
  unsigned char* staging = ring + STAGES * STAGE_BYTES;
  uint64_t* full = reinterpret_cast<uint64_t*>(staging + WGS * OUT_TILE_BYTES);
  uint64_t* empty = full + STAGES;
  uint64_t* act_ready = empty + STAGES;  // one a warpgroup
  const int tiles_n = N / TILE_N, tiles = (M / TILE_M) * tiles_n, steps = K / TILE_K;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) mbar_init(&full[s], 1), mbar_init(&empty[s], 128 * WGS);
    for (int w = 0; w < WGS; w++) mbar_init(&act_ready[w], 1);
    mbar_init_fence();
  }
  __syncthreads();

  if (threadIdx.x >= 128 * WGS) {  // the producer warpgroup: lane 0 of its first warp issues every load
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
    if (threadIdx.x != 128 * WGS) return;
    int it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const int m0 = (tile / tiles_n) * TILE_M, n0 = (tile % tiles_n) * TILE_N;
      for (int kt = 0; kt < steps; kt++, it++) {
        const int s = it % STAGES;
        if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);  // the consumers freed it
        unsigned char* sa = ring + s * STAGE_BYTES;
        unsigned char* sb = sa + A_BYTES;
        mbar_expect_tx(&full[s], STAGE_BYTES);
        tma_load(sa, &map_a, kt * TILE_K, m0, &full[s]);  // (TILE_M, 64) of A
        if constexpr (!b_mn_major) {
          tma_load(sb, &map_b, kt * TILE_K, n0, &full[s]);  // B rows n0.., columns kt * 64..
        } else {  // B rows kt * 64.., columns n0..: two 64-column halves of 64 rows
          tma_load(sb, &map_b, n0, kt * TILE_K, &full[s]);
          tma_load(sb + 64 * 128, &map_b, n0 + 64, kt * TILE_K, &full[s]);
        }
      }
    }
    return;
  }

  // consumer warpgroup wg
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
  // wg read from lane 0 is known warp-uniform: the descriptors built from it stay in uniform registers
  const int wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const bool leader = threadIdx.x % 128 == 0;
  unsigned char* out_tile = staging + wg * OUT_TILE_BYTES;
  int it = 0;
  uint32_t act_parity = 0;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int m0 = (tile / tiles_n) * TILE_M + 128 * wg, n0 = (tile % tiles_n) * TILE_N;
    // The cross-entropy's target columns of this thread's four rows, relative to its column
    // pair of the first 8-column block; loaded before the products, which hide the latency.
    int tcol[2][2];
    if constexpr (E == Epilogue::SoftcapCE) {
#pragma unroll
      for (int half = 0; half < 2; half++)
#pragma unroll
        for (int r = 0; r < 2; r++) tcol[half][r] = ce.targets[m0 + 64 * half + 16 * warp + g + 8 * r] - n0 - 2 * t;
    }
    // rope: the angles at this thread's first row, loaded while the products run
    const bool roped = E == Epilogue::RopeQkNorm && n0 < rope.rope_width;
    float2 rope_c[8], rope_s[8];
    if constexpr (E == Epilogue::RopeQkNorm) {
      if (roped) rope_angles(rope_c, rope_s, rope, (m0 + 16 * warp + g) % rope.seq_len, t);
    }
    float acc[2][16][4] = {};
    for (int kt = 0; kt < steps; kt++, it++) {
      const int s = it % STAGES;
      mbar_wait(&full[s], (it / STAGES) & 1);
      const bf16* sa = reinterpret_cast<const bf16*>(ring + s * STAGE_BYTES) + wg * 128 * TILE_K;
      const bf16* sb = reinterpret_cast<const bf16*>(ring + s * STAGE_BYTES + A_BYTES);
      wgmma_fence();
#pragma unroll
      for (int half = 0; half < 2; half++)
#pragma unroll
        for (int kk = 0; kk < TILE_K / 16; kk++) {
          if constexpr (!b_mn_major)
            wgmma_m64n128k16_ss(acc[half], k_major_desc<128>(sa + half * 64 * TILE_K, kk), k_major_desc<128>(sb, kk), 1);
          else
            wgmma_m64n128k16_ss_mn(acc[half], k_major_desc<128>(sa + half * 64 * TILE_K, kk), mn_major_desc<64>(sb, kk), 1);
        }
      wgmma_commit();
      wgmma_wait<0>();  // (leaving a group running while the next stage waits measured slower on H200)
      mbar_arrive(&empty[s]);
    }
    wgmma_fence_regs(acc[0]);
    wgmma_fence_regs(acc[1]);

    // epilogue: relu² forward stages relu(h)²; its backward reads a in place and stages dh; the
    // cross-entropy sums e per row and stages u (when it stores)
    const bool stores = E != Epilogue::SoftcapCE || ce.store_u;
    if constexpr (E == Epilogue::Relu2Backward) {  // a's tile into the staging tile once the last stores have read it
      // (loading it when the tile starts measured slower on H200: the leader's wait stalls the products)
      if (leader) {
        tma_store_wait_read();
        mbar_expect_tx(&act_ready[wg], OUT_TILE_BYTES);
        tma_load(out_tile, &map_act, n0, m0, &act_ready[wg]);
        tma_load(out_tile + OUT_TILE_BYTES / 2, &map_act, n0 + 64, m0, &act_ready[wg]);
      }
      mbar_wait(&act_ready[wg], act_parity);
      act_parity ^= 1;
    } else if (stores) {
      if (leader) tma_store_wait_read();
      warpgroup_sync(wg);
    }
#pragma unroll
    for (int half = 0; half < 2; half++)
#pragma unroll
      for (int r = 0; r < 2; r++) {
        const int row = 64 * half + 16 * warp + g + 8 * r;
        float row_sum = 0.f;  // the cross-entropy's sum of e over this thread's 32 columns
        if constexpr (E == Epilogue::RopeQkNorm) {
          if (roped) rope_qknorm_row(acc[half], r, t, rope_c, rope_s, 64 * half + 8 * r, m0 + row, n0, rope);
        }
#pragma unroll
        for (int n = 0; n < 16; n++) {
          __nv_bfloat162* at = reinterpret_cast<__nv_bfloat162*>(out_tile + staged(row, 8 * n + 2 * t));
          // the product rounded to bf16 first, as cuBLAS leaves it for relu2_forward /
          // relu2_backward / softcap_cross_entropy
          const float2 v = __bfloat1622float2(__floats2bfloat162_rn(acc[half][n][2 * r], acc[half][n][2 * r + 1]));
          if constexpr (E == Epilogue::RopeQkNorm) {
            // a q or k head's rope_qknorm_row output, or a v head's product, rounded once
            *at = __floats2bfloat162_rn(acc[half][n][2 * r], acc[half][n][2 * r + 1]);
          } else if constexpr (E == Epilogue::Relu2Forward) {
            const float a0 = fmaxf(v.x, 0.f), a1 = fmaxf(v.y, 0.f);
            *at = __floats2bfloat162_rn(a0 * a0, a1 * a1);
          } else if constexpr (E == Epilogue::Relu2Backward) {
            const float2 av = __bfloat1622float2(*at);
            *at = __floats2bfloat162_rn(v.x * 2.f * relu_from_square(av.x), v.y * 2.f * relu_from_square(av.y));
          } else {
            const float inv_cap = 1.f / ce.cap, c2 = ce.cap * LOG2E;  // e = 2^(c2 th - c2)
            const float th0 = tanh_approx(v.x * inv_cap), th1 = tanh_approx(v.y * inv_cap);
            const float e0 = exp2_approx(fmaf(c2, th0, -c2)), e1 = exp2_approx(fmaf(c2, th1, -c2));
            row_sum += e0 + e1;
            if (tcol[half][r] == 8 * n) ce.target_z[m0 + row] = ce.cap * th0;
            if (tcol[half][r] == 8 * n + 1) ce.target_z[m0 + row] = ce.cap * th1;
            if (stores) *at = __floats2bfloat162_rn(e0 - e0 * th0 * th0, e1 - e1 * th1 * th1);
          }
        }
        if constexpr (E == Epilogue::SoftcapCE) {  // the four threads of a row, then one store
          row_sum += __shfl_xor_sync(0xffffffffu, row_sum, 1);
          row_sum += __shfl_xor_sync(0xffffffffu, row_sum, 2);
          if (t == 0) ce.partial_sums[long(m0 + row) * tiles_n + n0 / TILE_N] = row_sum;
        }
      }
    if (!stores) continue;
    fence_proxy_async();  // the staging writes, visible to TMA
    warpgroup_sync(wg);
    if (leader) {
      tma_store(&map_out, n0, m0, out_tile);
      tma_store(&map_out, n0 + 64, m0, out_tile + OUT_TILE_BYTES / 2);
      tma_store_commit();
    }
  }
  if (leader) tma_store_wait_all();
}

/// Whether the kernel takes a product of `rows` rows, an output `width` and a summed dimension
/// `summed`: rows % 256 == 0, width % 128 == 0, summed % 64 == 0, every pointer 16-byte aligned.
inline bool product_kernel_fits(long rows, long width, long summed, std::initializer_list<const void*> ptrs) {
  if (rows <= 0 || width <= 0 || summed <= 0 || rows % TILE_M || width % TILE_N || summed % TILE_K) return false;
  return tma_aligned(ptrs);
}

/// out (M, N) from A (M, K) and B ((N, K), or (K, N) for the relu² backward) through epilogue E;
/// act (M, N) for the relu² backward. The caller has checked product_kernel_fits.
template <Epilogue E>
void launch_product(bf16* out, const bf16* act, const bf16* A, const bf16* B, int M, int N, int K, CeOperands ce,
                    RopeOperands rope, cudaStream_t st) {
  static const int sms = [] {  // the grid: one block a multiprocessor
    cudaCheck(cudaFuncSetAttribute(product_kernel<E>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    cudaCheck(cudaFuncSetAttribute(product_kernel<E>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                   cudaSharedmemCarveoutMaxShared));
    int device = 0, count = 0;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  }();
  const CUtensorMap map_a = tma_map_bf16(A, M, K, TILE_M);
  const CUtensorMap map_b = E != Epilogue::Relu2Backward ? tma_map_bf16(B, N, K, 128) : tma_map_bf16(B, K, N, 64);
  // the cross-entropy's evaluation pass writes no output, and only the relu² backward reads act:
  // the maps they leave unused copy another
  const CUtensorMap map_out = out ? tma_map_bf16(out, M, N, 128) : map_a;
  const CUtensorMap map_act = act ? tma_map_bf16(act, M, N, 128) : map_out;
  const int tiles = (M / TILE_M) * (N / TILE_N);
  product_kernel<E><<<std::min(tiles, sms), THREADS, SMEM, st>>>(map_a, map_b, map_out, map_act, M, N, K, ce,
                                                                 rope);
  cudaLaunchCheck();
}

}  // namespace
