// See http_post.h.
#include "llm_client/http_post.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>

namespace llm {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

/// Where the body goes, and when its last byte came (the idle timeout).
struct BodySink {
  std::string* body;
  std::chrono::steady_clock::time_point last_byte;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  sink->body->append(data, size * n);
  sink->last_byte = std::chrono::steady_clock::now();
  return size * n;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string line(data, size * n);
  // A new status line (after a redirect or "100 Continue") starts a new set.
  if (line.rfind("HTTP/", 0) == 0) headers->clear();
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    (*headers)[trim(name)] = trim(line.substr(colon + 1));
  }
  return size * n;
}

HttpResponse perform(const HttpRequest& request, bool post) {
  global_init();
  HttpResponse out;
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  std::unique_ptr<CURLM, CURLMcode (*)(CURLM*)> multi(curl_multi_init(), curl_multi_cleanup);
  if (!curl || !multi) {
    out.transport_error = "curl_easy_init failed";
    return out;
  }
  curl_slist* list = nullptr;
  for (const auto& h : request.headers) list = curl_slist_append(list, h.c_str());
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(list, curl_slist_free_all);

  auto start = std::chrono::steady_clock::now();
  BodySink body{&out.body, start};
  char error[CURL_ERROR_SIZE] = {0};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  if (post) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, header_list.get());
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.total_timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: safe in a threaded daemon
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &out.headers);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "autoresearchd/0.1");

  // The multi interface waits on the socket at most 100 ms at a time, so the
  // cancel flag (an atomic with nothing to wait on) and the idle timer are
  // seen within 100 ms of changing, however quiet the connection is.
  curl_multi_add_handle(multi.get(), c);
  CURLcode rc = CURLE_OK;
  bool cancelled = false, idle = false;
  for (int running = 1; running;) {
    if (CURLMcode m = curl_multi_perform(multi.get(), &running); m != CURLM_OK) {
      rc = CURLE_FAILED_INIT;
      std::snprintf(error, sizeof error, "curl_multi_perform: %s", curl_multi_strerror(m));
      break;
    }
    if (!running) break;
    if (request.cancel && request.cancel->load()) {
      cancelled = true;
      break;
    }
    auto now = std::chrono::steady_clock::now();
    if (request.idle_timeout_s > 0 &&
        std::chrono::duration<double>(now - body.last_byte).count() > request.idle_timeout_s) {
      idle = true;
      break;
    }
    curl_multi_poll(multi.get(), nullptr, 0, 100, nullptr);
  }
  int queued = 0;
  for (CURLMsg* msg; (msg = curl_multi_info_read(multi.get(), &queued));)  // the transfer's own result
    if (msg->msg == CURLMSG_DONE) rc = msg->data.result;
  curl_multi_remove_handle(multi.get(), c);
  out.latency_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out.status);

  if (cancelled) {
    out.transport = HttpResponse::Transport::kCancelled;
    out.transport_error = "cancelled: the daemon is stopping";
    return out;
  }
  if (idle) {
    out.transport = HttpResponse::Transport::kTimeout;
    out.transport_error = "no data for " + std::to_string(static_cast<long>(request.idle_timeout_s)) +
                          " s (idle_timeout_s)" + (out.body.empty() ? "" : " after " + std::to_string(out.body.size()) + " bytes");
    return out;
  }
  if (rc == CURLE_OK) {
    out.transport = HttpResponse::Transport::kOk;
    return out;
  }
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT: out.transport = HttpResponse::Transport::kTimeout; break;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT: out.transport = HttpResponse::Transport::kConnect; break;
    default: out.transport = HttpResponse::Transport::kOther; break;
  }
  out.transport_error = error[0] ? std::string(error) : std::string(curl_easy_strerror(rc));
  while (!out.transport_error.empty() && out.transport_error.back() == '\n') out.transport_error.pop_back();
  return out;
}

}  // namespace

HttpResponse http_post(const HttpRequest& request) { return perform(request, true); }

HttpResponse http_get(const HttpRequest& request) { return perform(request, false); }

}  // namespace llm
