// The chat client: one question to the configured provider, asked again with
// exponential backoff and jitter while the failure is retryable (connection,
// timeout, 429, 5xx, a broken stream), honouring Retry-After. Every HTTP call
// is reported to the CallSink as started before it is sent, then, failed or
// not, with its usage (cached tokens
// included), estimated cost, retry number and the wait that follows it, and
// to the log hook as one line when it failed. Before each call the spending
// caps are checked: a reached cap makes no call and says until when. A set
// cancel flag ends a call or a wait within 100 ms.
//
// Between asks: a Retry-After longer than max_backoff_s (or one on the last
// retry) is remembered, and no call goes out before it (at most
// kMaxRetryAfterS later); the ask says until when. kNonAnswerLimit 200s in a
// row that are not answers (a body that is not the protocol's JSON, no text,
// a stream without its last event) make the provider unavailable (kNoAnswer)
// instead of being handed back as bad answers, until an answer comes. A
// successful call without usage has its tokens estimated from the bytes sent
// and received (four characters a token), recorded as estimated, priced and
// counted by the caps; the log says so once.
//
// The API key is read once from the environment variable the config names
// and only ever placed in a request header; every message and answer that
// leaves this class has the key replaced by "[redacted]".
#pragma once

#include <atomic>
#include <optional>
#include <functional>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>

#include "llm_client/chat_protocol.h"
#include "llm_client/llm_config.h"
#include "llm_client/spend_cap.h"
#include "proposers/call_record.h"

namespace llm {

/// Waits this many seconds, or less if cancel (may be null) is set. Tests pass
/// one that records instead of sleeping.
using Sleeper = std::function<void(double seconds, const std::atomic<bool>* cancel)>;
void sleep_seconds(double seconds, const std::atomic<bool>* cancel);

/// Unix seconds now; tests pass a clock of their own.
using Clock = std::function<double()>;
double unix_now();

/// The longest Retry-After honoured between asks (one hour); a longer one is
/// cut to it.
constexpr double kMaxRetryAfterS = 3600;
/// 200s in a row without an answer after which the provider is unavailable.
constexpr int kNonAnswerLimit = 3;

/// Receives one line per failed call and retry ("llm call 2 of #14: http_529 ...; retry in 4.1 s").
using LogLine = std::function<void(const std::string& line)>;

/// The answer to one question, after whatever retries it took.
struct ChatResult {
  CallError error = CallError::kNone;  ///< the last call's error
  std::string message;                 ///< one line, empty when ok
  std::string text;                    ///< the answer (partial when truncated)
  int calls = 0;                       ///< HTTP calls made
  TokenUsage usage;                    ///< of the last call
  std::optional<CapReached> capped;    ///< set when a cap stopped the question before a call
  /// Unix seconds before which the provider asked not to be called
  /// (Retry-After); 0 when it did not.
  double retry_at = 0;
  bool ok() const { return error == CallError::kNone && !capped; }
};

/// Thrown by the constructor when the key's variable is named but unset.
class MissingKeyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ChatClient {
 public:
  /// sink may be null (calls are then not recorded). jitter_seed fixes the
  /// jitter sequence for tests.
  /// spent: the tag's spend so far (the caps start from it).
  /// clock: the caps' and Retry-After's time (unix_now when empty).
  /// cap: the caps this client shares with others (a swarm's profiles); null:
  /// caps of its own, from config and spent.
  ChatClient(LlmConfig config, CallSink* sink, Sleeper sleeper = sleep_seconds, uint64_t jitter_seed = 0,
             Spend spent = {}, LogLine log = {}, Clock clock = {}, std::shared_ptr<SpendCap> cap = nullptr);

  /// Asks; experiment_id and attempt label the call records. cancel may be
  /// null. Safe to call from several threads at once.
  ChatResult ask(const Conversation& conversation, long experiment_id, int attempt,
                 const std::atomic<bool>* cancel = nullptr);
  /// The caps' verdict now, without asking.
  std::optional<CapReached> cap_reached() const;

  const LlmConfig& config() const { return config_; }
  /// s with every occurrence of the API key replaced.
  std::string redact(std::string s) const;

 private:
  /// The wait before retry number `retry` (0-based), with jitter in [0.5, 1].
  double backoff(int retry);

  LlmConfig config_;
  std::string api_key_;
  CallSink* sink_;
  Sleeper sleeper_;
  mutable std::mutex mutex_;  ///< guards rng_, last_logged_: asks run on several threads at once
  std::mt19937_64 rng_;
  std::shared_ptr<SpendCap> cap_;
  LogLine log_;
  Clock clock_;
  std::string last_logged_;  ///< the last failure logged without a retry (guarded by mutex_)
  double not_before_ = 0;    ///< no call before this (Retry-After; guarded by mutex_)
  int non_answers_ = 0;      ///< 200s in a row that were not answers (guarded by mutex_)
  bool warned_usage_ = false;  ///< the missing usage was logged (guarded by mutex_)
};

}  // namespace llm
