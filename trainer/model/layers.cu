// Kernels of layers.cuh, then their launchers. Row kernels use one warp per row
// (rows of C = model_dim or D = head_dim elements); elementwise kernels one
// thread per 8 consecutive elements (16-byte accesses for bf16) with a
// grid-stride loop, so every length handed to them is a multiple of 8.
#include "model/layers.cuh"

#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace {

constexpr int BLOCK = 256;
constexpr int PARTIAL_BLOCKS = 1024;  // residual_mix_rmsnorm_backward's fixed grid (deterministic sums)

int grid_for(long n) { return int(std::min<long>((n + BLOCK - 1) / BLOCK, 65536L * 8)); }
int warp_grid(long rows) { return ceil_div(rows * 32, BLOCK); }
constexpr int ROPE_MAX_D = 256;  // head_dim limit of the rope kernels (registers per lane)
void require_rope_head_dim(int D) {
  if (D % 16 != 0 || D > ROPE_MAX_D)
    throw std::invalid_argument("rope_qknorm: head_dim " + std::to_string(D) + " must be a multiple of 16, at most " +
                                std::to_string(ROPE_MAX_D));
}

// A row stride: at least the row's width, and a multiple of 8 (16-byte bf16 accesses).
void require_row_stride(long ld, long width, const char* what) {
  if (ld < width || ld % 8 != 0)
    throw std::invalid_argument(std::string(what) + ": row stride " + std::to_string(ld) + " must be a multiple of 8, at least " +
                                std::to_string(width));
}

// The 8-wide kernels need lengths (and row widths) that are multiples of 8.
void require_multiple(long n, long of, const char* what) {
  if (n % of != 0)
    throw std::invalid_argument(std::string(what) + ": length " + std::to_string(n) + " is not a multiple of " +
                                std::to_string(of));
}
#define GRID_STRIDE(i, n) \
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += long(gridDim.x) * blockDim.x)

__device__ __forceinline__ long warp_id() { return (long(blockIdx.x) * blockDim.x + threadIdx.x) / 32; }

// Sum over a block of BLOCK threads; thread 0 gets the result.
__device__ float block_sum(float v) {
  __shared__ float red[BLOCK / 32];
  v = warp_sum(v);
  __syncthreads();
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float s = 0.f;
  if (threadIdx.x == 0)
    for (int w = 0; w < BLOCK / 32; w++) s += red[w];
  return s;
}

__global__ void split_rows_kernel(int* inputs, int* targets, const uint16_t* rows, int B, int T) {
  GRID_STRIDE(i, long(B) * T) {
    long b = i / T, t = i % T;
    inputs[i] = rows[b * (T + 1) + t];
    targets[i] = rows[b * (T + 1) + t + 1];
  }
}

template <typename T>
__global__ void embedding_forward_kernel(T* out, const int* tok, const T* table, int N, int C) {
  float f[8];
  GRID_STRIDE(i8, long(N) * C / 8) {
    const long i = i8 * 8, n = i / C, c = i % C;
    load8(f, table + long(tok[n]) * C + c);
    store8(out + i, f);
  }
}

// Embedding gradient, stage 1, grid (S): partials[k] = sum of the dout rows of
// segment k (at most EMBED_SEGMENT positions of one token), in position order.
// Threads over C in chunks of 8. Segments split the frequent tokens, so no
// block sums thousands of rows alone.
template <typename T>
__global__ void embedding_segment_sum_kernel(float* partials,  // (S, C)
                                             const T* dout,    // (N, C)
                                             TokenIndex idx, int C) {
  const int k = blockIdx.x, p0 = idx.seg_begin[k], p1 = idx.seg_begin[k + 1];
  for (int c = 8 * threadIdx.x; c < C; c += 8 * blockDim.x) {
    float acc[8] = {}, f[8];
    for (int p = p0; p < p1; p++) {
      load8(f, dout + long(idx.positions[p]) * C + c);
#pragma unroll
      for (int e = 0; e < 8; e++) acc[e] += f[e];
    }
    store8(partials + long(k) * C + c, acc);
  }
}

// Stage 2, grid (U): dtable[token] += its segments' partials, in order.
__global__ void embedding_token_sum_kernel(float* dtable,          // (V, C)
                                           const float* partials,  // (S, C)
                                           TokenIndex idx, int C) {
  const int u = blockIdx.x;
  float* row = dtable + long(idx.unique_tokens[u]) * C;
  for (int c = 8 * threadIdx.x; c < C; c += 8 * blockDim.x) {
    float acc[8], f[8];
    load8(acc, row + c);
    for (int k = idx.seg_first[u]; k < idx.seg_first[u + 1]; k++) {
      load8(f, partials + long(k) * C + c);
#pragma unroll
      for (int e = 0; e < 8; e++) acc[e] += f[e];
    }
    store8(row + c, acc);
  }
}

template <typename T>
__global__ void rmsnorm_forward_kernel(T* y, float* rstd, const T* x, int N, int C, float eps) {
  long r = warp_id();
  int lane = threadIdx.x % 32;
  if (r >= N) return;
  const T* xr = x + r * C;
  float ss = 0.f, f[8];
  for (int c = 8 * lane; c < C; c += 256) {  // C % 8 == 0: 16-byte accesses
    load8(f, xr + c);
#pragma unroll
    for (int e = 0; e < 8; e++) ss += f[e] * f[e];
  }
  const float rs = rsqrtf(warp_sum(ss) / C + eps);
  for (int c = 8 * lane; c < C; c += 256) {  // the row is still in L1
    load8(f, xr + c);
#pragma unroll
    for (int e = 0; e < 8; e++) f[e] *= rs;
    store8(y + r * C + c, f);
  }
  if (lane == 0) rstd[r] = rs;
}

template <typename T>
__global__ void rmsnorm_backward_kernel(T* dx, const T* dres, const T* dy, const T* x,
                                        const float* rstd, int N, int C, const float* dy_scale) {
  long r = warp_id();
  int lane = threadIdx.x % 32;
  if (r >= N) return;
  const float rs = rstd[r], gs = dy_scale ? dy_scale[r] * rs : rs;  // linear in dy: scale the result
  float dot = 0.f, fy[8], fx[8], fr[8];
  for (int c = 8 * lane; c < C; c += 256) {  // C % 8 == 0: 16-byte accesses
    load8(fy, dy + r * C + c);
    load8(fx, x + r * C + c);
#pragma unroll
    for (int e = 0; e < 8; e++) dot += fy[e] * fx[e];
  }
  dot = warp_sum(dot) * rs / C;
  for (int c = 8 * lane; c < C; c += 256) {  // the row is still in L1
    const long i = r * C + c;
    load8(fy, dy + i);
    load8(fx, x + i);
    if (dres) load8(fr, dres + i);
#pragma unroll
    for (int e = 0; e < 8; e++) fy[e] = (dres ? fr[e] : 0.f) + gs * (fy[e] - fx[e] * rs * dot);
    store8(dx + i, fy);
  }
}

// A value as T stores it (the mixed residual is saved in T, and the norm reads what is saved).
template <typename T>
__device__ __forceinline__ float round_to(float x) { return to_f(from_f<T>(x)); }

// xm = a x + b x0 as T stores it, with the rounding spelled out: the backward recomputes xm
// from x and x0 (which it reads anyway) rather than reading it, and must get the same bits.
template <typename T>
__device__ __forceinline__ float mixed(float a, float x, float b, float x0) {
  return round_to<T>(__fmaf_rn(a, x, __fmul_rn(b, x0)));
}

// One warp per row: xm = a x + b x0 (rounded to T), then its RMSNorm; the second pass
// recomputes xm from x and x0, which are still in L1.
template <typename T>
__global__ void mix_rmsnorm_forward_kernel(T* xm, T* y, float* rstd, const T* x, const T* x0,
                                           const float* lam_r, const float* lam_0, int N, int C, float eps) {
  const long r = warp_id();
  const int lane = threadIdx.x % 32;
  if (r >= N) return;
  const float a = lam_r[0], b = lam_0[0];
  float ss = 0.f, fx[8], f0[8];
  for (int c = 8 * lane; c < C; c += 256) {  // C % 8 == 0: 16-byte accesses
    load8(fx, x + r * C + c);
    load8(f0, x0 + r * C + c);
#pragma unroll
    for (int e = 0; e < 8; e++) {
      fx[e] = mixed<T>(a, fx[e], b, f0[e]);
      ss += fx[e] * fx[e];
    }
    store8(xm + r * C + c, fx);
  }
  const float rs = rsqrtf(warp_sum(ss) / C + eps);
  for (int c = 8 * lane; c < C; c += 256) {
    load8(fx, x + r * C + c);
    load8(f0, x0 + r * C + c);
#pragma unroll
    for (int e = 0; e < 8; e++) fx[e] = mixed<T>(a, fx[e], b, f0[e]) * rs;
    store8(y + r * C + c, fx);
  }
  if (lane == 0) rstd[r] = rs;
}

// PARTIAL_BLOCKS blocks whose warps stride over the rows (a fixed grid: the lambda sums are
// reproducible). Per row: g = dres + rmsnorm_backward(dy) with xm recomputed from x and x0
// (one tensor fewer to read), rounded to T; dx = a g (dx may be dres); dx0 += b g (READ_DX0
// false: dx0 = b g; FOLD: dx = a g + dx0 + b g, dx0 not written); the block's sums of g x and
// g x0 go to partials.
template <typename T, bool READ_DX0, bool FOLD>
__global__ void mix_rmsnorm_backward_kernel(T* dx, T* dx0, float* partials, const T* dres, const T* dy,
                                            const float* rstd, const T* x, const T* x0, const float* lam_r,
                                            const float* lam_0, int N, int C) {
  const int lane = threadIdx.x % 32;
  const long warps = long(gridDim.x) * blockDim.x / 32;
  const float a = lam_r[0], b = lam_0[0];
  float sr = 0.f, s0 = 0.f;
  for (long r = warp_id(); r < N; r += warps) {
    const float rs = rstd[r];
    float dot = 0.f, fy[8], fx[8], f0[8];
    for (int c = 8 * lane; c < C; c += 256) {
      load8(fy, dy + r * C + c);
      load8(fx, x + r * C + c);
      load8(f0, x0 + r * C + c);
#pragma unroll
      for (int e = 0; e < 8; e++) dot += fy[e] * mixed<T>(a, fx[e], b, f0[e]);
    }
    dot = warp_sum(dot) * rs / C;
    for (int c = 8 * lane; c < C; c += 256) {  // dy, x and x0 are still in L1
      const long i = r * C + c;
      float g[8], d0[8] = {};
      load8(fy, dy + i);
      load8(fx, x + i);
      load8(f0, x0 + i);
      load8(g, dres + i);
      if (READ_DX0) load8(d0, dx0 + i);
#pragma unroll
      for (int e = 0; e < 8; e++) {
        const float xm = mixed<T>(a, fx[e], b, f0[e]);
        g[e] = round_to<T>(g[e] + rs * (fy[e] - xm * rs * dot));
        sr += g[e] * fx[e];
        s0 += g[e] * f0[e];
        d0[e] += b * g[e];
        g[e] = FOLD ? a * g[e] + d0[e] : a * g[e];
      }
      if (!FOLD) store8(dx0 + i, d0);
      store8(dx + i, g);
    }
  }
  sr = block_sum(sr);
  s0 = block_sum(s0);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = sr;
    partials[PARTIAL_BLOCKS + blockIdx.x] = s0;
  }
}

// One block: out[k] += sum of partials[k * count .. (k+1) * count).
__global__ void sum_partials_kernel(float* out0, float* out1, const float* partials, int count) {
  float s0 = 0.f, s1 = 0.f;
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    s0 += partials[i];
    s1 += partials[count + i];
  }
  s0 = block_sum(s0);
  s1 = block_sum(s1);
  if (threadIdx.x == 0) {
    out0[0] += s0;
    out1[0] += s1;
  }
}

// Lanes per (row, head); pairs (f, f + D/2) rotate together. The forward moves 8 features of
// each half a lane at a time (16-byte bf16 accesses), the backward 4 (8-byte): measured faster
// each way on H200 (the backward with 8 lanes of 8 took 0.52 ms a call against 0.49).
constexpr int ROPE_FWD_LANES = 8, ROPE_BWD_LANES = 16;

template <typename T>
__global__ void rope_qknorm_forward_kernel(T* out, float* rstd, const T* in, const float* cos_sin,
                                           int rows, int T_, int heads, int D, long ld, float eps) {
  const long w = (long(blockIdx.x) * blockDim.x + threadIdx.x) / ROPE_FWD_LANES;  // (row, head)
  const int li = threadIdx.x % ROPE_FWD_LANES;
  if (w >= long(rows) * heads) return;
  const int pos = int((w / heads) % T_), half = D / 2;
  const float* cs = cos_sin + long(pos) * half;
  const float* sn = cos_sin + long(T_) * half + long(pos) * half;
  const long at = (w / heads) * ld + (w % heads) * D;
  const T* x = in + at;  // every lane reads its features before it writes them: out may be in
  T* y = out + at;
  constexpr int MAXP = ROPE_MAX_D / 2 / (8 * ROPE_FWD_LANES);  // 8-feature chunks of each half per lane
  float y1[MAXP][8], y2[MAXP][8];
  float ss = 0.f;
#pragma unroll
  for (int j = 0; j < MAXP; j++) {
    const int f = 8 * li + 8 * ROPE_FWD_LANES * j;
    if (f >= half) break;
    float a[8], b[8], c[8], s[8];
    load8(a, x + f);
    load8(b, x + f + half);
    load8(c, cs + f);
    load8(s, sn + f);
#pragma unroll
    for (int e = 0; e < 8; e++) {
      y1[j][e] = a[e] * c[e] + b[e] * s[e], y2[j][e] = -a[e] * s[e] + b[e] * c[e];
      ss += y1[j][e] * y1[j][e] + y2[j][e] * y2[j][e];
    }
  }
  const float rs = rsqrtf(lane_group_sum<ROPE_FWD_LANES>(ss) / D + eps);
#pragma unroll
  for (int j = 0; j < MAXP; j++) {
    const int f = 8 * li + 8 * ROPE_FWD_LANES * j;
    if (f >= half) break;
#pragma unroll
    for (int e = 0; e < 8; e++) y1[j][e] *= rs, y2[j][e] *= rs;
    store8(y + f, y1[j]);
    store8(y + f + half, y2[j]);
  }
  if (li == 0) rstd[w] = rs;
}

template <typename T>
__global__ void rope_qknorm_backward_kernel(T* din, const T* dout, const T* out, const float* rstd,
                                            const float* cos_sin, int rows, int T_, int heads,
                                            int D, long ld) {
  const long w = (long(blockIdx.x) * blockDim.x + threadIdx.x) / ROPE_BWD_LANES;  // (row, head)
  const int li = threadIdx.x % ROPE_BWD_LANES;
  if (w >= long(rows) * heads) return;
  const int pos = int((w / heads) % T_), half = D / 2;
  const float* cs = cos_sin + long(pos) * half;
  const float* sn = cos_sin + long(T_) * half + long(pos) * half;
  const float rs = rstd[w];
  const long at = (w / heads) * ld + (w % heads) * D;
  const T *dy = dout + at, *y = out + at;  // read before din is written: din may be dout
  constexpr int MAXP = ROPE_MAX_D / 2 / (4 * ROPE_BWD_LANES);
  float g1[MAXP][4], g2[MAXP][4], y1[MAXP][4], y2[MAXP][4];
  float dot = 0.f;
#pragma unroll
  for (int j = 0; j < MAXP; j++) {
    const int f = 4 * li + 4 * ROPE_BWD_LANES * j;
    if (f >= half) break;
    load4(g1[j], dy + f);
    load4(g2[j], dy + f + half);
    load4(y1[j], y + f);
    load4(y2[j], y + f + half);
#pragma unroll
    for (int e = 0; e < 4; e++) dot += g1[j][e] * y1[j][e] + g2[j][e] * y2[j][e];
  }
  dot = lane_group_sum<ROPE_BWD_LANES>(dot) / D;
#pragma unroll
  for (int j = 0; j < MAXP; j++) {
    const int f = 4 * li + 4 * ROPE_BWD_LANES * j;
    if (f >= half) break;
    float c[4], s[4], d1[4], d2[4];
    load4(c, cs + f);
    load4(s, sn + f);
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const float a = rs * (g1[j][e] - y1[j][e] * dot), b = rs * (g2[j][e] - y2[j][e] * dot);
      d1[e] = a * c[e] - b * s[e], d2[e] = a * s[e] + b * c[e];
    }
    store4(din + at + f, d1);
    store4(din + at + f + half, d2);
  }
}

__device__ __forceinline__ float sigmoidf(float x) { return 1.f / (1.f + expf(-x)); }

template <typename T>
__global__ void ve_gate_forward_kernel(T* v, const T* logits, const T* ve_table, const int* tok,
                                       int N, int Hkv, int D, long ld) {
  const long width = long(Hkv) * D;
  float fv[8], fe[8];
  GRID_STRIDE(i8, long(N) * width / 8) {  // D % 8 == 0: a chunk lies in one head
    const long i = 8 * i8, n = i / width, c = i % width;
    const float gate = 2.f * sigmoidf(to_f(logits[n * Hkv + c / D]));
    load8(fv, v + n * ld + c);
    load8(fe, ve_table + long(tok[n]) * width + c);
#pragma unroll
    for (int e = 0; e < 8; e++) fv[e] += gate * fe[e];
    store8(v + n * ld + c, fv);
  }
}

// Sixteen lanes per (n, kv head), 8 features a lane at a time (16-byte bf16 accesses).
template <typename T>
__global__ void ve_gate_backward_kernel(T* dlogits, T* dve, const T* dv, const T* logits,
                                        const T* ve_table, const int* tok, int N, int Hkv, int D,
                                        long ld) {
  const long w = (long(blockIdx.x) * blockDim.x + threadIdx.x) / 16;
  const int li = threadIdx.x % 16;
  if (w >= long(N) * Hkv) return;
  const long n = w / Hkv, width = long(Hkv) * D;
  const T* ve = ve_table + long(tok[n]) * width + (w % Hkv) * D;
  const float sg = sigmoidf(to_f(logits[w]));
  float dgate = 0.f, g[8], e[8];
  for (int d = 8 * li; d < D; d += 128) {  // D % 8 == 0
    load8(g, dv + n * ld + (w % Hkv) * D + d);
    load8(e, ve + d);
#pragma unroll
    for (int k = 0; k < 8; k++) {
      dgate += g[k] * e[k];
      g[k] *= 2.f * sg;
    }
    store8(dve + w * D + d, g);
  }
  dgate = lane_group_sum<16>(dgate);
  if (li == 0) dlogits[w] = from_f<T>(dgate * 2.f * sg * (1.f - sg));
}

template <typename T>
__global__ void relu2_forward_kernel(T* a, const T* h, long n) {
  float f[8];
  GRID_STRIDE(i8, n / 8) {
    load8(f, h + 8 * i8);
#pragma unroll
    for (int e = 0; e < 8; e++) f[e] = fmaxf(f[e], 0.f) * fmaxf(f[e], 0.f);
    store8(a + 8 * i8, f);
  }
}

template <typename T>
__global__ void relu2_backward_kernel(T* dh, const T* a, long n) {
  float g[8], f[8];
  GRID_STRIDE(i8, n / 8) {
    load8(g, dh + 8 * i8);
    load8(f, a + 8 * i8);
#pragma unroll
    for (int e = 0; e < 8; e++) g[e] *= 2.f * relu_from_square(f[e]);
    store8(dh + 8 * i8, g);
  }
}

// One block of CE_THREADS per row; each thread holds CE_PER consecutive logits in
// registers (8-wide loads), so the logits are read once and written once as
// gradients; one exp per logit. 1024 threads of 8 measured faster than 512 of 16, 256
// of 32 and several rows a block (262144 x 8192, on H200). bf16 rows use
// the hardware tanh (tanh.approx, relative error ~2^-11, below the bf16 rounding of the
// logits themselves); fp32 rows (the --check model) the exact tanhf.
constexpr int CE_THREADS = 1024, CE_PER = 8;  // V <= CE_PER * CE_THREADS = 8192
template <typename T>
__device__ __forceinline__ float softcap_tanh(float x) { return std::is_same_v<T, float> ? tanhf(x) : tanh_approx(x); }

// Block-wide sum over CE_THREADS; every thread gets the result.
__device__ __forceinline__ float ce_block_sum(float v, float* red) {
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float r = 0.f;
  for (int w = 0; w < CE_THREADS / 32; w++) r += red[w];
  return r;
}

template <typename T>
__global__ void __launch_bounds__(CE_THREADS) softcap_ce_kernel(T* dlogits, float* losses, const T* logits,
                                                                const int* targets, int V, float cap, float dscale) {
  __shared__ float red[CE_THREADS / 32];
  const long r = blockIdx.x;
  const int i0 = CE_PER * threadIdx.x;
  const bool mine = i0 < V;  // V % CE_PER == 0 (checked by the launcher)
  const float inv_cap = 1.f / cap;
  float z[CE_PER], e[CE_PER];
  if (mine) {
#pragma unroll
    for (int k = 0; k < CE_PER; k += 8) load8(z + k, logits + r * V + i0 + k);
#pragma unroll
    for (int k = 0; k < CE_PER; k++) z[k] = cap * softcap_tanh<T>(z[k] * inv_cap);
  }
  // The soft-capped logits lie in [-cap, cap], so cap stands in for the row's maximum:
  // exp(z - cap) neither overflows nor underflows (>= e^(-2 cap)), and the sum is the only
  // block reduction.
  const float mx = cap;
  float se = 0.f;
  if (mine) {
#pragma unroll
    for (int k = 0; k < CE_PER; k++) {
      e[k] = exp2f((z[k] - mx) * LOG2E);
      se += e[k];
    }
  }
  se = ce_block_sum(se, red);
  const int tgt = targets[r];
  if (threadIdx.x == 0 && (tgt < 0 || tgt >= V)) losses[r] = NAN;  // no thread holds it
  const bool has_target = mine && tgt >= i0 && tgt < i0 + CE_PER;
  if (has_target) {
    float zt = 0.f;
#pragma unroll
    for (int k = 0; k < CE_PER; k++) zt = k == tgt - i0 ? z[k] : zt;
    losses[r] = mx + logf(se) - zt;
  }
  if (!dlogits || !mine) return;
  const float inv_se = 1.f / se;
#pragma unroll
  for (int k = 0; k < CE_PER; k++) {
    const float th = z[k] * inv_cap;
    const float p = e[k] * inv_se - (i0 + k == tgt ? 1.f : 0.f);
    e[k] = dscale * p * (1.f - th * th);
  }
#pragma unroll
  for (int k = 0; k < CE_PER; k += 8) store8(dlogits + r * V + i0 + k, e + k);
}

template <typename T>
__global__ void cast_kernel(T* out, const float* in, long n) {
  GRID_STRIDE(i, n) { out[i] = from_f<T>(in[i]); }
}

__global__ void sum_into_kernel(float* out, const float* in, long n) {
  float s = 0.f;
  for (long i = threadIdx.x; i < n; i += BLOCK) s += in[i];
  s = block_sum(s);
  if (threadIdx.x == 0) out[0] += s;
}

}  // namespace

void split_rows(int* inputs, int* targets, const uint16_t* rows, int B, int T, cudaStream_t st) {
  split_rows_kernel<<<grid_for(long(B) * T), BLOCK, 0, st>>>(inputs, targets, rows, B, T);
  cudaLaunchCheck();
}

template <typename T>
void embedding_forward(T* out, const int* tok, const T* table, int N, int C, cudaStream_t st) {
  require_multiple(C, 8, "embedding_forward");
  embedding_forward_kernel<<<grid_for(long(N) * C / 8), BLOCK, 0, st>>>(out, tok, table, N, C);
  cudaLaunchCheck();
}

template <typename T>
void embedding_backward(float* dtable, const T* dout, TokenIndex idx, int C, float* partials,
                        cudaStream_t st) {
  if (idx.U == 0) return;
  require_multiple(C, 8, "embedding_backward");
  const int threads = std::min(256, ceil_div(C, 8 * 32) * 32);
  embedding_segment_sum_kernel<<<idx.S, threads, 0, st>>>(partials, dout, idx, C);
  cudaLaunchCheck();
  embedding_token_sum_kernel<<<idx.U, threads, 0, st>>>(dtable, partials, idx, C);
  cudaLaunchCheck();
}

template <typename T>
void rmsnorm_forward(T* y, float* rstd, const T* x, int N, int C, float eps, cudaStream_t st) {
  require_multiple(C, 8, "rmsnorm_forward");
  rmsnorm_forward_kernel<<<warp_grid(N), BLOCK, 0, st>>>(y, rstd, x, N, C, eps);
  cudaLaunchCheck();
}

template <typename T>
void rmsnorm_backward(T* dx, const T* dres, const T* dy, const T* x, const float* rstd, int N, int C,
                      cudaStream_t st, const float* dy_scale) {
  require_multiple(C, 8, "rmsnorm_backward");
  rmsnorm_backward_kernel<<<warp_grid(N), BLOCK, 0, st>>>(dx, dres, dy, x, rstd, N, C, dy_scale);
  cudaLaunchCheck();
}

template <typename T>
void residual_mix_rmsnorm_forward(T* xm, T* y, float* rstd, const T* x, const T* x0, const float* lam_r,
                                  const float* lam_0, int N, int C, float eps, cudaStream_t st) {
  require_multiple(C, 8, "residual_mix_rmsnorm_forward");
  mix_rmsnorm_forward_kernel<<<warp_grid(N), BLOCK, 0, st>>>(xm, y, rstd, x, x0, lam_r, lam_0, N, C, eps);
  cudaLaunchCheck();
}

template <typename T>
void residual_mix_rmsnorm_backward(T* dx, T* dx0, float* dlam_r, float* dlam_0, float* partials,
                                   const T* dres, const T* dy, const float* rstd, const T* x, const T* x0,
                                   const float* lam_r, const float* lam_0, int N, int C, cudaStream_t st,
                                   X0Grad x0_grad) {
  require_multiple(C, 8, "residual_mix_rmsnorm_backward");
  auto kernel = x0_grad.fold ? (x0_grad.started ? mix_rmsnorm_backward_kernel<T, true, true>
                                                : mix_rmsnorm_backward_kernel<T, false, true>)
                             : (x0_grad.started ? mix_rmsnorm_backward_kernel<T, true, false>
                                                : mix_rmsnorm_backward_kernel<T, false, false>);
  kernel<<<PARTIAL_BLOCKS, BLOCK, 0, st>>>(dx, dx0, partials, dres, dy, rstd, x, x0, lam_r, lam_0, N, C);
  cudaLaunchCheck();
  sum_partials_kernel<<<1, BLOCK, 0, st>>>(dlam_r, dlam_0, partials, PARTIAL_BLOCKS);
  cudaLaunchCheck();
}

template <typename T>
void rope_qknorm_forward(T* out, float* rstd, const T* in, const float* cos_sin, int rows, int T_,
                         int heads, int D, long ld, float eps, cudaStream_t st) {
  require_rope_head_dim(D);
  require_row_stride(ld, long(heads) * D, "rope_qknorm_forward");
  rope_qknorm_forward_kernel<<<ceil_div(long(rows) * heads * ROPE_FWD_LANES, BLOCK), BLOCK, 0, st>>>(
      out, rstd, in, cos_sin, rows, T_, heads, D, ld, eps);
  cudaLaunchCheck();
}

template <typename T>
void rope_qknorm_backward(T* din, const T* dout, const T* out, const float* rstd,
                          const float* cos_sin, int rows, int T_, int heads, int D, long ld,
                          cudaStream_t st) {
  require_rope_head_dim(D);
  require_row_stride(ld, long(heads) * D, "rope_qknorm_backward");
  rope_qknorm_backward_kernel<<<ceil_div(long(rows) * heads * ROPE_BWD_LANES, BLOCK), BLOCK, 0, st>>>(
      din, dout, out, rstd, cos_sin, rows, T_, heads, D, ld);
  cudaLaunchCheck();
}

template <typename T>
void ve_gate_forward(T* v, const T* logits, const T* ve_table, const int* tok, int N, int Hkv, int D,
                     long ld, cudaStream_t st) {
  require_multiple(D, 8, "ve_gate_forward");
  require_row_stride(ld, long(Hkv) * D, "ve_gate_forward");
  ve_gate_forward_kernel<<<grid_for(long(N) * Hkv * D / 8), BLOCK, 0, st>>>(v, logits, ve_table, tok, N,
                                                                        Hkv, D, ld);
  cudaLaunchCheck();
}

template <typename T>
void ve_gate_backward(T* dlogits, T* dve, const T* dv, const T* logits, const T* ve_table,
                      const int* tok, int N, int Hkv, int D, long ld, cudaStream_t st) {
  require_multiple(D, 8, "ve_gate_backward");
  require_row_stride(ld, long(Hkv) * D, "ve_gate_backward");
  ve_gate_backward_kernel<<<ceil_div(long(N) * Hkv * 16, BLOCK), BLOCK, 0, st>>>(dlogits, dve, dv, logits,
                                                                                ve_table, tok, N, Hkv, D, ld);
  cudaLaunchCheck();
}

template <typename T>
void relu2_forward(T* a, const T* h, long n, cudaStream_t st) {
  require_multiple(n, 8, "relu2_forward");
  relu2_forward_kernel<<<grid_for(n / 8), BLOCK, 0, st>>>(a, h, n);
  cudaLaunchCheck();
}

template <typename T>
void relu2_backward(T* dh, const T* a, long n, cudaStream_t st) {
  require_multiple(n, 8, "relu2_backward");
  relu2_backward_kernel<<<grid_for(n / 8), BLOCK, 0, st>>>(dh, a, n);
  cudaLaunchCheck();
}

template <typename T>
void softcap_cross_entropy(T* dlogits, float* losses, const T* logits, const int* targets, int N,
                           int V, float cap, float dscale, cudaStream_t st) {
  if (V > CE_PER * CE_THREADS || V % CE_PER != 0)
    throw std::invalid_argument("softcap_cross_entropy: vocabulary " + std::to_string(V) + " must be a multiple of " +
                                std::to_string(CE_PER) + ", at most " + std::to_string(CE_PER * CE_THREADS));
  softcap_ce_kernel<T><<<N, CE_THREADS, 0, st>>>(dlogits, losses, logits, targets, V, cap, dscale);
  cudaLaunchCheck();
}

template <typename T>
void cast_from_float(T* out, const float* in, long n, cudaStream_t st) {
  cast_kernel<<<grid_for(n), BLOCK, 0, st>>>(out, in, n);
  cudaLaunchCheck();
}

void sum_into(float* out, const float* in, long n, cudaStream_t st) {
  sum_into_kernel<<<1, BLOCK, 0, st>>>(out, in, n);
  cudaLaunchCheck();
}

#define INSTANTIATE(T)                                                                          \
  template void embedding_forward<T>(T*, const int*, const T*, int, int, cudaStream_t);        \
  template void embedding_backward<T>(float*, const T*, TokenIndex, int, float*, cudaStream_t); \
  template void rmsnorm_forward<T>(T*, float*, const T*, int, int, float, cudaStream_t);       \
  template void rmsnorm_backward<T>(T*, const T*, const T*, const T*, const float*, int, int,  \
                                    cudaStream_t, const float*);                               \
  template void residual_mix_rmsnorm_forward<T>(T*, T*, float*, const T*, const T*,           \
                                                const float*, const float*, int, int, float,   \
                                                cudaStream_t);                                 \
  template void residual_mix_rmsnorm_backward<T>(T*, T*, float*, float*, float*, const T*,     \
                                                 const T*, const float*, const T*, const T*,   \
                                                 const float*, const float*, int, int,         \
                                                 cudaStream_t, X0Grad);                        \
  template void rope_qknorm_forward<T>(T*, float*, const T*, const float*, int, int, int, int, \
                                       long, float, cudaStream_t);                             \
  template void rope_qknorm_backward<T>(T*, const T*, const T*, const float*, const float*,    \
                                        int, int, int, int, long, cudaStream_t);               \
  template void ve_gate_forward<T>(T*, const T*, const T*, const int*, int, int, int, long,    \
                                   cudaStream_t);                                              \
  template void ve_gate_backward<T>(T*, T*, const T*, const T*, const T*, const int*, int,     \
                                    int, int, long, cudaStream_t);                             \
  template void relu2_forward<T>(T*, const T*, long, cudaStream_t);                            \
  template void relu2_backward<T>(T*, const T*, long, cudaStream_t);                           \
  template void softcap_cross_entropy<T>(T*, float*, const T*, const int*, int, int,       \
                                         float, float, cudaStream_t);                          \
  template void cast_from_float<T>(T*, const float*, long, cudaStream_t);
INSTANTIATE(float)
INSTANTIATE(bf16)
