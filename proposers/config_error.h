// The error every configuration parser throws: the daemon's own keys, the
// [llm] table and the [offline] table alike. Its message is one line that
// names the key ("llm.timeout_s: must be > 0, got -1").
#pragma once

#include <stdexcept>

namespace ard {

/// A bad config value or an unknown key; the message names it, on one line.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ard
