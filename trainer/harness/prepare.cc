// prepare's pipeline (see prepare.h): read, check, train, encode, write, rename.
#include "harness/prepare.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <iomanip>
#include <memory>
#include <ostream>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "harness/bpe.h"
#include "harness/constants.h"
#include "harness/dataset.h"
#include "harness/flat_string_map.h"
#include "harness/input_error.h"
#include "harness/sha256.h"
#include "harness/splitter.h"
#include "harness/text_input.h"
#include "harness/tokenizer.h"
#include "harness/utf8.h"

namespace fs = std::filesystem;

namespace harness {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// CPU seconds of the whole process (all threads): on a shared machine, MB per
// CPU second is the per-core throughput that wall time hides.
double cpu_seconds() {
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// The documents of one role (train or val), in input order.
struct Corpus {
  std::vector<std::string> files;
  std::vector<InputCounts> file_counts;
  std::vector<std::string> docs;
  std::vector<uint32_t> doc_file;
  std::vector<uint32_t> doc_line;
  size_t bytes = 0;
};

Corpus read_corpus(const std::vector<std::string>& files, const std::string& field) {
  Corpus c;
  c.files = files;
  for (uint32_t f = 0; f < files.size(); ++f) {
    c.file_counts.push_back(read_documents(files[f], field, [&](std::string&& text, size_t line) {
      c.bytes += text.size();
      c.docs.push_back(std::move(text));
      c.doc_file.push_back(f);
      c.doc_line.push_back(static_cast<uint32_t>(line));
    }));
  }
  return c;
}

// Splits [0, n) into `parts` contiguous ranges of about equal bytes.
std::vector<size_t> balanced_ranges(const std::vector<std::string>& docs, size_t n, int parts) {
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += docs[i].size();
  std::vector<size_t> bounds{0};
  size_t acc = 0;
  for (size_t i = 0; i < n && static_cast<int>(bounds.size()) < parts; ++i) {
    acc += docs[i].size();
    if (acc * parts >= total * bounds.size()) bounds.push_back(i + 1);
  }
  while (bounds.size() < static_cast<size_t>(parts)) bounds.push_back(n);
  bounds.push_back(n);
  return bounds;
}

template <class F>
void parallel_for_ranges(const std::vector<size_t>& bounds, F&& body) {
  std::vector<std::future<void>> jobs;
  for (size_t t = 0; t + 1 < bounds.size(); ++t)
    jobs.push_back(std::async(std::launch::async, [&, t] { body(t, bounds[t], bounds[t + 1]); }));
  for (auto& j : jobs) j.get();  // rethrows the first failure
}

// Counts validation documents identical to a training document; more than
// MAX_VAL_OVERLAP of them means the validation set overlaps training (the same
// file given twice, a subset): an error naming the first one. A few identical
// boilerplate documents (license headers, tables) are counted and reported.
size_t check_overlap(const Corpus& train, const Corpus& val) {
  std::unordered_map<std::string_view, size_t> seen;
  seen.reserve(train.docs.size());
  for (size_t i = 0; i < train.docs.size(); ++i) seen.emplace(train.docs[i], i);
  size_t identical = 0, first_val = 0, first_train = 0;
  for (size_t i = 0; i < val.docs.size(); ++i) {
    auto it = seen.find(val.docs[i]);
    if (it == seen.end()) continue;
    if (identical++ == 0) first_val = i, first_train = it->second;
  }
  if (identical > MAX_VAL_OVERLAP * static_cast<double>(val.docs.size()))
    throw InputError(val.files[val.doc_file[first_val]], val.doc_line[first_val],
                     "validation document identical to training document " +
                         train.files[train.doc_file[first_train]] + ":" + std::to_string(train.doc_line[first_train]) +
                         " (" + std::to_string(identical) + " of " + std::to_string(val.docs.size()) +
                         " validation documents are; at most 1% may be)");
  return identical;
}

// Counts the split chunks of the capped training text.
std::vector<std::pair<std::string, uint64_t>> count_chunks(const Corpus& train, int threads, size_t& chars_used) {
  std::vector<size_t> prefix_bytes(train.docs.size());
  size_t n = 0;
  chars_used = 0;
  for (; n < train.docs.size() && chars_used < TRAIN_MAX_CHARS; ++n) {
    size_t chars = 0;
    prefix_bytes[n] = utf8_prefix(train.docs[n], TRAIN_DOC_CAP_CHARS, chars);
    chars_used += chars;
  }
  using Map = FlatStringMap<uint64_t>;
  std::vector<Map> maps(threads);
  parallel_for_ranges(balanced_ranges(train.docs, n, threads), [&](size_t t, size_t lo, size_t hi) {
    Splitter splitter;
    std::vector<std::string_view> pieces;
    Map& m = maps[t];
    for (size_t d = lo; d < hi; ++d) {
      splitter.split(std::string_view(train.docs[d]).substr(0, prefix_bytes[d]), pieces);
      for (std::string_view p : pieces) ++m[p];
    }
  });
  Map& all = maps[0];
  for (int t = 1; t < threads; ++t) {
    maps[t].for_each([&](std::string_view k, uint64_t v) { all[k] += v; });
    maps[t].clear();
  }
  std::vector<std::pair<std::string, uint64_t>> chunks;
  chunks.reserve(all.size());
  all.for_each([&](std::string_view k, uint64_t v) { chunks.emplace_back(std::string(k), v); });
  return chunks;
}

struct Encoded {
  std::vector<uint16_t> tokens;
  std::vector<uint64_t> offsets;  // num_docs + 1
};

Encoded encode_corpus(const Corpus& corpus, const std::shared_ptr<const BpeEncoder>& encoder, int threads) {
  std::vector<size_t> bounds = balanced_ranges(corpus.docs, corpus.docs.size(), threads);
  std::vector<Encoded> parts(bounds.size() - 1);
  parallel_for_ranges(bounds, [&](size_t t, size_t lo, size_t hi) {
    Tokenizer tok(encoder);
    Encoded& e = parts[t];
    for (size_t d = lo; d < hi; ++d) {
      e.offsets.push_back(e.tokens.size());
      e.tokens.push_back(BOS_ID);
      tok.encode(corpus.docs[d], e.tokens);
    }
  });
  Encoded all;
  size_t total = 0;
  for (auto& p : parts) total += p.tokens.size();
  all.tokens.reserve(total);
  for (auto& p : parts) {
    const uint64_t base = all.tokens.size();
    for (uint64_t o : p.offsets) all.offsets.push_back(base + o);
    all.tokens.insert(all.tokens.end(), p.tokens.begin(), p.tokens.end());
    std::vector<uint16_t>().swap(p.tokens);
  }
  all.offsets.push_back(all.tokens.size());
  return all;
}

// Writes and fsyncs one file of the temporary directory.
void write_file(const fs::path& path, const void* data, size_t n) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error(path.string() + ": cannot create: " + std::strerror(errno));
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      throw std::runtime_error(path.string() + ": write failed: " + std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    throw std::runtime_error(path.string() + ": cannot flush: " + std::strerror(errno));
}

void write_file(const fs::path& path, const std::string& s) { write_file(path, s.data(), s.size()); }

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string meta_json(const std::string& key, const Corpus& train, const Corpus& val,
                      const std::vector<std::string>& train_hashes, const std::vector<std::string>& val_hashes,
                      const std::string& field, const BpeTraining& bpe, size_t train_chars, const Encoded& train_enc,
                      const Encoded& val_enc, size_t val_in_train, bool jit) {
  std::ostringstream j;
  auto inputs = [&](const Corpus& c, const std::vector<std::string>& hashes) {
    j << "[";
    for (size_t f = 0; f < c.files.size(); ++f) {
      j << (f ? ", " : "") << "{\"path\": " << json_string(fs::absolute(c.files[f]).string())
        << ", \"sha256\": \"" << hashes[f] << "\", \"documents\": " << c.file_counts[f].documents
        << ", \"empty_skipped\": " << c.file_counts[f].empty_skipped << ", \"bytes\": " << c.file_counts[f].bytes
        << "}";
    }
    j << "]";
  };
  j << "{\n  \"format\": " << DATASET_FORMAT << ",\n  \"key\": \"" << key << "\",\n  \"inputs\": {\"train\": ";
  inputs(train, train_hashes);
  j << ", \"val\": ";
  inputs(val, val_hashes);
  j << "},\n  \"settings\": {\"field\": " << json_string(field) << ", \"vocab_size\": " << VOCAB_SIZE
    << ", \"num_special_tokens\": " << NUM_SPECIAL_TOKENS << ", \"bos_id\": " << BOS_ID
    << ", \"bos\": " << json_string(special_token_name(0)) << ", \"split_pattern\": " << json_string(SPLIT_PATTERN)
    << ", \"train_doc_cap_chars\": " << TRAIN_DOC_CAP_CHARS << ", \"train_max_chars\": " << TRAIN_MAX_CHARS
    << "},\n  \"tokenizer\": {\"learned_tokens\": " << bpe.tokens.size()
    << ", \"skipped_duplicate_merges\": " << bpe.skipped_duplicates << ", \"train_chars\": " << train_chars
    << ", \"pcre2_jit\": " << (jit ? "true" : "false") << "},\n  \"train\": {\"documents\": " << train.docs.size()
    << ", \"bytes\": " << train.bytes << ", \"tokens\": " << train_enc.tokens.size()
    << "},\n  \"val\": {\"documents\": " << val.docs.size() << ", \"bytes\": " << val.bytes
    << ", \"tokens\": " << val_enc.tokens.size() << ", \"identical_to_train\": " << val_in_train << "}\n}\n";
  return j.str();
}

// Removes temporary directories left by prepare processes that no longer run.
void remove_stale_temps(const fs::path& cache) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cache, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".tmp-", 0) != 0) continue;
    const long pid = std::strtol(name.substr(name.rfind('-') + 1).c_str(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove_all(entry.path(), ec);
  }
}

bool dataset_is_complete(const fs::path& dir) {
  if (!fs::exists(dir / "meta.json") || !fs::exists(dir / "tokenizer.tiktoken")) return false;
  try {
    TokenShard train(dir.string(), "train");
    TokenShard val(dir.string(), "val");
    load_token_bytes(dir.string());
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::string default_cache_dir() {
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') return "/tmp/autoresearchd-cache";
  return std::string(home) + "/.cache/autoresearchd";
}

PrepareResult prepare_dataset(const PrepareOptions& o) {
  std::ostringstream sink;
  std::ostream& log = o.log ? *o.log : sink;
  auto say = [&](const std::string& line) { log << "prepare: " << line << std::endl; };
  auto fmt = [](double v, int digits) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << v;
    return s.str();
  };
  if (o.train.empty()) throw InputError("--train", 0, "no training input given");
  if (o.val.empty()) throw InputError("--val", 0, "no validation input given");
  if (o.field.empty()) throw InputError("--field", 0, "empty field name");
  const int threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  const auto start = Clock::now();

  // 1. The key: every input's bytes and every setting.
  std::vector<std::string> train_hashes, val_hashes;
  Sha256 key_hash;
  key_hash.update("autoresearchd dataset format " + std::to_string(DATASET_FORMAT) + "\nfield " + o.field +
                  "\nvocab " + std::to_string(VOCAB_SIZE) + "\npattern " + std::string(SPLIT_PATTERN) +
                  "\ncap " + std::to_string(TRAIN_DOC_CAP_CHARS) + "\nmax " + std::to_string(TRAIN_MAX_CHARS) + "\n");
  for (const auto& f : o.train) {
    train_hashes.push_back(sha256_file(f));
    key_hash.update("train " + train_hashes.back() + "\n");
  }
  for (const auto& f : o.val) {
    val_hashes.push_back(sha256_file(f));
    key_hash.update("val " + val_hashes.back() + "\n");
  }
  const std::string key = key_hash.hex().substr(0, 24);
  const fs::path cache = fs::absolute(o.cache_dir.empty() ? default_cache_dir() : o.cache_dir);
  const fs::path final_dir = cache / key;
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) throw std::runtime_error(cache.string() + ": cannot create cache directory: " + ec.message());
  if (dataset_is_complete(final_dir)) {
    say("reusing " + final_dir.string() + " (same inputs and settings)");
    return {final_dir.string(), true};
  }
  if (fs::exists(final_dir)) {
    say("removing incomplete " + final_dir.string());
    fs::remove_all(final_dir);
  }
  remove_stale_temps(cache);

  // 2. Read both sets (in parallel: decompression is the cost).
  auto t0 = Clock::now();
  auto val_job = std::async(std::launch::async, [&] { return read_corpus(o.val, o.field); });
  Corpus train = read_corpus(o.train, o.field);
  Corpus val = val_job.get();
  if (train.docs.empty()) throw InputError(o.train.front(), 0, "no documents in the training input");
  if (val.docs.empty()) throw InputError(o.val.front(), 0, "no documents in the validation input");
  const size_t val_in_train = check_overlap(train, val);
  say("read " + std::to_string(train.docs.size()) + " training documents (" + fmt(train.bytes / 1e6, 1) + " MB), " +
      std::to_string(val.docs.size()) + " validation documents (" + fmt(val.bytes / 1e6, 2) + " MB) in " +
      fmt(seconds_since(t0), 1) + " s; " + std::to_string(val_in_train) +
      " validation documents identical to a training document");

  // 3. Train the tokenizer.
  t0 = Clock::now();
  size_t train_chars = 0;
  auto chunks = count_chunks(train, threads, train_chars);
  const size_t unique_chunks = chunks.size();
  const double count_s = seconds_since(t0);
  t0 = Clock::now();
  BpeTraining bpe = train_bpe(chunks, NUM_LEARNED_TOKENS);
  if (bpe.tokens.size() < static_cast<size_t>(NUM_LEARNED_TOKENS))
    throw InputError(o.train.front(), 0,
                     "training text too small: only " + std::to_string(bpe.tokens.size() - 256) + " merges possible, " +
                         std::to_string(NUM_LEARNED_TOKENS - 256) + " needed");
  decltype(chunks)().swap(chunks);
  say("tokenizer: " + std::to_string(unique_chunks) + " unique chunks in " + std::to_string(train_chars) +
      " characters counted in " + fmt(count_s, 1) + " s, " + std::to_string(bpe.tokens.size() - 256) + " merges in " +
      fmt(seconds_since(t0), 1) + " s (" + std::to_string(bpe.skipped_duplicates) + " duplicate merges skipped)");
  auto encoder = std::make_shared<const BpeEncoder>(bpe.tokens);

  // 4. Encode.
  t0 = Clock::now();
  const double cpu0 = cpu_seconds();
  Encoded train_enc = encode_corpus(train, encoder, threads);
  Encoded val_enc = encode_corpus(val, encoder, threads);
  const double encode_s = seconds_since(t0);
  const double encode_cpu = cpu_seconds() - cpu0;
  const double mb = (train.bytes + val.bytes) / 1e6;
  say("encoded " + fmt(mb, 1) + " MB to " + std::to_string(train_enc.tokens.size()) + " training and " +
      std::to_string(val_enc.tokens.size()) + " validation tokens in " + fmt(encode_s, 1) + " s on " +
      std::to_string(threads) + " threads (" + fmt(mb / encode_s, 1) + " MB/s; " + fmt(mb / encode_cpu, 1) +
      " MB per CPU second)");
  for (const Encoded* e : {&train_enc, &val_enc})
    if (e->tokens.size() > (size_t{1} << 62)) throw std::runtime_error("shard too large");

  // 5. Write into a temporary directory, then rename it into place.
  const fs::path tmp = cache / (".tmp-" + key + "-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp);
  try {
    write_file(tmp / "tokenizer.tiktoken", tiktoken_file(bpe.tokens));
    std::vector<int32_t> token_bytes = token_byte_lengths(bpe.tokens, VOCAB_SIZE);
    write_file(tmp / "token_bytes.bin", token_bytes.data(), token_bytes.size() * sizeof(int32_t));
    for (auto [name, enc] : {std::pair{"train", &train_enc}, std::pair{"val", &val_enc}}) {
      write_file(tmp / (std::string(name) + ".bin"), enc->tokens.data(), enc->tokens.size() * sizeof(uint16_t));
      write_file(tmp / (std::string(name) + ".idx"), enc->offsets.data(), enc->offsets.size() * sizeof(uint64_t));
    }
    write_file(tmp / "meta.json", meta_json(key, train, val, train_hashes, val_hashes, o.field, bpe, train_chars,
                                            train_enc, val_enc, val_in_train, Splitter().jit()));
    fs::rename(tmp, final_dir, ec);
    if (ec) {
      // Another prepare with the same key finished first: its result is the same.
      if (dataset_is_complete(final_dir)) {
        fs::remove_all(tmp, ec);
      } else {
        throw std::runtime_error(final_dir.string() + ": cannot rename into place: " + ec.message());
      }
    }
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  say("wrote " + final_dir.string() + " in " + fmt(seconds_since(start), 1) + " s total");
  return {final_dir.string(), false};
}

}  // namespace harness
