// Best-fit row packing over document lengths only (no tokens), so the loader,
// its tests and the dry run that finds a validation loader's last batch all
// make exactly the same decisions.
//
// For each row of row_len tokens: when the buffer holds fewer than buffer_docs
// documents, add the next documents in shard order, refill_docs at a time (the
// reference adds its tokenizer's batches of 128, so its buffer holds 1000 to
// 1127; a chunk ends at the end of the shard); place the largest buffered
// document that fits entirely in what
// is left of the row (oldest first among equal lengths); when none fits, crop
// the shortest buffered document to fill the row exactly. The rest of a
// cropped document is dropped (training, as specified), or with requeue_crops
// (validation) goes back into the buffer as a piece of its own that starts
// with a BOS written by the loader, so that no token of the shard is lost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace harness {

/// Part of one document placed in a row, `length` tokens in all. offset 0: the
/// document's tokens [doc_begin, doc_begin + length), starting with its BOS.
/// offset > 0 (a requeued rest): a BOS, then the document's tokens
/// [doc_begin + offset, doc_begin + offset + length - 1).
struct RowPiece {
  size_t doc = 0;
  size_t length = 0;
  size_t offset = 0;
};

class RowPacker {
 public:
  /// doc_lengths: token count of each document (>= 1). cycle: wrap to document 0
  /// at the end (epoch += 1); otherwise stop once the documents are used up.
  /// refill_docs: documents added at a time when the buffer runs low (>= 1).
  RowPacker(std::vector<size_t> doc_lengths, size_t row_len, int buffer_docs, bool cycle,
            bool requeue_crops = false, int refill_docs = 1);

  /// Fills `pieces` with the next row (lengths sum to row_len) and returns true;
  /// returns false (non-cycling only) when no complete row can be made.
  /// `epoch` receives the 1-based pass over the documents that the row's first
  /// document was taken from. A cycling packer's buffer target is at most
  /// num_docs documents; a refill chunk may still bring a second copy of a
  /// buffered document from the next pass (only shards smaller than the buffer).
  bool next_row(std::vector<RowPiece>& pieces, int& epoch);

 private:
  void refill();

  std::vector<size_t> lengths_;
  size_t row_len_;
  size_t buffer_docs_;
  size_t refill_docs_;
  bool cycle_;
  bool requeue_crops_;
  size_t cursor_ = 0;        // next document to buffer
  int epoch_ = 1;
  uint64_t arrivals_ = 0;
  struct Entry {
    size_t length;
    uint64_t arrival;  // insertion counter: orders equal lengths oldest first
    size_t doc;
    int epoch;
    size_t offset;  // 0, or where a requeued rest starts in the document
    bool operator<(const Entry& o) const {
      return length != o.length ? length < o.length : arrival < o.arrival;
    }
  };
  std::set<Entry> buffer_;  // ordered by length, so best-fit lookups are O(log n)
};

/// Number of complete rows a non-cycling packer makes from these documents.
size_t count_rows(const std::vector<size_t>& doc_lengths, size_t row_len, int buffer_docs,
                  bool requeue_crops = false, int refill_docs = 1);

}  // namespace harness
