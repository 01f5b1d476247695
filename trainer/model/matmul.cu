// cuBLAS GEMM calls in row-major terms (see matmul.cuh). Row-major C = A·B is
// column-major Cᵀ = Bᵀ·Aᵀ, so the operands are passed swapped. matmul_add goes
// through cuBLASLt, whose D may differ from C; its descriptors and algorithm are
// chosen once per shape and kept in the Blas.
#include "model/matmul.cuh"

#include <algorithm>
#include <cstdint>

namespace {
template <typename T> constexpr cudaDataType_t cuda_type();
template <> constexpr cudaDataType_t cuda_type<float>() { return CUDA_R_32F; }
template <> constexpr cudaDataType_t cuda_type<bf16>() { return CUDA_R_16BF; }
constexpr size_t WORKSPACE_BYTES = 32u << 20;
}  // namespace

struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, cd = nullptr;  // cuBLAS's column-major operands
  cublasLtMatmulAlgo_t algo{};
};

Blas::Blas(cudaStream_t s) : stream(s) {
  cublasCheck(cublasLtCreate(&lt));
  cublasCheck(cublasCreate(&handle));
  cublasCheck(cublasSetStream(handle, s));
  cudaCheck(cudaMalloc(&workspace, WORKSPACE_BYTES));
  cublasCheck(cublasSetWorkspace(handle, workspace, WORKSPACE_BYTES));
  // Pure fp32 for float inputs (the gradient check needs it); no TF32.
  cublasCheck(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
}

Blas::~Blas() {
  for (auto& [shape, plan] : lt_plans) {
    cublasLtMatrixLayoutDestroy(plan->a);
    cublasLtMatrixLayoutDestroy(plan->b);
    cublasLtMatrixLayoutDestroy(plan->cd);
    cublasLtMatmulDescDestroy(plan->op);
    delete plan;
  }
  cublasLtDestroy(lt);
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

template <typename T>
void matmul_add(const Blas& blas, T* D, const T* R, int ldd, const T* A, int lda, bool trans_a,
                const T* B, int ldb, bool trans_b, int m, int n, int k) {
  // column-major: Dᵀ (n, m) = op(Bᵀ) (n, k) · op(Aᵀ) (k, m) + Rᵀ
  // The heuristic assumes 256-byte aligned operands unless told otherwise, and may pick an
  // algorithm that then refuses a pointer aligned less (a parameter tensor starts at a
  // multiple of 64 elements only): the plan is chosen for the alignments at hand.
  auto alignment = [](const void* p) {
    return int(std::min<uintptr_t>(256, reinterpret_cast<uintptr_t>(p) & -reinterpret_cast<uintptr_t>(p)));
  };
  const int align_a = alignment(A), align_b = alignment(B), align_cd = std::min(alignment(R), alignment(D));
  const std::array<int, 11> key{m, n, k, lda, ldb, ldd, int(trans_a) * 2 + int(trans_b), int(sizeof(T)),
                                align_a, align_b, align_cd};
  LtPlan*& plan = blas.lt_plans[key];
  if (!plan) {
    plan = new LtPlan;
    const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasCheck(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasCheck(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof(op_b)));
    cublasCheck(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof(op_a)));
    const cudaDataType_t t = cuda_type<T>();
    cublasCheck(cublasLtMatrixLayoutCreate(&plan->a, t, trans_b ? k : n, trans_b ? n : k, ldb));
    cublasCheck(cublasLtMatrixLayoutCreate(&plan->b, t, trans_a ? m : k, trans_a ? k : m, lda));
    cublasCheck(cublasLtMatrixLayoutCreate(&plan->cd, t, n, m, ldd));
    cublasLtMatmulPreference_t pref;
    cublasCheck(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws = WORKSPACE_BYTES;
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    // cuBLAS's operand A is our B, its B our A (see above)
    const uint32_t lt_align[4] = {uint32_t(align_b), uint32_t(align_a), uint32_t(align_cd), uint32_t(align_cd)};
    const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
      cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &lt_align[i], sizeof(uint32_t)));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasCheck(cublasLtMatmulAlgoGetHeuristic(blas.lt, plan->op, plan->a, plan->b, plan->cd, plan->cd, pref, 1,
                                               &result, &found));
    cublasLtMatmulPreferenceDestroy(pref);
    if (found == 0) {
      std::fprintf(stderr, "FAIL: cuBLASLt has no algorithm for matmul_add (%d x %d x %d, operands aligned to %d/%d/%d bytes)\n",
                   m, n, k, align_a, align_b, align_cd);
      std::exit(1);
    }
    plan->algo = result.algo;
  }
  const float alpha = 1.0f, beta = 1.0f;
  cublasCheck(cublasLtMatmul(blas.lt, plan->op, &alpha, B, plan->a, A, plan->b, &beta, R, plan->cd, D, plan->cd,
                             &plan->algo, blas.workspace, WORKSPACE_BYTES, blas.stream));
}

template void matmul_add<float>(const Blas&, float*, const float*, int, const float*, int, bool,
                                const float*, int, bool, int, int, int);
template void matmul_add<bf16>(const Blas&, bf16*, const bf16*, int, const bf16*, int, bool,
                               const bf16*, int, bool, int, int, int);
template void matmul<float, float>(const Blas&, float*, int, const float*, int, bool, const float*,
                                   int, bool, int, int, int, float);
template void matmul<bf16, bf16>(const Blas&, bf16*, int, const bf16*, int, bool, const bf16*, int,
                                 bool, int, int, int, float);
template void matmul<bf16, float>(const Blas&, float*, int, const bf16*, int, bool, const bf16*,
                                  int, bool, int, int, int, float);
