// The packing data loader: a producer thread packs rows (packer.h) into two
// host buffers while the consumer reads the other one.
#include "harness/loader.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>

#include "harness/packer.h"

namespace harness {

HostAllocator malloc_allocator() {
  return {[](size_t bytes) -> void* {
            void* p = std::malloc(bytes);
            if (p == nullptr) throw std::bad_alloc();
            return p;
          },
          [](void* p) { std::free(p); }};
}

namespace {

std::vector<size_t> document_lengths(const TokenShard& shard) {
  std::vector<size_t> lengths(shard.num_docs());
  for (size_t d = 0; d < lengths.size(); ++d) lengths[d] = shard.doc_end(d) - shard.doc_begin(d);
  return lengths;
}

}  // namespace

struct PackedLoader::State {
  enum class Slot { kFree, kReady, kHeld };

  const TokenShard& shard;
  LoaderOptions options;
  HostAllocator allocator;
  RowPacker packer;
  size_t total_batches = 0;  // non-cycling only: complete batches the shard yields

  uint16_t* buffers[2] = {nullptr, nullptr};  // each (B, T+1)
  Slot slots[2] = {Slot::kFree, Slot::kFree};
  int epochs[2] = {0, 0};
  size_t batch_numbers[2] = {0, 0};
  int held = -1;           // slot the consumer has
  int next_slot = 0;       // slot the consumer takes next
  bool finished = false;   // producer made its last batch
  bool stopping = false;
  std::exception_ptr error;
  std::mutex mutex;
  std::condition_variable changed;
  std::thread producer;

  State(const TokenShard& s, LoaderOptions o, HostAllocator a)
      : shard(s), options(o), allocator(a),
        packer(document_lengths(s), static_cast<size_t>(o.seq_len) + 1, o.buffer_docs, o.cycle, o.requeue_crops,
               o.refill_docs) {
    if (o.batch_rows < 1 || o.seq_len < 1) throw std::invalid_argument("loader: batch_rows and seq_len must be positive");
    if (!o.cycle)
      total_batches = count_rows(document_lengths(s), static_cast<size_t>(o.seq_len) + 1, o.buffer_docs,
                                 o.requeue_crops, o.refill_docs) /
                      static_cast<size_t>(o.batch_rows);
  }

  size_t row_tokens() const { return static_cast<size_t>(options.seq_len) + 1; }

  // Packs one batch into `out`; false when the documents ran out first.
  bool pack_batch(uint16_t* out, int& epoch, std::vector<RowPiece>& pieces) {
    for (int r = 0; r < options.batch_rows; ++r) {
      int row_epoch = 0;
      if (!packer.next_row(pieces, row_epoch)) return false;
      if (r == 0) epoch = row_epoch;
      uint16_t* row = out + static_cast<size_t>(r) * row_tokens();
      for (const RowPiece& p : pieces) {
        if (p.offset == 0) {
          std::memcpy(row, shard.tokens() + shard.doc_begin(p.doc), p.length * sizeof(uint16_t));
        } else {  // a requeued rest: its own BOS, then the document from offset
          row[0] = BOS_ID;
          std::memcpy(row + 1, shard.tokens() + shard.doc_begin(p.doc) + p.offset, (p.length - 1) * sizeof(uint16_t));
        }
        row += p.length;
      }
    }
    return true;
  }

  void produce() {
    std::vector<RowPiece> pieces;
    size_t made = 0;
    try {
      for (int slot = 0;; slot ^= 1) {
        {
          std::unique_lock<std::mutex> lock(mutex);
          changed.wait(lock, [&] { return stopping || slots[slot] == Slot::kFree; });
          if (stopping) return;
        }
        int epoch = 0;
        bool ok = (options.cycle || made < total_batches) && pack_batch(buffers[slot], epoch, pieces);
        std::lock_guard<std::mutex> lock(mutex);
        if (!ok) {
          finished = true;
          changed.notify_all();
          return;
        }
        slots[slot] = Slot::kReady;
        epochs[slot] = epoch;
        batch_numbers[slot] = made++;
        changed.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      error = std::current_exception();
      finished = true;
      changed.notify_all();
    }
  }
};

PackedLoader::PackedLoader(const TokenShard& shard, LoaderOptions options, HostAllocator allocator)
    : state_(new State(shard, options, allocator)) {
  const size_t bytes = static_cast<size_t>(options.batch_rows) * state_->row_tokens() * sizeof(uint16_t);
  try {
    state_->buffers[0] = static_cast<uint16_t*>(allocator.allocate(bytes));
    state_->buffers[1] = static_cast<uint16_t*>(allocator.allocate(bytes));
    state_->producer = std::thread([s = state_] { s->produce(); });
  } catch (...) {
    for (uint16_t* b : state_->buffers)
      if (b != nullptr) allocator.release(b);
    delete state_;
    throw;
  }
}

PackedLoader::~PackedLoader() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->changed.notify_all();
  state_->producer.join();
  for (uint16_t* b : state_->buffers) state_->allocator.release(b);
  delete state_;
}

Batch PackedLoader::next() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.held >= 0) {
    s.slots[s.held] = State::Slot::kFree;
    s.held = -1;
    s.changed.notify_all();
  }
  s.changed.wait(lock, [&] { return s.slots[s.next_slot] == State::Slot::kReady || s.finished; });
  if (s.error) std::rethrow_exception(s.error);
  Batch batch;
  batch.batch_rows = s.options.batch_rows;
  batch.seq_len = s.options.seq_len;
  if (s.slots[s.next_slot] != State::Slot::kReady) {
    batch.last = true;  // used up: rows == nullptr
    return batch;
  }
  const int slot = s.next_slot;
  s.slots[slot] = State::Slot::kHeld;
  s.held = slot;
  s.next_slot ^= 1;
  batch.rows = s.buffers[slot];
  batch.epoch = s.epochs[slot];
  batch.last = !s.options.cycle && s.batch_numbers[slot] + 1 == s.total_batches;
  return batch;
}

}  // namespace harness
