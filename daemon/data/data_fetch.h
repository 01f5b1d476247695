// Downloading the data sources into the data cache: one file at a time over
// libcurl, resumed with HTTP ranges after a dropped connection, and moved into
// place only once its whole gzip stream has been decoded with every member's
// CRC-32 and length checked. A partial or corrupt file never passes as whole.
//
// Proxies come from libcurl's usual variables (https_proxy, http_proxy,
// no_proxy, ALL_PROXY). Progress goes to a stream: a bar with bytes, rate and
// ETA on a terminal, a plain line every few seconds otherwise.
#pragma once

#include <atomic>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

#include "daemon/data/source_list.h"

namespace ard {

struct FetchOptions {
  std::ostream* progress = nullptr;  ///< none: silent
  bool tty = false;                  ///< redraw one bar line instead of printing lines
  double report_every_s = 10;        ///< the plain lines' interval
  int attempts = 5;                  ///< tries of one file after a dropped or failed transfer
  double retry_wait_s = 1;           ///< the first wait between tries; doubles each time
  double connect_timeout_s = 30;
  double stall_timeout_s = 60;       ///< a transfer with no byte for this long is retried
  const std::atomic<bool>* stop = nullptr;  ///< set: the transfer ends as stopped
};

struct FetchOutcome {
  bool ok = false;
  bool downloaded = false;  ///< false: the file was already in place and whole
  std::string error;        ///< one line: the URL, the cause, what to do
};

/// Checks that a file is one or more complete gzip members: decodes all of it
/// and checks each member's CRC-32 and length. Returns the problem, or nullopt.
std::optional<std::string> verify_gzip(const std::filesystem::path& path);

/// True when dest is in place and known whole: verified before (a stamp beside
/// it matches its size and mtime) or verified now (then stamped).
bool is_whole(const std::filesystem::path& dest);

/// Fetches url into dest unless dest is already whole. Downloads into
/// dest + ".part" (resuming it with a Range request when it exists), checks
/// it with verify_gzip, then renames it into place. A corrupt download is
/// deleted. Expected failures come back as values.
FetchOutcome fetch_file(const std::string& url, const std::filesystem::path& dest, const FetchOptions& options);

/// Fetches every file of the plan, holding a lock on the directory so two
/// processes never write the same file. Throws FatalError with the first
/// failure's line.
void fetch_plan(const FetchPlan& plan, const FetchOptions& options);

/// What a HEAD request found: whether a server answered, and what it said.
struct HeadResult {
  bool reached = false;            ///< false: no HTTP answer (name, connection, TLS, timeout)
  long status = 0;                 ///< the last response's status, redirects followed
  std::optional<double> length;    ///< its Content-Length in bytes, when the server sent one
  std::string error;               ///< when not reached: "curl error 7: ..."
};

/// HEAD url, following redirects, within timeout_s (the connection within
/// half of it); proxies as for the fetch. Never throws.
HeadResult head_url(const std::string& url, double timeout_s = 10);

/// "12.3 MB", "1.2 GB": decimal units, as download sizes are quoted.
std::string human_bytes(double bytes);

}  // namespace ard
