// One HTTP POST (or GET) over libcurl, with a connect timeout and a whole-call
// timeout.
//
// Transport failures (no connection, timeout) come back as values, not
// exceptions: the chat client decides what to retry. Nothing is logged here,
// so request headers (which carry the API key) never reach any output.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

namespace llm {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  ///< "Name: value"
  std::string body;
  double connect_timeout_s = 10;
  double total_timeout_s = 600;
  /// When set (the daemon is stopping), the transfer is abandoned within
  /// about 100 ms and comes back as kCancelled.
  const std::atomic<bool>* cancel = nullptr;
};

struct HttpResponse {
  enum class Transport {
    kOk,       ///< a response came back (any status)
    kConnect,  ///< could not resolve or connect
    kTimeout,  ///< connect or total timeout
    kOther,    ///< any other transport failure (reset, TLS, ...)
    kCancelled,  ///< the request's cancel flag was set
  };
  Transport transport = Transport::kOther;
  std::string transport_error;                ///< one line, for anything but kOk
  long status = 0;                            ///< HTTP status code
  std::map<std::string, std::string> headers;  ///< names lower-cased; last value wins
  std::string body;
  double latency_s = 0;
};

/// Sends the request and waits for the whole response (or a failure).
HttpResponse http_post(const HttpRequest& request);

/// The same as a GET; request.body is not sent (a health check's model list).
HttpResponse http_get(const HttpRequest& request);

}  // namespace llm
