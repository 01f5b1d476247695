// One HTTP POST (or GET) over libcurl, with a connect timeout, a whole-call timeout, an
// idle timeout (no byte received for that long: a stalled stream) and a
// cancel flag, checked every 100 ms, that ends the call at once.
//
// Transport failures (no connection, timeout, cancelled) come back as values,
// not exceptions: the chat client decides what to retry. Whatever body arrived
// before a failure is kept (a broken stream's partial text). Nothing is logged
// here, so request headers (which carry the API key) never reach any output.
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
  double idle_timeout_s = 0;                 ///< 0: none
  const std::atomic<bool>* cancel = nullptr;  ///< set: abort now; may be null
};

struct HttpResponse {
  enum class Transport {
    kOk,       ///< a response came back (any status)
    kConnect,  ///< could not resolve or connect
    kTimeout,  ///< connect, total or idle timeout
    kCancelled,  ///< the cancel flag was set
    kOther,    ///< any other transport failure (reset, TLS, ...)
  };
  Transport transport = Transport::kOther;
  std::string transport_error;                ///< one line, for anything but kOk
  long status = 0;                            ///< HTTP status code
  std::map<std::string, std::string> headers;  ///< names lower-cased; last value wins
  std::string body;                           ///< also the part received before a failure
  double latency_s = 0;
};

/// Sends the request and waits for the whole response (or a failure).
HttpResponse http_post(const HttpRequest& request);

/// The same as a GET; request.body is not sent (a health check's model list).
HttpResponse http_get(const HttpRequest& request);

}  // namespace llm
