// Reading program.md, the research instructions, from the user's checkout with a
// size limit: the whole file goes into every LLM call, so a runaway file would
// cost tokens on every experiment.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace ard {

struct ProgramFile {
  std::optional<std::string> content;  ///< the file; nullopt when it is missing, unreadable or too large
  bool missing = false;                ///< the file does not exist (the loop proposes without it)
  std::string error;                   ///< why content is nullopt: one line naming the file (and the key)
};

/// Reads path if it is a regular file of at most max_bytes. A larger one is
/// refused without being read whole ("program.md is 104857600 bytes, over
/// max_program_bytes = 65536: shorten it or raise max_program_bytes"): the
/// experiment waits until it is fixed. A FIFO or device is refused without blocking.
ProgramFile read_program_file(const std::filesystem::path& path, int64_t max_bytes);

}  // namespace ard
