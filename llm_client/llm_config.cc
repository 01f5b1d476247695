// See llm_config.h. Keys are read through ard::TableReader, which reports
// whatever is left over as unknown.
#include "llm_client/llm_config.h"

#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include "proposers/config_error.h"
#include "proposers/table_reader.h"

namespace llm {
namespace {

using ard::ConfigError;
using ard::TableReader;

std::string show(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}



constexpr double kDay = 86400;

}  // namespace

const char* protocol_name(Protocol p) { return p == Protocol::kAnthropic ? "anthropic" : "openai"; }

double LlmConfig::cost(const TokenUsage& u) const {
  auto it = prices.find(model);
  if (it == prices.end()) return 0;
  const Price& p = it->second;
  return (u.input * p.input_per_mtok + u.output * p.output_per_mtok + u.cache_read * p.cached_input_per_mtok +
          u.cache_write * p.cache_write_per_mtok) /
         1e6;
}

LlmConfig parse_llm_config(const toml::table& table) {
  TableReader r(table, "llm");
  LlmConfig c;

  std::string provider = r.str("provider").value_or("");
  if (provider == "openai") c.protocol = Protocol::kOpenAI;
  else if (provider == "anthropic") c.protocol = Protocol::kAnthropic;
  else if (provider.empty()) r.fail("provider", "missing: set \"openai\" (any OpenAI-compatible server) or \"anthropic\"");
  else r.fail("provider", "must be \"openai\" or \"anthropic\", got \"" + provider + "\"");

  c.model = r.str("model").value_or("");
  if (c.model.empty()) r.fail("model", "missing: name the model to ask");

  bool anthropic = c.protocol == Protocol::kAnthropic;
  c.base_url = r.str("base_url").value_or(anthropic ? "https://api.anthropic.com" : "https://api.openai.com/v1");
  while (!c.base_url.empty() && c.base_url.back() == '/') c.base_url.pop_back();
  if (c.base_url.rfind("http://", 0) != 0 && c.base_url.rfind("https://", 0) != 0)
    r.fail("base_url", "must start with http:// or https://, got \"" + c.base_url + "\"");

  // An explicitly empty api_key_env means "send no key" (a local server).
  c.api_key_env = r.str("api_key_env").value_or(anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY");
  for (char ch : c.api_key_env)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'))
      r.fail("api_key_env", "must be an environment variable name, got \"" + c.api_key_env + "\"");

  if (auto v = r.str("anthropic_version")) {
    if (v->empty()) r.fail("anthropic_version", "must not be empty");
    c.anthropic_version = *v;
  }
  if (auto v = r.str("max_tokens_field")) {
    if (*v != "max_tokens" && *v != "max_completion_tokens")
      r.fail("max_tokens_field", "must be \"max_tokens\" or \"max_completion_tokens\", got \"" + *v + "\"");
    c.max_tokens_field = *v;
  }
  c.max_output_tokens = r.integer("max_output_tokens", 1, 10000000).value_or(c.max_output_tokens);
  c.temperature = r.num("temperature", 0, 2);
  c.connect_timeout_s = r.num("connect_timeout_s", 0.001, kDay).value_or(c.connect_timeout_s);
  c.timeout_s = r.num("timeout_s", 0.001, kDay).value_or(c.timeout_s);
  c.retries = static_cast<int>(r.integer("retries", 0, 100).value_or(c.retries));
  c.backoff_s = r.num("backoff_s", 0, kDay).value_or(c.backoff_s);
  c.max_backoff_s = r.num("max_backoff_s", 0, kDay).value_or(c.max_backoff_s);
  if (c.max_backoff_s < c.backoff_s) r.fail("max_backoff_s", "must be >= backoff_s (" + show(c.backoff_s) + ")");
  c.max_edit_attempts = static_cast<int>(r.integer("max_edit_attempts", 1, 100).value_or(c.max_edit_attempts));
  c.history_tokens = r.integer("history_tokens", 0, 10000000).value_or(c.history_tokens);
  c.context_tokens = r.integer("context_tokens", 1000, 100000000).value_or(c.context_tokens);
  if (c.history_tokens >= c.context_tokens)
    r.fail("history_tokens", "must be < context_tokens (" + std::to_string(c.context_tokens) + ")");
  c.max_read_rounds = static_cast<int>(r.integer("max_read_rounds", 0, 20).value_or(c.max_read_rounds));
  // read_max_bytes: the key's former name, still read.
  if (auto old = r.integer("read_max_bytes", 1000, 100000000)) c.read_bytes = *old;
  c.read_bytes = r.integer("read_bytes", 1000, 100000000).value_or(c.read_bytes);
  c.first_request_tokens = r.integer("first_request_tokens", 1000, 100000000).value_or(c.first_request_tokens);
  if (auto v = r.boolean("stream")) c.stream = *v;
  c.idle_timeout_s = r.num("idle_timeout_s", 0.001, kDay).value_or(c.idle_timeout_s);
  if (auto v = r.str("cache_ttl")) {
    if (*v != "5m" && *v != "1h") r.fail("cache_ttl", "must be \"5m\" or \"1h\", got \"" + *v + "\"");
    c.cache_ttl = *v;
  }
  c.max_cost_usd = r.num("max_cost_usd", 0, 1e9);
  c.max_calls_per_hour = static_cast<int>(r.integer("max_calls_per_hour", 1, 1000000).value_or(c.max_calls_per_hour));
  if (auto v = r.str("on_cap")) {
    if (*v == "pause") c.on_cap = OnCap::kPause;
    else if (*v == "offline") c.on_cap = OnCap::kOffline;
    else r.fail("on_cap", "must be \"pause\" or \"offline\", got \"" + *v + "\"");
  }

  if (const toml::table* prices = r.table("prices")) {
    for (const auto& [k, v] : *prices) {
      std::string model(k.str());
      if (!v.is_table()) r.fail("prices." + model, "expected a table { input = <$/Mtok>, output = <$/Mtok> }");
      TableReader pr(*v.as_table(), "llm.prices." + model);
      Price p;
      p.input_per_mtok = pr.num("input", 0, 1e6).value_or(0);
      p.output_per_mtok = pr.num("output", 0, 1e6).value_or(0);
      // Unpriced cache tokens cost what input does: an estimate never below the bill.
      p.cached_input_per_mtok = pr.num("cached_input", 0, 1e6).value_or(p.input_per_mtok);
      p.cache_write_per_mtok = pr.num("cache_write", 0, 1e6).value_or(p.input_per_mtok);
      pr.reject_unknown();
      c.prices[model] = p;
    }
  }
  if (c.max_cost_usd && !c.prices.count(c.model))
    r.fail("max_cost_usd", "needs a price for model '" + c.model + "': add [llm.prices." + c.model +
                               "] with input and output (and cached_input, cache_write)");
  r.reject_unknown();
  return c;
}

}  // namespace llm
