// Small text helpers the edit and prompt code share: lines and trimming.
#pragma once

#include <string>
#include <vector>

namespace ard {

/// The lines of s without their '\n' (and a '\r' before it). A final line
/// without '\n' is a line; a trailing '\n' does not start an empty one.
std::vector<std::string> split_lines(const std::string& s);

/// s without leading and trailing spaces and tabs.
std::string trim(const std::string& s);

}  // namespace ard
