// prepare: text files to a dataset directory (layout in dataset.h).
//
// Reads the training and validation inputs (text_input.h), refuses a
// validation set more than 1% of whose documents are identical to training
// documents (a few identical boilerplate documents are counted), trains the BPE tokenizer on
// the training documents (each capped at TRAIN_DOC_CAP_CHARS characters, at
// most TRAIN_MAX_CHARS in all), encodes both sets with several threads
// (every document prefixed by BOS) and writes the dataset into
// <cache>/<key>, where key is the SHA-256 of the input files' bytes and every
// setting. Written into a temporary directory first and renamed into place, so
// a directory under its key is always complete; a later run with the same key
// reuses it.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace harness {

constexpr int DATASET_FORMAT = 1;                    // meta.json "format"; bump on any layout change
constexpr size_t TRAIN_DOC_CAP_CHARS = 10000;        // characters of a document the tokenizer trains on
constexpr size_t TRAIN_MAX_CHARS = 1000000000;       // characters the tokenizer trains on in all
constexpr double MAX_VAL_OVERLAP = 0.01;             // share of validation documents that may equal a training one

struct PrepareOptions {
  std::vector<std::string> train;  // input files, in order
  std::vector<std::string> val;
  std::string field = "text";      // JSON-lines field holding the document
  std::string cache_dir;           // empty: default_cache_dir()
  int threads = 0;                 // 0: all hardware threads
  std::ostream* log = nullptr;     // progress lines; null: quiet
};

struct PrepareResult {
  std::string data_dir;  // absolute
  bool reused = false;   // an existing dataset under the same key
};

/// ~/.cache/autoresearchd ($HOME; /tmp/autoresearchd-cache without one).
std::string default_cache_dir();

/// Throws InputError for bad input, std::runtime_error for I/O failures.
PrepareResult prepare_dataset(const PrepareOptions& options);

}  // namespace harness
