// The one error type of prepare: bad input, located by file and line, printed
// by prepare's main as "prepare: error: <file>:<line>: <cause>".
#pragma once

#include <stdexcept>
#include <string>

namespace harness {

class InputError : public std::runtime_error {
 public:
  /// line 0: the error concerns the file as a whole ("<file>: <cause>").
  InputError(const std::string& file, size_t line, const std::string& cause)
      : std::runtime_error(format(file, line, cause)), file_(file), line_(line), cause_(cause) {}
  const std::string& file() const { return file_; }
  size_t line() const { return line_; }
  const std::string& cause() const { return cause_; }

 private:
  static std::string format(const std::string& file, size_t line, const std::string& cause) {
    std::string s = file;
    if (line > 0) {
      s += ':';
      s += std::to_string(line);
    }
    s += ": ";
    s += cause;
    return s;
  }
  std::string file_;
  size_t line_;
  std::string cause_;
};

}  // namespace harness
