// What the LLM client reports about each API call, and the sink it reports to.
//
// The daemon's store implements CallSink and writes one row of the llm_calls
// table per call (results.db.schema). Nothing here ever holds the API key.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace llm {

struct CallRecord {
  long experiment_id = 0;   ///< 0 when not tied to an experiment
  int attempt = 0;          ///< 1-based round within the proposal
  std::string provider;     ///< "openai" or "anthropic"
  std::string model;
  double latency_s = 0;
  long input_tokens = 0;    ///< from the response's usage, 0 if absent
  long output_tokens = 0;
  long cache_read_tokens = 0;   ///< prompt tokens read from the provider's cache (not in input_tokens)
  long cache_write_tokens = 0;  ///< prompt tokens written to it (Anthropic; not in input_tokens)
  std::string status;       ///< ok, http_429, http_500, timeout, connect_error, truncated, empty, bad_json, ...
  double cost_usd = 0;      ///< estimated from the config's price table
  std::string error;        ///< one line, empty when status is ok
  /// What was sent: the conversation as text, stored with the call whether or
  /// not it succeeded (empty when it repeats the previous call's request).
  std::string request;
  std::string response;     ///< the answer's text, partial when the stream broke
  /// Retry number (0 for the first call of a question) and the wait before
  /// the next call, 0 when there is none.
  int retry = 0;
  double wait_s = 0;
  /// The response had no usage: the tokens are estimated from the bytes sent
  /// and received (four characters a token), and the cost from them.
  bool usage_estimated = false;
  /// Names the call across its two reports: call_started() and record().
  std::string call_key;
};

/// What one tag has spent over every start, read when the proposer is built,
/// so that caps hold across restarts.
struct Spend {
  double cost_usd = 0;
  std::vector<double> call_times;  ///< Unix seconds of the calls of the last hour
};

class CallSink {
 public:
  virtual ~CallSink() = default;
  /// A call that ended (or failed): its final record.
  virtual void record(const CallRecord& call) = 0;
  /// A call about to be sent, status "started", its input estimated from the
  /// request (usage_estimated): a daemon killed during the call leaves a row
  /// that the caps count. record() with the same call_key then replaces it.
  virtual void call_started(const CallRecord& call) {}
  /// The spend of a tag so far; a sink that stores nothing has none.
  virtual Spend spend(const std::string& tag) { return {}; }
  /// The request limit (estimated tokens) that a server's 413 or
  /// context-length error taught for a provider (its protocol, base_url and
  /// model, one string), when one is remembered; read when the proposer is built.
  virtual std::optional<long> learnt_limit(const std::string& provider) { return std::nullopt; }
  /// Remembers a lowered limit for the provider, with the refusal's first line.
  virtual void learn_limit(const std::string& provider, long tokens, const std::string& reason) {}
};

}  // namespace llm
