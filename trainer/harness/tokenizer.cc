// Tokenizer: split + cached chunk encoding, decoding, and the tiktoken file.
#include "harness/tokenizer.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "harness/constants.h"
#include "harness/input_error.h"

namespace harness {

std::string special_token_name(int k) { return "<|reserved_" + std::to_string(k) + "|>"; }

Tokenizer::Tokenizer(std::shared_ptr<const BpeEncoder> encoder) : encoder_(std::move(encoder)) {}

void Tokenizer::encode(std::string_view text, std::vector<uint16_t>& out) {
  splitter_.split(text, pieces_);
  for (std::string_view piece : pieces_) {
    // Most chunks are one token: the rank table is small enough to stay in
    // cache, so look there before the (larger) chunk cache.
    if (uint32_t whole = encoder_->rank(piece); whole != UINT32_MAX) {
      out.push_back(static_cast<uint16_t>(whole));
      continue;
    }
    if (piece.size() > 64) {  // long chunks are rare: not worth caching
      encoder_->encode_chunk(piece, out);
      continue;
    }
    if (cache_.size() > (1u << 21)) {  // bound memory on odd corpora
      cache_.clear();
      cached_ids_.clear();
    }
    Span& span = cache_[piece];
    if (span.count == 0) {
      span.begin = static_cast<uint32_t>(cached_ids_.size());
      encoder_->encode_chunk(piece, cached_ids_);
      span.count = static_cast<uint32_t>(cached_ids_.size() - span.begin);
    }
    out.insert(out.end(), cached_ids_.begin() + span.begin, cached_ids_.begin() + span.begin + span.count);
  }
}

std::string Tokenizer::decode(const std::vector<uint16_t>& ids) const {
  std::string text;
  const auto& tokens = encoder_->tokens();
  for (uint16_t id : ids) {
    if (id < tokens.size()) text += tokens[id];
    else if (id >= NUM_LEARNED_TOKENS && id < VOCAB_SIZE) text += special_token_name(id - NUM_LEARNED_TOKENS);
    else throw std::out_of_range("decode: id " + std::to_string(id) + " is not a token");
  }
  return text;
}

namespace {
constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                 static_cast<uint8_t>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kBase64[(v >> s) & 63]);
  }
  if (size_t rest = bytes.size() - i; rest > 0) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kBase64[(v >> 18) & 63]);
    out.push_back(kBase64[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kBase64[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string base64_decode(std::string_view text) {
  if (text.size() % 4 != 0 || text.empty()) throw std::invalid_argument("bad base64 length");
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int pad = 0;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      int d;
      if (c == '=' && last && k >= 2) {
        d = 0;
        ++pad;
      } else {
        d = value(c);
        if (d < 0 || pad > 0) throw std::invalid_argument("bad base64 character");
      }
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<char>(v >> 16));
    if (pad < 2) out.push_back(static_cast<char>((v >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(v & 0xFF));
  }
  return out;
}

std::string tiktoken_file(const std::vector<std::string>& tokens) {
  std::string out;
  for (size_t r = 0; r < tokens.size(); ++r) {
    out += base64_encode(tokens[r]);
    out += ' ';
    out += std::to_string(r);
    out += '\n';
  }
  return out;
}

std::vector<std::string> read_tiktoken_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open");
  std::vector<std::string> tokens;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos) throw InputError(path, line_no, "expected 'base64 rank'");
    if (line.substr(space + 1) != std::to_string(tokens.size()))
      throw InputError(path, line_no, "rank " + line.substr(space + 1) + ", expected " + std::to_string(tokens.size()));
    try {
      tokens.push_back(base64_decode(std::string_view(line).substr(0, space)));
    } catch (const std::invalid_argument& e) {
      throw InputError(path, line_no, e.what());
    }
  }
  return tokens;
}

std::vector<int32_t> token_byte_lengths(const std::vector<std::string>& tokens, int vocab_size) {
  std::vector<int32_t> table(vocab_size, 0);
  for (size_t id = 0; id < tokens.size() && id < table.size(); ++id) table[id] = static_cast<int32_t>(tokens[id].size());
  return table;
}

}  // namespace harness
