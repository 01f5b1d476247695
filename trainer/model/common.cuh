// Shared by every trainer kernel file: the error-checking macros (file:line on
// failure), the bf16 type, load/store helpers that let one kernel template run
// on float (the --check model) or bf16 (the training model), and a few sizes.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>

using bf16 = __nv_bfloat16;

inline void cuda_check(cudaError_t err, const char* file, int line) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "FAIL: CUDA error at %s:%d: %s\n", file, line, cudaGetErrorString(err));
    std::exit(1);
  }
}
inline void cublas_check(cublasStatus_t st, const char* file, int line) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "FAIL: cuBLAS error at %s:%d: status %d\n", file, line, int(st));
    std::exit(1);
  }
}
#define cudaCheck(x) cuda_check((x), __FILE__, __LINE__)
#define cublasCheck(x) cublas_check((x), __FILE__, __LINE__)
// After every kernel launch: catches bad launch configurations at their call site.
#define cudaLaunchCheck() cuda_check(cudaGetLastError(), __FILE__, __LINE__)

// Element access for kernels templated on the storage type T (float or bf16).
__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(bf16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_f<bf16>(float x) { return __float2bfloat16(x); }

inline int ceil_div(long a, long b) { return int((a + b - 1) / b); }

// Sum over a warp; every lane gets the result.
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
