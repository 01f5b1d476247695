// cuBLAS GEMM calls in row-major terms (see matmul.cuh). Row-major C = A·B is
// column-major Cᵀ = Bᵀ·Aᵀ, so the operands are passed swapped.
#include "model/matmul.cuh"

namespace {
template <typename T> constexpr cudaDataType_t cuda_type();
template <> constexpr cudaDataType_t cuda_type<float>() { return CUDA_R_32F; }
template <> constexpr cudaDataType_t cuda_type<bf16>() { return CUDA_R_16BF; }
constexpr size_t WORKSPACE_BYTES = 32u << 20;
}  // namespace

Blas::Blas(cudaStream_t s) : stream(s) {
  cublasCheck(cublasCreate(&handle));
  cublasCheck(cublasSetStream(handle, s));
  cudaCheck(cudaMalloc(&workspace, WORKSPACE_BYTES));
  cublasCheck(cublasSetWorkspace(handle, workspace, WORKSPACE_BYTES));
  // Pure fp32 for float inputs (the gradient check needs it); no TF32.
  cublasCheck(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
}

Blas::~Blas() {
  cublasDestroy(handle);
  cudaFree(workspace);
}

template <typename TIn, typename TOut>
void matmul(const Blas& blas, TOut* C, int ldc, const TIn* A, int lda, bool trans_a,
            const TIn* B, int ldb, bool trans_b, int m, int n, int k, float beta) {
  const float alpha = 1.0f;
  cublasCheck(cublasGemmEx(blas.handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                           trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, B,
                           cuda_type<TIn>(), ldb, A, cuda_type<TIn>(), lda, &beta, C,
                           cuda_type<TOut>(), ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

template void matmul<float, float>(const Blas&, float*, int, const float*, int, bool, const float*,
                                   int, bool, int, int, int, float);
template void matmul<bf16, bf16>(const Blas&, bf16*, int, const bf16*, int, bool, const bf16*, int,
                                 bool, int, int, int, float);
template void matmul<bf16, float>(const Blas&, float*, int, const bf16*, int, bool, const bf16*,
                                  int, bool, int, int, int, float);
