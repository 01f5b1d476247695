// What the daemon's end-to-end tests share: autoresearchd started as a real
// process in a repo, and waiting on its store until the experiments reach a
// state (the daemon writes every change there as it happens).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/store.h"
#include "testing/test_util.h"

namespace ard::testing {

/// Starts `autoresearchd start` in the foreground in repo, as our own child,
/// its output appended to log.
inline pid_t spawn_daemon(const std::string& daemon, const std::filesystem::path& repo,
                          const std::filesystem::path& log) {
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(repo.c_str()) != 0) _exit(127);
    FILE* f = std::fopen(log.c_str(), "a");
    if (f) {
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
    }
    execl(daemon.c_str(), daemon.c_str(), "start", nullptr);
    _exit(127);
  }
  return pid;
}

/// Polls the repo's store until pred holds for the tag's experiments; fails
/// the test (with the daemon's log) after timeout_s.
inline std::vector<ExperimentRow> wait_for_rows(const std::filesystem::path& repo, const std::string& tag,
                                                const std::function<bool(const std::vector<ExperimentRow>&)>& pred,
                                                double timeout_s = 60) {
  auto db = repo / ".autoresearchd/results.db";
  auto t0 = std::chrono::steady_clock::now();
  std::vector<ExperimentRow> rows;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(timeout_s)) {
    if (std::filesystem::exists(db)) {
      Store store(db.string());
      rows = store.experiments(tag);
      if (pred(rows)) return rows;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "timed out waiting; " << rows.size() << " rows; daemon log:\n"
                << read_file(repo / ".autoresearchd/daemon.log");
  return rows;
}

/// How many of the experiments are in a final state.
inline size_t finished(const std::vector<ExperimentRow>& rows) {
  size_t n = 0;
  for (const auto& r : rows) n += is_final_state(r.state) ? 1 : 0;
  return n;
}

}  // namespace ard::testing
