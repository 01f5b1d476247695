// See chat_protocol.h.
#include "llm_client/chat_protocol.h"

#include <time.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace llm {
namespace {

using nlohmann::json;

/// One line of at most `max` characters, for error messages.
std::string one_line(const std::string& s, size_t max = 300) {
  std::string out;
  for (char c : s) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  }
  return out;
}

long int_at(const json& obj, const char* key) {
  if (!obj.is_object()) return 0;
  auto it = obj.find(key);
  return (it != obj.end() && it->is_number_integer()) ? it->get<long>() : 0;
}

/// The provider's own error message from an error body, when it has one.
std::string error_message(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
    if (e.is_string()) return e.get<std::string>();
  }
  return body.empty() ? "(empty body)" : body;
}

/// A 400 that says the prompt does not fit the model's context (OpenAI
/// "context_length_exceeded", Anthropic "prompt is too long", vLLM and
/// llama.cpp "maximum context length", "exceeds the context size").
bool says_too_long(const std::string& message) {
  std::string m;
  for (char c : message) m += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* phrase : {"context length", "context_length", "context window", "context size",
                             "prompt is too long", "too many tokens", "maximum context"})
    if (m.find(phrase) != std::string::npos) return true;
  return false;
}

bool is_trivially_empty(const std::string& s) {
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  return true;
}

CallOutcome transport_failure(const HttpResponse& r) {
  CallOutcome o;
  switch (r.transport) {
    case HttpResponse::Transport::kConnect: o.error = CallError::kConnect; o.status = "connect_error"; break;
    case HttpResponse::Transport::kTimeout: o.error = CallError::kTimeout; o.status = "timeout"; break;
    case HttpResponse::Transport::kCancelled: o.error = CallError::kCancelled; o.status = "cancelled"; break;
    default: o.error = CallError::kNetwork; o.status = "network_error"; break;
  }
  o.message = o.status + ": " + one_line(r.transport_error);
  return o;
}

/// What an error kind means to the user, naming the key's variable or the model.
std::string what_failed(const LlmConfig& config, CallError e) {
  switch (e) {
    case CallError::kAuth: return "the API key was refused (check $" + config.api_key_env + ")";
    case CallError::kBadModel: return "model '" + config.model + "' or base_url " + config.base_url + " not found";
    case CallError::kRateLimited: return "rate limited";
    case CallError::kServer: return "server error";
    case CallError::kContextLength: return "the request is too long";
    default: return "request rejected";
  }
}

/// The kind of an error event's "error" object, read the way its HTTP status
/// would be: Anthropic's error.type (authentication_error, permission_error,
/// rate_limit_error, overloaded_error, ...), OpenAI's error.code or type
/// (invalid_api_key, rate_limit_exceeded, ...), or a numeric code or status.
CallError stream_error_kind(const json& e) {
  std::string words;
  long status = 0;
  if (e.is_object()) {
    for (const char* key : {"type", "code", "status"}) {
      auto it = e.find(key);
      if (it == e.end()) continue;
      if (it->is_string()) words += " " + it->get<std::string>();
      if (it->is_number_integer()) status = it->get<long>();
    }
    if (e.contains("message") && e["message"].is_string() && says_too_long(e["message"].get<std::string>()))
      return CallError::kContextLength;
  } else if (e.is_string()) {
    words = e.get<std::string>();
  }
  for (char& c : words) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto has = [&](const char* w) { return words.find(w) != std::string::npos; };
  if (status == 401 || status == 403 || has("authentication") || has("permission") || has("invalid_api_key") ||
      has("unauthorized") || has("forbidden"))
    return CallError::kAuth;
  if (status == 429 || has("rate_limit")) return CallError::kRateLimited;
  if (status == 413 || has("context_length") || has("request_too_large")) return CallError::kContextLength;
  return CallError::kServer;
}

CallOutcome http_failure(const LlmConfig& config, const HttpResponse& r) {
  CallOutcome o;
  long s = r.status;
  o.status = "http_" + std::to_string(s);
  std::string provider_says = error_message(r.body);
  if (s == 413 || (s == 400 && says_too_long(provider_says))) o.error = CallError::kContextLength;
  else if (s == 429) o.error = CallError::kRateLimited;
  else if (s >= 500 || s == 408 || s == 409) o.error = CallError::kServer;
  else if (s == 401 || s == 403) o.error = CallError::kAuth;
  else if (s == 404 || r.body.find("model_not_found") != std::string::npos) o.error = CallError::kBadModel;
  else o.error = CallError::kBadRequest;

  std::string what = what_failed(config, o.error);
  o.message = "HTTP " + std::to_string(s) + " from " + protocol_name(config.protocol) + ": " + what + ": " +
              one_line(provider_says, 240);
  if (auto it = r.headers.find("retry-after"); it != r.headers.end()) o.retry_after_s = parse_retry_after(it->second);
  if (auto it = r.headers.find("retry-after-ms"); !o.retry_after_s && it != r.headers.end()) {
    char* end = nullptr;
    double ms = std::strtod(it->second.c_str(), &end);
    if (end != it->second.c_str() && std::isfinite(ms) && ms >= 0) o.retry_after_s = ms / 1000;
  }
  return o;
}

/// OpenAI's prompt_tokens include the cached ones (prompt_tokens_details).
void read_openai_usage(const json& u, TokenUsage& usage) {
  if (!u.is_object()) return;
  usage.cache_read = u.contains("prompt_tokens_details") ? int_at(u["prompt_tokens_details"], "cached_tokens") : 0;
  usage.input = int_at(u, "prompt_tokens") - usage.cache_read;
  usage.output = int_at(u, "completion_tokens");
}

/// Anthropic's input_tokens exclude the cache's; a stream reports them in
/// message_start and the output in message_delta, so only present keys count.
void read_anthropic_usage(const json& u, TokenUsage& usage) {
  if (!u.is_object()) return;
  if (u.contains("input_tokens")) usage.input = int_at(u, "input_tokens");
  if (u.contains("cache_read_input_tokens")) usage.cache_read = int_at(u, "cache_read_input_tokens");
  if (u.contains("cache_creation_input_tokens")) usage.cache_write = int_at(u, "cache_creation_input_tokens");
  if (u.contains("output_tokens")) usage.output = int_at(u, "output_tokens");
}

/// A server-sent event stream's data payloads, in order ("[DONE]" included).
std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  std::string data;
  bool has = false;
  size_t at = 0;
  while (at < body.size()) {
    size_t end = body.find('\n', at);
    bool complete = end != std::string::npos;
    std::string line = body.substr(at, complete ? end - at : std::string::npos);
    at = complete ? end + 1 : body.size();
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      if (has) out.push_back(data);
      data.clear();
      has = false;
    } else if (line.rfind("data:", 0) == 0) {
      if (!complete) break;  // cut in the middle of a line: not an event
      std::string v = line.substr(5);
      if (!v.empty() && v[0] == ' ') v.erase(0, 1);
      data += (has ? "\n" : "") + v;
      has = true;
    }
  }
  if (has) out.push_back(data);  // a last event without its blank line
  return out;
}

bool is_event_stream(const HttpResponse& r) {
  auto it = r.headers.find("content-type");
  if (it != r.headers.end() && it->second.find("text/event-stream") != std::string::npos) return true;
  return r.body.rfind("data:", 0) == 0 || r.body.rfind("event:", 0) == 0;
}

/// Reads an event stream into text, finish reason and usage. Returns whether
/// the stream finished (OpenAI: [DONE] or a finish reason; Anthropic:
/// message_stop); error set for an error event (overloaded mid-stream).
bool read_stream(const LlmConfig& config, const std::string& body, CallOutcome& o, std::string& finish) {
  bool done = false;
  for (const std::string& d : sse_data(body)) {
    if (d == "[DONE]") {
      done = true;
      continue;
    }
    json j = json::parse(d, nullptr, false);
    if (!j.is_object()) continue;
    if (j.contains("error")) {
      o.error = stream_error_kind(j["error"]);
      o.status = "stream_error";
      o.message = "error event in the stream from " + std::string(protocol_name(config.protocol)) + ": " +
                  what_failed(config, o.error) + ": " + one_line(error_message(d), 240);
      return true;
    }
    if (config.protocol == Protocol::kOpenAI) {
      if (j.contains("usage") && j["usage"].is_object()) read_openai_usage(j["usage"], o.usage);
      auto ch = j.find("choices");
      if (ch == j.end() || !ch->is_array() || ch->empty() || !(*ch)[0].is_object()) continue;
      const json& c0 = (*ch)[0];
      if (c0.contains("delta") && c0["delta"].is_object() && c0["delta"].contains("content") &&
          c0["delta"]["content"].is_string())
        o.text += c0["delta"]["content"].get<std::string>();
      if (c0.contains("finish_reason") && c0["finish_reason"].is_string()) {
        finish = c0["finish_reason"].get<std::string>();
        done = true;
      }
      continue;
    }
    std::string type = j.value("type", "");
    if (type == "message_start" && j.contains("message") && j["message"].is_object() && j["message"].contains("usage"))
      read_anthropic_usage(j["message"]["usage"], o.usage);
    else if (type == "content_block_delta" && j.contains("delta") && j["delta"].is_object() &&
             j["delta"].value("type", "") == "text_delta" && j["delta"].contains("text") && j["delta"]["text"].is_string())
      o.text += j["delta"]["text"].get<std::string>();
    else if (type == "message_delta") {
      if (j.contains("delta") && j["delta"].is_object() && j["delta"].contains("stop_reason") &&
          j["delta"]["stop_reason"].is_string())
        finish = j["delta"]["stop_reason"].get<std::string>();
      if (j.contains("usage")) read_anthropic_usage(j["usage"], o.usage);
    } else if (type == "message_stop")
      done = true;
  }
  return done;
}

/// Reads text, finish reason and usage from a 2xx body; false when the body
/// is not the protocol's shape (message set to why).
bool read_answer(const LlmConfig& config, const json& j, CallOutcome& o, std::string& finish) {
  if (!j.is_object()) {
    o.message = "the body is not a JSON object";
    return false;
  }
  if (config.protocol == Protocol::kOpenAI) {
    auto ch = j.find("choices");
    if (ch == j.end() || !ch->is_array() || ch->empty() || !(*ch)[0].is_object() || !(*ch)[0].contains("message")) {
      o.message = "the body has no choices[0].message";
      return false;
    }
    const json& c0 = (*ch)[0];
    const json& msg = c0["message"];
    if (msg.is_object() && msg.contains("content") && msg["content"].is_string()) o.text = msg["content"].get<std::string>();
    if (c0.contains("finish_reason") && c0["finish_reason"].is_string()) finish = c0["finish_reason"].get<std::string>();
    if (j.contains("usage")) read_openai_usage(j["usage"], o.usage);
    return true;
  }
  auto content = j.find("content");
  if (content == j.end() || !content->is_array()) {
    o.message = "the body has no content array";
    return false;
  }
  for (const json& block : *content) {
    if (block.is_object() && block.value("type", "") == "text" && block.contains("text") && block["text"].is_string())
      o.text += block["text"].get<std::string>();
  }
  if (j.contains("stop_reason") && j["stop_reason"].is_string()) finish = j["stop_reason"].get<std::string>();
  if (j.contains("usage")) read_anthropic_usage(j["usage"], o.usage);
  return true;
}

}  // namespace

bool is_retryable(CallError e) {
  return e == CallError::kConnect || e == CallError::kTimeout || e == CallError::kNetwork ||
         e == CallError::kRateLimited || e == CallError::kServer || e == CallError::kBrokenStream;
}

bool is_unavailable(CallError e) { return is_retryable(e) || e == CallError::kNoAnswer; }

bool is_fatal(CallError e) { return e == CallError::kAuth || e == CallError::kBadModel || e == CallError::kBadRequest; }

HttpRequest build_request(const LlmConfig& config, const std::string& api_key, const Conversation& conversation) {
  HttpRequest r;
  r.connect_timeout_s = config.connect_timeout_s;
  r.total_timeout_s = config.timeout_s;
  r.idle_timeout_s = config.idle_timeout_s;
  r.headers = {"Content-Type: application/json",
               config.stream ? "Accept: text/event-stream" : "Accept: application/json"};
  json body;
  body["model"] = config.model;
  json messages = json::array();
  if (config.protocol == Protocol::kOpenAI) {
    r.url = config.base_url + "/chat/completions";
    if (!api_key.empty()) r.headers.push_back("Authorization: Bearer " + api_key);
    if (!conversation.system.empty()) messages.push_back({{"role", "system"}, {"content", conversation.system}});
    body[config.max_tokens_field] = config.max_output_tokens;
  } else {
    r.url = config.base_url + "/v1/messages";
    if (!api_key.empty()) r.headers.push_back("x-api-key: " + api_key);
    r.headers.push_back("anthropic-version: " + config.anthropic_version);
    if (!conversation.system.empty()) body["system"] = conversation.system;
    body["max_tokens"] = config.max_output_tokens;
  }
  for (const auto& m : conversation.messages) {
    if (config.protocol != Protocol::kAnthropic || m.cache_prefix == 0 || m.cache_prefix >= m.content.size()) {
      messages.push_back({{"role", m.role}, {"content", m.content}});
      continue;
    }
    // The stable part, then a breakpoint: Anthropic caches everything up to it
    // (system included) and reads it back while it stays byte for byte the same.
    json cache_control = {{"type", "ephemeral"}};
    if (config.cache_ttl != "5m") cache_control["ttl"] = config.cache_ttl;
    json blocks = json::array();
    blocks.push_back({{"type", "text"}, {"text", m.content.substr(0, m.cache_prefix)}, {"cache_control", cache_control}});
    blocks.push_back({{"type", "text"}, {"text", m.content.substr(m.cache_prefix)}});
    messages.push_back({{"role", m.role}, {"content", std::move(blocks)}});
  }
  body["messages"] = std::move(messages);
  if (config.temperature) body["temperature"] = *config.temperature;
  if (config.stream) {
    body["stream"] = true;
    if (config.protocol == Protocol::kOpenAI) body["stream_options"] = {{"include_usage", true}};
  }
  // Replace, not throw, on invalid UTF-8 in a file: the call must still go out.
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

namespace {
CallOutcome finish_outcome(const LlmConfig& config, CallOutcome o, const std::string& finish);
}

CallOutcome parse_response(const LlmConfig& config, const HttpResponse& response) {
  if (response.transport != HttpResponse::Transport::kOk) {
    CallOutcome o = transport_failure(response);
    // A stream that broke or stalled: keep the text it had sent, for the record.
    if (response.status >= 200 && response.status < 300 && is_event_stream(response)) {
      CallOutcome partial;
      std::string finish;
      read_stream(config, response.body, partial, finish);
      o.text = std::move(partial.text);
      o.usage = partial.usage;
    }
    return o;
  }
  if (response.status < 200 || response.status >= 300) return http_failure(config, response);

  CallOutcome o;
  std::string finish;
  if (is_event_stream(response)) {
    bool done = read_stream(config, response.body, o, finish);
    if (o.error != CallError::kNone) return o;
    if (!done) {
      o.error = CallError::kBrokenStream;
      o.status = "broken_stream";
      o.message = "the stream from " + std::string(protocol_name(config.protocol)) + " ended before its last event (" +
                  std::to_string(o.text.size()) + " characters of text received)";
      return o;
    }
    return finish_outcome(config, std::move(o), finish);
  }
  json j = json::parse(response.body, nullptr, false);
  if (j.is_discarded() || !read_answer(config, j, o, finish)) {
    o.error = CallError::kBadJson;
    o.status = "bad_json";
    if (j.is_discarded()) o.message = "the body is not JSON";
    o.message = "bad answer from " + std::string(protocol_name(config.protocol)) + ": " + o.message + ": " +
                one_line(response.body, 120);
    return o;
  }
  return finish_outcome(config, std::move(o), finish);
}

namespace {
CallOutcome finish_outcome(const LlmConfig& config, CallOutcome o, const std::string& finish) {
  if (finish == "length" || finish == "max_tokens") {
    o.error = CallError::kTruncated;
    o.status = "truncated";
    o.message = "the answer was cut off at max_output_tokens (" + std::to_string(config.max_output_tokens) +
                ", finish reason " + finish + ")";
    return o;
  }
  if (is_trivially_empty(o.text)) {
    o.error = CallError::kEmpty;
    o.status = "empty";
    o.message = "the answer has no text (finish reason " + (finish.empty() ? std::string("none") : finish) + ")";
    return o;
  }
  o.status = "ok";
  return o;
}

}  // namespace

std::string render(const Conversation& conversation) {
  std::string out = "[system]\n" + conversation.system;
  for (const auto& m : conversation.messages) out += "\n[" + m.role + "]\n" + m.content;
  return out;
}

std::optional<double> parse_retry_after(const std::string& value) {
  if (value.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (end != value.c_str() && *end == '\0' && std::isfinite(v) && v >= 0) return v;
  // An HTTP date: "Wed, 21 Oct 2015 07:28:00 GMT".
  struct tm tm = {};
  const char* rest = strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!rest) return std::nullopt;
  double delta = std::difftime(timegm(&tm), time(nullptr));
  return delta > 0 ? delta : 0;
}

}  // namespace llm
