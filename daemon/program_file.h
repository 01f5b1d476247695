// Reading program.md for an experiment. An editor's save may delete or
// truncate the file for a moment; an experiment proposed then would run with
// no program. So a missing, empty or unreadable file is a value the engine
// waits on (logging the reason), never an empty program.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace ard {

struct ProgramFile {
  enum class Problem { none, missing, empty, unreadable };
  Problem problem = Problem::none;
  std::string content;  ///< the program when problem is none
  std::string message;  ///< one line naming the file and the problem, else empty

  bool ok() const { return problem == Problem::none; }
};

/// Reads the program at path. A file of only whitespace is `empty` too: a
/// program must say something.
ProgramFile read_program_file(const std::filesystem::path& path);

}  // namespace ard
