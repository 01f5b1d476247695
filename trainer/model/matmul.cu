// cuBLAS GEMM calls in row-major terms (see matmul.cuh). Row-major C = A·B is
// column-major Cᵀ = Bᵀ·Aᵀ, so the operands are passed swapped. matmul_add and the bf16
// products that overwrite their output (forward, input gradients) go through cuBLASLt,
// whose descriptors and algorithm are chosen once per shape and kept in the Blas; the
// weight gradients (fp32, accumulated) and the fp32 products through cublasGemmEx.
#include "model/matmul.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <type_traits>

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

static void lt_plan_destroy(LtPlan* plan) {
  if (plan->a) cublasLtMatrixLayoutDestroy(plan->a);
  if (plan->b) cublasLtMatrixLayoutDestroy(plan->b);
  if (plan->cd) cublasLtMatrixLayoutDestroy(plan->cd);
  if (plan->op) cublasLtMatmulDescDestroy(plan->op);
  delete plan;
}

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
  for (auto& [shape, plan] : lt_plans)
    if (plan) lt_plan_destroy(plan);
  cublasLtDestroy(lt);
  cublasDestroy(handle);
  cudaFree(workspace);
}

namespace {
// The tile (in cuBLAS's column-major terms: output columns of ours x rows) of the algorithm
// taken for a bf16 product whose output rows are `width` wide, where the heuristic offers it
// among its first eight: at the power limit these cost the fewest joules a call (measured on
// H200: 128 x 160 saves 3-11 % on the (262144, 512) outputs, 256 x 128 1-3 % on the wider
// ones, against cublasGemmEx's default and the heuristic's first). The choice depends on the
// shape only, so every run of a configuration computes the same bits.
cublasLtMatmulTile_t preferred_tile(int width) {
  return width <= 512 ? CUBLASLT_MATMUL_TILE_128x160 : CUBLASLT_MATMUL_TILE_256x128;
}

// The largest power of two (at most 256) that divides p's address: the alignment cuBLASLt is told.
int alignment(const void* p) {
  return int(std::min<uintptr_t>(256, reinterpret_cast<uintptr_t>(p) & -reinterpret_cast<uintptr_t>(p)));
}

/// The plan of one row-major product D (m, n) = op(A) · op(B) (+ C), C and D of row stride ldd,
/// made once per shape and alignments; nullptr where cuBLASLt has no algorithm for it.
template <typename T>
LtPlan* lt_plan(const Blas& blas, const void* D, const void* C, const void* A, int lda, bool trans_a, const void* B,
                int ldb, bool trans_b, int m, int n, int k, int ldd) {
  // The heuristic assumes 256-byte aligned operands unless told otherwise, and may pick an
  // algorithm that then refuses a pointer aligned less (a parameter tensor starts at a
  // multiple of 64 elements only): the plan is chosen for the alignments at hand.
  const int align_a = alignment(A), align_b = alignment(B), align_cd = std::min(alignment(C), alignment(D));
  const std::array<int, 11> key{m, n, k, lda, ldb, ldd, int(trans_a) * 2 + int(trans_b), int(sizeof(T)),
                                align_a, align_b, align_cd};
  auto [it, made] = blas.lt_plans.try_emplace(key, nullptr);
  if (!made) return it->second;
  auto plan = std::make_unique<LtPlan>();
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
  cublasLtMatmulHeuristicResult_t results[8];
  int found = 0;
  cublasCheck(cublasLtMatmulAlgoGetHeuristic(blas.lt, plan->op, plan->a, plan->b, plan->cd, plan->cd, pref, 8, results,
                                             &found));
  cublasLtMatmulPreferenceDestroy(pref);
  if (found == 0) {
    lt_plan_destroy(plan.release());
    return nullptr;
  }
  int pick = 0;  // the heuristic's first where none has the preferred tile
  for (int i = found - 1; i >= 0; i--) {
    int tile = 0;
    size_t written = 0;
    cublasCheck(cublasLtMatmulAlgoConfigGetAttribute(&results[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                                     &written));
    if (tile == preferred_tile(n)) pick = i;
  }
  plan->algo = results[pick].algo;
  return it->second = plan.release();
}

template <typename T>
void lt_run(const Blas& blas, const LtPlan& plan, T* D, const T* C, float beta, const T* A, const T* B) {
  const float alpha = 1.0f;
  cublasCheck(cublasLtMatmul(blas.lt, plan.op, &alpha, B, plan.a, A, plan.b, &beta, C, plan.cd, D, plan.cd,
                             &plan.algo, blas.workspace, WORKSPACE_BYTES, blas.stream));
}
}  // namespace

template <typename TIn, typename TOut>
void matmul(const Blas& blas, TOut* C, int ldc, const TIn* A, int lda, bool trans_a,
            const TIn* B, int ldb, bool trans_b, int m, int n, int k, float beta) {
  if constexpr (std::is_same_v<TIn, bf16> && std::is_same_v<TOut, bf16>) {
    // (rows of 16-byte multiples: the training shapes; the value gates' narrow products stay)
    if (beta == 0.0f && lda % 8 == 0 && ldb % 8 == 0 && ldc % 8 == 0 && n % 8 == 0)
      if (const LtPlan* plan = lt_plan<bf16>(blas, C, C, A, lda, trans_a, B, ldb, trans_b, m, n, k, ldc))
        return lt_run<bf16>(blas, *plan, C, C, 0.0f, A, B);
  }
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
  const LtPlan* plan = lt_plan<T>(blas, D, R, A, lda, trans_a, B, ldb, trans_b, m, n, k, ldd);
  if (!plan) {
    std::fprintf(stderr,
                 "FAIL: cuBLASLt has no algorithm for matmul_add (%d x %d x %d, operands aligned to %d/%d/%d bytes)\n",
                 m, n, k, alignment(A), alignment(B), std::min(alignment(R), alignment(D)));
    std::exit(1);
  }
  lt_run<T>(blas, *plan, D, R, 1.0f, A, B);
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
