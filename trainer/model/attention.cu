// Sliding-window causal attention (see attention.cuh).
//
// Flash kernels (bf16, D = 128): a block of 4 warps owns a tile of 64 rows,
// each warp 16 of them; tiles of the other operand stream through shared
// memory 64 rows at a time. Fragments follow mma.m16n8k16's layout: lane =
// 4 * g + t; an accumulator holds rows g and g+8, columns 2t and 2t+1 of an
// 8-wide tile, which is also the layout of an A operand, so probabilities feed
// the next product straight from registers.
//   forward:   per query tile, online softmax over key tiles, writes o and lse.
//   backward:  dq per query tile (recomputes P and dP), dk/dv per key tile
//              (loops over the query heads of its group): no atomics.
#include "model/attention.cuh"

#include <cstdint>

namespace {

constexpr int HD = 128;        // head_dim of the flash kernels
constexpr int TILE = 64;       // rows per tile
constexpr int LDS = HD + 8;    // padded shared-memory row (bf16): conflict-free fragments
constexpr int THREADS = 128;   // 4 warps x 16 rows
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

__device__ __forceinline__ uint32_t smem_addr(const bf16* p) { return uint32_t(__cvta_generic_to_shared(p)); }

// A fragment (16 x 16) of a row-major tile s[row][col], rows r0.., cols c0..: ldmatrix.x4,
// lanes 0..15 address rows r0..r0+15 at c0, lanes 16..31 the same rows at c0 + 8.
__device__ __forceinline__ void load_a(uint32_t* a, const bf16* s, int r0, int c0, int g, int t) {
  const int lane = 4 * g + t;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(smem_addr(s + (r0 + (lane & 15)) * LDS + c0 + (lane >> 4) * 8)));
}
// B fragment (k 16 x n 8) from a tile stored s[n][k] (e.g. K for Q·Kᵀ): ldmatrix.x2,
// lanes 0..7 address rows n0..n0+7 at k0, lanes 8..15 the same rows at k0 + 8.
__device__ __forceinline__ void load_b_nk(uint32_t& b0, uint32_t& b1, const bf16* s, int n0, int k0,
                                          int g, int t) {
  const int lane = 4 * g + t;
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(b0), "=r"(b1)
               : "r"(smem_addr(s + (n0 + (lane & 7)) * LDS + k0 + ((lane >> 3) & 1) * 8)));
}
// B fragment (k 16 x n 8) from a tile stored s[k][n] (e.g. V for P·V): a transposing
// ldmatrix; lanes 0..15 address rows k0..k0+15 (lanes 16..31 repeat them, unused by .x2).
__device__ __forceinline__ void load_b_kn(uint32_t& b0, uint32_t& b1, const bf16* s, int k0, int n0,
                                          int g, int t) {
  const int lane = 4 * g + t;
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(b0), "=r"(b1)
               : "r"(smem_addr(s + (k0 + (lane & 15)) * LDS + n0)));
}
// Accumulators of two adjacent 8-wide tiles as one A fragment (16 x 16).
__device__ __forceinline__ void acc_to_a(uint32_t* a, const float* c0, const float* c1) {
  a[0] = pack2f(c0[0], c0[1]);
  a[1] = pack2f(c0[2], c0[3]);
  a[2] = pack2f(c1[0], c1[1]);
  a[3] = pack2f(c1[2], c1[3]);
}

// Copies 64 rows of 128 bf16 from global (row r at base + r * stride) to s.
__device__ __forceinline__ void load_tile(bf16* s, const bf16* base, long stride) {
  for (int i = threadIdx.x; i < TILE * HD / 8; i += THREADS) {
    int r = i / (HD / 8), c = (i % (HD / 8)) * 8;
    *reinterpret_cast<uint4*>(s + r * LDS + c) = *reinterpret_cast<const uint4*>(base + r * stride + c);
  }
}

__device__ __forceinline__ bool visible(int i, int j, int window) { return j <= i && i - j <= window; }
// Every (query, key) pair of the 64 x 64 tile pair is visible: no per-element mask needed.
__device__ __forceinline__ bool tile_visible(int q0, int k0, int window) {
  return k0 + TILE - 1 <= q0 && q0 + TILE - 1 - k0 <= window;
}

// grid (T / 64, B * H)
__global__ void __launch_bounds__(THREADS) flash_forward_kernel(
    bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v, AttnShape s, float scale) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);
  bf16* sK = sQ + TILE * LDS;
  bf16* sV = sK + TILE * LDS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y, b = bh / s.H, h = bh % s.H, hk = h / (s.H / s.Hkv);
  const int q0 = blockIdx.x * TILE;
  const long qstride = long(s.H) * HD, kstride = long(s.Hkv) * HD;
  load_tile(sQ, q + (long(b) * s.T + q0) * qstride + h * HD, qstride);

  const float sl2 = scale * LOG2E;
  float acc_o[HD / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const int row[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  const int kt_begin = max(0, q0 - s.window) / TILE, kt_end = q0 / TILE;
  for (int kt = kt_begin; kt <= kt_end; kt++) {
    const int k0 = kt * TILE;
    __syncthreads();
    load_tile(sK, k + (long(b) * s.T + k0) * kstride + hk * HD, kstride);
    load_tile(sV, v + (long(b) * s.T + k0) * kstride + hk * HD, kstride);
    __syncthreads();
    float sc[TILE / 8][4] = {};
    for (int kk = 0; kk < HD; kk += 16) {
      uint32_t a[4];
      load_a(a, sQ, warp * 16, kk, g, t);
#pragma unroll
      for (int n = 0; n < TILE / 8; n++) {
        uint32_t b0, b1;
        load_b_nk(b0, b1, sK, n * 8, kk, g, t);
        mma16816(sc[n], a, b0, b1);
      }
    }
    float mx[2] = {-INFINITY, -INFINITY};
    const bool full = tile_visible(q0, k0, s.window);
#pragma unroll
    for (int n = 0; n < TILE / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        int j = k0 + n * 8 + 2 * t + (e & 1);
        float x = full || visible(row[e / 2], j, s.window) ? sc[n][e] * sl2 : -INFINITY;
        sc[n][e] = x;
        mx[e / 2] = fmaxf(mx[e / 2], x);
      }
#pragma unroll
    for (int r = 0; r < 2; r++) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      float m_new = fmaxf(m[r], mx[r]);
      float m_use = m_new == -INFINITY ? 0.f : m_new;
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
      for (int n = 0; n < HD / 8; n++) {
        uint32_t b0, b1;
        load_b_kn(b0, b1, sV, kk * 16, n * 8, g, t);
        mma16816(acc_o[n], a, b0, b1);
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

// delta[b, h, i] = sum_d dout * o; one warp per (b, i, h).
template <typename T>
__global__ void attn_delta_kernel(float* delta, const T* dout, const T* o, AttnShape s) {
  long w = (long(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (w >= long(s.B) * s.T * s.H) return;
  const T* a = dout + w * s.D;
  const T* c = o + w * s.D;
  float acc = 0.f;
  for (int d = lane; d < s.D; d += 32) acc += to_f(a[d]) * to_f(c[d]);
  acc = warp_sum(acc);
  int h = w % s.H;
  long bt = w / s.H;
  int b = bt / s.T, i = bt % s.T;
  if (lane == 0) delta[(long(b) * s.H + h) * s.T + i] = acc;
}

// grid (T / 64, B * H): dq for one query tile.
__global__ void __launch_bounds__(THREADS) flash_backward_dq_kernel(
    bf16* dq, const bf16* dout, const float* lse, const float* delta, const bf16* q, const bf16* k,
    const bf16* v, AttnShape s, float scale) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);
  bf16* sdO = sQ + TILE * LDS;
  bf16* sK = sdO + TILE * LDS;
  bf16* sV = sK + TILE * LDS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y, b = bh / s.H, h = bh % s.H, hk = h / (s.H / s.Hkv);
  const int q0 = blockIdx.x * TILE;
  const long qstride = long(s.H) * HD, kstride = long(s.Hkv) * HD;
  load_tile(sQ, q + (long(b) * s.T + q0) * qstride + h * HD, qstride);
  load_tile(sdO, dout + (long(b) * s.T + q0) * qstride + h * HD, qstride);
  const int row[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  float lse2[2], dl[2];
  for (int r = 0; r < 2; r++) {
    lse2[r] = lse[(long(b) * s.H + h) * s.T + row[r]] * LOG2E;
    dl[r] = delta[(long(b) * s.H + h) * s.T + row[r]];
  }
  const float sl2 = scale * LOG2E;
  float acc_dq[HD / 8][4] = {};
  const int kt_begin = max(0, q0 - s.window) / TILE, kt_end = q0 / TILE;
  for (int kt = kt_begin; kt <= kt_end; kt++) {
    const int k0 = kt * TILE;
    __syncthreads();
    load_tile(sK, k + (long(b) * s.T + k0) * kstride + hk * HD, kstride);
    load_tile(sV, v + (long(b) * s.T + k0) * kstride + hk * HD, kstride);
    __syncthreads();
    float sc[TILE / 8][4] = {}, dp[TILE / 8][4] = {};
    for (int kk = 0; kk < HD; kk += 16) {
      uint32_t a[4], ad[4];
      load_a(a, sQ, warp * 16, kk, g, t);
      load_a(ad, sdO, warp * 16, kk, g, t);
#pragma unroll
      for (int n = 0; n < TILE / 8; n++) {
        uint32_t b0, b1;
        load_b_nk(b0, b1, sK, n * 8, kk, g, t);
        mma16816(sc[n], a, b0, b1);
        load_b_nk(b0, b1, sV, n * 8, kk, g, t);
        mma16816(dp[n], ad, b0, b1);
      }
    }
    const bool full = tile_visible(q0, k0, s.window);
#pragma unroll
    for (int n = 0; n < TILE / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        int j = k0 + n * 8 + 2 * t + (e & 1);
        float p = full || visible(row[e / 2], j, s.window) ? exp2f(sc[n][e] * sl2 - lse2[e / 2]) : 0.f;
        sc[n][e] = p * (dp[n][e] - dl[e / 2]);  // dS
      }
#pragma unroll
    for (int kk = 0; kk < TILE / 16; kk++) {
      uint32_t a[4];
      acc_to_a(a, sc[2 * kk], sc[2 * kk + 1]);
#pragma unroll
      for (int n = 0; n < HD / 8; n++) {
        uint32_t b0, b1;
        load_b_kn(b0, b1, sK, kk * 16, n * 8, g, t);
        mma16816(acc_dq[n], a, b0, b1);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    bf16* drow = dq + (long(b) * s.T + row[r]) * qstride + h * HD;
#pragma unroll
    for (int n = 0; n < HD / 8; n++)
      *reinterpret_cast<uint32_t*>(drow + n * 8 + 2 * t) =
          pack2f(acc_dq[n][2 * r] * scale, acc_dq[n][2 * r + 1] * scale);
  }
}

// grid (T / 64, B * Hkv): dk, dv for one key tile, summed over the group's query heads.
__global__ void __launch_bounds__(THREADS) flash_backward_dkdv_kernel(
    bf16* dk, bf16* dv, const bf16* dout, const float* lse, const float* delta, const bf16* q,
    const bf16* k, const bf16* v, AttnShape s, float scale) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sK = reinterpret_cast<bf16*>(smem_raw);
  bf16* sV = sK + TILE * LDS;
  bf16* sQ = sV + TILE * LDS;
  bf16* sdO = sQ + TILE * LDS;
  float* sL = reinterpret_cast<float*>(sdO + TILE * LDS);  // (64,) lse * log2(e)
  float* sD = sL + TILE;                                    // (64,) delta
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y, b = bh / s.Hkv, hk = bh % s.Hkv, group = s.H / s.Hkv;
  const int k0 = blockIdx.x * TILE;
  const long qstride = long(s.H) * HD, kstride = long(s.Hkv) * HD;
  load_tile(sK, k + (long(b) * s.T + k0) * kstride + hk * HD, kstride);
  load_tile(sV, v + (long(b) * s.T + k0) * kstride + hk * HD, kstride);
  const int key[2] = {k0 + warp * 16 + g, k0 + warp * 16 + g + 8};
  const float sl2 = scale * LOG2E;
  float acc_dk[HD / 8][4] = {}, acc_dv[HD / 8][4] = {};
  const int qt_end = min(s.T - 1, k0 + TILE - 1 + s.window) / TILE;
  for (int h = hk * group; h < (hk + 1) * group; h++) {
    for (int qt = k0 / TILE; qt <= qt_end; qt++) {
      const int q0 = qt * TILE;
      __syncthreads();
      load_tile(sQ, q + (long(b) * s.T + q0) * qstride + h * HD, qstride);
      load_tile(sdO, dout + (long(b) * s.T + q0) * qstride + h * HD, qstride);
      for (int i = threadIdx.x; i < TILE; i += THREADS) {
        sL[i] = lse[(long(b) * s.H + h) * s.T + q0 + i] * LOG2E;
        sD[i] = delta[(long(b) * s.H + h) * s.T + q0 + i];
      }
      __syncthreads();
      float sc[TILE / 8][4] = {}, dp[TILE / 8][4] = {};  // (keys, queries) of this warp
      for (int kk = 0; kk < HD; kk += 16) {
        uint32_t a[4], av[4];
        load_a(a, sK, warp * 16, kk, g, t);
        load_a(av, sV, warp * 16, kk, g, t);
#pragma unroll
        for (int n = 0; n < TILE / 8; n++) {
          uint32_t b0, b1;
          load_b_nk(b0, b1, sQ, n * 8, kk, g, t);
          mma16816(sc[n], a, b0, b1);
          load_b_nk(b0, b1, sdO, n * 8, kk, g, t);
          mma16816(dp[n], av, b0, b1);
        }
      }
      const bool full = tile_visible(q0, k0, s.window);
#pragma unroll
      for (int n = 0; n < TILE / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          int qi = n * 8 + 2 * t + (e & 1);
          float p = full || visible(q0 + qi, key[e / 2], s.window) ? exp2f(sc[n][e] * sl2 - sL[qi]) : 0.f;
          sc[n][e] = p;                        // Pᵀ
          dp[n][e] = p * (dp[n][e] - sD[qi]);  // dSᵀ
        }
#pragma unroll
      for (int kk = 0; kk < TILE / 16; kk++) {
        uint32_t ap[4], as[4];
        acc_to_a(ap, sc[2 * kk], sc[2 * kk + 1]);
        acc_to_a(as, dp[2 * kk], dp[2 * kk + 1]);
#pragma unroll
        for (int n = 0; n < HD / 8; n++) {
          uint32_t b0, b1;
          load_b_kn(b0, b1, sdO, kk * 16, n * 8, g, t);
          mma16816(acc_dv[n], ap, b0, b1);
          load_b_kn(b0, b1, sQ, kk * 16, n * 8, g, t);
          mma16816(acc_dk[n], as, b0, b1);
        }
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

constexpr int FWD_SMEM = 3 * TILE * LDS * sizeof(bf16);
constexpr int DQ_SMEM = 4 * TILE * LDS * sizeof(bf16);
constexpr int DKDV_SMEM = 4 * TILE * LDS * sizeof(bf16) + 2 * TILE * sizeof(float);

void check_flash_shape(const AttnShape& s) {
  if (s.D != HD || s.T % TILE != 0 || s.H % s.Hkv != 0) {
    std::fprintf(stderr, "FAIL: flash attention needs head_dim %d and seq_len %% %d == 0 (got %d, %d)\n",
                 HD, TILE, s.D, s.T);
    std::exit(1);
  }
  static bool configured = false;  // raise the dynamic shared-memory limits once
  if (!configured) {
    cudaCheck(cudaFuncSetAttribute(flash_forward_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, FWD_SMEM));
    cudaCheck(cudaFuncSetAttribute(flash_backward_dq_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, DQ_SMEM));
    cudaCheck(cudaFuncSetAttribute(flash_backward_dkdv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, DKDV_SMEM));
    configured = true;
  }
}

}  // namespace

template <>
void attention_forward<bf16>(bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v,
                             AttnShape s, cudaStream_t stream) {
  check_flash_shape(s);
  dim3 grid(s.T / TILE, s.B * s.H);
  flash_forward_kernel<<<grid, THREADS, FWD_SMEM, stream>>>(o, lse, q, k, v, s, 1.0f / sqrtf(float(s.D)));
  cudaLaunchCheck();
}

template <>
void attention_backward<bf16>(bf16* dq, bf16* dk, bf16* dv, float* scratch, const bf16* dout,
                              const bf16* o, const float* lse, const bf16* q, const bf16* k,
                              const bf16* v, AttnShape s, cudaStream_t stream) {
  check_flash_shape(s);
  const float scale = 1.0f / sqrtf(float(s.D));
  long rows = long(s.B) * s.T * s.H;
  attn_delta_kernel<bf16><<<ceil_div(rows * 32, 256), 256, 0, stream>>>(scratch, dout, o, s);
  cudaLaunchCheck();
  flash_backward_dq_kernel<<<dim3(s.T / TILE, s.B * s.H), THREADS, DQ_SMEM, stream>>>(
      dq, dout, lse, scratch, q, k, v, s, scale);
  cudaLaunchCheck();
  flash_backward_dkdv_kernel<<<dim3(s.T / TILE, s.B * s.Hkv), THREADS, DKDV_SMEM, stream>>>(
      dk, dv, dout, lse, scratch, q, k, v, s, scale);
  cudaLaunchCheck();
}

template <>
void attention_forward<float>(float* o, float* lse, const float* q, const float* k, const float* v,
                              AttnShape s, cudaStream_t stream) {
  reference_forward_kernel<<<dim3(s.T, s.B * s.H), 128, s.T * sizeof(float), stream>>>(
      o, lse, q, k, v, s, 1.0f / sqrtf(float(s.D)));
  cudaLaunchCheck();
}

template <>
void attention_backward<float>(float* dq, float* dk, float* dv, float* scratch, const float* dout,
                               const float* o, const float* lse, const float* q, const float* k,
                               const float* v, AttnShape s, cudaStream_t stream) {
  long rows = long(s.B) * s.T * s.H;
  attn_delta_kernel<float><<<ceil_div(rows * 32, 256), 256, 0, stream>>>(scratch, dout, o, s);
  cudaLaunchCheck();
  size_t kv_bytes = size_t(s.B) * s.T * s.Hkv * s.D * sizeof(float);
  cudaCheck(cudaMemsetAsync(dk, 0, kv_bytes, stream));
  cudaCheck(cudaMemsetAsync(dv, 0, kv_bytes, stream));
  reference_backward_kernel<<<dim3(s.T, s.B * s.H), 128, 2 * s.T * sizeof(float), stream>>>(
      dq, dk, dv, scratch, dout, lse, q, k, v, s, 1.0f / sqrtf(float(s.D)));
  cudaLaunchCheck();
}
