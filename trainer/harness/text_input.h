// prepare's inputs: files read through liblzma, zlib or libzstd by their
// extension (.xz, .gz, .zst, else plain), cut into documents.
//   *.jsonl[.xz|.gz|.zst]  one JSON object a line; the document is the string
//                          value of `field`; blank lines are skipped
//   *.txt[.xz|.gz|.zst]    documents are separated by blank lines; the line
//                          breaks inside a document are kept
// Every document is checked to be valid UTF-8. Bad input throws InputError
// naming the file and line.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "harness/input_error.h"

namespace harness {

/// A stream of decompressed bytes.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// Reads up to n bytes; returns 0 only at the end. Throws InputError.
  virtual size_t read(char* buf, size_t n) = 0;
};

/// Opens `path`, decompressing by extension. Throws InputError (line 0).
std::unique_ptr<ByteSource> open_byte_source(const std::string& path);

struct InputCounts {
  size_t documents = 0;      // passed to the callback
  size_t empty_skipped = 0;  // records whose text was empty
  size_t bytes = 0;          // UTF-8 bytes of the documents
};

/// Calls on_document(text, line) for each non-empty document of `path` in file
/// order (line: 1-based line where the document starts).
InputCounts read_documents(const std::string& path, const std::string& field,
                           const std::function<void(std::string&& text, size_t line)>& on_document);

}  // namespace harness
