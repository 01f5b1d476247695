// Kernels of layers.cuh, then their launchers. Row kernels use one warp per row
// (rows of C = model_dim or D = head_dim elements); elementwise kernels one
// thread per element with a grid-stride loop.
#include "model/layers.cuh"

namespace {

constexpr int BLOCK = 256;
constexpr int PARTIAL_BLOCKS = 1024;  // residual_mix_backward's fixed grid (deterministic sums)

int grid_for(long n) { return int(std::min<long>((n + BLOCK - 1) / BLOCK, 65536L * 8)); }
int warp_grid(long rows) { return ceil_div(rows * 32, BLOCK); }
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
  GRID_STRIDE(i, long(N) * C) { out[i] = table[long(tok[i / C]) * C + i % C]; }
}

// grid (U), threads over C: one token's rows summed in position order.
template <typename T>
__global__ void embedding_backward_kernel(float* dtable, const T* dout, TokenIndex idx, int C) {
  int u = blockIdx.x;
  long row = long(idx.unique_tokens[u]) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = 0.f;
#pragma unroll 8
    for (int p = idx.offsets[u]; p < idx.offsets[u + 1]; p++) acc += to_f(dout[long(idx.positions[p]) * C + c]);
    dtable[row + c] += acc;
  }
}

template <typename T>
__global__ void rmsnorm_forward_kernel(T* y, float* rstd, const T* x, int N, int C, float eps) {
  long r = warp_id();
  int lane = threadIdx.x % 32;
  if (r >= N) return;
  const T* xr = x + r * C;
  float ss = 0.f;
  for (int c = lane; c < C; c += 32) ss += to_f(xr[c]) * to_f(xr[c]);
  float rs = rsqrtf(warp_sum(ss) / C + eps);
  for (int c = lane; c < C; c += 32) y[r * C + c] = from_f<T>(to_f(xr[c]) * rs);
  if (lane == 0) rstd[r] = rs;
}

template <typename T>
__global__ void rmsnorm_backward_kernel(T* dx, const T* dres, const T* dy, const T* x,
                                        const float* rstd, int N, int C) {
  long r = warp_id();
  int lane = threadIdx.x % 32;
  if (r >= N) return;
  const float rs = rstd[r];
  float dot = 0.f;
  for (int c = lane; c < C; c += 32) dot += to_f(dy[r * C + c]) * to_f(x[r * C + c]) * rs;
  dot = warp_sum(dot) / C;
  for (int c = lane; c < C; c += 32) {
    long i = r * C + c;
    float g = rs * (to_f(dy[i]) - to_f(x[i]) * rs * dot);
    dx[i] = from_f<T>(dres ? to_f(dres[i]) + g : g);
  }
}

template <typename T>
__global__ void residual_mix_forward_kernel(T* out, const T* x, const T* x0, const float* lam_r,
                                            const float* lam_0, long n) {
  const float a = lam_r[0], b = lam_0[0];
  GRID_STRIDE(i, n) { out[i] = from_f<T>(a * to_f(x[i]) + b * to_f(x0[i])); }
}

template <typename T>
__global__ void residual_mix_backward_kernel(T* dx, T* dx0, float* partials, const T* dout,
                                             const T* x, const T* x0, const float* lam_r,
                                             const float* lam_0, long n) {
  const float a = lam_r[0], b = lam_0[0];
  float sr = 0.f, s0 = 0.f;
  GRID_STRIDE(i, n) {
    float g = to_f(dout[i]);
    sr += g * to_f(x[i]);
    s0 += g * to_f(x0[i]);
    dx0[i] = from_f<T>(to_f(dx0[i]) + b * g);
    dx[i] = from_f<T>(a * g);
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

// One warp per (row, head); pairs (f, f + D/2) rotate together.
template <typename T>
__global__ void rope_qknorm_forward_kernel(T* out, float* rstd, const T* in, const float* cos_sin,
                                           int rows, int T_, int heads, int D, float eps) {
  long w = warp_id();
  int lane = threadIdx.x % 32;
  if (w >= long(rows) * heads) return;
  const int pos = int((w / heads) % T_), half = D / 2;
  const float* cs = cos_sin + long(pos) * half;
  const float* sn = cos_sin + long(T_) * half + long(pos) * half;
  const T* x = in + w * D;
  float ss = 0.f;
  for (int f = lane; f < half; f += 32) {
    float x1 = to_f(x[f]), x2 = to_f(x[f + half]);
    float y1 = x1 * cs[f] + x2 * sn[f], y2 = -x1 * sn[f] + x2 * cs[f];
    ss += y1 * y1 + y2 * y2;
  }
  float rs = rsqrtf(warp_sum(ss) / D + eps);
  for (int f = lane; f < half; f += 32) {
    float x1 = to_f(x[f]), x2 = to_f(x[f + half]);
    out[w * D + f] = from_f<T>((x1 * cs[f] + x2 * sn[f]) * rs);
    out[w * D + f + half] = from_f<T>((-x1 * sn[f] + x2 * cs[f]) * rs);
  }
  if (lane == 0) rstd[w] = rs;
}

template <typename T>
__global__ void rope_qknorm_backward_kernel(T* din, const T* dout, const T* out, const float* rstd,
                                            const float* cos_sin, int rows, int T_, int heads,
                                            int D) {
  long w = warp_id();
  int lane = threadIdx.x % 32;
  if (w >= long(rows) * heads) return;
  const int pos = int((w / heads) % T_), half = D / 2;
  const float* cs = cos_sin + long(pos) * half;
  const float* sn = cos_sin + long(T_) * half + long(pos) * half;
  const float rs = rstd[w];
  float dot = 0.f;
  for (int d = lane; d < D; d += 32) dot += to_f(dout[w * D + d]) * to_f(out[w * D + d]);
  dot = warp_sum(dot) / D;
  for (int f = lane; f < half; f += 32) {
    float g1 = rs * (to_f(dout[w * D + f]) - to_f(out[w * D + f]) * dot);
    float g2 = rs * (to_f(dout[w * D + f + half]) - to_f(out[w * D + f + half]) * dot);
    din[w * D + f] = from_f<T>(g1 * cs[f] - g2 * sn[f]);
    din[w * D + f + half] = from_f<T>(g1 * sn[f] + g2 * cs[f]);
  }
}

__device__ __forceinline__ float sigmoidf(float x) { return 1.f / (1.f + expf(-x)); }

template <typename T>
__global__ void ve_gate_forward_kernel(T* v, const T* logits, const T* ve_table, const int* tok,
                                       int N, int Hkv, int D) {
  const long width = long(Hkv) * D;
  GRID_STRIDE(i, long(N) * width) {
    long n = i / width, c = i % width;
    float gate = 2.f * sigmoidf(to_f(logits[n * Hkv + c / D]));
    v[i] = from_f<T>(to_f(v[i]) + gate * to_f(ve_table[long(tok[n]) * width + c]));
  }
}

// One warp per (n, kv head).
template <typename T>
__global__ void ve_gate_backward_kernel(T* dlogits, T* dve, const T* dv, const T* logits,
                                        const T* ve_table, const int* tok, int N, int Hkv, int D) {
  long w = warp_id();
  int lane = threadIdx.x % 32;
  if (w >= long(N) * Hkv) return;
  const long n = w / Hkv, width = long(Hkv) * D;
  const T* ve = ve_table + long(tok[n]) * width + (w % Hkv) * D;
  const float sg = sigmoidf(to_f(logits[w]));
  float dgate = 0.f;
  for (int d = lane; d < D; d += 32) {
    float g = to_f(dv[w * D + d]);
    dgate += g * to_f(ve[d]);
    dve[w * D + d] = from_f<T>(2.f * sg * g);
  }
  dgate = warp_sum(dgate);
  if (lane == 0) dlogits[w] = from_f<T>(dgate * 2.f * sg * (1.f - sg));
}

template <typename T>
__global__ void relu2_forward_kernel(T* a, const T* h, long n) {
  GRID_STRIDE(i, n) {
    float x = fmaxf(to_f(h[i]), 0.f);
    a[i] = from_f<T>(x * x);
  }
}

template <typename T>
__global__ void relu2_backward_kernel(T* dh, const T* h, long n) {
  GRID_STRIDE(i, n) { dh[i] = from_f<T>(to_f(dh[i]) * 2.f * fmaxf(to_f(h[i]), 0.f)); }
}

// One block of BLOCK threads per row; the soft-capped row stays in registers
// (CE_PER values a thread), so the logits are read once.
constexpr int CE_PER = 32;  // V <= CE_PER * BLOCK = 8192
template <typename T>
__global__ void softcap_ce_kernel(T* dlogits, float* losses, const float* logits, const int* targets,
                                  int V, float cap, float dscale) {
  __shared__ float red[BLOCK / 32];
  __shared__ float bcast;
  const long r = blockIdx.x;
  const float* l = logits + r * V;
  const float inv_cap = 1.f / cap;
  float z[CE_PER];
  float mx = -INFINITY;
#pragma unroll
  for (int k = 0; k < CE_PER; k++) {
    int i = threadIdx.x + k * BLOCK;
    z[k] = i < V ? cap * tanhf(l[i] * inv_cap) : -INFINITY;
    mx = fmaxf(mx, z[k]);
  }
  mx = warp_max(mx);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = mx;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = -INFINITY;
    for (int w = 0; w < BLOCK / 32; w++) m = fmaxf(m, red[w]);
    bcast = m;
  }
  __syncthreads();
  mx = bcast;
  float se = 0.f;
#pragma unroll
  for (int k = 0; k < CE_PER; k++) se += expf(z[k] - mx);  // exp(-inf) = 0 past V
  se = block_sum(se);
  if (threadIdx.x == 0) bcast = se;
  __syncthreads();
  se = bcast;
  const int tgt = targets[r];
  const float lse = mx + logf(se);
  if (threadIdx.x == 0) losses[r] = lse - cap * tanhf(l[tgt] * inv_cap);
  if (!dlogits) return;
#pragma unroll
  for (int k = 0; k < CE_PER; k++) {
    int i = threadIdx.x + k * BLOCK;
    if (i >= V) break;
    float th = z[k] * inv_cap;
    float p = expf(z[k] - lse) - (i == tgt ? 1.f : 0.f);
    dlogits[r * V + i] = from_f<T>(dscale * p * (1.f - th * th));
  }
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

template <typename T>
__global__ void add_kernel(T* out, const T* a, const T* b, long n) {
  GRID_STRIDE(i, n) { out[i] = from_f<T>(to_f(a[i]) + to_f(b[i])); }
}

}  // namespace

void split_rows(int* inputs, int* targets, const uint16_t* rows, int B, int T, cudaStream_t st) {
  split_rows_kernel<<<grid_for(long(B) * T), BLOCK, 0, st>>>(inputs, targets, rows, B, T);
  cudaLaunchCheck();
}

template <typename T>
void embedding_forward(T* out, const int* tok, const T* table, int N, int C, cudaStream_t st) {
  embedding_forward_kernel<<<grid_for(long(N) * C), BLOCK, 0, st>>>(out, tok, table, N, C);
  cudaLaunchCheck();
}

template <typename T>
void embedding_backward(float* dtable, const T* dout, TokenIndex idx, int C, cudaStream_t st) {
  if (idx.U == 0) return;
  embedding_backward_kernel<<<idx.U, BLOCK, 0, st>>>(dtable, dout, idx, C);
  cudaLaunchCheck();
}

template <typename T>
void rmsnorm_forward(T* y, float* rstd, const T* x, int N, int C, float eps, cudaStream_t st) {
  rmsnorm_forward_kernel<<<warp_grid(N), BLOCK, 0, st>>>(y, rstd, x, N, C, eps);
  cudaLaunchCheck();
}

template <typename T>
void rmsnorm_backward(T* dx, const T* dres, const T* dy, const T* x, const float* rstd, int N, int C,
                      cudaStream_t st) {
  rmsnorm_backward_kernel<<<warp_grid(N), BLOCK, 0, st>>>(dx, dres, dy, x, rstd, N, C);
  cudaLaunchCheck();
}

template <typename T>
void residual_mix_forward(T* out, const T* x, const T* x0, const float* lam_r, const float* lam_0,
                          long n, cudaStream_t st) {
  residual_mix_forward_kernel<<<grid_for(n), BLOCK, 0, st>>>(out, x, x0, lam_r, lam_0, n);
  cudaLaunchCheck();
}

template <typename T>
void residual_mix_backward(T* dx, T* dx0, float* dlam_r, float* dlam_0, float* partials,
                           const T* dout, const T* x, const T* x0, const float* lam_r,
                           const float* lam_0, long n, cudaStream_t st) {
  residual_mix_backward_kernel<<<PARTIAL_BLOCKS, BLOCK, 0, st>>>(dx, dx0, partials, dout, x, x0,
                                                                 lam_r, lam_0, n);
  cudaLaunchCheck();
  sum_partials_kernel<<<1, BLOCK, 0, st>>>(dlam_r, dlam_0, partials, PARTIAL_BLOCKS);
  cudaLaunchCheck();
}

template <typename T>
void rope_qknorm_forward(T* out, float* rstd, const T* in, const float* cos_sin, int rows, int T_,
                         int heads, int D, float eps, cudaStream_t st) {
  rope_qknorm_forward_kernel<<<warp_grid(long(rows) * heads), BLOCK, 0, st>>>(out, rstd, in, cos_sin,
                                                                            rows, T_, heads, D, eps);
  cudaLaunchCheck();
}

template <typename T>
void rope_qknorm_backward(T* din, const T* dout, const T* out, const float* rstd,
                          const float* cos_sin, int rows, int T_, int heads, int D, cudaStream_t st) {
  rope_qknorm_backward_kernel<<<warp_grid(long(rows) * heads), BLOCK, 0, st>>>(
      din, dout, out, rstd, cos_sin, rows, T_, heads, D);
  cudaLaunchCheck();
}

template <typename T>
void ve_gate_forward(T* v, const T* logits, const T* ve_table, const int* tok, int N, int Hkv, int D,
                     cudaStream_t st) {
  ve_gate_forward_kernel<<<grid_for(long(N) * Hkv * D), BLOCK, 0, st>>>(v, logits, ve_table, tok, N,
                                                                        Hkv, D);
  cudaLaunchCheck();
}

template <typename T>
void ve_gate_backward(T* dlogits, T* dve, const T* dv, const T* logits, const T* ve_table,
                      const int* tok, int N, int Hkv, int D, cudaStream_t st) {
  ve_gate_backward_kernel<<<warp_grid(long(N) * Hkv), BLOCK, 0, st>>>(dlogits, dve, dv, logits,
                                                                      ve_table, tok, N, Hkv, D);
  cudaLaunchCheck();
}

template <typename T>
void relu2_forward(T* a, const T* h, long n, cudaStream_t st) {
  relu2_forward_kernel<<<grid_for(n), BLOCK, 0, st>>>(a, h, n);
  cudaLaunchCheck();
}

template <typename T>
void relu2_backward(T* dh, const T* h, long n, cudaStream_t st) {
  relu2_backward_kernel<<<grid_for(n), BLOCK, 0, st>>>(dh, h, n);
  cudaLaunchCheck();
}

template <typename T>
void softcap_cross_entropy(T* dlogits, float* losses, const float* logits, const int* targets, int N,
                           int V, float cap, float dscale, cudaStream_t st) {
  if (V > CE_PER * BLOCK) {
    std::fprintf(stderr, "FAIL: softcap_cross_entropy supports a vocabulary of at most %d (got %d)\n", CE_PER * BLOCK, V);
    std::exit(1);
  }
  softcap_ce_kernel<<<N, BLOCK, 0, st>>>(dlogits, losses, logits, targets, V, cap, dscale);
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

template <typename T>
void add(T* out, const T* a, const T* b, long n, cudaStream_t st) {
  add_kernel<<<grid_for(n), BLOCK, 0, st>>>(out, a, b, n);
  cudaLaunchCheck();
}

#define INSTANTIATE(T)                                                                          \
  template void embedding_forward<T>(T*, const int*, const T*, int, int, cudaStream_t);        \
  template void embedding_backward<T>(float*, const T*, TokenIndex, int, cudaStream_t);        \
  template void rmsnorm_forward<T>(T*, float*, const T*, int, int, float, cudaStream_t);       \
  template void rmsnorm_backward<T>(T*, const T*, const T*, const T*, const float*, int, int,  \
                                    cudaStream_t);                                             \
  template void residual_mix_forward<T>(T*, const T*, const T*, const float*, const float*,    \
                                        long, cudaStream_t);                                   \
  template void residual_mix_backward<T>(T*, T*, float*, float*, float*, const T*, const T*,   \
                                         const T*, const float*, const float*, long,           \
                                         cudaStream_t);                                        \
  template void rope_qknorm_forward<T>(T*, float*, const T*, const float*, int, int, int, int, \
                                       float, cudaStream_t);                                   \
  template void rope_qknorm_backward<T>(T*, const T*, const T*, const float*, const float*,    \
                                        int, int, int, int, cudaStream_t);                     \
  template void ve_gate_forward<T>(T*, const T*, const T*, const int*, int, int, int,          \
                                   cudaStream_t);                                              \
  template void ve_gate_backward<T>(T*, T*, const T*, const T*, const T*, const int*, int,     \
                                    int, int, cudaStream_t);                                   \
  template void relu2_forward<T>(T*, const T*, long, cudaStream_t);                            \
  template void relu2_backward<T>(T*, const T*, long, cudaStream_t);                           \
  template void softcap_cross_entropy<T>(T*, float*, const float*, const int*, int, int,       \
                                         float, float, cudaStream_t);                          \
  template void cast_from_float<T>(T*, const float*, long, cudaStream_t);                      \
  template void add<T>(T*, const T*, const T*, long, cudaStream_t);
INSTANTIATE(float)
INSTANTIATE(bf16)
