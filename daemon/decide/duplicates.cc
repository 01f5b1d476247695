// See duplicates.h.
#include "daemon/decide/duplicates.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <sstream>

namespace ard {
namespace {

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

/// Drops // and /* */ comments from one line; `in_block` carries a /* across lines.
std::string strip_comments(const std::string& line, bool& in_block) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (in_block) {
      if (line.compare(i, 2, "*/") == 0) {
        in_block = false;
        ++i;
      }
      continue;
    }
    if (line.compare(i, 2, "//") == 0) break;
    if (line.compare(i, 2, "/*") == 0) {
      in_block = true;
      ++i;
      continue;
    }
    out += line[i];
  }
  return out;
}

std::set<std::string> shingles(const std::vector<std::string>& tokens) {
  std::set<std::string> out;
  if (tokens.empty()) return out;
  const size_t k = std::min<size_t>(3, tokens.size());
  for (size_t i = 0; i + k <= tokens.size(); ++i) {
    std::string s;
    for (size_t j = i; j < i + k; ++j) s += tokens[j] + '\n';
    out.insert(std::move(s));
  }
  return out;
}

/// The same tokens with + and - swapped: what a revert of the change changes.
std::vector<std::string> flipped(std::vector<std::string> tokens) {
  for (auto& t : tokens) {
    const size_t tab = t.find('\t');
    if (tab + 1 < t.size()) t[tab + 1] = t[tab + 1] == '+' ? '-' : '+';
  }
  return tokens;
}

/// Removed tokens first, then added, each in order: a diff lists a hunk's
/// removed lines before its added ones, so a change and its revert compare equal.
std::vector<std::string> sorted_by_sign(std::vector<std::string> tokens) {
  std::stable_partition(tokens.begin(), tokens.end(), [](const std::string& t) {
    const size_t tab = t.find('\t');
    return tab + 1 < t.size() && t[tab + 1] == '-';
  });
  return tokens;
}

std::string similarity_text(double s) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", s);
  return buf;
}

}  // namespace

std::vector<std::string> change_tokens(const std::string& diff) {
  std::vector<std::string> out;
  std::istringstream in(diff);
  std::string file;
  bool block_plus = false, block_minus = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("+++ ", 0) == 0) {
      file = line.substr(4);
      if (file.rfind("b/", 0) == 0) file = file.substr(2);
      block_plus = block_minus = false;
      continue;
    }
    if (line.rfind("--- ", 0) == 0 || line.empty() || (line[0] != '+' && line[0] != '-')) continue;
    const char sign = line[0];
    const std::string code = strip_comments(line.substr(1), sign == '+' ? block_plus : block_minus);
    for (size_t i = 0; i < code.size();) {
      const char c = code[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
        continue;
      }
      size_t j = i + 1;
      if (is_word(c))
        while (j < code.size() && is_word(code[j])) ++j;
      out.push_back(file + '\t' + sign + code.substr(i, j - i));
      i = j;
    }
  }
  return out;
}

double change_similarity(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a == b) return 1;
  const std::set<std::string> sa = shingles(a), sb = shingles(b);
  size_t common = 0;
  for (const auto& s : sa) common += sb.count(s);
  const size_t all = sa.size() + sb.size() - common;
  return all == 0 ? 1 : static_cast<double>(common) / static_cast<double>(all);
}

std::optional<DuplicateOf> find_duplicate(const std::string& diff, const std::vector<EarlierChange>& earlier,
                                          double threshold, const std::vector<int64_t>& skip) {
  const std::vector<std::string> tokens = change_tokens(diff);
  if (tokens.empty()) return std::nullopt;
  const std::vector<std::string> as_revert = sorted_by_sign(flipped(tokens));
  std::optional<DuplicateOf> best;
  for (const auto& e : earlier) {
    if (e.diff.empty() || std::find(skip.begin(), skip.end(), e.id) != skip.end()) continue;
    if (e.state == "conflict" || e.state == "patch_rejected" || e.state == "proposer_error") continue;
    const std::vector<std::string> theirs = change_tokens(e.diff);
    const double s = change_similarity(tokens, theirs);
    const bool revert = e.state == "kept" && sorted_by_sign(theirs) == as_revert;
    if (!revert && s < threshold && s < 1) continue;
    if (best && !revert && s <= best->similarity) continue;
    best = DuplicateOf{e.id, revert ? 1.0 : s, revert, e.state, ""};
    const std::string what = "#" + std::to_string(e.id) + " (" + e.state +
                             (e.description.empty() ? std::string() : ": " + e.description) + ")";
    best->reason = revert ? "reverts the kept change " + what
                          : "repeats " + what + ", similarity " + similarity_text(s) +
                                (s < 1 ? " >= " + similarity_text(threshold) : std::string(" (the same change)"));
    if (revert) break;
  }
  return best;
}

}  // namespace ard
