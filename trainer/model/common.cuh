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

// Eight consecutive elements as floats: one 16-byte access for bf16, two for float.
// The pointer must be 16-byte aligned (every tensor here is, and rows are
// multiples of 8 elements).
__device__ __forceinline__ void load8(float* f, const bf16* p) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; i++) {
    const float2 x = __bfloat1622float2(h[i]);
    f[2 * i] = x.x, f[2 * i + 1] = x.y;
  }
}
__device__ __forceinline__ void load8(float* f, const float* p) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}
__device__ __forceinline__ void store8(bf16* p, const float* f) {
  uint4 u;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; i++) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  *reinterpret_cast<uint4*>(p) = u;
}
__device__ __forceinline__ void store8(float* p, const float* f) {
  reinterpret_cast<float4*>(p)[0] = make_float4(f[0], f[1], f[2], f[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(f[4], f[5], f[6], f[7]);
}

// Two consecutive elements as floats (4-byte bf16 or 8-byte float accesses).
__device__ __forceinline__ float2 load2(const bf16* p) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
}
__device__ __forceinline__ float2 load2(const float* p) { return *reinterpret_cast<const float2*>(p); }
__device__ __forceinline__ void store2(bf16* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}
__device__ __forceinline__ void store2(float* p, float a, float b) {
  *reinterpret_cast<float2*>(p) = make_float2(a, b);
}

// Four consecutive elements as floats (8-byte bf16 or 16-byte float accesses).
__device__ __forceinline__ void load4(float* f, const bf16* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
  f[0] = a.x, f[1] = a.y, f[2] = b.x, f[3] = b.y;
}
__device__ __forceinline__ void load4(float* f, const float* p) {
  const float4 a = *reinterpret_cast<const float4*>(p);
  f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w;
}
__device__ __forceinline__ void store4(bf16* p, const float* f) {
  __nv_bfloat162 h[2] = {__floats2bfloat162_rn(f[0], f[1]), __floats2bfloat162_rn(f[2], f[3])};
  *reinterpret_cast<uint2*>(p) = *reinterpret_cast<const uint2*>(h);
}
__device__ __forceinline__ void store4(float* p, const float* f) {
  *reinterpret_cast<float4*>(p) = make_float4(f[0], f[1], f[2], f[3]);
}

inline int ceil_div(long a, long b) { return int((a + b - 1) / b); }

constexpr float LOG2E = 1.4426950408889634f;  // exp(x) = exp2(x * LOG2E)

/// tanh(x) by the hardware (tanh.approx, one MUFU op, relative error about 2^-11: under the bf16
/// rounding of the logits it soft-caps).
__device__ __forceinline__ float tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// 2^x by the hardware (ex2.approx.ftz: one MUFU op). exp2f compiles to the same op wrapped in a
/// range test and two multiplies that keep results under 2^-126 as denormals; a softmax or a
/// cross-entropy sum has no use for them, so here they are 0.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// relu(h) from the saved a = relu(h)² (a >= 0), for relu²'s backward: one MUFU op
/// (sqrt.approx.ftz, relative error about 2^-23, far under a's bf16 rounding; an a under 2^-126
/// gives 0). sqrtf's IEEE-rounded sequence made the fused backward product 1.9 times slower
/// (measured on H200), and without .ftz each MUFU op comes with a range test and two
/// multiplies for denormal a.
__device__ __forceinline__ float relu_from_square(float a) {
  float r;
  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
  return r;
}

// Sum over a warp; every lane gets the result.
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// Sum over the aligned group of W lanes this lane belongs to (W a power of two, at most 32);
// every lane of the group gets it (the warp's other groups may have returned already).
template <int W>
__device__ __forceinline__ float lane_group_sum(float v) {
  const unsigned mask = (W == 32 ? 0xffffffffu : (1u << W) - 1u) << (threadIdx.x & (32 - W) & 31);
  for (int o = W / 2; o > 0; o >>= 1) v += __shfl_xor_sync(mask, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
