// The fused q, k, v product (qkv_product.cuh): its launcher over product_kernel.cuh's kernel,
// with the rope + QK-norm epilogue.
#include "model/qkv_product.cuh"

#include <stdexcept>
#include <string>

#include "model/product_kernel.cuh"

bool rope_qknorm_product_fits(int rows, int in, int width, int head_dim, int seq_len,
                              std::initializer_list<const void*> ptrs) {
  // seq_len % 128: a warpgroup's 128 rows lie in one sequence, so that its threads turn their
  // first row's angles by those of 8, 64 and 72 positions to get the others'
  return head_dim == TILE_N && seq_len > 0 && seq_len % 128 == 0 && product_kernel_fits(rows, width, in, ptrs);
}

void linear_rope_qknorm_forward_fused(bf16* qkv, float* rstd, const bf16* x, const bf16* w, const float* cos_sin,
                                      int rows, int in, int width, int seq_len, int roped_heads, float eps,
                                      cudaStream_t st) {
  if (!rope_qknorm_product_fits(rows, in, width, TILE_N, seq_len, {qkv, x, w}) || roped_heads < 0 ||
      long(roped_heads) * TILE_N > width)
    throw std::invalid_argument("linear_rope_qknorm_forward: shape (" + std::to_string(rows) + " rows, " +
                                std::to_string(width) + " wide, " + std::to_string(in) + " summed, " +
                                std::to_string(roped_heads) + " roped heads, seq_len " + std::to_string(seq_len) +
                                ") or alignment does not fit the kernel: rows a multiple of " + std::to_string(TILE_M) +
                                ", width of " + std::to_string(TILE_N) + ", summed of " + std::to_string(TILE_K) +
                                ", seq_len of 128, at most width / 128 roped heads, 16-byte aligned pointers");
  launch_product<Epilogue::RopeQkNorm>(qkv, nullptr, x, w, rows, width, in, CeOperands{},
                                       RopeOperands{cos_sin, rstd, seq_len, roped_heads * TILE_N, eps}, st);
}
