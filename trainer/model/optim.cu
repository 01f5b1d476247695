// The optimizer kernels and their launchers (see optim.cuh for the contract):
// AdamW, and Muon's four stages: Nesterov momentum with the Frobenius norm,
// the Polar Express iteration (cuBLAS), NorMuon, and the cautious update.
// Sums of squares are reduced in a fixed order (per-block partials, then one
// ordered pass), never with float atomics, so every step is reproducible.
#include "model/optim.cuh"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace {

constexpr int THREADS = 256;
// Blocks per matrix in the norm pass: fixed by the shape, so the order of the
// sum of squares is too.
constexpr int NORM_BLOCKS = 128;

// Polar Express coefficients (a, b, c) for 5 iterations (Amsel et al. 2025,
// safety factor 2e-2, cushion 2), as the reference trainer uses them.
constexpr float POLAR_EXPRESS[MuonGroup::POLAR_EXPRESS_STEPS][3] = {
    {8.156554524902461f, -22.48329292557795f, 15.878769915207462f},
    {4.042929935166739f, -2.808917465908714f, 0.5000178451051316f},
    {3.8916678022926607f, -2.772484153217685f, 0.5060648178503393f},
    {3.285753657755655f, -2.3681294933425376f, 0.46449024233003106f},
    {2.3465413258596377f, -1.7097828382687081f, 0.42323551169305323f},
};
// X is divided by ||X||_F * this + POLAR_EPS, so its spectral norm is below 1.
constexpr float POLAR_NORM_MARGIN = 1.02f;
constexpr float POLAR_EPS = 1e-6f;
constexpr float NORMUON_EPS = 1e-10f;

// ----------------------------------------------------------------------------
// kernels

// torch.lerp's formula: a + w (b - a), written from the nearer end.
__device__ __forceinline__ float lerp(float a, float b, float w) {
  return fabsf(w) < 0.5f ? a + w * (b - a) : b - (b - a) * (1.0f - w);
}

// Sum over the block in a fixed order; every thread gets the result.
// blockDim.x must be a multiple of 32.
__device__ float block_sum(float v) {
  __shared__ float warp_sums[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // a previous call may still be reading warp_sums
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  return warp_sum(lane < warps ? warp_sums[lane] : 0.0f);
}

// TP, TM: the parameter's and the moments' type (float, or bf16 for the
// embedding tables, whose gradient is then rounded to bf16 as well).
template <typename TP, typename TM>
__global__ void adamw_kernel(TP* p,            // (n,)
                             const float* g,   // (n,)
                             TM* m,            // (n,)
                             TM* v,            // (n,)
                             bf16* p_bf16,     // (n,) or null
                             long n, float decay, float one_minus_beta1, float one_minus_beta2,
                             float eps, float step_size, float bias2) {
  long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float pi = to_f(p[i]) * decay;
  float gi = to_f(from_f<TM>(g[i]));
  TM mi = from_f<TM>(lerp(to_f(m[i]), gi, one_minus_beta1));
  TM vi = from_f<TM>(lerp(to_f(v[i]), gi * gi, one_minus_beta2));
  m[i] = mi;
  v[i] = vi;
  pi -= step_size * (to_f(mi) / (sqrtf(to_f(vi) / bias2) + eps));
  p[i] = from_f<TP>(pi);
  if (p_bf16) p_bf16[i] = __float2bfloat16(pi);
}

// Nesterov momentum; writes X = bf16(g') and each block's partial sum of X².
// grid (nb, count): blockIdx.y is the matrix.
__global__ void nesterov_kernel(const float* g,   // (count, numel)
                                float* buf,       // (count, numel)
                                bf16* x,          // (count, numel)
                                float* partials,  // (count, nb)
                                int numel, float mu) {
  const long base = long(blockIdx.y) * numel;
  float ss = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += gridDim.x * blockDim.x) {
    float gi = g[base + i];
    float b = lerp(buf[base + i], gi, 1.0f - mu);
    buf[base + i] = b;
    bf16 xb = __float2bfloat16(lerp(gi, b, mu));
    x[base + i] = xb;
    float xf = __bfloat162float(xb);
    ss += xf * xf;
  }
  ss = block_sum(ss);
  if (threadIdx.x == 0) partials[blockIdx.y * gridDim.x + blockIdx.x] = ss;
}

// X /= ||X||_F * 1.02 + 1e-6, the norm summed from the partials in order.
// grid (nb, count), the same nb as nesterov_kernel.
__global__ void frobenius_normalize_kernel(bf16* x,                // (count, numel)
                                           const float* partials,  // (count, nb)
                                           int numel) {
  float ss = 0.0f;
  for (int j = threadIdx.x; j < gridDim.x; j += blockDim.x) ss += partials[blockIdx.y * gridDim.x + j];
  const float denom = sqrtf(block_sum(ss)) * POLAR_NORM_MARGIN + POLAR_EPS;
  const long base = long(blockIdx.y) * numel;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += gridDim.x * blockDim.x)
    x[base + i] = __float2bfloat16(__bfloat162float(x[base + i]) / denom);
}

// Mean of X² over each row: one warp per row of the stack.
__global__ void row_mean_square_kernel(const bf16* x,  // (count * rows, cols)
                                       float* ms,      // (count * rows,)
                                       long total_rows, int cols) {
  const long r = long(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= total_rows) return;  // whole warps leave together
  const bf16* row = x + r * cols;
  float ss = 0.0f;
  for (int j = lane; j < cols; j += 32) {
    float v = __bfloat162float(row[j]);
    ss += v * v;
  }
  ss = warp_sum(ss);
  if (lane == 0) ms[r] = ss / float(cols);
}

// Mean of X² over each column. block (32, COL_ROWS): 32 adjacent columns
// (coalesced), COL_ROWS interleaved row slices; grid (ceil(cols/32), count).
constexpr int COL_ROWS = 8;
__global__ void col_mean_square_kernel(const bf16* x,  // (count, rows, cols)
                                       float* ms,      // (count, cols)
                                       int rows, int cols) {
  __shared__ float part[COL_ROWS][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  const bf16* mat = x + long(blockIdx.y) * rows * cols;
  float ss = 0.0f;
  if (c < cols)
    for (int r = threadIdx.y; r < rows; r += COL_ROWS) {
      float v = __bfloat162float(mat[long(r) * cols + c]);
      ss += v * v;
    }
  part[threadIdx.y][threadIdx.x] = ss;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float t = 0.0f;
    for (int k = 0; k < COL_ROWS; k++) t += part[k][threadIdx.x];
    ms[long(blockIdx.y) * cols + c] = t / float(rows);
  }
}

// NorMuon: V = lerp(V, ms, 1-beta2); q = rsqrt(max(V, 1e-10)); the scale is q
// times the ratio that keeps the Frobenius norm of X. One block per matrix.
__global__ void normuon_scale_kernel(const float* ms,  // (count, len) this step's mean squares
                                     float* V,         // (count, len) the EMA
                                     float* scale,     // (count, len) out
                                     int len, float reduced_len, float beta2) {
  const long base = long(blockIdx.x) * len;
  float ms_sum = 0.0f, scaled_sq = 0.0f;
  for (int j = threadIdx.x; j < len; j += blockDim.x) {
    float s = ms[base + j];
    float vj = lerp(V[base + j], s, 1.0f - beta2);
    V[base + j] = vj;
    float q = 1.0f / sqrtf(fmaxf(vj, NORMUON_EPS));
    scale[base + j] = q;
    ms_sum += s;
    scaled_sq += s * reduced_len * q * q;
  }
  const float norm = sqrtf(block_sum(ms_sum) * reduced_len);
  const float new_norm = sqrtf(block_sum(scaled_sq));
  const float ratio = norm / fmaxf(new_norm, NORMUON_EPS);
  for (int j = threadIdx.x; j < len; j += blockDim.x) scale[base + j] *= ratio;
}

// u = X * scale; p -= lr*u + lr*wd*p*[u*p >= 0]. grid (ceil(numel/THREADS), count).
__global__ void cautious_update_kernel(float* p,             // (count, rows, cols)
                                       const bf16* x,        // (count, rows, cols)
                                       const float* scale,   // (count, len)
                                       bf16* p_bf16,         // (count, rows, cols) or null
                                       int rows, int cols, bool per_row, float lr, float wd) {
  const int numel = rows * cols;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= numel) return;
  const long at = long(blockIdx.y) * numel + i;
  const int j = per_row ? i / cols : i % cols;
  const float u = __bfloat162float(x[at]) * scale[long(blockIdx.y) * (per_row ? rows : cols) + j];
  float pi = p[at];
  const float decay = u * pi >= 0.0f ? lr * wd * pi : 0.0f;
  pi = pi - (lr * u + decay);
  p[at] = pi;
  if (p_bf16) p_bf16[at] = __float2bfloat16(pi);
}

// ----------------------------------------------------------------------------
// launchers

// Row-major, batched over `batch` matrices at the given strides:
// C(m, n) = alpha * op(A)(m, k) · op(B)(k, n) + beta * C. A is stored (m, k),
// or (k, m) when trans_a; B is stored (k, n), or (n, k) when trans_b.
// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ, so the operands are swapped.
void gemm_bf16_batched(cublasHandle_t blas, bf16* C, long long stride_c, const bf16* A,
                       long long stride_a, bool trans_a, const bf16* B, long long stride_b,
                       bool trans_b, int m, int n, int k, float alpha, float beta, int batch) {
  const int lda = trans_a ? m : k, ldb = trans_b ? k : n, ldc = n;
  cublasCheck(cublasGemmStridedBatchedEx(
      blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
      &alpha, B, CUDA_R_16BF, ldb, stride_b, A, CUDA_R_16BF, lda, stride_a, &beta, C, CUDA_R_16BF,
      ldc, stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

template <typename T>
T* device_zeros(size_t count, size_t& bytes) {
  void* p = nullptr;
  const size_t n = count * sizeof(T);
  cudaCheck(cudaMalloc(&p, n));
  cudaCheck(cudaMemset(p, 0, n));
  bytes += n;
  return static_cast<T*>(p);
}

template <typename TP, typename TM>
void adamw_launch(TP* param, const float* grad, TM* m, TM* v, long n, const AdamWHyper& h,
                  int step, cudaStream_t stream, bf16* param_bf16) {
  if (step < 1) throw std::invalid_argument("adamw_step: step is 1-based, got " + std::to_string(step));
  if (n < 0) throw std::invalid_argument("adamw_step: negative element count " + std::to_string(n));
  if (n == 0) return;
  // Bias corrections in fp32, as the reference computes them.
  const float bias1 = 1.0f - std::pow(h.beta1, float(step));
  const float bias2 = 1.0f - std::pow(h.beta2, float(step));
  adamw_kernel<TP, TM><<<ceil_div(n, THREADS), THREADS, 0, stream>>>(
      param, grad, m, v, param_bf16, n, 1.0f - h.lr * h.weight_decay, 1.0f - h.beta1,
      1.0f - h.beta2, h.eps, h.lr / bias1, bias2);
  cudaLaunchCheck();
}

}  // namespace

void adamw_step(float* param, const float* grad, float* m, float* v, long n, const AdamWHyper& h,
                int step, cudaStream_t stream, bf16* param_bf16) {
  adamw_launch<float, float>(param, grad, m, v, n, h, step, stream, param_bf16);
}

void adamw_step(bf16* param, const float* grad, bf16* m, bf16* v, long n, const AdamWHyper& h,
                int step, cudaStream_t stream) {
  adamw_launch<bf16, bf16>(param, grad, m, v, n, h, step, stream, nullptr);
}

// ----------------------------------------------------------------------------
// MuonGroup

MuonGroup::MuonGroup(int count, int rows, int cols) : count_(count), rows_(rows), cols_(cols) {
  if (count <= 0 || rows <= 0 || cols <= 0)
    throw std::invalid_argument("MuonGroup: count, rows and cols must be positive, got " +
                                std::to_string(count) + " x (" + std::to_string(rows) + ", " +
                                std::to_string(cols) + ")");
  if (long(rows) * cols > (1L << 30))
    throw std::invalid_argument("MuonGroup: matrix of " + std::to_string(long(rows) * cols) +
                                " elements is too large (limit 2^30)");
  const size_t numel = size_t(count) * rows * cols;
  const size_t s = size_t(std::min(rows, cols));
  momentum_ = device_zeros<float>(numel, bytes_);
  second_moment_ = device_zeros<float>(size_t(count) * moment_len(), bytes_);
  x_ = device_zeros<bf16>(numel, bytes_);
  y_ = device_zeros<bf16>(numel, bytes_);
  gram_ = device_zeros<bf16>(count * s * s, bytes_);
  poly_ = device_zeros<bf16>(count * s * s, bytes_);
  partials_ = device_zeros<float>(size_t(count) * NORM_BLOCKS, bytes_);
  row_col_ms_ = device_zeros<float>(size_t(count) * moment_len(), bytes_);
  scale_ = device_zeros<float>(size_t(count) * moment_len(), bytes_);
}

void MuonGroup::release() {
  // Destruction path: nothing useful can be done with a failing cudaFree.
  for (void* p : {(void*)momentum_, (void*)second_moment_, (void*)x_, (void*)y_, (void*)gram_,
                  (void*)poly_, (void*)partials_, (void*)row_col_ms_, (void*)scale_})
    if (p) (void)cudaFree(p);
  momentum_ = second_moment_ = partials_ = row_col_ms_ = scale_ = nullptr;
  x_ = y_ = gram_ = poly_ = nullptr;
  bytes_ = 0;
}

MuonGroup::~MuonGroup() { release(); }

MuonGroup::MuonGroup(MuonGroup&& o) noexcept { *this = std::move(o); }

MuonGroup& MuonGroup::operator=(MuonGroup&& o) noexcept {
  if (this != &o) {
    release();
    count_ = o.count_, rows_ = o.rows_, cols_ = o.cols_, bytes_ = o.bytes_;
    momentum_ = o.momentum_, second_moment_ = o.second_moment_, x_ = o.x_, y_ = o.y_;
    gram_ = o.gram_, poly_ = o.poly_, partials_ = o.partials_, row_col_ms_ = o.row_col_ms_;
    scale_ = o.scale_;
    o.momentum_ = o.second_moment_ = o.partials_ = o.row_col_ms_ = o.scale_ = nullptr;
    o.x_ = o.y_ = o.gram_ = o.poly_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

double MuonGroup::lr_scale() const { return std::sqrt(std::max(1.0, double(rows_) / double(cols_))); }

void MuonGroup::step(cublasHandle_t blas, float* params, const float* grads, const MuonHyper& h,
                     bf16* params_bf16) {
  cudaStream_t stream;
  cublasCheck(cublasGetStream(blas, &stream));
  const int numel = rows_ * cols_;
  const int s = std::min(rows_, cols_);
  const bool tall = rows_ > cols_;

  // 1-2. Nesterov momentum, X = bf16(g'), X /= ||X||_F * 1.02 + 1e-6.
  const dim3 norm_grid(std::min(NORM_BLOCKS, ceil_div(numel, THREADS)), count_);
  nesterov_kernel<<<norm_grid, THREADS, 0, stream>>>(grads, momentum_, x_, partials_, numel,
                                                     h.momentum);
  cudaLaunchCheck();
  frobenius_normalize_kernel<<<norm_grid, THREADS, 0, stream>>>(x_, partials_, numel);
  cudaLaunchCheck();

  // 3. Polar Express. Each product that adds a multiple of an existing matrix
  // first copies that matrix into the output (cuBLAS's C is read and written).
  const long long sx = numel, sg = (long long)s * s;
  const size_t gram_bytes = size_t(count_) * sg * sizeof(bf16);
  const size_t x_bytes = size_t(count_) * numel * sizeof(bf16);
  for (const auto& abc : POLAR_EXPRESS) {
    const float a = abc[0], b = abc[1], c = abc[2];
    if (tall)  // A = XᵀX (cols, cols)
      gemm_bf16_batched(blas, gram_, sg, x_, sx, true, x_, sx, false, s, s, rows_, 1.0f, 0.0f, count_);
    else  // A = XXᵀ (rows, rows)
      gemm_bf16_batched(blas, gram_, sg, x_, sx, false, x_, sx, true, s, s, cols_, 1.0f, 0.0f, count_);
    // P = bA + cA²
    cudaCheck(cudaMemcpyAsync(poly_, gram_, gram_bytes, cudaMemcpyDeviceToDevice, stream));
    gemm_bf16_batched(blas, poly_, sg, gram_, sg, false, gram_, sg, false, s, s, s, c, b, count_);
    // Y = aX + XP (tall) or aX + PX
    cudaCheck(cudaMemcpyAsync(y_, x_, x_bytes, cudaMemcpyDeviceToDevice, stream));
    if (tall)
      gemm_bf16_batched(blas, y_, sx, x_, sx, false, poly_, sg, false, rows_, cols_, cols_, 1.0f, a, count_);
    else
      gemm_bf16_batched(blas, y_, sx, poly_, sg, false, x_, sx, false, rows_, cols_, rows_, 1.0f, a, count_);
    std::swap(x_, y_);
  }

  // 4. NorMuon: mean squares per row (rows >= cols) or per column, then the scale.
  const bool per_row = rows_ >= cols_;
  const int len = moment_len();
  if (per_row) {
    const long total_rows = long(count_) * rows_;
    row_mean_square_kernel<<<ceil_div(total_rows, THREADS / 32), THREADS, 0, stream>>>(
        x_, row_col_ms_, total_rows, cols_);
  } else {
    col_mean_square_kernel<<<dim3(ceil_div(cols_, 32), count_), dim3(32, COL_ROWS), 0, stream>>>(
        x_, row_col_ms_, rows_, cols_);
  }
  cudaLaunchCheck();
  normuon_scale_kernel<<<count_, THREADS, 0, stream>>>(row_col_ms_, second_moment_, scale_, len,
                                                       float(per_row ? cols_ : rows_), h.beta2);
  cudaLaunchCheck();

  // 5. Cautious weight decay and the update.
  const float lr = float(double(h.lr) * lr_scale());
  cautious_update_kernel<<<dim3(ceil_div(numel, THREADS), count_), THREADS, 0, stream>>>(
      params, x_, scale_, params_bf16, rows_, cols_, per_row, lr, h.weight_decay);
  cudaLaunchCheck();
}
