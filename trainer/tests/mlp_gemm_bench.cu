// Benchmark of the fused relu² products (model/mlp_product.cuh) against the two-kernel path
// (cuBLAS, then the relu² kernel) at one micro-batch's shapes (262144 tokens, 512 -> 2048;
// `mlp_gemm_bench ROWS` for fewer rows):
//   forward:  a = relu(x · W_fcᵀ)², only a written             x (M, K), W_fc (N, K)
//   backward: dh = (dy · W_proj) * 2 sqrt(a), a read back       dy (M, K), W_proj (K, N)
// (the two-kernel path writes h, then reads it back for a).
// Prints the times, TFLOP/s and the relative L2 difference from the two-kernel path on every
// element, then each path's time and joules a call under sustained load (tests/gpu_energy.h;
// `mlp_gemm_bench ROWS fused`: the fused kernels' only);
// exits 1 when a difference exceeds 1e-2, 77 without a GPU. History (docs/LOG.md):
// run 27's first fused kernel (cp.async copies by every thread, stores from registers) was
// slower than the two-kernel path; runs 28-31 the TMA kernel and its tilings.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "model/layers.cuh"
#include "model/matmul.cuh"
#include "model/mlp_product.cuh"
#include "tests/gpu_energy.h"
#include "tests/gpu_timer.h"

namespace {

struct Buffer {  // device bf16 buffer
  bf16* p = nullptr;
  long n;
  explicit Buffer(long count) : n(count) { cudaCheck(cudaMalloc(&p, n * sizeof(bf16))); }
  ~Buffer() { cudaFree(p); }
  void fill(std::mt19937_64& rng, float scale) {
    std::vector<bf16> h(n);
    std::normal_distribution<float> d(0.f, scale);
    for (auto& x : h) x = __float2bfloat16(d(rng));
    cudaCheck(cudaMemcpy(p, h.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
  }
  std::vector<float> get() const {
    std::vector<bf16> h(n);
    cudaCheck(cudaMemcpy(h.data(), p, n * sizeof(bf16), cudaMemcpyDeviceToHost));
    std::vector<float> f(n);
    for (long i = 0; i < n; i++) f[i] = __bfloat162float(h[i]);
    return f;
  }
};

double rel_diff(const Buffer& got, const Buffer& ref) {
  const auto a = got.get(), b = ref.get();
  double num = 0, den = 0;
  for (long i = 0; i < long(a.size()); i++) {
    num += double(a[i] - b[i]) * (a[i] - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as soon as it is known
  // mlp_gemm_bench [ROWS] [fused]: "fused" measures only the fused kernels' energy
  const int M = argc > 1 ? std::atoi(argv[1]) : 262144, K = 512, N = 2048;  // M: a multiple of 256
  const bool fused_only = argc > 2 && std::string(argv[2]) == "fused";
  if (argc > 3 || (argc > 2 && !fused_only)) {
    std::fprintf(stderr, "FAIL: usage: mlp_gemm_bench [ROWS] [fused] (got '%s')\n", argv[argc - 1]);
    return 2;
  }
  if (M <= 0 || M % 256 != 0) {
    std::fprintf(stderr, "FAIL: rows must be a positive multiple of 256 (got %s)\n", argv[1]);
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: benchmark skipped\n");
    return 77;
  }
  std::mt19937_64 rng(7);
  Buffer x(long(M) * K), w_fc(long(N) * K), dy(long(M) * K), w_proj(long(K) * N);
  Buffer h_ref(long(M) * N), a_ref(long(M) * N), dh_ref(long(M) * N), a(long(M) * N), dh(long(M) * N);
  x.fill(rng, 1.f), dy.fill(rng, 1.f), w_fc.fill(rng, 0.04f), w_proj.fill(rng, 0.04f);
  Blas blas(nullptr);
  const double flops = 2.0 * M * N * K;
  auto forward_ref = [&] {
    linear_forward(blas, h_ref.p, x.p, w_fc.p, M, K, N);
    relu2_forward(a_ref.p, h_ref.p, long(M) * N, nullptr);
  };
  auto backward_ref = [&] {
    linear_backward_input(blas, dh_ref.p, dy.p, w_proj.p, M, N, K);
    relu2_backward(dh_ref.p, a_ref.p, long(M) * N, nullptr);
  };
  const float f_ref = median_gpu_ms(forward_ref), b_ref = median_gpu_ms(backward_ref);
  forward_ref();  // a_ref for the backward; dh_ref after the last run
  backward_ref();
  cudaCheck(cudaDeviceSynchronize());
  std::printf("rows %d: cuBLAS + relu²: forward %.3f ms (%.0f TFLOP/s), backward %.3f ms (%.0f TFLOP/s)\n", M, f_ref,
              flops / f_ref / 1e9, b_ref, flops / b_ref / 1e9);
  bool ok = true;
  auto candidate = [&](const char* name, auto forward, auto backward) {
    for (Buffer* b : {&a, &dh}) cudaCheck(cudaMemset(b->p, 0, b->n * sizeof(bf16)));
    const float f = median_gpu_ms(forward), b = median_gpu_ms(backward);
    cudaCheck(cudaDeviceSynchronize());
    const double da_diff = rel_diff(a, a_ref), ddh_diff = rel_diff(dh, dh_ref);
    std::printf("%-9s forward %.3f ms (%.0f TFLOP/s), backward %.3f ms (%.0f TFLOP/s); rel diff relu²(h) %.2e, dh %.2e\n",
                name, f, flops / f / 1e9, b, flops / b / 1e9, da_diff, ddh_diff);
    ok = ok && da_diff < 1e-2 && ddh_diff < 1e-2;
  };
  auto fused_forward = [&] { linear_relu2_forward_fused(a.p, x.p, w_fc.p, M, K, N, nullptr); };
  auto fused_backward = [&] { linear_backward_input_relu2_fused(dh.p, dy.p, w_proj.p, a_ref.p, M, N, K, nullptr); };
  candidate("fused", fused_forward, fused_backward);
  std::printf(ok ? "mlp products: outputs agree\n" : "mlp products: outputs DIFFER\n");
  // Time and joules a call under sustained load, the figures that count at the power limit;
  // after all short timings, which the hot board at its limit would slow.
  const EnergyMeter meter;
  if (!meter.ok()) std::printf("energy not measured: %s\n", meter.why());
  auto energy = [&](const char* name, auto forward, auto backward) {
    if (!meter.ok()) return;
    print_sustained((std::string("energy ") + name + " forward ").c_str(), sustained_cost(meter, forward));
    print_sustained((std::string("energy ") + name + " backward").c_str(), sustained_cost(meter, backward));
  };
  if (!fused_only) {
    energy("cuBLAS + relu²", forward_ref, backward_ref);
    energy(
        "cuBLAS alone  ", [&] { linear_forward(blas, h_ref.p, x.p, w_fc.p, M, K, N); },
        [&] { linear_backward_input(blas, dh_ref.p, dy.p, w_proj.p, M, N, K); });
  }
  energy("fused         ", fused_forward, fused_backward);
  return ok ? 0 : 1;
}
