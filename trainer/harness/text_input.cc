// Decompressing byte sources and the JSON-lines / plain-text document readers.
#include "harness/text_input.h"

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "harness/json_field.h"
#include "harness/utf8.h"

namespace harness {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string strip_compression(const std::string& path) {
  for (const char* ext : {".xz", ".gz", ".zst"})
    if (ends_with(path, ext)) return path.substr(0, path.size() - std::strlen(ext));
  return path;
}

class PlainFile : public ByteSource {
 public:
  explicit PlainFile(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "rb")) {
    if (f_ == nullptr) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  }
  ~PlainFile() override { std::fclose(f_); }
  size_t read(char* buf, size_t n) override {
    size_t got = std::fread(buf, 1, n, f_);
    if (got == 0 && std::ferror(f_)) throw InputError(path_, 0, std::string("read error: ") + std::strerror(errno));
    return got;
  }

 private:
  std::string path_;
  std::FILE* f_;
};

// Shared by the three decoders: compressed bytes come from a PlainFile.
class Decoder : public ByteSource {
 protected:
  explicit Decoder(const std::string& path) : path_(path), file_(path), in_(1 << 20) {}
  // Refills in_ when it is used up; false at the end of the file.
  bool refill() {
    if (in_pos_ < in_len_) return true;
    in_len_ = file_.read(in_.data(), in_.size());
    in_pos_ = 0;
    return in_len_ > 0;
  }
  [[noreturn]] void corrupt(const std::string& what) const {
    throw InputError(path_, 0, "cannot decompress: " + what);
  }
  std::string path_;
  PlainFile file_;
  std::vector<char> in_;
  size_t in_pos_ = 0, in_len_ = 0;
};

class XzFile : public Decoder {
 public:
  explicit XzFile(const std::string& path) : Decoder(path) {
    if (lzma_stream_decoder(&s_, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) corrupt("liblzma init failed");
  }
  ~XzFile() override { lzma_end(&s_); }
  size_t read(char* buf, size_t n) override {
    if (done_) return 0;
    s_.next_out = reinterpret_cast<uint8_t*>(buf);
    s_.avail_out = n;
    while (s_.avail_out == n) {
      lzma_action action = LZMA_RUN;
      if (s_.avail_in == 0) {
        if (refill()) {
          s_.next_in = reinterpret_cast<const uint8_t*>(in_.data());
          s_.avail_in = in_len_;
          in_pos_ = in_len_;
        } else {
          action = LZMA_FINISH;
        }
      }
      lzma_ret r = lzma_code(&s_, action);
      if (r == LZMA_STREAM_END) {
        done_ = true;
        break;
      }
      if (r != LZMA_OK) corrupt("liblzma error " + std::to_string(r) + (r == LZMA_BUF_ERROR ? " (truncated file)" : ""));
    }
    return n - s_.avail_out;
  }

 private:
  lzma_stream s_ = LZMA_STREAM_INIT;
  bool done_ = false;
};

class GzFile : public Decoder {
 public:
  explicit GzFile(const std::string& path) : Decoder(path) {
    std::memset(&s_, 0, sizeof s_);
    if (inflateInit2(&s_, 15 + 32) != Z_OK) corrupt("zlib init failed");
  }
  ~GzFile() override { inflateEnd(&s_); }
  size_t read(char* buf, size_t n) override {
    s_.next_out = reinterpret_cast<Bytef*>(buf);
    s_.avail_out = static_cast<uInt>(n);
    while (s_.avail_out == n) {
      if (s_.avail_in == 0) {
        if (!refill()) {
          if (in_member_) corrupt("truncated file");
          break;
        }
        s_.next_in = reinterpret_cast<Bytef*>(in_.data());
        s_.avail_in = static_cast<uInt>(in_len_);
        in_pos_ = in_len_;
      }
      in_member_ = true;
      int r = inflate(&s_, Z_NO_FLUSH);
      if (r == Z_STREAM_END) {  // concatenated members: start the next one
        in_member_ = false;
        if (inflateReset(&s_) != Z_OK) corrupt("zlib reset failed");
      } else if (r != Z_OK && r != Z_BUF_ERROR) {
        corrupt(s_.msg ? s_.msg : "zlib error " + std::to_string(r));
      }
    }
    return n - s_.avail_out;
  }

 private:
  z_stream s_;
  bool in_member_ = false;
};

class ZstdFile : public Decoder {
 public:
  explicit ZstdFile(const std::string& path) : Decoder(path), d_(ZSTD_createDStream()) {
    if (d_ == nullptr) corrupt("libzstd init failed");
  }
  ~ZstdFile() override { ZSTD_freeDStream(d_); }
  size_t read(char* buf, size_t n) override {
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos == 0) {
      bool eof = false;
      if (in_.pos == in_.size) {
        if (refill()) {
          in_ = ZSTD_inBuffer{Decoder::in_.data(), in_len_, 0};
          in_pos_ = in_len_;
        } else {
          eof = true;
        }
      }
      if (eof && frame_done_) break;
      size_t r = ZSTD_decompressStream(d_, &out, &in_);
      if (ZSTD_isError(r)) corrupt(ZSTD_getErrorName(r));
      frame_done_ = (r == 0);
      if (eof && out.pos == 0 && !frame_done_) corrupt("truncated file");
    }
    return out.pos;
  }

 private:
  ZSTD_DStream* d_;
  ZSTD_inBuffer in_{nullptr, 0, 0};
  bool frame_done_ = true;
};

// Splits a byte stream into lines (without their '\n').
class LineReader {
 public:
  explicit LineReader(ByteSource& src) : src_(src), buf_(1 << 20) {}
  bool next(std::string& line) {
    line.clear();
    for (;;) {
      if (pos_ == len_) {
        len_ = src_.read(buf_.data(), buf_.size());
        pos_ = 0;
        if (len_ == 0) {
          const bool last = pending_;  // an unterminated last line
          pending_ = false;
          return last;
        }
      }
      pending_ = true;
      const char* start = buf_.data() + pos_;
      const void* nl = std::memchr(start, '\n', len_ - pos_);
      if (nl != nullptr) {
        size_t k = static_cast<const char*>(nl) - start;
        line.append(start, k);
        pos_ += k + 1;
        pending_ = false;
        return true;
      }
      line.append(start, len_ - pos_);
      pos_ = len_;
    }
  }

 private:
  ByteSource& src_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0;
  bool pending_ = false;  // bytes of an unterminated last line were read
};

void check_utf8(const std::string& path, size_t line, const std::string& text) {
  size_t bad = find_invalid_utf8(text);
  if (bad != std::string::npos)
    throw InputError(path, line, "invalid UTF-8 at byte " + std::to_string(bad) + " of the document");
}

}  // namespace

std::unique_ptr<ByteSource> open_byte_source(const std::string& path) {
  if (ends_with(path, ".xz")) return std::make_unique<XzFile>(path);
  if (ends_with(path, ".gz")) return std::make_unique<GzFile>(path);
  if (ends_with(path, ".zst")) return std::make_unique<ZstdFile>(path);
  return std::make_unique<PlainFile>(path);
}

InputCounts read_documents(const std::string& path, const std::string& field,
                           const std::function<void(std::string&& text, size_t line)>& on_document) {
  const std::string base = strip_compression(path);
  const bool jsonl = ends_with(base, ".jsonl") || ends_with(base, ".json");
  if (!jsonl && !ends_with(base, ".txt"))
    throw InputError(path, 0, "unknown input type (expected .jsonl or .txt, optionally .xz, .gz or .zst)");
  std::unique_ptr<ByteSource> src = open_byte_source(path);
  LineReader lines(*src);
  InputCounts counts;
  std::string line, text;
  size_t line_no = 0;
  auto emit = [&](std::string&& doc, size_t at) {
    check_utf8(path, at, doc);
    counts.bytes += doc.size();
    ++counts.documents;
    on_document(std::move(doc), at);
  };
  if (jsonl) {
    while (lines.next(line)) {
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      FieldResult r;
      try {
        r = json_string_field(line, field, text);
      } catch (const std::invalid_argument& e) {
        throw InputError(path, line_no, e.what());
      }
      if (r == FieldResult::kMissing) throw InputError(path, line_no, "no \"" + field + "\" field");
      if (r == FieldResult::kNotString) throw InputError(path, line_no, "\"" + field + "\" is not a string");
      if (text.empty()) {
        ++counts.empty_skipped;
        continue;
      }
      emit(std::move(text), line_no);
      text = std::string();
    }
  } else {
    size_t start = 0;
    std::string doc;
    auto flush = [&] {
      if (!doc.empty()) emit(std::move(doc), start);
      doc = std::string();
    };
    while (lines.next(line)) {
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) {
        flush();
        continue;
      }
      if (doc.empty()) start = line_no;
      else doc.push_back('\n');
      doc += line;
    }
    flush();
  }
  return counts;
}

}  // namespace harness
