// Reading a whole file. Depends on nothing of the daemon.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace ard {

/// The file's bytes; nullopt when it cannot be opened or read.
std::optional<std::string> read_file(const std::filesystem::path& path);

}  // namespace ard
