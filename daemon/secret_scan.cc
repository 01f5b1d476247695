// See secret_scan.h. A linear scan by hand, not std::regex: the text is what a
// child printed, and a backtracking regex over a megabyte of one token would
// take the daemon's stack with it. Private key blocks go first (their body
// would otherwise survive as base64 lines), then tokens, then assignments.
#include "daemon/secret_scan.h"

#include <cctype>
#include <string_view>

namespace ard {
namespace {

constexpr std::string_view kRedacted = "[redacted]";

bool token_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; }

std::string redact_private_keys(const std::string& text) {
  std::string out;
  size_t at = 0;
  while (true) {
    size_t begin = text.find("-----BEGIN ", at);
    if (begin == std::string::npos) break;
    size_t header_end = text.find("-----", begin + 11);
    if (header_end == std::string::npos) break;
    if (text.substr(begin, header_end - begin).find("PRIVATE KEY") == std::string::npos) {
      out.append(text, at, header_end + 5 - at);
      at = header_end + 5;
      continue;
    }
    out.append(text, at, begin - at);
    out += "[redacted private key]";
    size_t end = text.find("-----END ", header_end + 5);
    size_t end_close = end == std::string::npos ? std::string::npos : text.find("-----", end + 9);
    if (end_close == std::string::npos) return out;  // cut inside the block: the rest goes
    at = end_close + 5;
  }
  out.append(text, at, std::string::npos);
  return out;
}

/// The length of a key-like token starting at i (a known prefix and enough of a body), or 0.
size_t token_at(const std::string& s, size_t i) {
  struct Prefix {
    std::string_view text;
    size_t min_body;
  };
  static constexpr Prefix kPrefixes[] = {
      {"sk-", 16},   {"ghp_", 20},  {"gho_", 20},  {"ghu_", 20},  {"ghs_", 20},  {"ghr_", 20},
      {"github_pat_", 20},          {"AKIA", 16},  {"ASIA", 16},  {"xoxa-", 10}, {"xoxb-", 10},
      {"xoxp-", 10}, {"xoxo-", 10}, {"xoxs-", 10}, {"xoxr-", 10}, {"AIza", 30},  {"hf_", 20},
      {"eyJ", 30},
  };
  for (const Prefix& p : kPrefixes) {
    if (s.compare(i, p.text.size(), p.text) != 0) continue;
    size_t end = i + p.text.size();
    while (end < s.size() && token_char(s[end])) ++end;
    if (end - i - p.text.size() >= p.min_body) return end - i;
  }
  return 0;
}

std::string redact_tokens(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const bool word_start = i == 0 || !token_char(s[i - 1]);
    if (size_t n = word_start ? token_at(s, i) : 0; n > 0) {
      out += kRedacted;
      i += n;
      continue;
    }
    out += s[i++];
  }
  return out;
}

bool secret_name_ends_at(const std::string& lower, size_t end) {
  for (std::string_view w : {"key", "secret", "token", "password", "passwd"})
    if (end >= w.size() && lower.compare(end - w.size(), w.size(), w) == 0) return true;
  return false;
}

/// NAME=value, NAME: value, "name": "value" where NAME ends in key, secret, token or password.
std::string redact_assignments(const std::string& s) {
  std::string lower = s;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string out;
  size_t copied = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '=' && s[i] != ':') continue;
    size_t name_end = i;
    while (name_end > 0 && (s[name_end - 1] == ' ' || s[name_end - 1] == '"')) --name_end;
    if (name_end == 0 || !token_char(s[name_end - 1]) || !secret_name_ends_at(lower, name_end)) continue;
    size_t v = i + 1;
    while (v < s.size() && (s[v] == ' ' || s[v] == '"')) ++v;
    size_t v_end = v;
    while (v_end < s.size() && !std::isspace(static_cast<unsigned char>(s[v_end])) && s[v_end] != '"' &&
           s[v_end] != '\'' && s[v_end] != ',' && s[v_end] != ';')
      ++v_end;
    if (v_end - v < 6 || s.compare(v, kRedacted.size(), kRedacted) == 0) continue;
    out.append(s, copied, v - copied);
    out += kRedacted;
    copied = v_end;
    i = v_end - 1;
  }
  out.append(s, copied, std::string::npos);
  return out;
}

}  // namespace

std::string redact_secrets(const std::string& text) {
  return redact_assignments(redact_tokens(redact_private_keys(text)));
}

}  // namespace ard
