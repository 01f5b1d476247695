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

}  // namespace
}  // namespace llm
