// Best-fit row packing (see packer.h).
#include "harness/packer.h"

#include <limits>
#include <stdexcept>

namespace harness {

RowPacker::RowPacker(std::vector<size_t> doc_lengths, size_t row_len, int buffer_docs, bool cycle,
                     bool requeue_crops, int refill_docs)
    : lengths_(std::move(doc_lengths)), row_len_(row_len), buffer_docs_(buffer_docs),
      refill_docs_(refill_docs > 0 ? size_t(refill_docs) : 0), cycle_(cycle), requeue_crops_(requeue_crops) {
  if (refill_docs < 1) throw std::invalid_argument("packer: refill_docs must be at least 1");
  if (cycle_ && buffer_docs_ > lengths_.size()) buffer_docs_ = lengths_.size();
  if (lengths_.empty()) throw std::invalid_argument("packer: no documents");
  if (row_len_ == 0) throw std::invalid_argument("packer: row length must be positive");
  if (buffer_docs < 1) throw std::invalid_argument("packer: buffer must hold at least one document");
  for (size_t len : lengths_)
    if (len == 0) throw std::invalid_argument("packer: empty document");
}

void RowPacker::refill() {
  while (buffer_.size() < buffer_docs_) {
    if (cursor_ == lengths_.size()) {
      if (!cycle_) return;
      cursor_ = 0;
      ++epoch_;
    }
    // One chunk of refill_docs documents, cut short at the end of the shard.
    for (size_t added = 0; added < refill_docs_ && cursor_ < lengths_.size(); ++added, ++cursor_)
      buffer_.insert(Entry{lengths_[cursor_], arrivals_++, cursor_, epoch_, 0});
  }
}

bool RowPacker::next_row(std::vector<RowPiece>& pieces, int& epoch) {
  pieces.clear();
  size_t left = row_len_;
  while (left > 0) {
    refill();
    if (buffer_.empty()) return false;  // non-cycling and used up: the partial row is dropped
    // Largest length <= left; among equal lengths the oldest.
    auto it = buffer_.upper_bound(Entry{left, std::numeric_limits<uint64_t>::max(), 0, 0, 0});
    if (it != buffer_.begin()) {
      --it;
      it = buffer_.lower_bound(Entry{it->length, 0, 0, 0, 0});
      pieces.push_back({it->doc, it->length, it->offset});
      left -= it->length;
    } else {
      it = buffer_.begin();  // nothing fits: crop the shortest
      pieces.push_back({it->doc, left, it->offset});
      if (requeue_crops_) {
        // Document tokens written: `left`, less the BOS the loader writes for
        // a rest. What remains of the document becomes a rest with its own BOS.
        const size_t written = it->offset == 0 ? left : left - 1;
        const size_t offset = it->offset + written;
        const size_t remaining = lengths_[it->doc] - offset;
        if (remaining > 0) buffer_.insert(Entry{remaining + 1, arrivals_++, it->doc, it->epoch, offset});
      }
      left = 0;
    }
    if (pieces.size() == 1) epoch = it->epoch;
    buffer_.erase(it);
  }
  return true;
}

size_t count_rows(const std::vector<size_t>& doc_lengths, size_t row_len, int buffer_docs, bool requeue_crops,
                  int refill_docs) {
  RowPacker packer(doc_lengths, row_len, buffer_docs, /*cycle=*/false, requeue_crops, refill_docs);
  std::vector<RowPiece> pieces;
  int epoch = 0;
  size_t rows = 0;
  while (packer.next_row(pieces, epoch)) ++rows;
  return rows;
}

}  // namespace harness
