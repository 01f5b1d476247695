// The packing data loader: BOS-aligned rows of T+1 tokens with best-fit packing.
//
// Keeps a buffer of documents; for each row, repeatedly places the largest
// buffered document that fits entirely in what is left of the row; when none
// fits, crops the shortest buffered document to fill the row exactly (the rest
// of that document is dropped, or with requeue_crops returned to the buffer as
// a BOS-prefixed piece: see packer.h). Every row starts with BOS, no padding.
// Inputs are the first T tokens of a row, targets the last T.
//
// Batches are produced by a CPU thread ahead of the consumer into two host
// buffers (double-buffered), allocated through HostAllocator so the trainer can
// pass pinned memory (cudaMallocHost) and tests plain malloc.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/constants.h"
#include "harness/dataset.h"

namespace harness {

struct HostAllocator {
  void* (*allocate)(size_t bytes);   // must not return null (throw instead)
  void (*release)(void* p);
};
HostAllocator malloc_allocator();

struct LoaderOptions {
  int batch_rows = 128;            // B
  int seq_len = MAX_SEQ_LEN;       // T; rows hold T+1 tokens
  int buffer_docs = 1000;          // documents kept for best-fit packing (at least)
  bool cycle = true;               // wrap to the first document, epoch += 1 (training, and
                                   // validation packed as the reference packs it); false: stop
  bool requeue_crops = false;      // keep a cropped document's rest (BOS-prefixed) instead of
                                   // dropping it (evaluate_bpb's every-token packing)
  int refill_docs = 128;           // documents added at a time below buffer_docs, as the
                                   // reference adds its tokenizer's batches
};

/// One batch, valid until the next call to next().
struct Batch {
  const uint16_t* rows = nullptr;  // (B, T+1) row-major
  int batch_rows = 0;              // B
  int seq_len = 0;                 // T
  int epoch = 0;                   // 1-based epoch of the row that started this batch
  bool last = false;               // non-cycling loader: no further batch
};

class PackedLoader {
 public:
  PackedLoader(const TokenShard& shard, LoaderOptions options,
               HostAllocator allocator = malloc_allocator());
  ~PackedLoader();
  PackedLoader(const PackedLoader&) = delete;
  PackedLoader& operator=(const PackedLoader&) = delete;

  /// Blocks until the next batch is ready. For a non-cycling loader, returns a
  /// batch with rows == nullptr once the documents are used up.
  Batch next();

 private:
  // implementation detail, see loader.cc
  struct State;
  State* state_;
};

}  // namespace harness
