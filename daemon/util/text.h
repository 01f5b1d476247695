// Small text helpers the daemon's parts share: one behaviour per name, so a
// log line, an error line and a status line are cut the same way everywhere.
// Depends on nothing of the daemon.
#pragma once

#include <string>
#include <vector>

namespace ard {

/// The first line of text that holds more than spaces and tabs, as it is
/// (not trimmed); "" when there is none.
std::string first_nonblank_line(const std::string& text);

/// The text on one line: every CR and LF becomes a space, trailing spaces go.
std::string flatten_to_one_line(std::string text);

/// A commit id as logs and status print it: its first 7 hex digits.
std::string short_commit(const std::string& commit);

/// A number as `operator<<` prints it (6 significant digits, no trailing zeros).
std::string format_number(double v);

/// A number with digits decimals ("%.*f"): format_fixed(0.95, 6) is "0.950000".
std::string format_fixed(double v, int digits);

/// The same with its sign always written ("%+.*f"): "+0.010000", "-0.002000".
std::string format_signed(double v, int digits);

/// items joined by ", ", at most max_items of them and then ", ..." when there are more.
std::string join_list(const std::vector<std::string>& items, size_t max_items);

}  // namespace ard
