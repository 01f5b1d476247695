// The dashboard's HTTP server (Boost.Beast) on a caller's io_context: the
// pages, Chart.js, the JSON API and, when allowed, the two actions. Every
// request opens the store read-only, so it serves whether or not a daemon
// runs, and never writes to it except through DashboardActions.
//
// Security (docs/dashboard.md): a non-loopback bind needs serve.token; with a
// token every request carries it as `Authorization: Bearer` or as the cookie
// that the one-time login URL sets. On a loopback bind without a token the
// Host header must name the loopback address (no DNS rebinding). Actions need
// the token, serve.allow_actions and a custom header (no cross-site forms).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "daemon/config.h"
#include "daemon/decide/ladder_report.h"
#include "daemon/decide/run_evidence.h"

namespace ard {

/// The writes the dashboard can ask for: the I/O seam the tests fake.
class DashboardActions {
 public:
  virtual ~DashboardActions() = default;
  /// Asks the running daemon to stop; returns what happened, in one line.
  /// Expected failures (no daemon) come back as the line, prefixed "error: ".
  virtual std::string stop() = 0;
  /// Replaces program.md with content and stores it as a new version, as an
  /// edit on disk would be; returns its version hash, or "error: ..." .
  virtual std::string save_program(const std::string& content) = 0;
  /// Queues a researcher's idea (Store::add_idea, source "dashboard") for the
  /// served tag; returns "idea N queued", or "error: ..." (blank, too long).
  virtual std::string add_idea(const std::string& text) = 0;
};

/// Stop by SIGTERM to the daemon holding the pid file; program.md written
/// atomically in the user's checkout and put into the store.
std::unique_ptr<DashboardActions> make_daemon_actions(const Config& config);

struct DashboardSettings {
  ServeConfig serve;
  std::string tag;
  std::filesystem::path db;        ///< results.db
  std::filesystem::path pid_file;  ///< daemon.pid, to tell whether a daemon runs
  /// Debian's libjs-chart.js; read once at start and served as /chart.js.
  std::filesystem::path chart_js = "/usr/share/javascript/chart.js/chart.min.js";
  NoiseSettings noise;  ///< [noise]: σ judged as the engine does
  MetricSpec metric;  ///< `summary.metric` and `summary.goal`: the chart's axis and best-so-far line
  LadderSettings ladder;  ///< the rungs and [promote]: the promotion ladder's labels
};

/// The settings for the repo's store and its [serve] table.
DashboardSettings dashboard_settings(const Config& config);

class DashboardServer {
 public:
  /// Validates settings.serve (ConfigError naming the key), binds and starts
  /// accepting on io. Port 0 picks a free port. actions may be null (read-only).
  /// Throws FatalError when the address cannot be bound or Chart.js is missing.
  DashboardServer(boost::asio::io_context& io, DashboardSettings settings, DashboardActions* actions);
  ~DashboardServer();
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  /// The port it listens on.
  unsigned short port() const;
  /// http://host:port/ , with a one-time login query when a token is set:
  /// its first use sets the token cookie, later uses are refused.
  std::string url() const;
  /// Stops accepting; open connections end with their current request.
  void close();

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace ard
