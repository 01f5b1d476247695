// Moves one micro-batch of token rows to the device: a pinned staging copy of
// the rows (B, T+1), and the positions of every token grouped by token id
// (TokenIndex, for deterministic embedding gradients), built on the host.
// One slot: before the slot is refilled, the previous copies must have run.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "model/common.cuh"
#include "model/layers.cuh"
#include "model/params.cuh"

class BatchStager {
 public:
  BatchStager(DeviceArena& arena, int B, int T, int V) : B_(B), T_(T), V_(V) {
    long N = long(B) * T;
    cudaCheck(cudaMallocHost(&h_rows_, sizeof(uint16_t) * B * (T + 1)));
    max_segments_ = max_embed_segments(N, V);
    index_ints_ = 2 * V + 1 + N + (max_segments_ + 1) + (V + 1);
    cudaCheck(cudaMallocHost(&h_index_, sizeof(int) * index_ints_));
    cudaCheck(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming));
    d_rows_ = arena.alloc<uint16_t>(size_t(B) * (T + 1));
    d_index_ = arena.alloc<int>(index_ints_);
    inputs = arena.alloc<int>(N);
    targets = arena.alloc<int>(N);
    counts_.resize(V);
  }
  ~BatchStager() {
    cudaFreeHost(h_rows_);
    cudaFreeHost(h_index_);
    cudaEventDestroy(copied_);
  }
  BatchStager(const BatchStager&) = delete;
  BatchStager& operator=(const BatchStager&) = delete;

  /// Stages rows (B, T+1) and enqueues the copies and the split on `st`.
  void upload(const uint16_t* rows, cudaStream_t st) {
    cudaCheck(cudaEventSynchronize(copied_));
    const long N = long(B_) * T_;
    std::memcpy(h_rows_, rows, sizeof(uint16_t) * B_ * (T_ + 1));
    // counting sort of positions by input token
    std::fill(counts_.begin(), counts_.end(), 0);
    for (long n = 0; n < N; n++) counts_[h_rows_[(n / T_) * (T_ + 1) + n % T_]]++;
    int* uniq = h_index_;
    int* offs = h_index_ + V_;
    int* pos = h_index_ + 2 * V_ + 1;
    int U = 0, run = 0;
    for (int v = 0; v < V_; v++)
      if (counts_[v]) {
        uniq[U] = v;
        offs[U++] = run;
        int c = counts_[v];
        counts_[v] = run;  // becomes the write cursor
        run += c;
      }
    offs[U] = run;
    for (long n = 0; n < N; n++) pos[counts_[h_rows_[(n / T_) * (T_ + 1) + n % T_]]++] = int(n);
    // segments of at most EMBED_SEGMENT positions, never across tokens
    int* seg_begin = pos + N;
    int* seg_first = seg_begin + max_segments_ + 1;
    int S = 0;
    for (int u = 0; u < U; u++) {
      seg_first[u] = S;
      for (int p = offs[u]; p < offs[u + 1]; p += EMBED_SEGMENT) seg_begin[S++] = p;
    }
    seg_first[U] = S;
    seg_begin[S] = int(N);
    cudaCheck(cudaMemcpyAsync(d_rows_, h_rows_, sizeof(uint16_t) * B_ * (T_ + 1), cudaMemcpyHostToDevice, st));
    cudaCheck(cudaMemcpyAsync(d_index_, h_index_, sizeof(int) * index_ints_, cudaMemcpyHostToDevice, st));
    cudaCheck(cudaEventRecord(copied_, st));
    // the same layout on the device
    index = {d_index_, d_index_ + (offs - h_index_), d_index_ + (pos - h_index_), d_index_ + (seg_begin - h_index_),
             d_index_ + (seg_first - h_index_), U, S};
    split_rows(inputs, targets, d_rows_, B_, T_, st);
  }

  int* inputs = nullptr;   // (B*T,) device
  int* targets = nullptr;  // (B*T,) device
  TokenIndex index{};      // device, of the inputs

 private:
  int B_, T_, V_;
  uint16_t* h_rows_ = nullptr;
  long max_segments_ = 0;
  long index_ints_ = 0;
  int* h_index_ = nullptr;  // unique (V), offsets (V+1), positions (N), seg_begin (max+1), seg_first (V+1)
  uint16_t* d_rows_ = nullptr;
  int* d_index_ = nullptr;
  std::vector<int> counts_;
  cudaEvent_t copied_ = nullptr;
};
