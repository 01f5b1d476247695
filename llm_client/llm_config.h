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
};

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
  long history_tokens = 4000;        ///< budget of the past-experiments table in the prompt
  std::map<std::string, Price> prices;  ///< by model name

  /// The estimated cost of a call; 0 for a model with no price.
  double cost(long input_tokens, long output_tokens) const;
};

/// Parses the [llm] table. Throws ard::ConfigError naming the key.
LlmConfig parse_llm_config(const toml::table& table);

}  // namespace llm
