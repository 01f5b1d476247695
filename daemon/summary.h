// The trainer's summary block: `key: value` lines after a line `---`
// (docs/CONTRACTS.md). The last block in the output wins, so a trainer that prints
// progress before it is parsed the same way.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ard {

struct Summary {
  std::map<std::string, double> values;  ///< the wanted keys that were present, NaN included
  std::string to_json() const;           ///< {"key": value, ...}; NaN and inf as strings
};

/// The summary of output, keeping only keys; nullopt when there is no `---` line
/// followed by at least one wanted key.
std::optional<Summary> parse_summary(const std::string& output, const std::vector<std::string>& keys);

/// The first line starting with "FAIL" (the trainer's failure line), or "".
std::string fail_line(const std::string& output);

/// For a FAIL line of the harness's integrity probes, "FAIL: tampered: <message>",
/// the message (the experiment is then tampered, not crashed); otherwise nullopt.
std::optional<std::string> tampered_reason(const std::string& fail_line);

}  // namespace ard
