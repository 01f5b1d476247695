// See text.h.
#include "daemon/util/text.h"

#include <cstdio>
#include <sstream>

namespace ard {

std::string first_nonblank_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) return line;
  return "";
}

std::string flatten_to_one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::string short_commit(const std::string& commit) { return commit.substr(0, 7); }

std::string format_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string format_fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string format_signed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.*f", digits, v);
  return buf;
}

std::string join_list(const std::vector<std::string>& items, size_t max_items) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max_items; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > max_items) out += ", ...";
  return out;
}

}  // namespace ard
