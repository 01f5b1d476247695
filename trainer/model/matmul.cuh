// Matrix products for the trainer, through cuBLAS, in row-major terms.
// Inputs are float (the --check model: exact fp32) or bf16 (training); the
// accumulation is always fp32 (CUBLAS_COMPUTE_32F), outputs float or bf16.
#pragma once

#include <array>
#include <map>

#include <cublasLt.h>

#include "model/common.cuh"

struct LtPlan;  // cuBLASLt descriptors and algorithm of one product shape (matmul.cu)

/// The cuBLAS and cuBLASLt handles bound to the trainer's stream, with their shared
/// workspace (stream-ordered, so the two libraries never use it at once).
struct Blas {
  cublasHandle_t handle = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  mutable std::map<std::array<int, 11>, LtPlan*> lt_plans;  // by shape and alignments (nullptr: none)
  explicit Blas(cudaStream_t s);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
};

/// Row-major C(m, n) = op(A)(m, k) · op(B)(k, n) + beta * C.
/// A is stored (m, k) when !trans_a, else (k, m); lda is its row stride. Same for B.
/// ldc is C's row stride. beta = 1 accumulates (weight gradients, residual adds).
template <typename TIn, typename TOut>
void matmul(const Blas& blas, TOut* C, int ldc, const TIn* A, int lda, bool trans_a,
            const TIn* B, int ldb, bool trans_b, int m, int n, int k, float beta = 0.0f);

/// Row-major D(m, n) = op(A)(m, k) · op(B)(k, n) + R, R (m, n) another tensor than D, both of
/// row stride ldd: a residual add without first copying R into D (cuBLASLt; fp32
/// accumulation, one rounding of the sum).
template <typename T>
void matmul_add(const Blas& blas, T* D, const T* R, int ldd, const T* A, int lda, bool trans_a,
                const T* B, int ldb, bool trans_b, int m, int n, int k);

// The three products of a linear layer y = x · Wᵀ with x (rows, in), W (out, in).
template <typename T, typename TOut>
void linear_forward(const Blas& b, TOut* y, const T* x, const T* w, int rows, int in, int out,
                    float beta = 0.0f) {  // y: (rows, out)
  matmul<T, TOut>(b, y, out, x, in, false, w, in, true, rows, out, in, beta);
}
template <typename T>
void linear_forward_add(const Blas& b, T* y, const T* residual, const T* x, const T* w, int rows,
                        int in, int out) {  // y (rows, out) = residual + x · Wᵀ
  matmul_add<T>(b, y, residual, out, x, in, false, w, in, true, rows, out, in);
}
template <typename T>
void linear_backward_input(const Blas& b, T* dx, const T* dy, const T* w, int rows, int in, int out,
                           float beta = 0.0f) {  // dx: (rows, in) = dy (rows, out) · W
  matmul<T, T>(b, dx, in, dy, out, false, w, in, false, rows, in, out, beta);
}
template <typename T>
void linear_backward_weight(const Blas& b, float* dw, const T* dy, const T* x, int rows, int in,
                            int out) {  // dw (out, in) += dyᵀ · x
  matmul<T, float>(b, dw, in, dy, out, true, x, in, false, out, in, rows, 1.0f);
}
