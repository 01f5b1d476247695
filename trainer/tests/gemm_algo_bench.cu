// Benchmark of cuBLASLt's algorithms for the trainer's matrix products, by energy: for each
// product of a training micro-batch (262144 tokens, the default model), the path the trainer
// takes (model/matmul.cuh: cublasGemmEx's default, or matmul_add's first cuBLASLt heuristic)
// and the first ALGOS algorithms cuBLASLt's heuristic offers, each timed in a short loop and
// then under sustained load (tests/gpu_energy.h: joules a call, the figure that paces a step at
// the board's power limit). Prints each algorithm's configuration (tile, stages, split-K,
// cluster), and per product the cheapest against the trainer's path, in joules a step.
//   gemm_algo_bench [ALGOS] [SECONDS]   (defaults 6 and 2: sustained seconds an algorithm)
// Exits 77 without a GPU, 2 on bad arguments.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <cublasLt.h>

#include "model/matmul.cuh"
#include "tests/gpu_energy.h"
#include "tests/gpu_timer.h"

namespace {

// Row-major C (m, n) = op(A) (m, k) · op(B) (k, n) (+ C where accumulate), as matmul.cuh.
struct Product {
  const char* name;
  int m, n, k;
  bool trans_a, trans_b;
  bool f32_out;     // the weight gradients: fp32, accumulated
  bool residual;    // matmul_add: + R (another tensor than the output)
  int calls_a_step;
};

__global__ void fill_kernel(bf16* p, long n, unsigned seed, float scale) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    p[i] = __float2bfloat16(scale * (float(h & 0xFFFF) / 32768.f - 1.f));
  }
}

template <typename T>
T* device_alloc(long n) {
  T* p = nullptr;
  cudaCheck(cudaMalloc(&p, n * sizeof(T)));
  cudaCheck(cudaMemset(p, 0, n * sizeof(T)));
  return p;
}

struct Candidate {
  std::string label;
  std::function<void()> run;
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const int algos = argc > 1 ? std::atoi(argv[1]) : 6;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 2.0;
  if (argc > 3 || algos < 1 || algos > 32 || !(seconds > 0)) {
    std::fprintf(stderr, "FAIL: usage: gemm_algo_bench [ALGOS 1-32] [SECONDS > 0]\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: benchmark skipped\n");
    return 77;
  }
  const int N = 262144, C = 512, QKV = 1536, F = 2048, V = 8192;
  const Product products[] = {
      {"qkv forward", N, QKV, C, false, true, false, false, 16},
      {"c_proj forward + residual", N, C, C, false, true, false, true, 16},
      {"mlp_proj forward + residual", N, C, F, false, true, false, true, 16},
      {"lm_head forward", N, V, C, false, true, false, false, 2},
      {"lm_head weight gradient", V, C, N, true, false, true, false, 2},
      {"lm_head input gradient", N, C, V, false, false, false, false, 2},
      {"mlp_proj weight gradient", C, F, N, true, false, true, false, 16},
      {"c_fc weight gradient", F, C, N, true, false, true, false, 16},
      {"c_fc input gradient", N, C, F, false, false, false, false, 16},
      {"c_proj weight gradient", C, C, N, true, false, true, false, 16},
      {"c_proj input gradient", N, C, C, false, false, false, false, 16},
      {"qkv weight gradient", QKV, C, N, true, false, true, false, 16},
      {"qkv input gradient", N, C, QKV, false, false, false, false, 16},
  };
  long max_a = 0, max_b = 0, max_c = 0;
  for (const Product& p : products) {
    max_a = std::max(max_a, long(p.m) * p.k), max_b = std::max(max_b, long(p.k) * p.n);
    max_c = std::max(max_c, long(p.m) * p.n);
  }
  bf16 *A = device_alloc<bf16>(max_a), *B = device_alloc<bf16>(max_b), *Cb = device_alloc<bf16>(max_c);
  bf16* R = device_alloc<bf16>(max_c);
  float* Cf = device_alloc<float>(long(V) * C);
  fill_kernel<<<1024, 256>>>(A, max_a, 1, 1.f);
  fill_kernel<<<1024, 256>>>(B, max_b, 2, 0.05f);
  fill_kernel<<<1024, 256>>>(R, max_c, 3, 1.f);
  cudaLaunchCheck();
  Blas blas(nullptr);
  const EnergyMeter meter;
  if (!meter.ok()) std::printf("energy not measured: %s\n", meter.why());
  auto sync = [] { cudaCheck(cudaDeviceSynchronize()); };
  double step_saving = 0;
  for (const Product& p : products) {
    const int lda = p.trans_a ? p.m : p.k, ldb = p.trans_b ? p.k : p.n, ldc = p.n;
    std::vector<Candidate> cands;
    // the trainer's path
    cands.push_back({"trainer", [&, p, lda, ldb, ldc] {
                       if (p.residual) matmul_add<bf16>(blas, Cb, R, ldc, A, lda, p.trans_a, B, ldb, p.trans_b, p.m, p.n, p.k);
                       else if (p.f32_out) matmul<bf16, float>(blas, Cf, ldc, A, lda, p.trans_a, B, ldb, p.trans_b, p.m, p.n, p.k, 1.f);
                       else matmul<bf16, bf16>(blas, Cb, ldc, A, lda, p.trans_a, B, ldb, p.trans_b, p.m, p.n, p.k);
                     }});
    // cuBLASLt's heuristic list (column-major: Dᵀ (n, m) = op(Bᵀ) · op(Aᵀ), as matmul.cu)
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    const cublasOperation_t op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasCheck(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasCheck(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof(op_b)));
    cublasCheck(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof(op_a)));
    const cudaDataType_t out_type = p.f32_out ? CUDA_R_32F : CUDA_R_16BF;
    cublasCheck(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, p.trans_b ? p.k : p.n, p.trans_b ? p.n : p.k, ldb));
    cublasCheck(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, p.trans_a ? p.m : p.k, p.trans_a ? p.k : p.m, lda));
    cublasCheck(cublasLtMatrixLayoutCreate(&lc, out_type, p.n, p.m, ldc));
    cublasCheck(cublasLtMatrixLayoutCreate(&ld, out_type, p.n, p.m, ldc));
    cublasLtMatmulPreference_t pref;
    cublasCheck(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws = 32u << 20;
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    std::vector<cublasLtMatmulHeuristicResult_t> found(algos);
    int count = 0;
    cublasCheck(cublasLtMatmulAlgoGetHeuristic(blas.lt, op, la, lb, lc, ld, pref, algos, found.data(), &count));
    const float beta = p.f32_out || p.residual ? 1.f : 0.f;
    for (int i = 0; i < count; i++) {
      const cublasLtMatmulAlgo_t algo = found[i].algo;
      int id = 0, tile = 0, stages = 0, splitk = 0, cluster = 0;
      size_t w = 0;
      cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w);
      char label[128];
      std::snprintf(label, sizeof label, "lt #%d (id %d tile %d stages %d splitk %d cluster %d, ws %zu KB)", i, id, tile,
                    stages, splitk, cluster, found[i].workspaceSize >> 10);
      void* out = p.f32_out ? static_cast<void*>(Cf) : static_cast<void*>(Cb);
      const void* c_in = p.residual ? static_cast<const void*>(R) : out;
      cands.push_back({label, [&, op, la, lb, lc, ld, algo, out, c_in, beta] {
                         const float alpha = 1.f;
                         cublasCheck(cublasLtMatmul(blas.lt, op, &alpha, B, la, A, lb, &beta, c_in, lc, out, ld, &algo,
                                                    blas.workspace, 32u << 20, nullptr));
                       }});
    }
    const double flops = 2.0 * p.m * p.n * double(p.k);
    std::printf("== %s: (%d x %d) = (%d x %d) · (%d x %d), %d calls a step\n", p.name, p.m, p.n, p.m, p.k, p.k, p.n,
                p.calls_a_step);
    double trainer_j = 0, best_j = 1e30;
    std::string best;
    for (size_t c = 0; c < cands.size(); c++) {
      const float ms = median_gpu_ms(cands[c].run);
      const SustainedCost s = sustained_cost(meter, cands[c].run, sync, seconds, 0.5);
      std::printf("  %-72s %.3f ms (%.0f TFLOP/s) | sustained %.3f ms, %.4f J at %.0f W, %u MHz\n", cands[c].label.c_str(),
                  ms, flops / ms / 1e9, s.ms_per_call, s.joules_per_call, s.watts, s.sm_mhz);
      if (c == 0) trainer_j = s.joules_per_call;
      else if (s.joules_per_call < best_j) best_j = s.joules_per_call, best = cands[c].label;
    }
    if (meter.ok() && !best.empty()) {
      const double saving = std::max(0.0, trainer_j - best_j) * p.calls_a_step;
      step_saving += saving;
      std::printf("  cheapest: %s, %.4f J against the trainer's %.4f: %.2f J a step\n", best.c_str(), best_j, trainer_j,
                  saving);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    for (cublasLtMatrixLayout_t l : {la, lb, lc, ld}) cublasLtMatrixLayoutDestroy(l);
    cublasLtMatmulDescDestroy(op);
  }
  if (meter.ok()) std::printf("all products: %.2f J a step to save by choosing algorithms\n", step_saving);
  return 0;
}
