// `autoresearchd demo`, around the daemon it runs: the demo's directory and
// port, what it prints (what to look at, with the flags each command needs),
// and the watch that reports the first keep and the night's end and stops the
// daemon when asked to (--stop-after-kept, --timeout). The repo itself is
// demo_repo.h; the daemon is the real one, started as `start` starts it
// (cli.cc), in the foreground.
//
// The watch stops the daemon the way Ctrl-C does: a SIGTERM to this process,
// which the engine's signal_set takes; so a bounded demo ends exactly like an
// interrupted one (the run recorded as interrupted, the session closed).
#pragma once

#include <atomic>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <variant>

#include "daemon/cli/demo_repo.h"

namespace ard {

/// A new empty directory $TMPDIR/autoresearchd-demo-XXXXXX (/tmp without
/// TMPDIR), or one line why not.
std::variant<std::filesystem::path, std::string> make_demo_dir();

/// A free TCP port on 127.0.0.1 (bound and released), or 0 when none is.
int free_loopback_port();

/// What the demo prints before the daemon starts: the repo, the simulated
/// trainer, the night, the sandbox (with sandbox_off_why when it is off), the
/// dashboard's URL and the status / show / export commands with --repo.
std::string demo_banner(const DemoRepo& repo, const std::filesystem::path& daemon, int port, bool sandbox,
                        const std::string& sandbox_off_why);

/// What the demo prints after the daemon stopped: how many were kept, and the
/// commands that still work on the repo.
std::string demo_farewell(const DemoRepo& repo, const std::filesystem::path& daemon, int kept,
                          std::optional<double> first_keep_s);

/// The watch over the demo's store, on a thread of its own from construction
/// until finish(): every 0.2 s it reads the tag's experiments (read-only). It
/// prints one line at the first kept candidate (its id, its time since
/// started_at, its description, the `show` command) and one when every
/// candidate of the night has finished; it sends SIGTERM to this process once
/// stop_after_kept candidates are kept (0: never) or timeout_s have passed
/// (0: never; and not before the store holds the engine's first experiment).
class DemoWatch {
 public:
  DemoWatch(const DemoRepo& repo, std::filesystem::path daemon, std::string tag, double started_at,
            int stop_after_kept, double timeout_s, std::ostream& out);
  ~DemoWatch();
  DemoWatch(const DemoWatch&) = delete;
  DemoWatch& operator=(const DemoWatch&) = delete;

  /// Ends the thread (after one last look at the store) and waits for it.
  void finish();
  int kept() const { return kept_; }                        ///< candidates kept (the baseline not counted)
  bool timed_out() const { return timed_out_; }             ///< the timeout sent the SIGTERM
  std::optional<double> first_keep_s() const { return first_keep_s_ < 0 ? std::nullopt : std::optional(first_keep_s_.load()); }

 private:
  void look();
  void loop();

  DemoRepo repo_;
  std::filesystem::path daemon_;
  std::string tag_;
  double started_at_;
  int stop_after_kept_;
  double timeout_s_;
  std::ostream& out_;
  std::atomic<bool> done_{false};
  std::atomic<int> kept_{0};
  std::atomic<bool> timed_out_{false};
  std::atomic<double> first_keep_s_{-1};
  bool engine_seen_ = false;  ///< the store holds an experiment: the engine takes signals
  bool night_over_ = false;
  bool stop_sent_ = false;
  std::thread thread_;
};

}  // namespace ard
