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
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "daemon/store/store.h"
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

/// Polls the repo's store (read gives the rows) until pred holds for them;
/// fails the test (with the daemon's log) after timeout_s.
template <typename Row>
std::vector<Row> wait_on_store(const std::filesystem::path& repo,
                               const std::function<std::vector<Row>(Store&)>& read,
                               const std::function<bool(const std::vector<Row>&)>& pred, double timeout_s) {
  auto db = repo / ".autoresearchd/results.db";
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Row> rows;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(timeout_s)) {
    if (std::filesystem::exists(db)) {
      Store store(db.string());
      rows = read(store);
      if (pred(rows)) return rows;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "timed out waiting; " << rows.size() << " rows; daemon log:\n"
                << read_file(repo / ".autoresearchd/daemon.log");
  return rows;
}

/// Waits until pred holds for the tag's experiments.
inline std::vector<ExperimentRow> wait_for_rows(const std::filesystem::path& repo, const std::string& tag,
                                                const std::function<bool(const std::vector<ExperimentRow>&)>& pred,
                                                double timeout_s = 60) {
  return wait_on_store<ExperimentRow>(repo, [&](Store& s) { return s.experiments(tag); }, pred, timeout_s);
}

/// One edit of the scripted proposer's script: the whole new trainer/train.cu.
/// Config tables for tests whose outcome is fixed by one run per candidate:
/// no confirmation runs and no noise rounds (the keep rule's own tests turn
/// them on).
inline constexpr const char* kOneRunDecides = "[keep]\nconfirmations = 0\n[noise]\nrounds = false\n";

inline nlohmann::json edit(const std::string& description, const std::string& train_cu) {
  return {{"description", description}, {"writes", {{{"path", "trainer/train.cu"}, {"content", train_cu}}}}};
}

/// One find/replace edit of trainer/train.cu (the scripted proposer's `edits`
/// form): applied to the best of the moment, so edits to other lines add up.
inline nlohmann::json edit_find(const std::string& description, const std::string& find, const std::string& replace) {
  return {{"description", description},
          {"edits", {{{"path", "trainer/train.cu"}, {"find", find}, {"replace", replace}}}}};
}

/// Waits until pred holds for the tag's trials.
inline std::vector<TrialRow> wait_for_trials(const std::filesystem::path& repo, const std::string& tag,
                                             const std::function<bool(const std::vector<TrialRow>&)>& pred,
                                             double timeout_s = 60) {
  return wait_on_store<TrialRow>(repo, [&](Store& s) { return s.trials(tag); }, pred, timeout_s);
}

/// How many of the experiments are in a final state.
inline size_t finished(const std::vector<ExperimentRow>& rows) {
  size_t n = 0;
  for (const auto& r : rows) n += is_final_state(r.state) ? 1 : 0;
  return n;
}

}  // namespace ard::testing
