// The PCRE2 split (see splitter.h).
#include "harness/splitter.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>
#include <string>

namespace harness {

struct Splitter::Impl {
  pcre2_code* code = nullptr;
  pcre2_match_data* match = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
};

Splitter::Splitter() : impl_(new Impl) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(SPLIT_PATTERN.data()), SPLIT_PATTERN.size(),
                              PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (impl_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    delete impl_;
    throw std::runtime_error("split pattern rejected by PCRE2 at offset " + std::to_string(offset) + ": " +
                             reinterpret_cast<char*>(message));
  }
  impl_->match = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  impl_->context = pcre2_match_context_create(nullptr);
  jit_ = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
  if (jit_) {
    // Long whitespace runs backtrack through \s+(?!\S): give the JIT room.
    impl_->stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    pcre2_jit_stack_assign(impl_->context, nullptr, impl_->stack);
  }
}

Splitter::~Splitter() {
  if (impl_->stack) pcre2_jit_stack_free(impl_->stack);
  pcre2_match_context_free(impl_->context);
  pcre2_match_data_free(impl_->match);
  pcre2_code_free(impl_->code);
  delete impl_;
}

void Splitter::split(std::string_view text, std::vector<std::string_view>& pieces) {
  pieces.clear();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const PCRE2_SIZE length = text.size();
  PCRE2_SIZE start = 0;
  while (start < length) {
    int rc = jit_ ? pcre2_jit_match(impl_->code, subject, length, start, 0, impl_->match, impl_->context)
                  : pcre2_match(impl_->code, subject, length, start, PCRE2_NO_UTF_CHECK, impl_->match,
                                impl_->context);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw std::runtime_error(std::string("split: PCRE2 match failed: ") + reinterpret_cast<char*>(message));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(impl_->match);
    const PCRE2_SIZE begin = ovector[0], end = ovector[1];
    if (end == begin) {  // cannot happen with this pattern; step one code point to be safe
      start = end + 1;
      while (start < length && (subject[start] & 0xC0) == 0x80) ++start;
      continue;
    }
    pieces.emplace_back(text.data() + begin, end - begin);
    start = end;
  }
}

}  // namespace harness
