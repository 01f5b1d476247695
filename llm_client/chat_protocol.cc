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

CallOutcome http_failure(const LlmConfig& config, const HttpResponse& r) {
  CallOutcome o;
  long s = r.status;
  o.status = "http_" + std::to_string(s);
  std::string provider_says = error_message(r.body);
  if (s == 429) o.error = CallError::kRateLimited;
  else if (s >= 500 || s == 408 || s == 409) o.error = CallError::kServer;
  else if (s == 401 || s == 403) o.error = CallError::kAuth;
  else if (s == 404 || r.body.find("model_not_found") != std::string::npos) o.error = CallError::kBadModel;
  else o.error = CallError::kBadRequest;

  std::string what;
  switch (o.error) {
    case CallError::kAuth: what = "the API key was refused (check $" + config.api_key_env + ")"; break;
    case CallError::kBadModel: what = "model '" + config.model + "' or base_url " + config.base_url + " not found"; break;
    case CallError::kRateLimited: what = "rate limited"; break;
    case CallError::kServer: what = "server error"; break;
    default: what = "request rejected"; break;
  }
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
    if (j.contains("usage")) {
      o.input_tokens = int_at(j["usage"], "prompt_tokens");
      o.output_tokens = int_at(j["usage"], "completion_tokens");
    }
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
  if (j.contains("usage")) {
    const json& u = j["usage"];
    o.input_tokens = int_at(u, "input_tokens") + int_at(u, "cache_creation_input_tokens") +
                     int_at(u, "cache_read_input_tokens");
    o.output_tokens = int_at(u, "output_tokens");
  }
  return true;
}

}  // namespace

bool is_retryable(CallError e) {
  return e == CallError::kConnect || e == CallError::kTimeout || e == CallError::kNetwork ||
         e == CallError::kRateLimited || e == CallError::kServer;
}

bool is_fatal(CallError e) { return e == CallError::kAuth || e == CallError::kBadModel || e == CallError::kBadRequest; }

HttpRequest build_request(const LlmConfig& config, const std::string& api_key, const Conversation& conversation) {
  HttpRequest r;
  r.connect_timeout_s = config.connect_timeout_s;
  r.total_timeout_s = config.timeout_s;
  r.headers = {"Content-Type: application/json", "Accept: application/json"};
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
  for (const auto& m : conversation.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  body["messages"] = std::move(messages);
  if (config.temperature) body["temperature"] = *config.temperature;
  // Replace, not throw, on invalid UTF-8 in a file: the call must still go out.
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

CallOutcome parse_response(const LlmConfig& config, const HttpResponse& response) {
  if (response.transport != HttpResponse::Transport::kOk) return transport_failure(response);
  if (response.status < 200 || response.status >= 300) return http_failure(config, response);

  CallOutcome o;
  json j = json::parse(response.body, nullptr, false);
  std::string finish;
  if (j.is_discarded() || !read_answer(config, j, o, finish)) {
    o.error = CallError::kBadJson;
    o.status = "bad_json";
    if (j.is_discarded()) o.message = "the body is not JSON";
    o.message = "bad answer from " + std::string(protocol_name(config.protocol)) + ": " + o.message + ": " +
                one_line(response.body, 120);
    return o;
  }
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
