// Sliding-window causal attention (see attention.cuh).
//
// Flash kernels (bf16, D = 128): a block of 8 warps owns a tile of 128 rows
// (4 warps and 64 rows when seq_len % 128 != 0), each warp 16 of them; tiles of
// the other operand stream through shared memory 64 rows at a time, double-
// buffered: cp.async fetches tile n + 1 while tile n is computed. A warp skips
// a streamed tile where none of its 16 rows sees any of the tile's 64 rows.
// Fragments follow mma.m16n8k16's layout: lane = 4 * g + t; an accumulator
// holds rows g and g+8, columns 2t and 2t+1 of an 8-wide tile, which is also
// the layout of an A operand, so probabilities feed the next product straight
// from registers.
//   forward:   per query tile (latest first: they see the most keys), online
//              softmax over key tiles, writes o and lse.
//   backward:  dk/dv per key tile (loops over the query heads of its group),
//              which also writes dS, bf16, into a band of 64 x 64 tiles in the
//              scratch; then dq = dS · K per query tile from that band. Five
//              products in all, no atomics: deterministic.
#include "model/attention.cuh"

#include <algorithm>
#include <cstdint>

namespace {

constexpr int HD = 128;        // head_dim of the flash kernels
constexpr int TILE = 64;       // rows per streamed tile
constexpr int LDS = HD + 8;    // padded shared-memory row (bf16): conflict-free fragments
constexpr int TILE_ELEMS = TILE * LDS;
constexpr int LDD = TILE + 8;  // padded shared-memory row of a dS tile (bf16)
constexpr float LOG2E = 1.4426950408889634f;

__device__ __forceinline__ void mma16816(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack2(bf16 lo, bf16 hi) {
  return uint32_t(__bfloat16_as_ushort(lo)) | (uint32_t(__bfloat16_as_ushort(hi)) << 16);
}
__device__ __forceinline__ uint32_t pack2f(float lo, float hi) {
  return pack2(__float2bfloat16(lo), __float2bfloat16(hi));
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

// A fragment (16 x 16) of a row-major tile s[row][col] of row stride LD, rows r0.., cols c0..:
// ldmatrix.x4, lanes 0..15 address rows r0..r0+15 at c0, lanes 16..31 the same rows at c0 + 8.
template <int LD = LDS>
__device__ __forceinline__ void load_a(uint32_t* a, const bf16* s, int r0, int c0, int lane) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(smem_addr(s + (r0 + (lane & 15)) * LD + c0 + (lane >> 4) * 8)));
}
// B fragments (k 16 x n 8) of the two n tiles n0 and n0 + 8, from a tile stored s[n][k] (e.g. K
// for Q·Kᵀ): ldmatrix.x4, lanes 0..7 address rows n0..n0+7 at k0, lanes 8..15 the same rows at
// k0 + 8, lanes 16..31 likewise rows n0+8..n0+15. b[0], b[1]: n tile n0; b[2], b[3]: n0 + 8.
__device__ __forceinline__ void load_b_nk(uint32_t* b, const bf16* s, int n0, int k0, int lane) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
               : "r"(smem_addr(s + (n0 + (lane & 7) + (lane >> 4) * 8) * LDS + k0 + ((lane >> 3) & 1) * 8)));
}
// The same from a tile stored s[k][n] (e.g. V for P·V): a transposing ldmatrix.x4, lanes 0..15
// address rows k0..k0+15 at n0, lanes 16..31 the same rows at n0 + 8.
__device__ __forceinline__ void load_b_kn(uint32_t* b, const bf16* s, int k0, int n0, int lane) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
               : "r"(smem_addr(s + (k0 + (lane & 15)) * LDS + n0 + (lane >> 4) * 8)));
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

// Asynchronous global -> shared copies (cp.async): a thread's copies of a group it committed
// have landed once cp_async_wait() returns; a barrier then shows them to the block.
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most PENDING of this thread's committed groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory"); }

// Starts copying ROWS rows of 128 bf16 from global (row r at src + r * stride) to s, 16 bytes
// per cp.async: THREADS / ROWS threads share a row, each instruction of theirs covering
// adjacent chunks (whole 32-byte sectors), at offsets that are immediates.
template <int ROWS, int THREADS>
__device__ __forceinline__ void load_tile_async(bf16* s, const bf16* src, long stride) {
  constexpr int PER_ROW = THREADS / ROWS, CHUNKS = HD / 8 / PER_ROW;  // threads per row, copies per thread
  static_assert(THREADS % ROWS == 0 && HD / 8 % PER_ROW == 0, "tile copy must split evenly over the block");
  const int r = threadIdx.x / PER_ROW, c = threadIdx.x % PER_ROW * 8;
  bf16* dst = s + r * LDS + c;
  const bf16* from = src + r * stride + c;
#pragma unroll
  for (int n = 0; n < CHUNKS; n++) cp_async16(dst + n * PER_ROW * 8, from + n * PER_ROW * 8);
}

// The dS band of one backward call: for each (batch, head, query tile qt of 64) the 64 x 64
// tiles [query][key] of the key tiles kt that some query of qt sees, kt_min(qt) .. qt, in
// `slots` slots (slot kt - qt + slots - 1). Written by the dk/dv kernel (zeros where no pair
// of a warp's part is visible), read by the dq kernel.
struct DsBand {
  int n_qt, slots, window;
  __host__ __device__ static DsBand of(const AttnShape& s) {
    const int n_qt = s.T / TILE;
    return {n_qt, min(n_qt, (s.window + TILE - 1) / TILE + 1), s.window};
  }
  __host__ __device__ int kt_min(int qt) const { return max(0, qt * TILE - window) / TILE; }
  __host__ __device__ bool has(int qt, int kt) const { return kt <= qt && kt >= kt_min(qt); }
  __host__ __device__ long offset(int b, int h, int H, int qt, int kt) const {
    return ((((long(b) * H + h) * n_qt + qt) * slots) + kt - qt + slots - 1) * TILE * TILE;
  }
  __host__ __device__ long elements(int B, int H) const { return long(B) * H * n_qt * slots * TILE * TILE; }
};

// Starts copying one 64 x 64 dS tile (contiguous rows of 64) to s (row stride LDD).
template <int THREADS>
__device__ __forceinline__ void load_ds_tile_async(bf16* s, const bf16* src) {
#pragma unroll
  for (int c = threadIdx.x; c < TILE * TILE / 8; c += THREADS)
    cp_async16(s + (c / 8) * LDD + c % 8 * 8, src + (c / 8) * TILE + c % 8 * 8);
}

// Some / every (query, key) pair of queries q0 .. q0 + nq - 1 and keys k0 .. k0 + nk - 1 is
// visible (i - j spans [q0 - k0 - nk + 1, q0 + nq - 1 - k0]; visible means 0 <= i - j <= window).
__device__ __forceinline__ bool some_visible(int q0, int nq, int k0, int nk, int window) {
  return k0 <= q0 + nq - 1 && q0 - (k0 + nk - 1) <= window;
}
__device__ __forceinline__ bool all_visible(int q0, int nq, int k0, int nk, int window) {
  return k0 + nk - 1 <= q0 && q0 + nq - 1 - k0 <= window;
}

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

// grid (T / (16 * WARPS), B * H); block 32 * WARPS. Shared memory: the query tile (16 * WARPS,
// LDS), then 2 stages of {K, V} tiles (TILE, LDS).
template <int WARPS>
__global__ void __launch_bounds__(WARPS * 32, 2) flash_forward_kernel(
    bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v, AttnShape s, float scale) {
  constexpr int BM = 16 * WARPS, THREADS = 32 * WARPS;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);
  bf16* sKV = sQ + BM * LDS;  // stage st: K at sKV + 2 * st * TILE_ELEMS, V right after
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y, b = bh / s.H, h = bh % s.H, hk = h / (s.H / s.Hkv);
  const int q0 = (gridDim.x - 1 - blockIdx.x) * BM;  // latest query tiles first: the most work
  const int r0 = q0 + warp * 16;                      // this warp's rows r0 .. r0 + 15
  const long qstride = long(s.H) * HD, kstride = long(s.Hkv) * HD;
  const bf16* kh = k + long(b) * s.T * kstride + hk * HD;  // key 0 of this (batch, kv head)
  const bf16* vh = v + long(b) * s.T * kstride + hk * HD;
  auto load_kv = [&](int kt, int st) {  // key tile kt into stage st: one cp.async group
    load_tile_async<TILE, THREADS>(sKV + 2 * st * TILE_ELEMS, kh + long(kt) * TILE * kstride, kstride);
    load_tile_async<TILE, THREADS>(sKV + (2 * st + 1) * TILE_ELEMS, vh + long(kt) * TILE * kstride, kstride);
    cp_async_commit();
  };
  // key tiles seen by some row: from row q0's window start to the last row's diagonal
  const int kt_begin = max(0, q0 - s.window) / TILE, kt_end = (q0 + BM - 1) / TILE;
  load_tile_async<BM, THREADS>(sQ, q + (long(b) * s.T + q0) * qstride + h * HD, qstride);
  load_kv(kt_begin, 0);  // the same group as Q

  const float sl2 = scale * LOG2E;
  float acc_o[HD / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const int row[2] = {r0 + g, r0 + g + 8};
  for (int kt = kt_begin; kt <= kt_end; kt++) {
    const int st = (kt - kt_begin) & 1, k0 = kt * TILE;
    cp_async_wait<0>();
    __syncthreads();  // tile kt is in stage st for all threads; nobody reads stage st ^ 1 any more
    if (kt < kt_end) load_kv(kt + 1, st ^ 1);
    if (!some_visible(r0, 16, k0, TILE, s.window)) continue;  // warp-uniform
    const bf16* sK = sKV + 2 * st * TILE_ELEMS;
    const bf16* sV = sK + TILE_ELEMS;
    float sc[TILE / 8][4] = {};
    for (int kk = 0; kk < HD; kk += 16) {
      uint32_t a[4];
      load_a(a, sQ, warp * 16, kk, lane);
#pragma unroll
      for (int n = 0; n < TILE / 8; n += 2) {
        uint32_t bk[4];
        load_b_nk(bk, sK, n * 8, kk, lane);
        mma16816(sc[n], a, bk[0], bk[1]);
        mma16816(sc[n + 1], a, bk[2], bk[3]);
      }
    }
    if (!all_visible(r0, 16, k0, TILE, s.window)) {  // a tile on the diagonal or the window edge
      const int dist[2] = {row[0] - k0 - 2 * t, row[1] - k0 - 2 * t};
      mask_scores<-1>(sc, dist, s.window);
    }
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < TILE / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        sc[n][e] *= sl2;
        mx[e / 2] = fmaxf(mx[e / 2], sc[n][e]);
      }
#pragma unroll
    for (int r = 0; r < 2; r++) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      float m_new = fmaxf(m[r], mx[r]);
      float m_use = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing visible yet
      float corr = exp2f(m[r] - m_use);
      m[r] = m_new;
      l[r] *= corr;
#pragma unroll
      for (int n = 0; n < HD / 8; n++) {
        acc_o[n][2 * r] *= corr;
        acc_o[n][2 * r + 1] *= corr;
      }
#pragma unroll
      for (int n = 0; n < TILE / 8; n++) {
        float p0 = exp2f(sc[n][2 * r] - m_use), p1 = exp2f(sc[n][2 * r + 1] - m_use);
        sc[n][2 * r] = p0;
        sc[n][2 * r + 1] = p1;
        l[r] += p0 + p1;
      }
    }
#pragma unroll
    for (int kk = 0; kk < TILE / 16; kk++) {
      uint32_t a[4];
      acc_to_a(a, sc[2 * kk], sc[2 * kk + 1]);
#pragma unroll
      for (int n = 0; n < HD / 8; n += 2) {
        uint32_t bv[4];
        load_b_kn(bv, sV, kk * 16, n * 8, lane);
        mma16816(acc_o[n], a, bv[0], bv[1]);
        mma16816(acc_o[n + 1], a, bv[2], bv[3]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    float inv = 1.f / l[r];
    bf16* orow = o + (long(b) * s.T + row[r]) * qstride + h * HD;
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
  acc = half_warp_sum(acc);
  const int h = w % s.H;
  const long bt = w / s.H;
  const int b = bt / s.T, i = bt % s.T;
  if (li == 0) delta[(long(b) * s.H + h) * s.T + i] = acc;
}

// grid (T / (16 * WARPS), B * H); block 32 * WARPS: dq = scale * dS · K for one query tile of
// 16 * WARPS rows, dS read from the band the dk/dv kernel wrote (zero at invisible pairs, so no
// masking here). Shared memory: 2 stages of {K tile (TILE, LDS), dS of the block's rows
// against that key tile (16 * WARPS, LDD)}.
template <int WARPS>
__global__ void __launch_bounds__(WARPS * 32) flash_backward_dq_kernel(
    bf16* dq, const bf16* ds, const bf16* k, AttnShape s, DsBand band, float scale) {
  constexpr int BM = 16 * WARPS, THREADS = 32 * WARPS, STAGE = TILE * LDS + BM * LDD;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sm = reinterpret_cast<bf16*>(smem_raw);  // stage st at sm + st * STAGE: K, then dS
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y, b = bh / s.H, h = bh % s.H, hk = h / (s.H / s.Hkv);
  const int q0 = (gridDim.x - 1 - blockIdx.x) * BM;  // latest query tiles first: the most work
  const int r0 = q0 + warp * 16;                      // this warp's rows r0 .. r0 + 15
  const long qstride = long(s.H) * HD, kstride = long(s.Hkv) * HD;
  const bf16* kh = k + long(b) * s.T * kstride + hk * HD;  // key 0 of this (batch, kv head)
  auto load = [&](int kt, int st) {  // key tile kt and the dS tiles against it: one cp.async group
    bf16* sK = sm + st * STAGE;
    load_tile_async<TILE, THREADS>(sK, kh + long(kt) * TILE * kstride, kstride);
#pragma unroll
    for (int part = 0; part < BM / TILE; part++) {  // a query tile of 64 rows each
      const int qt = q0 / TILE + part;
      if (band.has(qt, kt)) load_ds_tile_async<THREADS>(sK + TILE * LDS + part * TILE * LDD,
                                                        ds + band.offset(b, h, s.H, qt, kt));
    }
    cp_async_commit();
  };
  const int kt_begin = max(0, q0 - s.window) / TILE, kt_end = (q0 + BM - 1) / TILE;
  load(kt_begin, 0);
  float acc_dq[HD / 8][4] = {};
  for (int kt = kt_begin; kt <= kt_end; kt++) {
    const int st = (kt - kt_begin) & 1;
    cp_async_wait<0>();
    __syncthreads();  // tile kt is in stage st for all threads; nobody reads stage st ^ 1 any more
    if (kt < kt_end) load(kt + 1, st ^ 1);
    if (!some_visible(r0, 16, kt * TILE, TILE, s.window)) continue;  // warp-uniform
    const bf16* sK = sm + st * STAGE;
    const bf16* sD = sK + TILE * LDS;
#pragma unroll
    for (int kk = 0; kk < TILE / 16; kk++) {
      uint32_t a[4];
      load_a<LDD>(a, sD, warp * 16, kk * 16, lane);
#pragma unroll
      for (int n = 0; n < HD / 8; n += 2) {
        uint32_t bk[4];
        load_b_kn(bk, sK, kk * 16, n * 8, lane);
        mma16816(acc_dq[n], a, bk[0], bk[1]);
        mma16816(acc_dq[n + 1], a, bk[2], bk[3]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    bf16* drow = dq + (long(b) * s.T + r0 + g + 8 * r) * qstride + h * HD;
#pragma unroll
    for (int n = 0; n < HD / 8; n++)
      *reinterpret_cast<uint32_t*>(drow + n * 8 + 2 * t) =
          pack2f(acc_dq[n][2 * r] * scale, acc_dq[n][2 * r + 1] * scale);
  }
}

// grid (T / (16 * WARPS), B * Hkv); block 32 * WARPS: dk, dv for one key tile, summed over the
// group's query heads (the first key tiles see the most queries and launch first). Shared memory: the K and V tiles (16 * WARPS, LDS), 2 stages of {Q, dO}
// tiles (TILE, LDS), then 2 stages of {lse, delta} (TILE,) floats.
template <int WARPS>
__global__ void __launch_bounds__(WARPS * 32) flash_backward_dkdv_kernel(
    bf16* dk, bf16* dv, bf16* ds, const bf16* dout, const float* lse, const float* delta, const bf16* q,
    const bf16* k, const bf16* v, AttnShape s, DsBand band, float scale) {
  constexpr int BK = 16 * WARPS, THREADS = 32 * WARPS;
  static_assert(THREADS >= 2 * TILE, "one thread per lse and delta entry");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sK = reinterpret_cast<bf16*>(smem_raw);
  bf16* sV = sK + BK * LDS;
  bf16* sQO = sV + BK * LDS;                                    // stage st: Q at sQO + 2 * st * TILE_ELEMS, dO right after
  float* sLD = reinterpret_cast<float*>(sQO + 4 * TILE_ELEMS);  // stage st: lse at sLD + 2 * st * TILE, delta right after
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y, b = bh / s.Hkv, hk = bh % s.Hkv, group = s.H / s.Hkv;
  const int k0 = blockIdx.x * BK, kw = k0 + warp * 16;  // this warp's keys kw .. kw + 15
  const long qstride = long(s.H) * HD, kstride = long(s.Hkv) * HD;
  // query tiles seen by some key: from the first key's diagonal to the last key's window end
  const int qt_begin = k0 / TILE, n_qt = min(s.T - 1, k0 + BK - 1 + s.window) / TILE - qt_begin + 1;
  const int steps = group * n_qt;  // (query head, query tile) pairs, head by head
  auto load_q = [&](int step, int st) {  // the tiles of step into stage st: one cp.async group
    const int h = hk * group + step / n_qt, q0 = (qt_begin + step % n_qt) * TILE;
    const long qoff = (long(b) * s.T + q0) * qstride + h * HD;
    load_tile_async<TILE, THREADS>(sQO + 2 * st * TILE_ELEMS, q + qoff, qstride);
    load_tile_async<TILE, THREADS>(sQO + (2 * st + 1) * TILE_ELEMS, dout + qoff, qstride);
    if (threadIdx.x < 2 * TILE)
      cp_async4(sLD + 2 * st * TILE + threadIdx.x,
                (threadIdx.x < TILE ? lse : delta) + (long(b) * s.H + h) * s.T + q0 + threadIdx.x % TILE);
    cp_async_commit();
  };
  load_tile_async<BK, THREADS>(sK, k + (long(b) * s.T + k0) * kstride + hk * HD, kstride);
  load_tile_async<BK, THREADS>(sV, v + (long(b) * s.T + k0) * kstride + hk * HD, kstride);
  load_q(0, 0);  // the same group as K and V
  const int key[2] = {kw + g, kw + g + 8};
  const float sl2 = scale * LOG2E;
  float acc_dk[HD / 8][4] = {}, acc_dv[HD / 8][4] = {};
  for (int step = 0; step < steps; step++) {
    const int st = step & 1, qt = qt_begin + step % n_qt, q0 = qt * TILE, h = hk * group + step / n_qt;
    cp_async_wait<0>();
    __syncthreads();  // step's tiles are in stage st for all threads; nobody reads stage st ^ 1 any more
    if (step + 1 < steps) load_q(step + 1, st ^ 1);
    // this warp's 16 key columns of the dS tile (qt, kw / TILE), when the dq kernel reads it
    bf16* ds_tile = band.has(qt, kw / TILE) ? ds + band.offset(b, h, s.H, qt, kw / TILE) + kw % TILE : nullptr;
    if (!some_visible(q0, TILE, kw, 16, s.window)) {  // warp-uniform
      if (ds_tile)
        for (int r = lane; r < TILE; r += 32) {
          reinterpret_cast<uint4*>(ds_tile + r * TILE)[0] = make_uint4(0, 0, 0, 0);
          reinterpret_cast<uint4*>(ds_tile + r * TILE)[1] = make_uint4(0, 0, 0, 0);
        }
      continue;
    }
    const bf16* sQ = sQO + 2 * st * TILE_ELEMS;
    const bf16* sdO = sQ + TILE_ELEMS;
    const float* sL = sLD + 2 * st * TILE;  // lse
    const float* sD = sL + TILE;            // delta
    float sc[TILE / 8][4] = {}, dp[TILE / 8][4] = {};  // (keys, queries) of this warp
    for (int kk = 0; kk < HD; kk += 16) {
      uint32_t a[4], av[4];
      load_a(a, sK, warp * 16, kk, lane);
      load_a(av, sV, warp * 16, kk, lane);
#pragma unroll
      for (int n = 0; n < TILE / 8; n += 2) {
        uint32_t bb[4];
        load_b_nk(bb, sQ, n * 8, kk, lane);
        mma16816(sc[n], a, bb[0], bb[1]);
        mma16816(sc[n + 1], a, bb[2], bb[3]);
        load_b_nk(bb, sdO, n * 8, kk, lane);
        mma16816(dp[n], av, bb[0], bb[1]);
        mma16816(dp[n + 1], av, bb[2], bb[3]);
      }
    }
    if (!all_visible(q0, TILE, kw, 16, s.window)) {  // a tile on the diagonal or the window edge
      const int dist[2] = {q0 + 2 * t - key[0], q0 + 2 * t - key[1]};
      mask_scores<1>(sc, dist, s.window);
    }
#pragma unroll
    for (int n = 0; n < TILE / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        int qi = n * 8 + 2 * t + (e & 1);
        float p = exp2f(sc[n][e] * sl2 - sL[qi] * LOG2E);  // 0 where masked
        sc[n][e] = p;                                      // Pᵀ
        dp[n][e] = p * (dp[n][e] - sD[qi]);                // dSᵀ
      }
    // dS, bf16 as the products below use it: each 8 x 8 block transposed, row (query) 8 n + g
#pragma unroll
    for (int n = 0; n < TILE / 8; n++) {
      bf16* row = ds_tile + (8 * n + g) * TILE + 2 * t;
      *reinterpret_cast<uint32_t*>(row) = transpose8x8(pack2f(dp[n][0], dp[n][1]));
      *reinterpret_cast<uint32_t*>(row + 8) = transpose8x8(pack2f(dp[n][2], dp[n][3]));
    }
#pragma unroll
    for (int kk = 0; kk < TILE / 16; kk++) {
      uint32_t ap[4], as[4];
      acc_to_a(ap, sc[2 * kk], sc[2 * kk + 1]);
      acc_to_a(as, dp[2 * kk], dp[2 * kk + 1]);
#pragma unroll
      for (int n = 0; n < HD / 8; n += 2) {
        uint32_t bb[4];
        load_b_kn(bb, sdO, kk * 16, n * 8, lane);
        mma16816(acc_dv[n], ap, bb[0], bb[1]);
        mma16816(acc_dv[n + 1], ap, bb[2], bb[3]);
        load_b_kn(bb, sQ, kk * 16, n * 8, lane);
        mma16816(acc_dk[n], as, bb[0], bb[1]);
        mma16816(acc_dk[n + 1], as, bb[2], bb[3]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    bf16* krow = dk + (long(b) * s.T + key[r]) * kstride + hk * HD;
    bf16* vrow = dv + (long(b) * s.T + key[r]) * kstride + hk * HD;
#pragma unroll
    for (int n = 0; n < HD / 8; n++) {
      *reinterpret_cast<uint32_t*>(krow + n * 8 + 2 * t) =
          pack2f(acc_dk[n][2 * r] * scale, acc_dk[n][2 * r + 1] * scale);
      *reinterpret_cast<uint32_t*>(vrow + n * 8 + 2 * t) =
          pack2f(acc_dv[n][2 * r], acc_dv[n][2 * r + 1]);
    }
  }
}

// ---- fp32 reference kernels: one block per (query i, b * H + h) ----

__global__ void reference_forward_kernel(float* o, float* lse, const float* q, const float* k,
                                         const float* v, AttnShape s, float scale) {
  extern __shared__ float sp[];  // (T,) scores, then probabilities
  __shared__ float red[32];
  const int i = blockIdx.x, b = blockIdx.y / s.H, h = blockIdx.y % s.H, hk = h / (s.H / s.Hkv);
  const float* qi = q + ((long(b) * s.T + i) * s.H + h) * s.D;
  const int j0 = max(0, i - s.window);
  float mx = -INFINITY;
  for (int j = j0 + threadIdx.x; j <= i; j += blockDim.x) {
    const float* kj = k + ((long(b) * s.T + j) * s.Hkv + hk) * s.D;
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
    for (int j = j0; j <= i; j++) acc += sp[j] * v[((long(b) * s.T + j) * s.Hkv + hk) * s.D + d];
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
  const long qoff = ((long(b) * s.T + i) * s.H + h) * s.D;
  const float L = lse[(long(b) * s.H + h) * s.T + i], D = delta[(long(b) * s.H + h) * s.T + i];
  const int j0 = max(0, i - s.window);
  for (int j = j0 + threadIdx.x; j <= i; j += blockDim.x) {
    const long koff = ((long(b) * s.T + j) * s.Hkv + hk) * s.D;
    float sc = 0.f, dp = 0.f;
    for (int d = 0; d < s.D; d++) {
      sc += q[qoff + d] * k[koff + d];
      dp += dout[qoff + d] * v[koff + d];
    }
    float p = expf(sc * scale - L);
    sp[j] = p;
    sds[j] = p * (dp - D);
  }
  __syncthreads();
  for (int d = threadIdx.x; d < s.D; d += blockDim.x) {
    float acc = 0.f;
    for (int j = j0; j <= i; j++) acc += sds[j] * k[((long(b) * s.T + j) * s.Hkv + hk) * s.D + d];
    dq[qoff + d] = acc * scale;
  }
  const int n = (i - j0 + 1) * s.D;
  for (int e = threadIdx.x; e < n; e += blockDim.x) {
    int j = j0 + e / s.D, d = e % s.D;
    const long koff = ((long(b) * s.T + j) * s.Hkv + hk) * s.D + d;
    atomicAdd(dk + koff, sds[j] * q[qoff + d] * scale);
    atomicAdd(dv + koff, sp[j] * dout[qoff + d]);
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
  s.window = std::min(s.window, s.T);
  return s;
}
// Blocks of 8 warps (128 rows) where seq_len allows, else of 4 warps (64 rows).
bool wide_tiles(const AttnShape& s) { return s.T % (16 * 8) == 0; }

// Once per kernel: allows its dynamic shared memory, and asks for the largest shared-memory
// carveout so that the blocks its registers allow fit on one multiprocessor.
template <typename Kernel>
void configure_flash_kernel(Kernel kernel, int smem_bytes) {
  cudaCheck(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  cudaCheck(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
}

template <int WARPS>
void flash_forward(bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v, AttnShape s,
                   cudaStream_t stream) {
  constexpr int smem = (16 * WARPS + 4 * TILE) * LDS * sizeof(bf16);  // Q tile, 2 stages of K and V
  static bool configured = false;
  if (!configured) {
    configure_flash_kernel(flash_forward_kernel<WARPS>, smem);
    configured = true;
  }
  flash_forward_kernel<WARPS><<<dim3(s.T / (16 * WARPS), s.B * s.H), 32 * WARPS, smem, stream>>>(
      o, lse, q, k, v, s, 1.0f / sqrtf(float(HD)));
  cudaLaunchCheck();
}

template <int WARPS>
void flash_backward(bf16* dq, bf16* dk, bf16* dv, const float* delta, bf16* ds, const bf16* dout,
                    const float* lse, const bf16* q, const bf16* k, const bf16* v, AttnShape s,
                    cudaStream_t stream) {
  // dkdv: K and V tiles, 2 stages of Q, dO, lse and delta; dq: 2 stages of a K tile and dS rows
  constexpr int dkdv_smem = (2 * 16 * WARPS + 4 * TILE) * LDS * sizeof(bf16) + 4 * TILE * sizeof(float);
  constexpr int dq_smem = 2 * (TILE * LDS + 16 * WARPS * LDD) * sizeof(bf16);
  static bool configured = false;
  if (!configured) {
    configure_flash_kernel(flash_backward_dkdv_kernel<WARPS>, dkdv_smem);
    configure_flash_kernel(flash_backward_dq_kernel<WARPS>, dq_smem);
    configured = true;
  }
  const float scale = 1.0f / sqrtf(float(HD));
  const DsBand band = DsBand::of(s);
  flash_backward_dkdv_kernel<WARPS><<<dim3(s.T / (16 * WARPS), s.B * s.Hkv), 32 * WARPS, dkdv_smem, stream>>>(
      dk, dv, ds, dout, lse, delta, q, k, v, s, band, scale);
  cudaLaunchCheck();
  flash_backward_dq_kernel<WARPS><<<dim3(s.T / (16 * WARPS), s.B * s.H), 32 * WARPS, dq_smem, stream>>>(
      dq, ds, k, s, band, scale);
  cudaLaunchCheck();
}

// The scratch of the bf16 backward: delta (B, H, T) floats, then the dS band.
long delta_floats(const AttnShape& s) { return (long(s.B) * s.H * s.T + 63) / 64 * 64; }

}  // namespace

template <>
void attention_forward<bf16>(bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v,
                             AttnShape s, cudaStream_t stream) {
  s = flash_shape(s);
  if (wide_tiles(s)) flash_forward<8>(o, lse, q, k, v, s, stream);
  else flash_forward<4>(o, lse, q, k, v, s, stream);
}

template <>
size_t attention_scratch_bytes<bf16>(AttnShape s) {
  s = flash_shape(s);
  return delta_floats(s) * sizeof(float) + DsBand::of(s).elements(s.B, s.H) * sizeof(bf16);
}

template <>
void attention_backward<bf16>(bf16* dq, bf16* dk, bf16* dv, void* scratch, const bf16* dout,
                              const bf16* o, const float* lse, const bf16* q, const bf16* k,
                              const bf16* v, AttnShape s, cudaStream_t stream) {
  s = flash_shape(s);
  float* delta = static_cast<float*>(scratch);
  bf16* ds = reinterpret_cast<bf16*>(delta + delta_floats(s));
  long rows = long(s.B) * s.T * s.H;
  attn_delta_kernel<bf16><<<ceil_div(rows * 16, 256), 256, 0, stream>>>(delta, dout, o, s);
  cudaLaunchCheck();
  if (wide_tiles(s)) flash_backward<8>(dq, dk, dv, delta, ds, dout, lse, q, k, v, s, stream);
  else flash_backward<4>(dq, dk, dv, delta, ds, dout, lse, q, k, v, s, stream);
}

template <>
void attention_forward<float>(float* o, float* lse, const float* q, const float* k, const float* v,
                              AttnShape s, cudaStream_t stream) {
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
                               const float* v, AttnShape s, cudaStream_t stream) {
  if (s.D % 8 != 0) {
    std::fprintf(stderr, "FAIL: attention needs head_dim %% 8 == 0 (got %d)\n", s.D);
    std::exit(1);
  }
  float* delta = static_cast<float*>(scratch);
  long rows = long(s.B) * s.T * s.H;
  attn_delta_kernel<float><<<ceil_div(rows * 16, 256), 256, 0, stream>>>(delta, dout, o, s);
  cudaLaunchCheck();
  size_t kv_bytes = size_t(s.B) * s.T * s.Hkv * s.D * sizeof(float);
  cudaCheck(cudaMemsetAsync(dk, 0, kv_bytes, stream));
  cudaCheck(cudaMemsetAsync(dv, 0, kv_bytes, stream));
  reference_backward_kernel<<<dim3(s.T, s.B * s.H), 128, 2 * s.T * sizeof(float), stream>>>(
      dq, dk, dv, delta, dout, lse, q, k, v, s, 1.0f / sqrtf(float(s.D)));
  cudaLaunchCheck();
}
