// The [llm] table of autoresearch.toml: which provider to ask, how long to
// wait, how often to retry, what a token costs. docs/llm.md lists every key.
//
// Parsing is strict: an unknown key or a bad value is an ard::ConfigError
// whose one-line message names the key ("llm.timeout_s: must be > 0, got -1").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <toml++/toml.h>

namespace llm {

enum class Protocol {
  kOpenAI,     ///< POST {base_url}/chat/completions, Authorization: Bearer
  kAnthropic,  ///< POST {base_url}/v1/messages, x-api-key, anthropic-version
};

/// "openai" or "anthropic": the name used in logs and llm_calls.provider.
const char* protocol_name(Protocol p);

/// US dollars per million tokens, for the cost estimate of one model.
struct Price {
  double input_per_mtok = 0;
  double output_per_mtok = 0;
  double cached_input_per_mtok = 0;  ///< a cached prefix read (Anthropic 0.1x, OpenAI 0.5x or less)
  double cache_write_per_mtok = 0;   ///< a prefix written to the cache (Anthropic 1.25x for 5 min, 2x for 1 h)
};

/// The tokens of one call, as its usage reports them. input excludes the
/// cached parts: a call's prompt is input + cache_read + cache_write tokens.
struct TokenUsage {
  long input = 0;
  long output = 0;
  long cache_read = 0;   ///< Anthropic cache_read_input_tokens, OpenAI prompt_tokens_details.cached_tokens
  long cache_write = 0;  ///< Anthropic cache_creation_input_tokens
};

/// What happens when a cap is reached: wait for it to lift, or propose offline.
enum class OnCap { kPause, kOffline };

struct LlmConfig {
  Protocol protocol = Protocol::kOpenAI;
  std::string model;                 ///< required
  std::string base_url;              ///< default per protocol, no trailing '/'
  std::string api_key_env;           ///< the variable holding the key; empty: send none
  std::string anthropic_version = "2023-06-01";
  std::string max_tokens_field = "max_tokens";  ///< OpenAI: or "max_completion_tokens"
  long max_output_tokens = 8192;
  std::optional<double> temperature;  ///< unset: the provider's default
  double connect_timeout_s = 10;
  double timeout_s = 600;            ///< one whole HTTP call
  int retries = 4;                   ///< extra calls after a retryable failure
  double backoff_s = 2;              ///< the first wait; doubles each retry, with jitter
  double max_backoff_s = 60;         ///< cap on one wait; a longer Retry-After gives up
  int max_edit_attempts = 3;         ///< rounds of asking again after an edit fails
  long history_tokens = 1000;        ///< budget of the past-experiments table in the prompt
  /// The whole request's limit (estimated tokens), every round: the first
  /// prompt plus the READ reserve fit it (docs/llm.md, "The prompt").
  long context_tokens = 32000;
  /// What the first request aims at (11500: about 47 KB at today's tree): the
  /// history and the failure give way to it down to their minimums, and
  /// headers are given whole only while it holds; the research
  /// surface and program.md may pass it, up to context_tokens less the READ reserve.
  long first_request_tokens = 11500;
  int max_read_rounds = 2;           ///< READ: rounds per experiment before an edit is required
  /// File text one READ round may return, reserved in every first prompt's
  /// budget so that a read of this size always fits (formerly read_max_bytes).
  long read_bytes = 16384;
  bool stream = true;                ///< ask for server-sent events
  double idle_timeout_s = 60;        ///< no byte for this long ends a call (retryable)
  std::string cache_ttl = "1h";      ///< Anthropic cache_control ttl: "5m" or "1h"
  std::optional<double> max_cost_usd;  ///< per tag, over every start; needs a price for the model
  int max_calls_per_hour = 60;       ///< HTTP calls in any 60 minutes
  OnCap on_cap = OnCap::kPause;
  std::map<std::string, Price> prices;  ///< by model name

  /// The tokens a first prompt leaves free for a READ round: read_bytes of
  /// file text plus the reply's headings and the READ answer (1 KB).
  long read_reserve_tokens() const { return (read_bytes + 1024) / 4; }

  /// The estimated cost of a call; 0 for a model with no price.
  double cost(const TokenUsage& usage) const;
  double cost(long input_tokens, long output_tokens) const { return cost(TokenUsage{input_tokens, output_tokens}); }
};

/// Parses the [llm] table. Throws ard::ConfigError naming the key.
LlmConfig parse_llm_config(const toml::table& table);

}  // namespace llm
