// Reading program.md, the research instructions, from the user's checkout for
// an experiment. An editor's save may delete or truncate the file for a
// moment, and a runaway file would cost tokens on every LLM call; so a
// missing, empty, unreadable or too large file is a value the engine waits on
// (logging the reason), never an empty or a truncated program.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace ard {

struct ProgramFile {
  enum class Problem { none, missing, empty, unreadable, too_large };
  Problem problem = Problem::none;
  std::string content;  ///< the program when problem is none
  std::string message;  ///< one line naming the file and the problem, else empty

  bool ok() const { return problem == Problem::none; }
};

/// Reads path if it is a regular file of at most max_bytes that says
/// something (a file of only whitespace is `empty`). A larger file is refused
/// without being read whole ("program.md is 104857600 bytes, over
/// max_program_bytes = 65536: shorten it or raise max_program_bytes"); a FIFO
/// or device is refused without blocking.
ProgramFile read_program_file(const std::filesystem::path& path, int64_t max_bytes = 64 * 1024);

}  // namespace ard
