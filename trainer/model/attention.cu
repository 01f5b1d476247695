// Sliding-window causal attention (see attention.cuh).
//
// Flash kernels (bf16, D = 128) on Hopper's warpgroup products (model/wgmma.cuh):
// a warpgroup of 4 warps owns a tile of 64 rows, warp w rows 16 w .. 16 w + 15
// (a block is one warpgroup; the dq kernel's blocks are two, which share each K
// tile); tiles of the other operand stream through shared memory 64
// rows at a time in the sw128 layout, double-buffered: tile n + 1 is fetched while
// tile n is computed, by TMA issued by one thread (in place of cp.async by all threads, that
// saved 6 % of the dk/dv kernel's energy, 3 % of the dq kernel's and 5-9 % of the forward's,
// measured on H200). Only tiles with some visible pair are visited (with
// 64-row tiles on both sides, that is exactly the band of DsBand below).
// Probabilities and dS leave the accumulators as A operands in registers.
//   forward:   per query tile (latest first: they see the most keys), online
//              softmax over key tiles, writes o and lse.
//   backward:  dk/dv per key tile (loops over the query heads of its group),
//              which also writes dS, bf16, into a band of 64 x 64 tiles in the
//              scratch; then dq = dS · K per query tile from that band. Five
//              products in all, no atomics: deterministic.
#include "model/attention.cuh"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "model/layers.cuh"
#include "model/tma.cuh"
#include "model/wgmma.cuh"

namespace {

constexpr int HD = 128;                  // head_dim of the flash kernels
constexpr int TILE = 64;                 // rows per tile, both sides
constexpr int TILE_ELEMS = TILE * HD;    // bf16 of a (TILE, HD) tile: 16 KB
constexpr int THREADS = 128;             // one warpgroup a block

__device__ __forceinline__ uint32_t pack2(bf16 lo, bf16 hi) {
  return uint32_t(__bfloat16_as_ushort(lo)) | (uint32_t(__bfloat16_as_ushort(hi)) << 16);
}
__device__ __forceinline__ uint32_t pack2f(float lo, float hi) {
  return pack2(__float2bfloat16(lo), __float2bfloat16(hi));
}

// The transpose of an 8 x 8 bf16 matrix held one pair a lane (row lane / 4, columns
// 2 (lane % 4) and the next), returned in the same layout.
__device__ __forceinline__ uint32_t transpose8x8(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// Accumulators of two adjacent 8-wide tiles as one A fragment (16 x 16).
__device__ __forceinline__ void acc_to_a(uint32_t* a, const float* c0, const float* c1) {
  a[0] = pack2f(c0[0], c0[1]);
  a[1] = pack2f(c0[2], c0[3]);
  a[2] = pack2f(c1[0], c1[1]);
  a[3] = pack2f(c1[2], c1[3]);
}

// Dynamic shared memory rounded up to the 1024-byte alignment of sw128 tiles (launches ask
// for SMEM_SLACK bytes more than they use).
constexpr int SMEM_SLACK = 1024;
__device__ __forceinline__ bf16* aligned_smem(unsigned char* raw) {
  return reinterpret_cast<bf16*>(raw + ((SMEM_SLACK - (smem_addr(raw) & (SMEM_SLACK - 1))) & (SMEM_SLACK - 1)));
}

// The dS band of one backward call: for each (batch, head, query tile qt of 64) the 64 x 64
// tiles [query][key] of the key tiles kt that some query of qt sees, kt_min(qt) .. qt, in
// `slots` slots (slot kt - qt + slots - 1). Written whole by the dk/dv kernel (zeros at
// invisible pairs), read by the dq kernel.
struct DsBand {
  int n_qt, slots, window;
  __host__ __device__ static DsBand of(const AttnShape& s) {
    const int n_qt = s.T / TILE;
    return {n_qt, min(n_qt, (s.window + TILE - 1) / TILE + 1), s.window};
  }
  __host__ __device__ int kt_min(int qt) const { return max(0, qt * TILE - window) / TILE; }
  __host__ __device__ bool has(int qt, int kt) const { return qt < n_qt && kt <= qt && kt >= kt_min(qt); }
  __host__ __device__ long offset(int b, int h, int H, int qt, int kt) const {
    return ((((long(b) * H + h) * n_qt + qt) * slots) + kt - qt + slots - 1) * TILE * TILE;
  }
  __host__ __device__ long elements(int B, int H) const { return long(B) * H * n_qt * slots * TILE * TILE; }
};

// Every (query, key) pair of queries q0 .. q0 + nq - 1 and keys k0 .. k0 + nk - 1 is visible
// (i - j spans [q0 - k0 - nk + 1, q0 + nq - 1 - k0]; visible means 0 <= i - j <= window).
__device__ __forceinline__ bool all_visible(int q0, int nq, int k0, int nk, int window) {
  return k0 + nk - 1 <= q0 && q0 + nq - 1 - k0 <= window;
}

// The forward's running row maxima move (and o and l are rescaled) only when a tile's maximum
// exceeds them by more than this, in log2 units: a tile's probabilities are then at most 2^8,
// far inside fp32 and bf16, and most tiles skip the rescale's 128 multiplies a lane (3.5 % of
// the forward's energy, measured on H200).
constexpr float RESCALE_SLACK = 8.f;

// Sets the scores of invisible pairs to -inf in a warp's 16 x 64 accumulator tile: the pair of
// sc[n][2 r + c] has distance i - j = dist[r] + STEP * (8 n + c) (STEP -1 where the columns
// are keys, +1 where they are queries); visible means 0 <= i - j <= window.
template <int STEP>
__device__ __forceinline__ void mask_scores(float (&sc)[TILE / 8][4], const int* dist, int window) {
#pragma unroll
  for (int n = 0; n < TILE / 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int d = dist[e / 2] + STEP * (8 * n + (e & 1));
      if (d < 0 || d > window) sc[n][e] = -INFINITY;
    }
}

// rope_qknorm_backward (layers.cu) on one row of a head held as accumulators are, the 4 lanes
// of a quad together: g[n][e] is the gradient of the normalized output at column 8 n + 2 t + e,
// y[n][e] the normalized output there, rs the row's rstd, pos its position. On return g holds
// the gradient of the input: a = rs (g - y mean(g y)), rotated back (columns f and f + HD / 2
// turn together: n and n + HD / 16 of the same lane).
__device__ __forceinline__ void rope_qknorm_backward_row(float (&g)[HD / 8][2], const float (&y)[HD / 8][2], float rs,
                                                         const float* cos_sin, int T, int pos, int t) {
  float dot = 0.f;
#pragma unroll
  for (int n = 0; n < HD / 8; n++) dot += g[n][0] * y[n][0] + g[n][1] * y[n][1];
  dot += __shfl_xor_sync(0xffffffffu, dot, 1);
  dot += __shfl_xor_sync(0xffffffffu, dot, 2);
  dot *= 1.f / HD;
  constexpr int HALF = HD / 2;
  const float* cs = cos_sin + long(pos) * HALF + 2 * t;
  const float* sn = cos_sin + long(T) * HALF + long(pos) * HALF + 2 * t;
#pragma unroll
  for (int n = 0; n < HD / 16; n++) {
    const float2 c = *reinterpret_cast<const float2*>(cs + 8 * n), s = *reinterpret_cast<const float2*>(sn + 8 * n);
#pragma unroll
    for (int e = 0; e < 2; e++) {
      const float ce = e ? c.y : c.x, se = e ? s.y : s.x;
      const float a = rs * (g[n][e] - y[n][e] * dot), b = rs * (g[n + HD / 16][e] - y[n + HD / 16][e] * dot);
      g[n][e] = a * ce - b * se;
      g[n + HD / 16][e] = a * se + b * ce;
    }
  }
}

// Row r of this warp's accumulator tile (rows g, g + 8) times scale, bf16, into out (this lane's
// pairs); with ROPE through rope + QK-norm's backward first (y: the normalized output at this
// lane's pairs, rs: the row's rstd, pos: its position).
template <bool ROPE>
__device__ __forceinline__ void store_grad_row(bf16* out, const float (&acc)[HD / 8][4], int r, float scale,
                                               const float (&y)[HD / 8][2], float rs, RopeQkNorm rope, int T, int pos,
                                               int t) {
  float gr[HD / 8][2];
#pragma unroll
  for (int n = 0; n < HD / 8; n++) gr[n][0] = acc[n][2 * r] * scale, gr[n][1] = acc[n][2 * r + 1] * scale;
  if constexpr (ROPE) rope_qknorm_backward_row(gr, y, rs, rope.cos_sin, T, pos, t);
#pragma unroll
  for (int n = 0; n < HD / 8; n++) *reinterpret_cast<uint32_t*>(out + n * 8 + 2 * t) = pack2f(gr[n][0], gr[n][1]);
}

// grid (T / TILE, B * H); block THREADS. Shared memory: 2 stages of {K, V} tiles, sw128
// (TILE, HD), then a `full` mbarrier a stage. Thread 0 loads every tile by TMA: the Q tile with
// the first stage, into stage 1's K slot (Q is read once into registers, so that the score
// products read only K from shared memory; stage 1 is refilled after that), and each next {K, V}
// into the other stage once the block is done with it (the maps: (B * T, heads * HD) column
// slices in (TILE, 64) boxes). Without a tile of its own for Q a block takes 65 KB, so three
// blocks share a multiprocessor and fill each other's softmax gaps; overlapping the softmax of
// tile n + 1 with P_n · V inside the block measured slower (255 registers).
__global__ void __launch_bounds__(THREADS, 3) flash_forward_kernel(
    bf16* o, float* lse, const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
    const __grid_constant__ CUtensorMap map_v, AttnShape s, float scale) {
  extern __shared__ unsigned char smem_raw[];
  bf16* sKV = aligned_smem(smem_raw);  // stage st: K at sKV + 2 * st * TILE_ELEMS, V right after
  bf16* sQ = sKV + 2 * TILE_ELEMS;      // until it is in registers: stage 1's K slot
  uint64_t* full = reinterpret_cast<uint64_t*>(sKV + 4 * TILE_ELEMS);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y, b = bh / s.H, h = bh % s.H, hk = h / (s.H / s.Hkv);
  const int q0 = (gridDim.x - 1 - blockIdx.x) * TILE;  // latest query tiles first: the most work
  const long ostride = long(s.H) * HD;
  auto load_kv = [&](int kt, int st) {  // key tile kt into stage st (thread 0)
    for (int half = 0; half < 2; half++) {
      const int x = hk * HD + 64 * half, y = b * s.T + kt * TILE;
      tma_load(sKV + 2 * st * TILE_ELEMS + half * TILE * 64, &map_k, x, y, &full[st]);
      tma_load(sKV + (2 * st + 1) * TILE_ELEMS + half * TILE * 64, &map_v, x, y, &full[st]);
    }
  };
  // key tiles seen by some row: from row q0's window start to the diagonal
  const int kt_begin = max(0, q0 - s.window) / TILE, kt_end = q0 / TILE;
  constexpr int KV_BYTES = 2 * TILE_ELEMS * sizeof(bf16);
  if (threadIdx.x == 0) {
    mbar_init(&full[0], 1);
    mbar_init(&full[1], 1);
    mbar_init_fence();
    mbar_expect_tx(&full[0], KV_BYTES + TILE_ELEMS * sizeof(bf16));  // Q with the first stage
    for (int half = 0; half < 2; half++)
      tma_load(sQ + half * TILE * 64, &map_q, h * HD + 64 * half, b * s.T + q0, &full[0]);
    load_kv(kt_begin, 0);
  }
  __syncthreads();  // the barriers are initialized
  mbar_wait(&full[0], 0);  // Q came with the first stage
  uint32_t qa[HD / 16][4];  // Q as A fragments, in registers for the whole loop
#pragma unroll
  for (int kk = 0; kk < HD / 16; kk++) sw128_load_a<TILE>(qa[kk], sQ, kk);

  const float sl2 = scale * LOG2E;
  float acc_o[HD / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const int row[2] = {q0 + 16 * warp + g, q0 + 16 * warp + g + 8};
  for (int kt = kt_begin; kt <= kt_end; kt++) {
    const int st = (kt - kt_begin) & 1, k0 = kt * TILE;
    __syncthreads();  // nobody reads stage st ^ 1 any more (nor Q in it, the first time)
    if (threadIdx.x == 0 && kt < kt_end) {
      mbar_expect_tx(&full[st ^ 1], KV_BYTES);
      load_kv(kt + 1, st ^ 1);
    }
    mbar_wait(&full[st], ((kt - kt_begin) / 2) & 1);  // tile kt is in stage st
    const bf16* sK = sKV + 2 * st * TILE_ELEMS;
    const bf16* sV = sK + TILE_ELEMS;
    float sc[TILE / 8][4];  // S = Q · Kᵀ, (queries, keys)
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) wgmma_m64n64k16_rs(sc, qa[kk], k_major_desc<TILE>(sK, kk), kk);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_regs(sc);
    if (!all_visible(q0, TILE, k0, TILE, s.window)) {  // a tile on the diagonal or the window edge
      const int dist[2] = {row[0] - k0 - 2 * t, row[1] - k0 - 2 * t};
      mask_scores<-1>(sc, dist, s.window);
    }
    float mx[2] = {-INFINITY, -INFINITY};  // the tile's row maxima of the raw scores (sl2 > 0 keeps their order)
#pragma unroll
    for (int n = 0; n < TILE / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) mx[e / 2] = fmaxf(mx[e / 2], sc[n][e]);
    bool grows[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      mx[r] *= sl2;
      grows[r] = mx[r] > m[r] + RESCALE_SLACK;
    }
    // A row's running maximum moves, and its o and l are rescaled (33 multiplies a lane), only
    // when that row has grown past its maximum by RESCALE_SLACK; otherwise this tile's
    // probabilities are 2^(s - m) with the old m, at most 2^RESCALE_SLACK. At the first tile o
    // and l are still zero: the maxima become this tile's, with nothing to rescale. The choice
    // is the row's own: were it the warp's, a later row's scores would move an earlier row's m
    // and so the rounding of its bf16 probabilities, and a prefix would no longer give the
    // same bits whatever follows it (the integrity probe's causality check sees that).
    if (kt == kt_begin) {
      m[0] = mx[0], m[1] = mx[1];
    } else if (__any_sync(0xffffffffu, grows[0] || grows[1])) {
#pragma unroll
      for (int r = 0; r < 2; r++) {
        if (!grows[r]) continue;  // then mx[r] is finite and the row's new maximum
        const float corr = exp2_approx(m[r] - mx[r]);
        m[r] = mx[r];
        l[r] *= corr;
#pragma unroll
        for (int n = 0; n < HD / 8; n++) {
          acc_o[n][2 * r] *= corr;
          acc_o[n][2 * r + 1] *= corr;
        }
      }
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
      const float m_use = m[r] == -INFINITY ? 0.f : m[r];  // a row with nothing visible yet
#pragma unroll
      for (int n = 0; n < TILE / 8; n++) {
        const float p0 = exp2_approx(fmaf(sc[n][2 * r], sl2, -m_use));
        const float p1 = exp2_approx(fmaf(sc[n][2 * r + 1], sl2, -m_use));
        sc[n][2 * r] = p0;
        sc[n][2 * r + 1] = p1;
        l[r] += p0 + p1;
      }
    }
    uint32_t pa[TILE / 16][4];  // P, bf16, as A fragments
#pragma unroll
    for (int kk = 0; kk < TILE / 16; kk++) acc_to_a(pa[kk], sc[2 * kk], sc[2 * kk + 1]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < TILE / 16; kk++) wgmma_m64n128k16_rs_mn(acc_o, pa[kk], mn_major_desc<TILE>(sV, kk), 1);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_regs(acc_o);
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    float inv = 1.f / l[r];
    bf16* orow = o + (long(b) * s.T + row[r]) * ostride + h * HD;
#pragma unroll
    for (int n = 0; n < HD / 8; n++)
      *reinterpret_cast<uint32_t*>(orow + n * 8 + 2 * t) =
          pack2f(acc_o[n][2 * r] * inv, acc_o[n][2 * r + 1] * inv);
    if (t == 0) lse[(long(b) * s.H + h) * s.T + row[r]] = (m[r] + log2f(l[r])) / LOG2E;
  }
}

// delta[b, h, i] = sum_d dout * o; 16 lanes per (b, i, h), 8 features a lane at a time
// (D % 8 == 0: 16-byte bf16 accesses).
template <typename T>
__global__ void attn_delta_kernel(float* delta, const T* dout, const T* o, AttnShape s) {
  const long w = (long(blockIdx.x) * blockDim.x + threadIdx.x) / 16;
  const int li = threadIdx.x % 16;
  if (w >= long(s.B) * s.T * s.H) return;
  const T* a = dout + w * s.D;
  const T* c = o + w * s.D;
  float acc = 0.f, x[8], y[8];
  for (int d = 8 * li; d < s.D; d += 128) {
    load8(x, a + d);
    load8(y, c + d);
#pragma unroll
    for (int e = 0; e < 8; e++) acc += x[e] * y[e];
  }
  acc = lane_group_sum<16>(acc);
  const int h = w % s.H;
  const long bt = w / s.H;
  const int b = bt / s.T, i = bt % s.T;
  if (li == 0) delta[(long(b) * s.H + h) * s.T + i] = acc;
}

// grid (ceil(T / TILE / DQ_WGS), B * H); block DQ_WGS warpgroups: dq = scale * dS · K, warpgroup w
// for query tile DQ_WGS * (block's index) + w, dS read from the band the dk/dv kernel wrote
// (zero at invisible pairs, so no masking here). The warpgroups share each K tile. Shared
// memory: 2 stages of {K tile (TILE, HD), DQ_WGS dS tiles (TILE, TILE)}, sw128, then a `full`
// mbarrier a stage; thread 0 loads a key tile's stage by TMA once the block is done with it
// (map_ds: the band as rows of TILE bf16; map_k: K's (B * T, Hkv * HD) column slice).
// ROPE: dq leaves through rope + QK-norm's backward, reading the normalized q (qn) in rows of q_ld.
constexpr int DQ_WGS = 2;
constexpr int DQ_STAGE = TILE_ELEMS + DQ_WGS * TILE * TILE;
template <bool ROPE>
__global__ void __launch_bounds__(DQ_WGS * THREADS, 2) flash_backward_dq_kernel(
    bf16* dq, const __grid_constant__ CUtensorMap map_ds, const __grid_constant__ CUtensorMap map_k, AttnShape s,
    DsBand band, float scale, const bf16* qn, RopeQkNorm rope) {
  extern __shared__ unsigned char smem_raw[];
  bf16* sm = aligned_smem(smem_raw);  // stage st at sm + st * DQ_STAGE: K, then the dS tiles
  uint64_t* full = reinterpret_cast<uint64_t*>(sm + 2 * DQ_STAGE);
  // wg read from lane 0 is known warp-uniform: the descriptors built from it stay in uniform registers
  const int wg = __shfl_sync(0xffffffffu, threadIdx.x / THREADS, 0), tid = threadIdx.x % THREADS;
  const int warp = tid / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y, b = bh / s.H, h = bh % s.H, hk = h / (s.H / s.Hkv);
  const int qt0 = (gridDim.x - 1 - blockIdx.x) * DQ_WGS, qt = qt0 + wg;  // latest query tiles first: the most work
  const long qstride = s.q_ld();
  // key tiles some warpgroup needs: from the first tile's window start to the last one's diagonal
  const int kt_begin = band.kt_min(qt0), kt_end = min(qt0 + DQ_WGS, band.n_qt) - 1;
  auto load = [&](int kt, int st) {  // key tile kt and the dS tiles (qt0 + w, kt) that exist (thread 0)
    bf16* stage = sm + st * DQ_STAGE;
    int bytes = TILE_ELEMS * sizeof(bf16);
    for (int w = 0; w < DQ_WGS; w++) bytes += band.has(qt0 + w, kt) ? TILE * TILE * int(sizeof(bf16)) : 0;
    mbar_expect_tx(&full[st], bytes);
    for (int half = 0; half < 2; half++)
      tma_load(stage + half * TILE * 64, &map_k, hk * HD + 64 * half, b * s.T + kt * TILE, &full[st]);
    for (int w = 0; w < DQ_WGS; w++)
      if (band.has(qt0 + w, kt))
        tma_load(stage + TILE_ELEMS + w * TILE * TILE, &map_ds, 0, int(band.offset(b, h, s.H, qt0 + w, kt) / TILE), &full[st]);
  };
  if (threadIdx.x == 0) {
    mbar_init(&full[0], 1);
    mbar_init(&full[1], 1);
    mbar_init_fence();
    load(kt_begin, 0);
  }
  float acc_dq[HD / 8][4] = {};
  for (int kt = kt_begin; kt <= kt_end; kt++) {
    const int st = (kt - kt_begin) & 1;
    __syncthreads();  // nobody reads stage st ^ 1 any more (and the barriers are initialized)
    if (threadIdx.x == 0 && kt < kt_end) load(kt + 1, st ^ 1);
    mbar_wait(&full[st], ((kt - kt_begin) / 2) & 1);  // tile kt is in stage st
    if (!band.has(qt, kt)) continue;  // warpgroup-uniform
    const bf16* sK = sm + st * DQ_STAGE;
    const bf16* sD = sK + TILE_ELEMS + wg * TILE * TILE;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < TILE / 16; kk++)
      wgmma_m64n128k16_ss_mn(acc_dq, k_major_desc<TILE>(sD, kk), mn_major_desc<TILE>(sK, kk), 1);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_regs(acc_dq);
  }
  if (qt >= band.n_qt) return;
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const int pos = qt * TILE + 16 * warp + g + 8 * r;
    const long row = long(b) * s.T + pos;
    float y[HD / 8][2] = {}, rs = 0.f;  // with ROPE: the normalized q at this lane's pairs, its rstd
    if constexpr (ROPE) {
      const bf16* yrow = qn + row * qstride + h * HD;
#pragma unroll
      for (int n = 0; n < HD / 8; n++) {
        const float2 yv = load2(yrow + n * 8 + 2 * t);
        y[n][0] = yv.x, y[n][1] = yv.y;
      }
      rs = rope.rstd[row * (s.H + s.Hkv) + h];
    }
    store_grad_row<ROPE>(dq + row * qstride + h * HD, acc_dq, r, scale, y, rs, rope, s.T, pos, t);
  }
}

// grid (T / TILE, B * Hkv); block THREADS: dk, dv for one key tile, summed over the group's
// query heads (the first key tiles see the most queries and launch first). Shared memory: the
// K and V tiles, 2 stages of {Q, dO} tiles (all sw128 (TILE, HD)), 2 stages of {lse, delta}
// (TILE,) floats, the (TILE, TILE) sw128 tile where dS is staged, then a `full` mbarrier a
// stage. Thread 0 moves every tile by TMA: a step's tiles into the other stage once the block
// is done with it, and the staged dS into the band (map_ds: the band as rows of TILE bf16), in
// whole lines where 4-byte stores from registers cost L2 sectors and issue slots (ncu showed
// the kernel stalled on LG throttle with them). The Q, dO, K, V maps are (B * T, heads * HD) column slices in (TILE, 64) boxes.
// ROPE: dk leaves through rope + QK-norm's backward, the normalized k read from the K tile.
template <bool ROPE>
__global__ void __launch_bounds__(THREADS, 2) flash_backward_dkdv_kernel(
    bf16* dk, bf16* dv, const __grid_constant__ CUtensorMap map_ds, const __grid_constant__ CUtensorMap map_q,
    const __grid_constant__ CUtensorMap map_do, const __grid_constant__ CUtensorMap map_k,
    const __grid_constant__ CUtensorMap map_v, const float* lse, const float* delta, AttnShape s, DsBand band,
    float scale, RopeQkNorm rope) {
  extern __shared__ unsigned char smem_raw[];
  bf16* sK = aligned_smem(smem_raw);
  bf16* sV = sK + TILE_ELEMS;
  bf16* sQO = sV + TILE_ELEMS;                                  // stage st: Q at sQO + 2 * st * TILE_ELEMS, dO right after
  float* sLD = reinterpret_cast<float*>(sQO + 4 * TILE_ELEMS);  // stage st: lse at sLD + 2 * st * TILE, delta right after
  unsigned char* sDS = reinterpret_cast<unsigned char*>(sLD + 4 * TILE);  // 1024-byte aligned: 4 TILE floats are 1 KB
  uint64_t* full = reinterpret_cast<uint64_t*>(sDS + TILE * TILE * sizeof(bf16));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y, b = bh / s.Hkv, hk = bh % s.Hkv, group = s.H / s.Hkv;
  const int kt = blockIdx.x, k0 = kt * TILE, kw = k0 + 16 * warp;  // this warp's keys kw .. kw + 15
  const long kstride = s.kv_ld();
  // query tiles seen by some key: from the diagonal to the last key's window end
  const int n_qt = min(s.T - 1, k0 + TILE - 1 + s.window) / TILE - kt + 1;
  const int steps = group * n_qt;  // (query head, query tile) pairs, head by head
  constexpr int STEP_BYTES = 2 * TILE_ELEMS * sizeof(bf16) + 2 * TILE * sizeof(float);
  // the tiles of query head h and query tile qt into stage st (thread 0)
  auto load_step = [&](int h, int qt, int st, int extra_bytes) {
    const int q0 = qt * TILE, row0 = b * s.T + q0;
    mbar_expect_tx(&full[st], STEP_BYTES + extra_bytes);
    for (int half = 0; half < 2; half++) {
      tma_load(sQO + 2 * st * TILE_ELEMS + half * TILE * 64, &map_q, h * HD + 64 * half, row0, &full[st]);
      tma_load(sQO + (2 * st + 1) * TILE_ELEMS + half * TILE * 64, &map_do, h * HD + 64 * half, row0, &full[st]);
    }
    const long ld = (long(b) * s.H + h) * s.T + q0;
    bulk_load(sLD + 2 * st * TILE, lse + ld, TILE * sizeof(float), &full[st]);
    bulk_load(sLD + 2 * st * TILE + TILE, delta + ld, TILE * sizeof(float), &full[st]);
  };
  if (threadIdx.x == 0) {
    mbar_init(&full[0], 1);
    mbar_init(&full[1], 1);
    mbar_init_fence();
    load_step(hk * group, kt, 0, 2 * TILE_ELEMS * sizeof(bf16));  // with K and V
    for (int half = 0; half < 2; half++) {
      tma_load(sK + half * TILE * 64, &map_k, hk * HD + 64 * half, b * s.T + k0, &full[0]);
      tma_load(sV + half * TILE * 64, &map_v, hk * HD + 64 * half, b * s.T + k0, &full[0]);
    }
  }
  const int key[2] = {kw + g, kw + g + 8};
  const float sl2 = scale * LOG2E;
  // where this lane stages its dS pairs of row g (chunks 2 warp and 2 warp + 1), computed once
  uint32_t* const ds_row_g[2] = {reinterpret_cast<uint32_t*>(sDS + 4 * t + sw128_offset<TILE>(g, 2 * warp)),
                                 reinterpret_cast<uint32_t*>(sDS + 4 * t + sw128_offset<TILE>(g, 2 * warp + 1))};
  float acc_dk[HD / 8][4] = {}, acc_dv[HD / 8][4] = {};
  // step's query head and tile, walked without a division a step: query tiles kt .. kt + n_qt - 1
  // of head hk * group, then those of the next head
  for (int step = 0, h = hk * group, qt = kt; step < steps; step++) {
    const int st = step & 1, q0 = qt * TILE;
    const int next_qt = qt + 1 < kt + n_qt ? qt + 1 : kt, next_h = next_qt == kt ? h + 1 : h;
    if (threadIdx.x == 0) tma_store_wait_read();  // the last step's dS store has read sDS
    __syncthreads();  // nobody reads stage st ^ 1 or sDS any more (and the barriers are initialized)
    if (threadIdx.x == 0 && step + 1 < steps) load_step(next_h, next_qt, st ^ 1, 0);
    mbar_wait(&full[st], (step / 2) & 1);  // step's tiles are in stage st
    const bf16* sQ = sQO + 2 * st * TILE_ELEMS;
    const bf16* sdO = sQ + TILE_ELEMS;
    const float* sL = sLD + 2 * st * TILE;  // lse
    const float* sD = sL + TILE;            // delta
    float sc[TILE / 8][4], dp[TILE / 8][4];  // Sᵀ = K · Qᵀ and dPᵀ = V · dOᵀ, (keys, queries)
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) wgmma_m64n64k16_ss(sc, k_major_desc<TILE>(sK, kk), k_major_desc<TILE>(sQ, kk), kk);
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) wgmma_m64n64k16_ss(dp, k_major_desc<TILE>(sV, kk), k_major_desc<TILE>(sdO, kk), kk);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_regs(sc);
    wgmma_fence_regs(dp);
    if (!all_visible(q0, TILE, k0, TILE, s.window)) {  // a tile on the diagonal or the window edge
      const int dist[2] = {q0 + 2 * t - key[0], q0 + 2 * t - key[1]};
      mask_scores<1>(sc, dist, s.window);
    }
#pragma unroll
    for (int n = 0; n < TILE / 8; n++) {
      // this lane's queries n * 8 + 2 t and the next: one 8-byte load each of lse and delta
      const float2 lse2 = *reinterpret_cast<const float2*>(sL + n * 8 + 2 * t);
      const float2 delta2 = *reinterpret_cast<const float2*>(sD + n * 8 + 2 * t);
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const float p = exp2_approx(fmaf(sc[n][e], sl2, -(e & 1 ? lse2.y : lse2.x) * LOG2E));  // 0 where masked
        sc[n][e] = p;                                                                     // Pᵀ
        dp[n][e] = p * (dp[n][e] - (e & 1 ? delta2.y : delta2.x));                            // dSᵀ
      }
    }
    // dS, bf16 as the products below use it, staged as tile (qt, kt) of the band: each 8 x 8
    // block transposed, row (query) 8 n + g, this warp's 16 key columns (chunks 2 warp and
    // 2 warp + 1 of the row: the 8 rows of a store land in 8 different bank groups)
#pragma unroll
    for (int n = 0; n < TILE / 8; n++) {
      ds_row_g[0][n * 256] = transpose8x8(pack2f(dp[n][0], dp[n][1]));  // row 8 n + g is n KB past row g
      ds_row_g[1][n * 256] = transpose8x8(pack2f(dp[n][2], dp[n][3]));
    }
    fence_proxy_async();  // the staged dS, visible to TMA
    uint32_t ap[TILE / 16][4], as[TILE / 16][4];  // Pᵀ and dSᵀ as A fragments
#pragma unroll
    for (int kk = 0; kk < TILE / 16; kk++) {
      acc_to_a(ap[kk], sc[2 * kk], sc[2 * kk + 1]);
      acc_to_a(as[kk], dp[2 * kk], dp[2 * kk + 1]);
    }
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < TILE / 16; kk++) wgmma_m64n128k16_rs_mn(acc_dv, ap[kk], mn_major_desc<TILE>(sdO, kk), 1);
#pragma unroll
    for (int kk = 0; kk < TILE / 16; kk++) wgmma_m64n128k16_rs_mn(acc_dk, as[kk], mn_major_desc<TILE>(sQ, kk), 1);
    wgmma_commit();
    __syncthreads();  // (while the products run) every thread's dS is staged
    if (threadIdx.x == 0) {
      tma_store(&map_ds, 0, int(band.offset(b, h, s.H, qt, kt) / TILE), sDS);
      tma_store_commit();
    }
    wgmma_wait<0>();
    wgmma_fence_regs(acc_dv);
    wgmma_fence_regs(acc_dk);
    h = next_h, qt = next_qt;
  }
  if (threadIdx.x == 0) tma_store_wait_all();  // before the block's shared memory goes
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const long row = long(b) * s.T + key[r];
    bf16* vrow = dv + row * kstride + hk * HD;
#pragma unroll
    for (int n = 0; n < HD / 8; n++)
      *reinterpret_cast<uint32_t*>(vrow + n * 8 + 2 * t) = pack2f(acc_dv[n][2 * r], acc_dv[n][2 * r + 1]);
    float y[HD / 8][2] = {}, rs = 0.f;  // with ROPE: the normalized k (this row of the K tile), its rstd
    if constexpr (ROPE) {
      const unsigned char* krow_tile = reinterpret_cast<const unsigned char*>(sK) + 4 * t;
#pragma unroll
      for (int n = 0; n < HD / 8; n++) {
        const float2 yv = __bfloat1622float2(
            *reinterpret_cast<const __nv_bfloat162*>(krow_tile + sw128_offset<TILE>(key[r] - k0, n)));
        y[n][0] = yv.x, y[n][1] = yv.y;
      }
      rs = rope.rstd[row * (s.H + s.Hkv) + s.H + hk];
    }
    store_grad_row<ROPE>(dk + row * kstride + hk * HD, acc_dk, r, scale, y, rs, rope, s.T, key[r], t);
  }
}

// ---- fp32 reference kernels: one block per (query i, b * H + h) ----

__global__ void reference_forward_kernel(float* o, float* lse, const float* q, const float* k,
                                         const float* v, AttnShape s, float scale) {
  extern __shared__ float sp[];  // (T,) scores, then probabilities
  __shared__ float red[32];
  const int i = blockIdx.x, b = blockIdx.y / s.H, h = blockIdx.y % s.H, hk = h / (s.H / s.Hkv);
  const long qld = s.q_ld(), kld = s.kv_ld();
  const float* qi = q + (long(b) * s.T + i) * qld + h * s.D;
  const int j0 = max(0, i - s.window);
  float mx = -INFINITY;
  for (int j = j0 + threadIdx.x; j <= i; j += blockDim.x) {
    const float* kj = k + (long(b) * s.T + j) * kld + hk * s.D;
    float acc = 0.f;
    for (int d = 0; d < s.D; d++) acc += qi[d] * kj[d];
    sp[j] = acc * scale;
    mx = fmaxf(mx, sp[j]);
  }
  mx = warp_max(mx);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = mx;
  __syncthreads();
  mx = -INFINITY;
  for (int w = 0; w < blockDim.x / 32; w++) mx = fmaxf(mx, red[w]);
  __syncthreads();
  float sum = 0.f;
  for (int j = j0 + threadIdx.x; j <= i; j += blockDim.x) {
    sp[j] = expf(sp[j] - mx);
    sum += sp[j];
  }
  sum = warp_sum(sum);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = sum;
  __syncthreads();
  sum = 0.f;
  for (int w = 0; w < blockDim.x / 32; w++) sum += red[w];
  for (int d = threadIdx.x; d < s.D; d += blockDim.x) {
    float acc = 0.f;
    for (int j = j0; j <= i; j++) acc += sp[j] * v[(long(b) * s.T + j) * kld + hk * s.D + d];
    o[((long(b) * s.T + i) * s.H + h) * s.D + d] = acc / sum;
  }
  if (threadIdx.x == 0) lse[(long(b) * s.H + h) * s.T + i] = mx + logf(sum);
}

// dk, dv must be zeroed: accumulated with atomics over the queries.
__global__ void reference_backward_kernel(float* dq, float* dk, float* dv, const float* delta,
                                          const float* dout, const float* lse, const float* q,
                                          const float* k, const float* v, AttnShape s,
                                          float scale) {
  extern __shared__ float sm[];  // p (T,), ds (T,)
  float* sp = sm;
  float* sds = sm + s.T;
  const int i = blockIdx.x, b = blockIdx.y / s.H, h = blockIdx.y % s.H, hk = h / (s.H / s.Hkv);
  const long qld = s.q_ld(), kld = s.kv_ld();
  const long qoff = (long(b) * s.T + i) * qld + h * s.D, ooff = ((long(b) * s.T + i) * s.H + h) * s.D;
  const float L = lse[(long(b) * s.H + h) * s.T + i], D = delta[(long(b) * s.H + h) * s.T + i];
  const int j0 = max(0, i - s.window);
  for (int j = j0 + threadIdx.x; j <= i; j += blockDim.x) {
    const long koff = (long(b) * s.T + j) * kld + hk * s.D;
    float sc = 0.f, dp = 0.f;
    for (int d = 0; d < s.D; d++) {
      sc += q[qoff + d] * k[koff + d];
      dp += dout[ooff + d] * v[koff + d];
    }
    float p = expf(sc * scale - L);
    sp[j] = p;
    sds[j] = p * (dp - D);
  }
  __syncthreads();
  for (int d = threadIdx.x; d < s.D; d += blockDim.x) {
    float acc = 0.f;
    for (int j = j0; j <= i; j++) acc += sds[j] * k[(long(b) * s.T + j) * kld + hk * s.D + d];
    dq[qoff + d] = acc * scale;
  }
  const int n = (i - j0 + 1) * s.D;
  for (int e = threadIdx.x; e < n; e += blockDim.x) {
    int j = j0 + e / s.D, d = e % s.D;
    const long koff = (long(b) * s.T + j) * kld + hk * s.D + d;
    atomicAdd(dk + koff, sds[j] * q[qoff + d] * scale);
    atomicAdd(dv + koff, sp[j] * dout[ooff + d]);
  }
}

// Rows of q, k, v (and their gradients) hold at least a row's heads, and start 16 bytes apart
// (the flash kernels copy them 16 bytes at a time).
void check_row_strides(const AttnShape& s) {
  if (s.q_ld() < long(s.H) * s.D || s.kv_ld() < long(s.Hkv) * s.D || s.q_ld() % 8 != 0 || s.kv_ld() % 8 != 0) {
    std::fprintf(stderr, "FAIL: attention row strides %ld (q) and %ld (k, v) must be multiples of 8, at least %d and %d\n",
                 s.q_ld(), s.kv_ld(), s.H * s.D, s.Hkv * s.D);
    std::exit(1);
  }
}

// Checks what the flash kernels need; returns the shape with the window capped at T (the same
// pairs are visible, and window arithmetic cannot overflow).
AttnShape flash_shape(AttnShape s) {
  if (s.D != HD || s.T % TILE != 0 || s.H % s.Hkv != 0) {
    std::fprintf(stderr, "FAIL: flash attention needs head_dim %d and seq_len %% %d == 0 (got %d, %d)\n",
                 HD, TILE, s.D, s.T);
    std::exit(1);
  }
  check_row_strides(s);
  s.window = std::min(s.window, s.T);
  return s;
}

// Once per kernel: allows its dynamic shared memory, and asks for the largest shared-memory
// carveout so that the blocks its registers allow fit on one multiprocessor. The kernels exist
// for sm_90a only: on another GPU this is where that shows, and it says so.
template <typename Kernel>
bool configure_flash_kernel(Kernel kernel, int smem_bytes) {
  const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  if (err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidDeviceFunction) {
    int device = 0, major = 0, minor = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    std::fprintf(stderr, "FAIL: the flash attention kernels need a Hopper GPU (sm_90a: H100/H200); this one is sm_%d%d\n",
                 major, minor);
    std::exit(1);
  }
  cudaCheck(err);
  cudaCheck(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  return true;
}
// Dynamic shared memory of the kernels (their layouts are at their tops).
constexpr int FORWARD_SMEM = 4 * TILE_ELEMS * sizeof(bf16) + 2 * 8 + SMEM_SLACK;
// The forward's three blocks a multiprocessor (its layout's reason): sm_90's 228 KB, less the
// 1 KB the hardware reserves a block.
static_assert(3 * (FORWARD_SMEM + 1024) <= 228 * 1024, "three forward blocks no longer fit a multiprocessor");
constexpr int DKDV_SMEM = 6 * TILE_ELEMS * sizeof(bf16) + 4 * TILE * sizeof(float) + TILE * TILE * sizeof(bf16) + 2 * 8 + SMEM_SLACK;
constexpr int DQ_SMEM = 2 * DQ_STAGE * sizeof(bf16) + 2 * 8 + SMEM_SLACK;

// The TMA maps of q, k, v: (B * T, heads * HD) column slices of their rows, in (TILE, 64) boxes.
struct QkvMaps {
  CUtensorMap q, k, v;
  QkvMaps(const bf16* q_, const bf16* k_, const bf16* v_, const AttnShape& s)
      : q(tma_map_bf16(q_, long(s.B) * s.T, long(s.H) * HD, TILE, s.q_ld())),
        k(tma_map_bf16(k_, long(s.B) * s.T, long(s.Hkv) * HD, TILE, s.kv_ld())),
        v(tma_map_bf16(v_, long(s.B) * s.T, long(s.Hkv) * HD, TILE, s.kv_ld())) {}
};

// The scratch of the bf16 backward: delta (B, H, T) floats, then the dS band.
long delta_floats(const AttnShape& s) { return (long(s.B) * s.H * s.T + 63) / 64 * 64; }

// Both backward kernels of one variant (plain, or ending in rope + QK-norm's backward).
template <bool ROPE>
void launch_flash_backward(bf16* dq, bf16* dk, bf16* dv, const bf16* dout, const float* lse, const float* delta,
                           bf16* ds, const bf16* q, const bf16* k, const bf16* v, const AttnShape& s, RopeQkNorm rope,
                           cudaStream_t stream) {
  static const bool configured = configure_flash_kernel(flash_backward_dkdv_kernel<ROPE>, DKDV_SMEM) &&
                                 configure_flash_kernel(flash_backward_dq_kernel<ROPE>, DQ_SMEM);
  (void)configured;
  const float scale = 1.0f / sqrtf(float(HD));
  const DsBand band = DsBand::of(s);
  const CUtensorMap map_ds = tma_map_bf16(ds, band.elements(s.B, s.H) / TILE, TILE, TILE);
  const QkvMaps maps(q, k, v, s);
  const CUtensorMap map_do = tma_map_bf16(dout, long(s.B) * s.T, long(s.H) * HD, TILE);
  flash_backward_dkdv_kernel<ROPE><<<dim3(s.T / TILE, s.B * s.Hkv), THREADS, DKDV_SMEM, stream>>>(
      dk, dv, map_ds, maps.q, map_do, maps.k, maps.v, lse, delta, s, band, scale, rope);
  cudaLaunchCheck();
  flash_backward_dq_kernel<ROPE><<<dim3(ceil_div(s.T / TILE, DQ_WGS), s.B * s.H), DQ_WGS * THREADS, DQ_SMEM, stream>>>(
      dq, map_ds, maps.k, s, band, scale, q, rope);
  cudaLaunchCheck();
}

// rope's tables: both given, cos_sin 8-byte aligned (the epilogues read cos and sin in pairs).
void check_rope(const RopeQkNorm& rope) {
  if (!rope.rstd || !rope.cos_sin || reinterpret_cast<uintptr_t>(rope.cos_sin) % 8 != 0)
    throw std::invalid_argument("attention_backward: rope needs its rstd and an 8-byte aligned cos_sin table");
}

}  // namespace

template <>
void attention_forward<bf16>(bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v,
                             AttnShape s, cudaStream_t stream) {
  s = flash_shape(s);
  if (!tma_aligned({q, k, v}))
    throw std::invalid_argument("attention_forward: q, k and v must start 16-byte aligned");
  static const bool configured = configure_flash_kernel(flash_forward_kernel, FORWARD_SMEM);
  (void)configured;
  const QkvMaps maps(q, k, v, s);
  flash_forward_kernel<<<dim3(s.T / TILE, s.B * s.H), THREADS, FORWARD_SMEM, stream>>>(
      o, lse, maps.q, maps.k, maps.v, s, 1.0f / sqrtf(float(HD)));
  cudaLaunchCheck();
}

template <>
size_t attention_scratch_bytes<bf16>(AttnShape s) {
  s = flash_shape(s);
  return delta_floats(s) * sizeof(float) + DsBand::of(s).elements(s.B, s.H) * sizeof(bf16);
}

template <>
void attention_backward<bf16>(bf16* dq, bf16* dk, bf16* dv, void* scratch, const bf16* dout,
                              const bf16* o, const float* lse, const bf16* q, const bf16* k,
                              const bf16* v, AttnShape s, cudaStream_t stream, const RopeQkNorm* rope) {
  s = flash_shape(s);
  // the TMA copies read these from 16-byte aligned addresses, and address band tiles by int rows
  if (!tma_aligned({dout, lse, q, k, v, scratch}))
    throw std::invalid_argument("attention_backward: q, k, v, dout, lse and scratch must start 16-byte aligned");
  if (DsBand::of(s).elements(s.B, s.H) / TILE > INT32_MAX)
    throw std::invalid_argument("attention_backward: the dS band of " + std::to_string(s.B) + " rows x " +
                                std::to_string(s.H) + " heads is over 2^31 tile rows");
  if (rope) check_rope(*rope);
  float* delta = static_cast<float*>(scratch);
  bf16* ds = reinterpret_cast<bf16*>(delta + delta_floats(s));
  long rows = long(s.B) * s.T * s.H;
  attn_delta_kernel<bf16><<<ceil_div(rows * 16, 256), 256, 0, stream>>>(delta, dout, o, s);
  cudaLaunchCheck();
  if (rope) launch_flash_backward<true>(dq, dk, dv, dout, lse, delta, ds, q, k, v, s, *rope, stream);
  else launch_flash_backward<false>(dq, dk, dv, dout, lse, delta, ds, q, k, v, s, {nullptr, nullptr}, stream);
}

template <>
void attention_forward<float>(float* o, float* lse, const float* q, const float* k, const float* v,
                              AttnShape s, cudaStream_t stream) {
  check_row_strides(s);
  reference_forward_kernel<<<dim3(s.T, s.B * s.H), 128, s.T * sizeof(float), stream>>>(
      o, lse, q, k, v, s, 1.0f / sqrtf(float(s.D)));
  cudaLaunchCheck();
}

template <>
size_t attention_scratch_bytes<float>(AttnShape s) {
  return size_t(s.B) * s.H * s.T * sizeof(float);
}

template <>
void attention_backward<float>(float* dq, float* dk, float* dv, void* scratch, const float* dout,
                               const float* o, const float* lse, const float* q, const float* k,
                               const float* v, AttnShape s, cudaStream_t stream, const RopeQkNorm* rope) {
  if (s.D % 8 != 0) {
    std::fprintf(stderr, "FAIL: attention needs head_dim %% 8 == 0 (got %d)\n", s.D);
    std::exit(1);
  }
  check_row_strides(s);
  if (rope) {  // then one rope_qknorm_backward over q's heads and k's, which follow them in each row
    check_rope(*rope);
    const long width = long(s.H) * s.D;
    if (k != q + width || dk != dq + width || s.q_ld() != s.kv_ld())
      throw std::invalid_argument("attention_backward<float>: rope needs k's heads right after q's in each row");
  }
  float* delta = static_cast<float*>(scratch);
  long rows = long(s.B) * s.T * s.H;
  attn_delta_kernel<float><<<ceil_div(rows * 16, 256), 256, 0, stream>>>(delta, dout, o, s);
  cudaLaunchCheck();
  const size_t row_bytes = size_t(s.Hkv) * s.D * sizeof(float), pitch = s.kv_ld() * sizeof(float);
  cudaCheck(cudaMemset2DAsync(dk, pitch, 0, row_bytes, size_t(s.B) * s.T, stream));
  cudaCheck(cudaMemset2DAsync(dv, pitch, 0, row_bytes, size_t(s.B) * s.T, stream));
  reference_backward_kernel<<<dim3(s.T, s.B * s.H), 128, 2 * s.T * sizeof(float), stream>>>(
      dq, dk, dv, delta, dout, lse, q, k, v, s, 1.0f / sqrtf(float(s.D)));
  cudaLaunchCheck();
  if (rope)
    rope_qknorm_backward<float>(dq, dq, q, rope->rstd, rope->cos_sin, s.B * s.T, s.T, s.H + s.Hkv, s.D, s.q_ld(),
                                stream);
}
