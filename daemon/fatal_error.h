// A failure that stops the daemon: thrown once with a one-line cause and
// caught in main, which prints it and exits 1. Expected failures of an
// experiment are never FatalErrors; they are recorded and the loop goes on.
#pragma once

#include <stdexcept>

namespace ard {

class FatalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ard
