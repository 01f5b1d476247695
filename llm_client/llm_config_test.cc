// Tests for llm_config.h: defaults per protocol, every key read, and errors
// that name the key for unknown keys and bad values.
#include "llm_client/llm_config.h"

#include <gtest/gtest.h>

#include "proposers/config_error.h"

namespace llm {
namespace {

toml::table parse(const std::string& text) { return toml::parse(text); }

std::string error_of(const std::string& text) {
  try {
    parse_llm_config(parse(text));
  } catch (const ard::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(LlmConfig, OpenAIDefaults) {
  LlmConfig c = parse_llm_config(parse("provider = 'openai'\nmodel = 'gpt-x'\n"));
  EXPECT_EQ(c.protocol, Protocol::kOpenAI);
  EXPECT_EQ(c.base_url, "https://api.openai.com/v1");
  EXPECT_EQ(c.api_key_env, "OPENAI_API_KEY");
  EXPECT_EQ(c.max_tokens_field, "max_tokens");
  EXPECT_FALSE(c.temperature.has_value());
  EXPECT_EQ(c.max_edit_attempts, 3);
  EXPECT_EQ(c.retries, 4);
}

TEST(LlmConfig, AnthropicDefaultsAndEveryKey) {
  LlmConfig c = parse_llm_config(parse(R"(
provider = "anthropic"
model = "claude-x"
base_url = "http://127.0.0.1:9999/"
api_key_env = "MY_KEY"
anthropic_version = "2024-01-01"
max_output_tokens = 1000
temperature = 0.5
connect_timeout_s = 2
timeout_s = 30.5
retries = 1
backoff_s = 0.5
max_backoff_s = 4
max_edit_attempts = 5
history_tokens = 100
[prices.claude-x]
input = 3.0
output = 15
)"));
  EXPECT_EQ(c.protocol, Protocol::kAnthropic);
  EXPECT_EQ(c.base_url, "http://127.0.0.1:9999");  // trailing slash dropped
  EXPECT_EQ(c.api_key_env, "MY_KEY");
  EXPECT_EQ(c.anthropic_version, "2024-01-01");
  EXPECT_EQ(c.max_output_tokens, 1000);
  EXPECT_DOUBLE_EQ(*c.temperature, 0.5);
  EXPECT_DOUBLE_EQ(c.connect_timeout_s, 2);
  EXPECT_DOUBLE_EQ(c.timeout_s, 30.5);
  EXPECT_EQ(c.retries, 1);
  EXPECT_DOUBLE_EQ(c.backoff_s, 0.5);
  EXPECT_DOUBLE_EQ(c.max_backoff_s, 4);
  EXPECT_EQ(c.max_edit_attempts, 5);
  EXPECT_EQ(c.history_tokens, 100);
  // 1M input tokens at $3 plus 0.5M output at $15.
  EXPECT_DOUBLE_EQ(c.cost(1000000, 500000), 10.5);
}

TEST(LlmConfig, AnthropicDefaultBaseAndKey) {
  LlmConfig c = parse_llm_config(parse("provider = 'anthropic'\nmodel = 'm'\n"));
  EXPECT_EQ(c.base_url, "https://api.anthropic.com");
  EXPECT_EQ(c.api_key_env, "ANTHROPIC_API_KEY");
  EXPECT_EQ(c.cost(100, 100), 0);  // no price for the model
}

TEST(LlmConfig, EmptyKeyEnvMeansNoKey) {
  LlmConfig c = parse_llm_config(parse("provider = 'openai'\nmodel = 'm'\napi_key_env = ''\n"));
  EXPECT_EQ(c.api_key_env, "");
}

TEST(LlmConfig, ErrorsNameTheKey) {
  EXPECT_EQ(error_of("model = 'm'"), "llm.provider: missing: set \"openai\" (any OpenAI-compatible server) or \"anthropic\"");
  EXPECT_EQ(error_of("provider = 'gemini'\nmodel='m'"), "llm.provider: must be \"openai\" or \"anthropic\", got \"gemini\"");
  EXPECT_EQ(error_of("provider = 'openai'"), "llm.model: missing: name the model to ask");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\ncolour = 1"), "llm.colour: unknown key");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\ntimeout_s = -1"), "llm.timeout_s: must be in [0.001, 86400], got -1");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\nretries = 'x'"), "llm.retries: expected an integer");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\ntemperature = 3"), "llm.temperature: must be in [0, 2], got 3");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\nbase_url = 'ftp://x'"),
            "llm.base_url: must start with http:// or https://, got \"ftp://x\"");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\napi_key_env = 'A-B'"),
            "llm.api_key_env: must be an environment variable name, got \"A-B\"");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\nmax_tokens_field = 'n'"),
            "llm.max_tokens_field: must be \"max_tokens\" or \"max_completion_tokens\", got \"n\"");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\nbackoff_s = 10\nmax_backoff_s = 5"),
            "llm.max_backoff_s: must be >= backoff_s (10)");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\n[prices.m]\ninput = 1\nouput = 2"), "llm.prices.m.ouput: unknown key");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\nprices = 3"), "llm.prices: expected a table");
}

TEST(LlmConfig, BudgetCacheStreamAndCapKeys) {
  LlmConfig d = parse_llm_config(parse("provider = 'anthropic'\nmodel = 'm'\n"));
  EXPECT_EQ(d.context_tokens, 32000);
  EXPECT_EQ(d.read_bytes, 16384);
  EXPECT_EQ(d.first_request_tokens, 11500);
  // The READ reserve and the stock first request fit with room to spare.
  EXPECT_GE(d.context_tokens - d.read_reserve_tokens(), 2 * d.first_request_tokens);
  EXPECT_EQ(d.max_calls_per_hour, 60);
  EXPECT_FALSE(d.max_cost_usd.has_value());
  EXPECT_EQ(d.on_cap, OnCap::kPause);
  EXPECT_TRUE(d.stream);
  EXPECT_EQ(d.cache_ttl, "1h");

  LlmConfig c = parse_llm_config(parse(R"(
provider = "anthropic"
model = "m"
context_tokens = 30000
history_tokens = 2000
max_read_rounds = 0
read_bytes = 5000
first_request_tokens = 9000
stream = false
idle_timeout_s = 15
cache_ttl = "5m"
max_cost_usd = 20
max_calls_per_hour = 10
on_cap = "offline"
[prices.m]
input = 3.0
output = 15.0
cached_input = 0.3
cache_write = 3.75
)"));
  EXPECT_EQ(c.context_tokens, 30000);
  EXPECT_EQ(c.max_read_rounds, 0);
  EXPECT_EQ(c.read_bytes, 5000);
  EXPECT_EQ(c.first_request_tokens, 9000);
  // The key's former name is still read.
  EXPECT_EQ(parse_llm_config(parse("provider = 'openai'\nmodel = 'm'\nread_max_bytes = 7000\n")).read_bytes, 7000);
  EXPECT_FALSE(c.stream);
  EXPECT_DOUBLE_EQ(c.idle_timeout_s, 15);
  EXPECT_EQ(c.cache_ttl, "5m");
  EXPECT_DOUBLE_EQ(*c.max_cost_usd, 20);
  EXPECT_EQ(c.max_calls_per_hour, 10);
  EXPECT_EQ(c.on_cap, OnCap::kOffline);
  // 1M each of input, output, cached reads and cache writes.
  EXPECT_DOUBLE_EQ(c.cost(TokenUsage{1000000, 1000000, 1000000, 1000000}), 3.0 + 15.0 + 0.3 + 3.75);
  // Unpriced cache tokens cost what input does.
  LlmConfig p = parse_llm_config(parse("provider = 'openai'\nmodel = 'm'\n[prices.m]\ninput = 2\noutput = 8\n"));
  EXPECT_DOUBLE_EQ(p.cost(TokenUsage{0, 0, 1000000, 0}), 2.0);
}

TEST(LlmConfig, CostCapNeedsAPriceAndCapErrorsNameTheKey) {
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\nmax_cost_usd = 5"),
            "llm.max_cost_usd: needs a price for model 'm': add [llm.prices.m] with input and output (and cached_input, "
            "cache_write)");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\non_cap = 'stop'"),
            "llm.on_cap: must be \"pause\" or \"offline\", got \"stop\"");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\ncache_ttl = '1d'"), "llm.cache_ttl: must be \"5m\" or \"1h\", got \"1d\"");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\nmax_calls_per_hour = 0"),
            "llm.max_calls_per_hour: must be in [1, 1000000], got 0");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\ncontext_tokens = 5000\nhistory_tokens = 6000"),
            "llm.history_tokens: must be < context_tokens (5000)");
  EXPECT_EQ(error_of("provider = 'openai'\nmodel='m'\nstream = 1"), "llm.stream: expected true or false");
}

}  // namespace
}  // namespace llm
