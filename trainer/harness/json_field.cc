// A small validating JSON reader (see json_field.h): objects, arrays,
// strings, numbers and literals are parsed; only the requested string is kept.
#include "harness/json_field.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace harness {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("invalid JSON at column " + std::to_string(pos_ + 1) + ": " + what);
  }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r' || s_[pos_] == '\n'))
      ++pos_;
  }
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  // Reads a string starting at '"'; appends its decoded bytes to `out` when
  // out != nullptr.
  void string(std::string* out) {
    expect('"');
    for (;;) {
      // Copy the run up to the next quote, backslash or control character.
      size_t run = pos_;
      while (run < s_.size()) {
        const auto c = static_cast<unsigned char>(s_[run]);
        if (c == '"' || c == '\\' || c < 0x20) break;
        ++run;
      }
      if (out) out->append(s_.data() + pos_, run - pos_);
      pos_ = run;
      if (at_end()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return;
      if (c != '\\') {
        --pos_;
        fail("control character in string");
      }
      if (at_end()) fail("unterminated string");
      const char e = s_[pos_++];
      char simple = 0;
      switch (e) {
        case '"': simple = '"'; break;
        case '\\': simple = '\\'; break;
        case '/': simple = '/'; break;
        case 'b': simple = '\b'; break;
        case 'f': simple = '\f'; break;
        case 'n': simple = '\n'; break;
        case 'r': simple = '\r'; break;
        case 't': simple = '\t'; break;
        case 'u': break;
        default: --pos_; fail("bad escape");
      }
      if (simple) {
        if (out) out->push_back(simple);
        continue;
      }
      uint32_t cp = hex4();
      if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate");
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (s_.substr(pos_, 2) != "\\u") fail("lone high surrogate");
        pos_ += 2;
        uint32_t lo = hex4();
        if (lo < 0xDC00 || lo > 0xDFFF) fail("high surrogate without low surrogate");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      }
      if (out) append_utf8(*out, cp);
    }
  }

  void value() {
    skip_ws();
    const char c = peek();
    if (c == '"') {
      string(nullptr);
    } else if (c == '{') {
      object(std::string_view(), nullptr, nullptr);
    } else if (c == '[') {
      ++pos_;
      skip_ws();
      if (peek() == ']') {
        ++pos_;
        return;
      }
      for (;;) {
        value();
        skip_ws();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return;
      }
    } else if (c == 't') {
      literal("true");
    } else if (c == 'f') {
      literal("false");
    } else if (c == 'n') {
      literal("null");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      number();
    } else {
      fail("expected a value");
    }
  }

  // Parses an object; when `field` is found at this level, its value is
  // decoded into *found_value (if a string) and *result is set.
  void object(std::string_view field, std::string* found_value, FieldResult* result) {
    expect('{');
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return;
    }
    std::string key;
    for (;;) {
      skip_ws();
      key.clear();
      string(&key);
      skip_ws();
      expect(':');
      skip_ws();
      if (result != nullptr && *result == FieldResult::kMissing && key == field) {
        if (peek() == '"') {
          found_value->clear();
          string(found_value);
          *result = FieldResult::kFound;
        } else {
          value();
          *result = FieldResult::kNotString;
        }
      } else {
        value();
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return;
    }
  }

 private:
  uint32_t hex4() {
    if (pos_ + 4 > s_.size()) fail("short \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= h - '0';
      else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  void literal(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.substr(pos_, n) != word) fail("bad literal");
    pos_ += n;
  }

  void number() {
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      fail("bad number");
    }
    if (peek() == '.') {
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("bad number");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("bad number");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

FieldResult json_string_field(std::string_view line, std::string_view field, std::string& value) {
  Parser p(line);
  p.skip_ws();
  if (p.peek() != '{') p.fail("expected an object");
  FieldResult result = FieldResult::kMissing;
  p.object(field, &value, &result);
  p.skip_ws();
  if (!p.at_end()) p.fail("trailing characters after the object");
  return result;
}

}  // namespace harness
