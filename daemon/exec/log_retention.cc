// See log_retention.h.
#include "daemon/exec/log_retention.h"

#include <algorithm>
#include <chrono>

namespace ard {

std::vector<std::filesystem::path> prune_logs(const std::filesystem::path& dir, double keep_days,
                                              std::filesystem::file_time_type now) {
  std::vector<std::filesystem::path> removed;
  if (keep_days <= 0) return removed;
  const auto keep = std::chrono::duration_cast<std::filesystem::file_time_type::duration>(
      std::chrono::duration<double, std::ratio<86400>>(keep_days));
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code e;
    if (!entry.is_regular_file(e) || entry.is_symlink(e)) continue;
    auto changed = entry.last_write_time(e);
    if (e || now - changed <= keep) continue;
    if (std::filesystem::remove(entry.path(), e)) removed.push_back(entry.path());
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace ard
