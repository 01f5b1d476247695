// Asynchronous global -> shared copies (cp.async, sm_80+) as the tiled kernels use them:
// a thread's copies of a group it committed have landed once cp_async_wait() returns;
// fence_proxy_async() and a barrier then show them to the warpgroup products of the whole
// block (tiles_ready() does all three).
#pragma once

#include "model/wgmma.cuh"

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most PENDING of this thread's committed groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory"); }
// Makes the tiles of this thread's finished copies readable by the whole block's products.
__device__ __forceinline__ void tiles_ready() {
  cp_async_wait<0>();
  fence_proxy_async();
  __syncthreads();
}

/// Starts copying a (ROWS, COLS) bf16 tile from global (row r at src + r * stride) into the sw128
/// tile s: 16 bytes per cp.async, consecutive threads on consecutive chunks of a row. NTHREADS
/// threads share the copy, thread `tid` of them this one. The caller commits the group.
template <int ROWS, int COLS, int NTHREADS>
__device__ __forceinline__ void load_tile_sw128_async(bf16* s, const bf16* src, long stride, int tid) {
  constexpr int PER_ROW = COLS / 8;
  static_assert(ROWS * PER_ROW % NTHREADS == 0, "tile copy must split evenly over the threads");
#pragma unroll
  for (int n = 0; n < ROWS * PER_ROW / NTHREADS; n++) {
    const int i = tid + n * NTHREADS, r = i / PER_ROW, c = i % PER_ROW;
    cp_async16(reinterpret_cast<char*>(s) + sw128_offset<ROWS>(r, c), src + r * stride + c * 8);
  }
}

