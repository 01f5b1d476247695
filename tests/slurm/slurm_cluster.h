// A real single-node Slurm cluster for one test (tests/slurm/cluster.py):
// munged, slurmctld and slurmd with their config, state and sockets in a temp
// directory of their own and free ports, so concurrent tests do not meet.
// SLURM_CONF points at it for the test's process and its children while it
// lives; the destructor cancels every job first, then stops the daemons.
#pragma once

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <filesystem>
#include <memory>
#include <string>

#include "testing/test_util.h"

namespace ard::testing {

class SlurmCluster {
 public:
  /// Starts the cluster; a failure (the exact error of the daemon that did
  /// not start) is a fatal test failure, never a skip.
  SlurmCluster() {
    // The daemons outlive cluster.py, which starts them: they become this
    // process's children, so that they are reaped here and not left as
    // zombies where no init reaps (a container).
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    ShellResult r = shell("python3 " + sh_quote(ARD_SLURM_CLUSTER) + " start " + sh_quote(dir_.path().string()));
    started_ = r.code == 0;
    if (!started_) {
      error_ = r.out;
      return;
    }
    env_ = std::make_unique<ScopedEnv>("SLURM_CONF", (dir_.path() / "slurm.conf").string());
  }
  ~SlurmCluster() {
    shell("python3 " + sh_quote(ARD_SLURM_CLUSTER) + " stop " + sh_quote(dir_.path().string()));
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }
  bool started() const { return started_; }
  const std::string& error() const { return error_; }
  const std::filesystem::path& dir() const { return dir_.path(); }
  /// The pids of this cluster's job processes still alive, one a line: what
  /// a cancelled job must not leave behind.
  std::string leftovers() const {
    return shell("python3 " + sh_quote(ARD_SLURM_CLUSTER) + " leftovers " + sh_quote(dir_.path().string())).out;
  }
  /// The jobs Slurm lists (any state it still remembers), "id|state" lines.
  std::string jobs(const std::string& states = "all") const {
    return shell("squeue -h -t " + states + " -o '%i|%T'").out;
  }

 private:
  TempDir dir_;
  bool started_ = false;
  std::string error_;
  std::unique_ptr<ScopedEnv> env_;
};

}  // namespace ard::testing

/// Use at the top of a test: the cluster or a fatal failure with its error.
#define ARD_START_SLURM(name)                                  \
  ::ard::testing::SlurmCluster name;                           \
  ASSERT_TRUE(name.started()) << "Slurm did not start: " << name.error()
