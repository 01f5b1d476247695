// harness_bench: throughput figures for docs/harness.md (a benchmark, not a test).
//   harness_bench --data DIR --text FILE [--seconds S]
// Prints the loader's packed tokens per second on one producer thread (and the
// bare packing loop without the thread hand-off), and the single-thread encode
// throughput of DIR's tokenizer on FILE's documents.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "harness/bpe.h"
#include "harness/constants.h"
#include "harness/dataset.h"
#include "harness/loader.h"
#include "harness/packer.h"
#include "harness/text_input.h"
#include "harness/tokenizer.h"

using namespace harness;
using Clock = std::chrono::steady_clock;

static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main(int argc, char** argv) {
  std::string data, text;
  double seconds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--data") data = argv[i + 1];
    else if (a == "--text") text = argv[i + 1];
    else if (a == "--seconds") seconds = std::atof(argv[i + 1]);
  }
  if (data.empty() || text.empty()) {
    std::cerr << "usage: harness_bench --data DIR --text FILE [--seconds S]\n";
    return 1;
  }
  try {
    TokenShard train(data, "train");
    const LoaderOptions options;  // B = 128, T = 2048, buffer 1000, cycling
    const double row_tokens = static_cast<double>(options.batch_rows) * (options.seq_len + 1);
    {
      PackedLoader loader(train, options);
      long batches = 0;
      uint64_t checksum = 0;
      auto t0 = Clock::now();
      int epoch = 0;
      while (since(t0) < seconds) {
        Batch b = loader.next();
        checksum += b.rows[batches % (options.batch_rows * (options.seq_len + 1))];
        epoch = b.epoch;
        ++batches;
      }
      const double dt = since(t0);
      std::printf("loader: %ld batches of %d x %d in %.2f s = %.1f M tokens/s (one producer thread; epoch %d, checksum %llu)\n",
                  batches, options.batch_rows, options.seq_len + 1, dt, batches * row_tokens / dt / 1e6, epoch,
                  static_cast<unsigned long long>(checksum));
    }
    for (const char* name : {"train", "val"}) {
      TokenShard shard(data, name);
      std::vector<size_t> lengths(shard.num_docs());
      size_t longer = 0;
      for (size_t d = 0; d < lengths.size(); ++d) {
        lengths[d] = shard.doc_end(d) - shard.doc_begin(d);
        longer += lengths[d] > static_cast<size_t>(options.seq_len) + 1;
      }
      for (bool requeue : {false, true}) {
        const size_t rows = count_rows(lengths, options.seq_len + 1, options.buffer_docs, requeue, options.refill_docs);
        std::printf("packing %s%s: %zu documents (%zu longer than a row), %zu rows = %zu batches of %d, %.1f%% of the shard's tokens\n",
                    name, requeue ? " (crops requeued)" : " (crops dropped)", lengths.size(), longer, rows,
                    rows / options.batch_rows, options.batch_rows, 100.0 * rows * (options.seq_len + 1) / shard.num_tokens());
      }
    }
    {
      std::vector<size_t> lengths(train.num_docs());
      for (size_t d = 0; d < lengths.size(); ++d) lengths[d] = train.doc_end(d) - train.doc_begin(d);
      RowPacker packer(lengths, options.seq_len + 1, options.buffer_docs, true, false, options.refill_docs);
      std::vector<uint16_t> row(options.seq_len + 1);
      std::vector<RowPiece> pieces;
      long rows = 0;
      int epoch = 0;
      auto t0 = Clock::now();
      while (since(t0) < seconds) {
        for (int k = 0; k < 256; ++k, ++rows) {
          packer.next_row(pieces, epoch);
          uint16_t* out = row.data();
          for (const RowPiece& p : pieces) {
            std::memcpy(out, train.tokens() + train.doc_begin(p.doc), p.length * sizeof(uint16_t));
            out += p.length;
          }
        }
      }
      const double dt = since(t0);
      std::printf("packing loop: %ld rows in %.2f s = %.1f M tokens/s (single thread, no hand-off)\n", rows, dt,
                  rows * (options.seq_len + 1.0) / dt / 1e6);
    }
    {
      std::vector<std::string> docs;
      size_t bytes = 0;
      read_documents(text, "text", [&](std::string&& d, size_t) {
        bytes += d.size();
        docs.push_back(std::move(d));
      });
      auto encoder = std::make_shared<const BpeEncoder>(read_tiktoken_file(data + "/tokenizer.tiktoken"));
      Tokenizer tok(encoder);
      std::vector<uint16_t> ids;
      for (int pass = 1; pass <= 2; ++pass) {  // pass 1 fills the chunk cache, as prepare's first documents do
        ids.clear();
        timespec c0{}, c1{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        auto t0 = Clock::now();
        for (const auto& d : docs) tok.encode(d, ids);
        const double dt = since(t0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        const double cpu = (c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / 1e9;
        std::printf("encode pass %d: %.2f MB in %.2f s = %.1f MB/s on one thread, %.1f MB per CPU second (%zu tokens, %.2f bytes/token)\n",
                    pass, bytes / 1e6, dt, bytes / 1e6 / dt, bytes / 1e6 / cpu, ids.size(),
                    static_cast<double>(bytes) / ids.size());
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "harness_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
