// The optimizer (MuonAdamW): AdamW for the embeddings, lm_head and the scalar
// lambdas, and Muon for the block matrices, grouped by shape. This file owns
// the update rules and their state; the trainer owns the schedules (lr
// multiplier, momentum ramp, weight-decay decay) and passes this step's values
// in every call. All math is fp32 except the Polar Express iteration, which
// runs in bf16 with fp32 accumulation. Every reduction has a fixed order, so a
// step is bitwise reproducible.
#pragma once

#include <cstddef>

#include "model/common.cuh"

// ----------------------------------------------------------------------------
// AdamW

/// This step's AdamW hyperparameters (lr already multiplied by the schedule).
struct AdamWHyper {
  float lr;
  float beta1;
  float beta2;
  float eps;           // added to sqrt(v / bias2), not inside the sqrt
  float weight_decay;  // decoupled: p *= 1 - lr * weight_decay before the update
};

/// One AdamW step over n elements, in place, enqueued on `stream`:
///   p *= 1 - lr*wd;  m = lerp(m, g, 1-beta1);  v = lerp(v, g*g, 1-beta2);
///   p -= lr / (1 - beta1^step) * m / (sqrt(v / (1 - beta2^step)) + eps).
/// `step` is 1-based (the first call uses step = 1); m and v start at zero.
/// When param_bf16 is not null, bf16(p) after the update is written there too
/// (the bf16 shadow copy the matrix products read). n = 0 is a no-op.
void adamw_step(float* param,        // (n,)
                const float* grad,   // (n,)
                float* m,            // (n,) first moment, fp32
                float* v,            // (n,) second moment, fp32
                long n, const AdamWHyper& h, int step, cudaStream_t stream,
                bf16* param_bf16 = nullptr);  // (n,) or null

/// The same for a bf16 parameter (the embedding tables), whose state is bf16 too, as
/// the reference keeps it (its moments are zeros_like(p), its gradient is p's dtype):
/// g is rounded to bf16, the math is fp32, and m, v and p are each rounded to
/// nearest bf16 when stored.
void adamw_step(bf16* param,         // (n,)
                const float* grad,   // (n,)
                bf16* m,             // (n,) bf16
                bf16* v,             // (n,) bf16
                long n, const AdamWHyper& h, int step, cudaStream_t stream);

// ----------------------------------------------------------------------------
// Muon

/// This step's Muon hyperparameters.
struct MuonHyper {
  float lr;            // before the shape scale: the group multiplies it by lr_scale()
  float momentum;      // mu of the Nesterov momentum (the trainer ramps it)
  float weight_decay;  // cautious weight decay (the trainer decays it with progress)
  float beta2;         // NorMuon second-moment EMA (0.95)
};

/// A group of `count` same-shape fp32 matrices (rows, cols), updated together.
/// Owns the momentum buffer, the NorMuon second moment and the bf16
/// workspaces of the orthogonalisation. One step, per matrix:
///   1. Nesterov: buf = lerp(buf, g, 1-mu); g' = lerp(g, buf, mu)        (fp32)
///   2. X = bf16(g'); X /= ||X||_F * 1.02 + 1e-6
///   3. Polar Express, 5 iterations with fixed (a, b, c):
///        tall (rows > cols): A = XᵀX, X = aX + X(bA + cA²)
///        otherwise:          A = XXᵀ, X = aX + (bA + cA²)X
///      bf16 storage, fp32 accumulation (cuBLAS strided-batched GEMMs)
///   4. NorMuon: s_j = mean of X² over row j (rows >= cols) or column j
///      (rows < cols); V = lerp(V, s, 1-beta2) (no bias correction);
///      q_j = rsqrt(max(V_j, 1e-10)); u = X * q * ||X||_F / max(||X*q||_F, 1e-10)
///   5. cautious update, lr' = lr * lr_scale():
///        p -= lr'*u + lr'*wd*p*[u*p >= 0]
/// The gradients are read only (never overwritten).
class MuonGroup {
 public:
  static constexpr int POLAR_EXPRESS_STEPS = 5;

  /// Allocates the state (zeroed) and workspaces on the current device.
  /// Throws std::invalid_argument when count, rows or cols is not positive.
  MuonGroup(int count, int rows, int cols);
  ~MuonGroup();
  MuonGroup(MuonGroup&& other) noexcept;
  MuonGroup& operator=(MuonGroup&& other) noexcept;
  MuonGroup(const MuonGroup&) = delete;
  MuonGroup& operator=(const MuonGroup&) = delete;

  /// One Muon step of the whole group, in place. All work (kernels and GEMMs)
  /// is enqueued on the stream bound to `blas` (cublasGetStream); the handle
  /// must be in host pointer mode (the default). params and grads are the
  /// group's matrices stacked contiguously, matrix i at offset i*rows*cols.
  /// When params_bf16 is not null, bf16(p) after the update is written there.
  void step(cublasHandle_t blas,
            float* params,        // (count, rows, cols)
            const float* grads,   // (count, rows, cols)
            const MuonHyper& h,
            bf16* params_bf16 = nullptr);  // (count, rows, cols) or null

  int count() const { return count_; }
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  /// sqrt(max(1, rows / cols)): the factor step() applies to h.lr.
  double lr_scale() const;
  /// Length of each matrix's second-moment vector: rows if rows >= cols, else cols.
  int moment_len() const { return rows_ >= cols_ ? rows_ : cols_; }
  /// Device bytes this group holds (state and workspaces), for peak-memory reports.
  size_t bytes() const { return bytes_; }

  const float* momentum_buffer() const { return momentum_; }    // (count, rows, cols)
  const float* second_moment() const { return second_moment_; }  // (count, moment_len())

 private:
  void release();

  int count_ = 0, rows_ = 0, cols_ = 0;
  size_t bytes_ = 0;
  float* momentum_ = nullptr;       // (count, rows, cols) fp32, zero-initialised
  float* second_moment_ = nullptr;  // (count, moment_len) fp32, zero-initialised
  bf16* x_ = nullptr;               // (count, rows, cols) the iterate X
  bf16* y_ = nullptr;               // (count, rows, cols) the next iterate
  bf16* gram_ = nullptr;            // (count, s, s) A, s = min(rows, cols)
  bf16* poly_ = nullptr;            // (count, s, s) bA + cA²
  float* partials_ = nullptr;       // (count, NORM_BLOCKS) partial sums of squares
  float* row_col_ms_ = nullptr;     // (count, moment_len) mean squares of this step
  float* scale_ = nullptr;          // (count, moment_len) NorMuon scale of this step
};
