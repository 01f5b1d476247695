// Pruning old stage logs in .autoresearchd/logs/ by age ([logs] keep_days), so a
// daemon that runs for months does not fill the disk with one log per stage.
#pragma once

#include <filesystem>
#include <vector>

namespace ard {

/// Deletes the regular files directly in dir whose last change is more than
/// keep_days before now; keep_days = 0 keeps everything. Symlinks and
/// subdirectories are left alone. Returns the paths deleted. A missing dir
/// deletes nothing; a file that cannot be deleted is skipped.
std::vector<std::filesystem::path> prune_logs(const std::filesystem::path& dir, double keep_days,
                                              std::filesystem::file_time_type now = std::filesystem::file_time_type::clock::now());

}  // namespace ard
