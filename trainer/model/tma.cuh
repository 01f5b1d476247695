// The tensor-memory accelerator (TMA, sm_90) as the product and attention backward kernels use
// it: 2-D tensor maps of row-major bf16 matrices (or column slices of them) in 128-byte-swizzled
// boxes (the sw128 tile layout of wgmma.cuh, so a loaded box is a ready operand), bulk loads
// (tiles and contiguous bytes) that complete on an mbarrier, bulk stores from shared memory
// with their groups and waits, and the mbarrier operations.
//
// A box is (box_rows, 64) bf16: 64 columns of 128 bytes; its shared-memory destination must
// be 1024-byte aligned. The global matrix's base must be 16-byte aligned and its row stride a
// multiple of 16 bytes (the driver refuses the map otherwise).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "model/wgmma.cuh"

// ---- mbarriers: a phase completes when `count` threads arrived and the expected bytes landed ----
__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
/// Makes initialized barriers visible to the async proxy (TMA) and the other threads.
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  fence_proxy_async();
}
/// This thread's arrival, announcing `bytes` more that TMA will deliver in this phase.
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
/// Whether the phase of parity `parity` (0 for the 1st, 1 for the 2nd, ...) has completed
/// (try_wait: the hardware may hold the thread a while before it answers no).
__device__ __forceinline__ bool mbar_try_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
/// Waits until that phase has completed. The loop is the compiler's own, not a branch inside the
/// asm: around an asm loop ptxas allocated registers worse (a variant of the fused relu²
/// backward: 168 registers and 36 bytes spilled, against 154 and none).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}

// ---- bulk tensor copies ----
/// The box at (column x, row y) of the map into shared memory at dst; completes on bar.
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(smem_addr(bar))
      : "memory");
}
/// `bytes` contiguous bytes from global src into shared dst (both 16-byte aligned, bytes a multiple
/// of 16); completes on bar.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, int bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}
/// Shared memory at src into the box at (column x, row y); after fence_proxy_async() over the
/// writes of src. A thread's stores since its last commit form one bulk group.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, int x, int y, const void* src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(x), "r"(y), "r"(smem_addr(src))
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/// This thread's stores have read their shared memory (it may be overwritten).
__device__ __forceinline__ void tma_store_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
/// This thread's stores are complete in global memory.
__device__ __forceinline__ void tma_store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// ---- host side ----
/// Every pointer starts 16-byte aligned, as the global addresses of TMA copies must.
inline bool tma_aligned(std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}
/// The map of a row-major (rows, cols) bf16 matrix in (box_rows, 64) boxes, 128-byte swizzled;
/// its rows start row_stride elements apart (0: cols, packed), so a map may cover a column
/// slice of a wider matrix. Throws std::invalid_argument when the driver refuses it (a
/// misaligned base or stride, say).
inline CUtensorMap tma_map_bf16(const void* p, long rows, long cols, int box_rows, long row_stride = 0) {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    cudaCheck(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !fn) throw std::runtime_error("the CUDA driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  CUtensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)}, strides[1] = {cuuint64_t(row_stride ? row_stride : cols) * 2};
  const cuuint32_t box[2] = {64, cuuint32_t(box_rows)}, elem_strides[2] = {1, 1};
  const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(p), dims, strides, box,
                            elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::invalid_argument("tensor map of a (" + std::to_string(rows) + ", " + std::to_string(cols) +
                                ") bf16 matrix refused by the driver (CUresult " + std::to_string(int(r)) + ")");
  return map;
}
