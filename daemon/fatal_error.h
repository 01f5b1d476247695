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

/// A FatalError whose cause the daemon's log already holds (the engine
/// logged it as it stopped): the catcher prints it but does not log it again.
class LoggedFatalError : public FatalError {
 public:
  using FatalError::FatalError;
};

}  // namespace ard
