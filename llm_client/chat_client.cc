// See chat_client.h.
#include "llm_client/chat_client.h"

#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace llm {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {
std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

/// Local time of day of Unix seconds t, "HH:MM:SS".
std::string clock_time(double t) {
  time_t whole = static_cast<time_t>(t);
  struct tm tm {};
  localtime_r(&whole, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

/// A 200 that is not an answer: what kNonAnswerLimit counts.
bool is_non_answer(CallError e) {
  return e == CallError::kBadJson || e == CallError::kEmpty || e == CallError::kBrokenStream;
}
}  // namespace

void sleep_seconds(double seconds, const std::atomic<bool>* cancel) {
  // The flag has nothing to wait on, so it is looked at every 100 ms.
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (!(cancel && cancel->load())) {
    Clock::duration left = end - Clock::now();
    if (left <= Clock::duration::zero()) return;
    std::this_thread::sleep_for(std::min<Clock::duration>(left, std::chrono::milliseconds(100)));
  }
}

ChatClient::ChatClient(LlmConfig config, CallSink* sink, Sleeper sleeper, uint64_t jitter_seed, Spend spent,
                       LogLine log, Clock clock, std::shared_ptr<SpendCap> cap)
    : config_(std::move(config)),
      sink_(sink),
      sleeper_(std::move(sleeper)),
      rng_(jitter_seed ? jitter_seed : std::random_device{}()),
      cap_(cap ? std::move(cap)
               : std::make_shared<SpendCap>(config_.max_cost_usd, config_.max_calls_per_hour, std::move(spent))),
      log_(std::move(log)),
      clock_(clock ? std::move(clock) : Clock(unix_now)) {
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
  std::lock_guard<std::mutex> lock(mutex_);
  return base * std::uniform_real_distribution<double>(0.5, 1.0)(rng_);
}

std::optional<CapReached> ChatClient::cap_reached() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cap_->check(clock_());
}

ChatResult ChatClient::ask(const Conversation& conversation, long experiment_id, int attempt,
                           const std::atomic<bool>* cancel) {
  HttpRequest request = build_request(config_, api_key_, conversation);
  request.cancel = cancel;
  ChatResult result;
  const std::string label = "llm call of #" + std::to_string(experiment_id) + " round " + std::to_string(attempt);
  for (int retry = 0;; ++retry) {
    if (cancel && cancel->load()) {
      result.error = CallError::kCancelled;
      result.message = "cancelled: the daemon is stopping";
      return result;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const double now = clock_();
      if (now < not_before_) {
        // The provider said when: asking earlier costs a call and gets the same answer.
        result.error = CallError::kRateLimited;
        result.retry_at = not_before_;
        result.message = "the provider asked not to be called before " + clock_time(not_before_) +
                         " (Retry-After); no call until then";
        return result;
      }
      if (auto cap = cap_->start_call(now)) {
        result.capped = cap;
        result.message = cap->reason;
        return result;
      }
    }
    // Recorded before it is sent: a daemon killed during the call leaves a row the caps count.
    CallRecord rec;
    rec.experiment_id = experiment_id;
    rec.attempt = attempt;
    rec.provider = protocol_name(config_.protocol);
    rec.model = config_.model;
    rec.retry = retry;
    if (sink_) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        rec.call_key = std::to_string(rng_()) + "-" + std::to_string(retry);
      }
      CallRecord started = rec;
      started.status = "started";
      started.input_tokens = static_cast<long>((request.body.size() + 3) / 4);
      started.usage_estimated = true;
      started.cost_usd = config_.cost(started.input_tokens, 0);
      sink_->call_started(started);
    }
    HttpResponse response = http_post(request);
    CallOutcome o = parse_response(config_, response);
    ++result.calls;
    o.message = redact(o.message);
    o.text = redact(std::move(o.text));

    // A successful call without usage: estimated, so that the caps still see it.
    const bool answered = o.error == CallError::kNone || o.error == CallError::kTruncated;
    bool estimated = false, warn_usage = false;
    if (answered && o.usage.input == 0 && o.usage.output == 0 && o.usage.cache_read == 0 && o.usage.cache_write == 0) {
      o.usage.input = static_cast<long>((request.body.size() + 3) / 4);
      o.usage.output = static_cast<long>((o.text.size() + 3) / 4);
      estimated = true;
    }
    double cost = config_.cost(o.usage);
    int non_answers;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      cap_->add_cost(cost);
      if (answered) non_answers_ = 0;
      else if (is_non_answer(o.error)) ++non_answers_;
      non_answers = non_answers_;
      if (estimated && !warned_usage_) warned_usage_ = warn_usage = true;
    }
    if (warn_usage && log_)
      log_(label + ": " + protocol_name(config_.protocol) + " sent no usage; tokens and cost are estimated from the " +
           "bytes sent and received (four characters a token) and the caps count the estimates");
    if (is_non_answer(o.error) && non_answers >= kNonAnswerLimit) {
      // Asking again gets the same: wait like for a server error, between asks.
      o.error = CallError::kNoAnswer;
      o.message = std::to_string(non_answers) + " responses in a row were not answers; the provider is treated as "
                  "unavailable: " + o.message;
    }

    // What follows this call: nothing, or a wait and another call.
    std::optional<double> wait;
    if (is_retryable(o.error)) {
      if (retry >= config_.retries) {
        o.message = "gave up after " + std::to_string(result.calls) + " calls: " + o.message;
      } else {
        double w = o.retry_after_s ? *o.retry_after_s : backoff(retry);
        if (w > config_.max_backoff_s)
          // A long Retry-After is the provider saying "not now": let the daemon
          // wait between experiments instead of blocking inside one call.
          o.message = "provider asks to wait " + std::to_string(static_cast<long>(w)) +
                      " s (more than max_backoff_s): " + o.message;
        else
          wait = w;
      }
      if (!wait && o.retry_after_s) {
        // Honoured between asks too: no call before it, up to kMaxRetryAfterS.
        std::lock_guard<std::mutex> lock(mutex_);
        not_before_ = std::max(not_before_, clock_() + std::min(*o.retry_after_s, kMaxRetryAfterS));
        result.retry_at = not_before_;
      }
    }

    if (sink_) {
      rec.latency_s = response.latency_s;
      rec.input_tokens = o.usage.input;
      rec.output_tokens = o.usage.output;
      rec.cache_read_tokens = o.usage.cache_read;
      rec.cache_write_tokens = o.usage.cache_write;
      rec.usage_estimated = estimated;
      rec.status = o.status;
      rec.cost_usd = cost;
      rec.error = o.message;
      if (o.error != CallError::kNone) rec.response = o.text;  // a broken stream's partial text
      rec.wait_s = wait.value_or(0);
      sink_->record(rec);
    }
    if (log_ && o.error != CallError::kNone) {
      // A provider that stays down fails the same way at every ask: said once.
      std::string line = label + " call " + std::to_string(retry + 1) + ": " + o.message;
      bool repeated;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        repeated = !wait && o.message == last_logged_;
        last_logged_ = wait ? std::string() : o.message;
      }
      if (!repeated) log_(line + (wait ? "; retry in " + seconds(*wait) : std::string()));
    }

    result.error = o.error;
    result.message = o.message;
    result.text = std::move(o.text);
    result.usage = o.usage;
    if (!wait) return result;
    sleeper_(*wait, cancel);
  }
}

}  // namespace llm
