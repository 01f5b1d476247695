// The parameter table: every tensor's name, shape, storage and optimizer
// group, laid out in three device buffers:
//   master  fp32 weights (lm_head, lambdas, block matrices; block matrices of
//           one shape are contiguous, so an optimizer group is one stack)
//   embed   T-typed embeddings (wte, value embeddings): bf16 when training
//   grads   fp32 gradient of every tensor (master part first, then embed part)
// plus `shadow`, the T copy of master that the matrix products read (it aliases
// master when T is float). Also: a device allocator that counts bytes.
#pragma once

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "model/common.cuh"

/// cudaMalloc that counts; peak_vram_mb reports the total.
struct DeviceArena {
  std::vector<void*> blocks;
  size_t bytes = 0;
  template <typename T>
  T* alloc(size_t count) {
    void* p = nullptr;
    size_t n = std::max<size_t>(count, 1) * sizeof(T);
    cudaCheck(cudaMalloc(&p, n));
    blocks.push_back(p);
    bytes += n;
    return static_cast<T*>(p);
  }
  ~DeviceArena() {
    for (void* p : blocks) cudaFree(p);
  }
};

enum class Group { LmHead, Embedding, ResidLambda, X0Lambda, Matrix };

struct ParamInfo {
  std::string name;
  std::vector<int> shape;  // (out, in) for matrices
  Group group;
  bool embed;              // stored in the T-typed embedding buffer
  long offset = 0;         // into master or embed
  long grad_offset = 0;    // into grads
  long numel() const {
    long n = 1;
    for (int d : shape) n *= d;
    return n;
  }
  int rows() const { return shape[0]; }
  int cols() const { return shape.size() > 1 ? shape[1] : 1; }
};

template <typename T>
struct Params {
  std::vector<ParamInfo> info;
  long n_master = 0, n_embed = 0;  // buffer lengths, padding included
  long n_params = 0;               // parameters, no padding
  float* master = nullptr;  // (n_master,)
  T* shadow = nullptr;      // (n_master,)
  T* embed = nullptr;       // (n_embed,)
  float* grads = nullptr;   // (n_master + n_embed,)

  int add(const std::string& name, std::vector<int> shape, Group g) {
    info.push_back({name, std::move(shape), g, g == Group::Embedding});
    return int(info.size()) - 1;
  }
  /// Assigns offsets (block matrices grouped by shape, in order of first
  /// appearance) and allocates the buffers. Every tensor, and every stack of
  /// same-shape matrices (contiguous: Muon updates a stack at once), starts at a
  /// multiple of ALIGN elements, so 16-byte vector accesses and cuBLAS's
  /// aligned kernels apply to all of them.
  static constexpr long ALIGN = 64;
  static long aligned(long n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }
  void allocate(DeviceArena& arena) {
    std::vector<int> order;
    for (int i = 0; i < int(info.size()); i++)
      if (!info[i].embed && info[i].group != Group::Matrix) order.push_back(i);
    std::vector<std::vector<int>> shapes;
    for (auto& p : info)
      if (p.group == Group::Matrix && std::find(shapes.begin(), shapes.end(), p.shape) == shapes.end())
        shapes.push_back(p.shape);
    for (auto& sh : shapes)
      for (int i = 0; i < int(info.size()); i++)
        if (info[i].group == Group::Matrix && info[i].shape == sh) order.push_back(i);
    for (size_t o = 0; o < order.size(); o++) {
      const ParamInfo& t = info[order[o]];
      const bool stacked = o > 0 && t.group == Group::Matrix && info[order[o - 1]].group == Group::Matrix &&
                           info[order[o - 1]].shape == t.shape;
      if (!stacked) n_master = aligned(n_master);
      info[order[o]].offset = info[order[o]].grad_offset = n_master;
      n_master += t.numel();
    }
    n_master = aligned(n_master);
    for (auto& p : info)
      if (p.embed) {
        p.offset = n_embed = aligned(n_embed);
        n_embed += p.numel();
      }
    n_embed = aligned(n_embed);
    for (auto& p : info) {
      if (p.embed) p.grad_offset = n_master + p.offset;
      n_params += p.numel();
    }
    master = arena.alloc<float>(n_master);
    embed = arena.alloc<T>(n_embed);
    grads = arena.alloc<float>(n_master + n_embed);
    if constexpr (std::is_same_v<T, float>) shadow = master;
    else shadow = arena.alloc<T>(n_master);
  }
  float* w(int i) const { return master + info[i].offset; }
  const T* wt(int i) const { return shadow + info[i].offset; }
  T* e(int i) const { return embed + info[i].offset; }
  float* g(int i) const { return grads + info[i].grad_offset; }
  long count() const { return n_master + n_embed; }  // length of grads
  int find(const std::string& name) const {
    for (int i = 0; i < int(info.size()); i++)
      if (info[i].name == name) return i;
    return -1;
  }
};

inline uint16_t host_bf16_bits(float x) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
inline float host_bf16_round(float x) {
  uint32_t u = uint32_t(host_bf16_bits(x)) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
