// See chat_client.h.
#include "llm_client/chat_client.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

namespace llm {

void sleep_seconds(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

ChatClient::ChatClient(LlmConfig config, CallSink* sink, Sleeper sleeper, uint64_t jitter_seed)
    : config_(std::move(config)),
      sink_(sink),
      sleeper_(std::move(sleeper)),
      rng_(jitter_seed ? jitter_seed : std::random_device{}()) {
  if (!config_.api_key_env.empty()) {
    const char* key = std::getenv(config_.api_key_env.c_str());
    if (!key || !*key)
      throw MissingKeyError("llm.api_key_env: environment variable " + config_.api_key_env +
                            " is not set (set it, or api_key_env = \"\" for a server without keys)");
    api_key_ = key;
  }
}

std::string ChatClient::redact(std::string s) const {
  if (api_key_.empty()) return s;
  for (size_t at = s.find(api_key_); at != std::string::npos; at = s.find(api_key_, at))
    s.replace(at, api_key_.size(), "[redacted]");
  return s;
}

double ChatClient::backoff(int retry) {
  double base = std::min(config_.max_backoff_s, config_.backoff_s * std::pow(2.0, retry));
  std::lock_guard<std::mutex> lock(rng_mutex_);
  return base * std::uniform_real_distribution<double>(0.5, 1.0)(rng_);
}

ChatResult ChatClient::ask(const Conversation& conversation, long experiment_id, int attempt,
                           const std::atomic<bool>* cancel) {
  HttpRequest request = build_request(config_, api_key_, conversation);
  request.cancel = cancel;
  ChatResult result;
  auto cancelled = [&] { return cancel && cancel->load(); };
  for (int retry = 0;; ++retry) {
    if (cancelled()) {
      result.error = CallError::kCancelled;
      result.message = "cancelled: the daemon is stopping";
      return result;
    }
    HttpResponse response = http_post(request);
    CallOutcome o = parse_response(config_, response);
    ++result.calls;
    o.message = redact(o.message);

    if (sink_) {
      CallRecord rec;
      rec.experiment_id = experiment_id;
      rec.attempt = attempt;
      rec.provider = protocol_name(config_.protocol);
      rec.model = config_.model;
      rec.latency_s = response.latency_s;
      rec.input_tokens = o.input_tokens;
      rec.output_tokens = o.output_tokens;
      rec.status = o.status;
      rec.cost_usd = config_.cost(o.input_tokens, o.output_tokens);
      rec.error = o.message;
      sink_->record(rec);
    }

    result.error = o.error;
    result.message = o.message;
    result.text = redact(std::move(o.text));
    if (!is_retryable(o.error)) return result;
    if (retry >= config_.retries) {
      result.message = "gave up after " + std::to_string(result.calls) + " calls: " + o.message;
      return result;
    }
    double wait = o.retry_after_s ? *o.retry_after_s : backoff(retry);
    if (wait > config_.max_backoff_s) {
      // A long Retry-After is the provider saying "not now": let the daemon
      // wait between experiments instead of blocking inside one call.
      result.message = "provider asks to wait " + std::to_string(static_cast<long>(wait)) +
                       " s (more than max_backoff_s): " + o.message;
      return result;
    }
    if (!cancel) {
      sleeper_(wait);
    } else {
      // The wait goes in slices, so a stop is seen within a tenth of a second.
      for (double left = wait; left > 0 && !cancelled(); left -= 0.1) sleeper_(std::min(left, 0.1));
    }
  }
}

}  // namespace llm
