// The two wire protocols: OpenAI-compatible Chat Completions and Anthropic
// Messages. Builds the HTTP request for a conversation and classifies what
// came back: an answer with its usage, or an error of a named kind. Answers
// come as one JSON body or, with `stream`, as server-sent events; a stream
// that ends before its last event is a broken stream, its text kept.
//
// Pure functions over strings, so tests cover every case without a network.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "llm_client/http_post.h"
#include "llm_client/llm_config.h"

namespace llm {

struct ChatMessage {
  std::string role;  ///< "user" or "assistant"
  std::string content;
  /// The first cache_prefix bytes of content are the same from one experiment
  /// to the next: Anthropic gets a cache_control breakpoint after them (OpenAI
  /// caches a stable prefix by itself). 0: no breakpoint.
  size_t cache_prefix = 0;
};

struct Conversation {
  std::string system;
  std::vector<ChatMessage> messages;  ///< starts with a user message, alternates
};

/// What went wrong with one call. The first group is worth retrying.
enum class CallError {
  kNone,
  kConnect,      ///< could not connect
  kTimeout,      ///< connect or total timeout
  kNetwork,      ///< other transport failure
  kRateLimited,  ///< 429
  kServer,       ///< 5xx, 529 overloaded, 408, 409
  kAuth,         ///< 401, 403: bad or missing key
  kBadModel,     ///< 404: unknown model (or wrong base_url)
  kBadRequest,   ///< any other 4xx
  kEmpty,        ///< 200 with no text in the answer
  kTruncated,    ///< stopped at the output-token limit
  kBadJson,      ///< 200 whose body is not the protocol's JSON
  kBrokenStream, ///< the event stream ended (or broke) before its last event
  kContextLength,  ///< 413, or the prompt is longer than the model's context
  kCancelled,    ///< the daemon is stopping
  kNoAnswer,     ///< several 200s in a row that were not answers: the provider is unavailable
};

/// Worth calling again after a wait (transport, 429, 5xx, a broken stream).
bool is_retryable(CallError e);
/// The provider cannot answer now: the proposer reports it unavailable
/// (every retryable error once the retries are spent, and kNoAnswer).
bool is_unavailable(CallError e);
/// Stops the daemon: no later call can succeed without a config change.
bool is_fatal(CallError e);

struct CallOutcome {
  CallError error = CallError::kNone;
  std::string status;   ///< llm_calls.status: ok, http_429, timeout, truncated, ...
  std::string message;  ///< one line, empty when ok
  std::string text;     ///< the answer's text (also when truncated, or the stream broke)
  TokenUsage usage;
  std::optional<double> retry_after_s;  ///< from a Retry-After header
};

/// The request for one call; api_key empty sends no key header.
HttpRequest build_request(const LlmConfig& config, const std::string& api_key, const Conversation& conversation);

/// Classifies a response of the configured protocol. An error event inside a
/// 200 stream is classified like the HTTP status it stands for: an
/// authentication or permission error is kAuth, a rate limit kRateLimited, a
/// context-length error kContextLength, anything else kServer.
CallOutcome parse_response(const LlmConfig& config, const HttpResponse& response);

/// A conversation as one text, for the proposal_attempts table and `show`.
std::string render(const Conversation& conversation);

/// Seconds from a Retry-After value: delta-seconds or an HTTP date.
std::optional<double> parse_retry_after(const std::string& value);

}  // namespace llm
