// Hopper's warpgroup matrix products (wgmma, sm_90a) as the tiled kernels use
// them: the 128-byte-swizzled shared-memory tile layout the products read, its
// descriptors, the fences around an asynchronous product, wrappers for the
// shapes needed, and the load of an A operand from a tile into registers.
//
// A warpgroup is 4 consecutive warps (a 128-thread block here). A product
// D (64 x N, fp32) += A (64 x 16) * B (16 x N) is issued by all 128 threads;
// warp w holds rows 16 w .. 16 w + 15 of D in mma.m16n8k16's accumulator layout
// (lane = 4 g + t: d[n][0..1] = row g, columns 8 n + 2 t and + 1; d[n][2..3] the
// same columns of row g + 8), which is also the layout of an A operand held in
// registers (d[2 j] and d[2 j + 1] packed to bf16 give the 16 x 16 A fragment j).
//
// Tile layout (sw128): a tile of ROWS rows of 64 or 128 bf16 is stored as 64-column
// halves, each ROWS rows of 128 bytes; inside each aligned group of 8 rows the
// 16-byte chunk c of row r sits at chunk c ^ (r % 8). Tiles start 1024-byte aligned.
// The same tile serves as a K-major operand (rows = M or N, columns = the summed
// dimension) and as an MN-major one (rows = the summed dimension).
#pragma once

#include <cstdint>

#include "model/common.cuh"

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

/// Byte offset of 16-byte chunk c (8 bf16) of row r in an sw128 tile of ROWS rows.
template <int ROWS>
__device__ __forceinline__ int sw128_offset(int r, int c) {
  return (c >> 3) * ROWS * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}

/// The descriptor of an sw128 operand starting at p (lbo: bytes between 64-column
/// halves where the product spans both, MN-major only; 8 rows are 1024 bytes apart).
__device__ __forceinline__ uint64_t sw128_desc(const void* p, uint32_t lbo = 16) {
  return uint64_t((smem_addr(p) & 0x3FFFF) >> 4) | uint64_t(lbo >> 4) << 16 | uint64_t(1024 >> 4) << 32 | 1ull << 62;
}
/// The descriptor of the operand `bytes` (a multiple of 16) past desc's start. The start field
/// (bits 0-13, 16-byte units) of an operand inside the 228 KB of shared memory cannot carry out,
/// so a plain 64-bit add does it: one uniform UIADD3.64 a product, writing the register pair the
/// product reads. The products of an unrolled loop over one tile share one descriptor
/// computation (about six uniform instructions, which were most of the attention forward's 28 %
/// uniform ones, as counted by ncu on H200); adding to the low word alone cost an add and two
/// moves a product.
__device__ __forceinline__ uint64_t desc_plus(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }
static_assert((228 * 1024) >> 4 < (1 << 14), "shared memory outgrew the descriptor's 14-bit start field: desc_plus could carry");
/// K-major operand, 16 summed columns kk * 16 .. of an sw128 tile of ROWS rows.
template <int ROWS>
__device__ __forceinline__ uint64_t k_major_desc(const bf16* tile, int kk) {
  return desc_plus(sw128_desc(tile), (kk >> 2) * ROWS * 128 + (kk & 3) * 32);
}
/// MN-major operand, 16 summed rows kk * 16 .. of an sw128 tile of ROWS rows of 128 columns.
template <int ROWS>
__device__ __forceinline__ uint64_t mn_major_desc(const bf16* tile, int kk) {
  return desc_plus(sw128_desc(tile, ROWS * 128), kk * 16 * 128);
}

// Ordering. fence_proxy_async: this thread's shared-memory writes (cp.async included) become
// visible to the products (after a barrier for the other threads). wgmma_fence: before the
// first product that reads registers other instructions wrote. commit / wait: products
// issued since the last commit form a group; wait<N> returns when at most N groups are pending.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
/// Keeps the compiler from touching accumulators across an issue / wait pair.
template <int N>
__device__ __forceinline__ void wgmma_fence_regs(float (&d)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) asm volatile("" : "+f"(d[i][j])::"memory");
}

// The accumulators of a product as asm operands: registers %0 .. %N-1 in the instruction text,
// and d[i][j] as "+f" operands in the same order.
#define WGMMA_REGS32 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "\
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WGMMA_REGS64 WGMMA_REGS32 ", "\
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "\
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define WGMMA_ACC8(d, i)                                                                        \
  "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3]), "+f"(d[i + 1][0]), "+f"(d[i + 1][1]), \
      "+f"(d[i + 1][2]), "+f"(d[i + 1][3])
#define WGMMA_ACC32(d) WGMMA_ACC8(d, 0), WGMMA_ACC8(d, 2), WGMMA_ACC8(d, 4), WGMMA_ACC8(d, 6)
#define WGMMA_ACC64(d) \
  WGMMA_ACC32(d), WGMMA_ACC8(d, 8), WGMMA_ACC8(d, 10), WGMMA_ACC8(d, 12), WGMMA_ACC8(d, 14)
// An A fragment held in registers (four packed bf16 pairs), as asm operands.
#define WGMMA_A_REGS(a) "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3])

// accumulate 0: D = A * B; otherwise D += A * B.
// D (64 x 64) (+)= A (64 x 16, shared, K-major) * B (16 x 64, shared, K-major).
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[8][4], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" WGMMA_REGS32 "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : WGMMA_ACC32(d)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// D (64 x 64) (+)= A (64 x 16, registers) * B (16 x 64, shared, K-major).
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[8][4], const uint32_t (&a)[4], uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" WGMMA_REGS32 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
      : WGMMA_ACC32(d)
      : WGMMA_A_REGS(a), "l"(desc_b), "r"(accumulate));
}

/// This warp's A fragment (16 rows 16 w .., 16 columns kk * 16 ..) of an sw128 tile of ROWS rows
/// in shared memory, in the register layout above (one ldmatrix of four 8 x 8 matrices).
template <int ROWS>
__device__ __forceinline__ void sw128_load_a(uint32_t (&a)[4], const bf16* tile, int kk) {
  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4;
  const int r = 16 * warp + (lane % 8) + 8 * ((lane / 8) % 2), c = 2 * kk + lane / 16;
  const uint32_t addr = smem_addr(reinterpret_cast<const char*>(tile) + sw128_offset<ROWS>(r, c));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(addr));
}

// D (64 x 128) (+)= A (64 x 16, shared, K-major) * B (16 x 128, shared; B_MN_MAJOR: 1 MN-major,
// 0 K-major).
template <int B_MN_MAJOR>
__device__ __forceinline__ void wgmma_m64n128k16_ss_any(float (&d)[16][4], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WGMMA_REGS64 "}, %64, %65, p, 1, 1, 0, %67;\n}\n"
      : WGMMA_ACC64(d)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(B_MN_MAJOR));
}
// D (64 x 128) (+)= A (64 x 16, shared, K-major) * B (16 x 128, shared, K-major).
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[16][4], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  wgmma_m64n128k16_ss_any<0>(d, desc_a, desc_b, accumulate);
}
// D (64 x 128) (+)= A (64 x 16, shared, K-major) * B (16 x 128, shared, MN-major).
__device__ __forceinline__ void wgmma_m64n128k16_ss_mn(float (&d)[16][4], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  wgmma_m64n128k16_ss_any<1>(d, desc_a, desc_b, accumulate);
}

// D (64 x 128) (+)= A (64 x 16, registers) * B (16 x 128, shared, MN-major).
__device__ __forceinline__ void wgmma_m64n128k16_rs_mn(float (&d)[16][4], const uint32_t (&a)[4], uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WGMMA_REGS64 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : WGMMA_ACC64(d)
      : WGMMA_A_REGS(a), "l"(desc_b), "r"(accumulate));
}
