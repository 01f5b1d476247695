// Tests for chat_protocol.h: the requests each protocol sends and how every
// kind of response is classified (no network: responses are built here; the
// fake server in tests/llm/ covers the same over real HTTP).
#include "llm_client/chat_protocol.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace llm {
namespace {

using nlohmann::json;

LlmConfig config(Protocol p) {
  LlmConfig c;
  c.protocol = p;
  c.model = "m1";
  c.base_url = "http://h";
  c.api_key_env = "K";
  c.max_output_tokens = 77;
  return c;
}

Conversation conv() { return {"be brief", {{"user", "hi"}, {"assistant", "a"}, {"user", "again"}}}; }

HttpResponse ok_body(const std::string& body, long status = 200) {
  HttpResponse r;
  r.transport = HttpResponse::Transport::kOk;
  r.status = status;
  r.body = body;
  return r;
}

bool has_header(const HttpRequest& r, const std::string& h) {
  return std::find(r.headers.begin(), r.headers.end(), h) != r.headers.end();
}

TEST(ChatProtocol, OpenAIRequest) {
  LlmConfig c = config(Protocol::kOpenAI);
  c.temperature = 0.3;
  HttpRequest r = build_request(c, "sk-1", conv());
  EXPECT_EQ(r.url, "http://h/chat/completions");
  EXPECT_TRUE(has_header(r, "Authorization: Bearer sk-1"));
  json b = json::parse(r.body);
  EXPECT_EQ(b["model"], "m1");
  EXPECT_EQ(b["max_tokens"], 77);
  EXPECT_DOUBLE_EQ(b["temperature"].get<double>(), 0.3);
  ASSERT_EQ(b["messages"].size(), 4u);
  EXPECT_EQ(b["messages"][0]["role"], "system");
  EXPECT_EQ(b["messages"][0]["content"], "be brief");
  EXPECT_EQ(b["messages"][3]["content"], "again");

  c.max_tokens_field = "max_completion_tokens";
  c.temperature.reset();
  json b2 = json::parse(build_request(c, "", conv()).body);
  EXPECT_EQ(b2["max_completion_tokens"], 77);
  EXPECT_FALSE(b2.contains("max_tokens"));
  EXPECT_FALSE(b2.contains("temperature"));
  for (const auto& h : build_request(c, "", conv()).headers) EXPECT_EQ(h.find("Authorization"), std::string::npos);
}

TEST(ChatProtocol, AnthropicRequest) {
  HttpRequest r = build_request(config(Protocol::kAnthropic), "ak-1", conv());
  EXPECT_EQ(r.url, "http://h/v1/messages");
  EXPECT_TRUE(has_header(r, "x-api-key: ak-1"));
  EXPECT_TRUE(has_header(r, "anthropic-version: 2023-06-01"));
  json b = json::parse(r.body);
  EXPECT_EQ(b["system"], "be brief");
  EXPECT_EQ(b["max_tokens"], 77);
  ASSERT_EQ(b["messages"].size(), 3u);
  EXPECT_EQ(b["messages"][0]["role"], "user");
}

TEST(ChatProtocol, OpenAIAnswerAndUsage) {
  auto o = parse_response(config(Protocol::kOpenAI),
                          ok_body(R"({"id":"c1","object":"chat.completion","choices":[{"index":0,
      "message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],
      "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}})"));
  EXPECT_EQ(o.error, CallError::kNone);
  EXPECT_EQ(o.status, "ok");
  EXPECT_EQ(o.text, "hello");
  EXPECT_EQ(o.usage.input, 12);
  EXPECT_EQ(o.usage.output, 3);
}

TEST(ChatProtocol, AnthropicAnswerAndUsage) {
  auto o = parse_response(config(Protocol::kAnthropic),
                          ok_body(R"({"id":"msg_1","type":"message","role":"assistant","content":[
      {"type":"thinking","thinking":"hmm"},{"type":"text","text":"he"},{"type":"text","text":"llo"}],
      "stop_reason":"end_turn","usage":{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":4}})"));
  EXPECT_EQ(o.error, CallError::kNone);
  EXPECT_EQ(o.text, "hello");
  EXPECT_EQ(o.usage.input, 20);
  EXPECT_EQ(o.usage.cache_read, 5);
  EXPECT_EQ(o.usage.output, 4);
}

TEST(ChatProtocol, TruncatedEmptyAndBadJson) {
  LlmConfig oa = config(Protocol::kOpenAI), an = config(Protocol::kAnthropic);
  auto t1 = parse_response(oa, ok_body(R"({"choices":[{"message":{"content":"par"},"finish_reason":"length"}]})"));
  EXPECT_EQ(t1.error, CallError::kTruncated);
  EXPECT_EQ(t1.status, "truncated");
  EXPECT_EQ(t1.text, "par");
  auto t2 = parse_response(an, ok_body(R"({"content":[{"type":"text","text":"x"}],"stop_reason":"max_tokens"})"));
  EXPECT_EQ(t2.error, CallError::kTruncated);

  auto e1 = parse_response(oa, ok_body(R"({"choices":[{"message":{"content":null},"finish_reason":"stop"}]})"));
  EXPECT_EQ(e1.error, CallError::kEmpty);
  EXPECT_EQ(e1.status, "empty");
  auto e2 = parse_response(an, ok_body(R"({"content":[],"stop_reason":"end_turn"})"));
  EXPECT_EQ(e2.error, CallError::kEmpty);

  auto b1 = parse_response(oa, ok_body("<html>bad gateway</html>"));
  EXPECT_EQ(b1.error, CallError::kBadJson);
  EXPECT_EQ(b1.status, "bad_json");
  EXPECT_NE(b1.message.find("not JSON"), std::string::npos);
  auto b2 = parse_response(oa, ok_body(R"({"choices":[]})"));
  EXPECT_EQ(b2.error, CallError::kBadJson);
  auto b3 = parse_response(an, ok_body(R"({"text":"x"})"));
  EXPECT_EQ(b3.error, CallError::kBadJson);
}

TEST(ChatProtocol, HttpErrorsByStatus) {
  LlmConfig c = config(Protocol::kAnthropic);
  auto r429 = ok_body(R"({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}})", 429);
  r429.headers["retry-after"] = "7";
  auto o = parse_response(c, r429);
  EXPECT_EQ(o.error, CallError::kRateLimited);
  EXPECT_EQ(o.status, "http_429");
  EXPECT_EQ(*o.retry_after_s, 7);
  EXPECT_NE(o.message.find("slow down"), std::string::npos);

  EXPECT_EQ(parse_response(c, ok_body("{}", 500)).error, CallError::kServer);
  EXPECT_EQ(parse_response(c, ok_body("{}", 529)).error, CallError::kServer);
  auto auth = parse_response(c, ok_body(R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})", 401));
  EXPECT_EQ(auth.error, CallError::kAuth);
  EXPECT_EQ(auth.message, "HTTP 401 from anthropic: the API key was refused (check $K): invalid x-api-key");
  auto model = parse_response(c, ok_body(R"({"error":{"message":"model: m1","type":"not_found_error"}})", 404));
  EXPECT_EQ(model.error, CallError::kBadModel);
  EXPECT_NE(model.message.find("model 'm1'"), std::string::npos);
  EXPECT_EQ(parse_response(c, ok_body(R"({"error":{"message":"bad"}})", 400)).error, CallError::kBadRequest);
  EXPECT_EQ(parse_response(c, ok_body(R"({"error":{"code":"model_not_found","message":"x"}})", 400)).error,
            CallError::kBadModel);
  EXPECT_TRUE(is_retryable(CallError::kServer));
  EXPECT_FALSE(is_retryable(CallError::kAuth));
  EXPECT_TRUE(is_fatal(CallError::kBadModel));
}

TEST(ChatProtocol, TransportFailures) {
  HttpResponse r;
  r.transport = HttpResponse::Transport::kTimeout;
  r.transport_error = "Operation timed out after 1000 milliseconds";
  auto o = parse_response(config(Protocol::kOpenAI), r);
  EXPECT_EQ(o.error, CallError::kTimeout);
  EXPECT_EQ(o.status, "timeout");
  r.transport = HttpResponse::Transport::kConnect;
  EXPECT_EQ(parse_response(config(Protocol::kOpenAI), r).status, "connect_error");
}

TEST(ChatProtocol, RetryAfterForms) {
  EXPECT_EQ(*parse_retry_after("3"), 3);
  EXPECT_EQ(*parse_retry_after("0.5"), 0.5);
  EXPECT_EQ(*parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0);  // in the past
  EXPECT_FALSE(parse_retry_after("soon").has_value());
  EXPECT_FALSE(parse_retry_after("").has_value());
}

TEST(ChatProtocol, StreamingRequestAndCacheBreakpoint) {
  LlmConfig an = config(Protocol::kAnthropic), oa = config(Protocol::kOpenAI);
  Conversation c{"sys", {{"user", "stable part|dynamic part", 12}}};
  json b = json::parse(build_request(an, "", c).body);
  EXPECT_EQ(b["stream"], true);
  const json& blocks = b["messages"][0]["content"];
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0]["text"], "stable part|");
  EXPECT_EQ(blocks[0]["cache_control"], (json{{"type", "ephemeral"}, {"ttl", "1h"}}));
  EXPECT_EQ(blocks[1]["text"], "dynamic part");
  EXPECT_FALSE(blocks[1].contains("cache_control"));
  // OpenAI caches a stable prefix by itself: one string, usage in the stream.
  json o = json::parse(build_request(oa, "", c).body);
  EXPECT_EQ(o["messages"][1]["content"], "stable part|dynamic part");
  EXPECT_EQ(o["stream_options"]["include_usage"], true);
  oa.stream = false;
  EXPECT_FALSE(json::parse(build_request(oa, "", c).body).contains("stream"));
}

TEST(ChatProtocol, OpenAIStreamWithCachedUsage) {
  auto o = parse_response(config(Protocol::kOpenAI), ok_body(
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hel\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":null}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":7,"
      "\"prompt_tokens_details\":{\"cached_tokens\":64}}}\n\n"
      "data: [DONE]\n\n"));
  EXPECT_EQ(o.error, CallError::kNone) << o.message;
  EXPECT_EQ(o.text, "hello");
  EXPECT_EQ(o.usage.input, 36);
  EXPECT_EQ(o.usage.cache_read, 64);
  EXPECT_EQ(o.usage.output, 7);
}

TEST(ChatProtocol, AnthropicStreamWithCacheUsageAndTruncation) {
  std::string head =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,"
      "\"cache_creation_input_tokens\":300,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"hi \"}}\n\n"
      "event: ping\ndata: {\"type\": \"ping\"}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"there\"}}\n\n";
  auto end = [](const char* reason) {
    return std::string("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"") +
           reason + "\"},\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  };
  LlmConfig an = config(Protocol::kAnthropic);
  auto o = parse_response(an, ok_body(head + end("end_turn")));
  EXPECT_EQ(o.error, CallError::kNone) << o.message;
  EXPECT_EQ(o.text, "hi there");
  EXPECT_EQ(o.usage.input, 10);
  EXPECT_EQ(o.usage.cache_write, 300);
  EXPECT_EQ(o.usage.output, 9);
  EXPECT_EQ(parse_response(an, ok_body(head + end("max_tokens"))).error, CallError::kTruncated);

  // No message_stop: a broken stream, retryable, its text kept.
  auto broken = parse_response(an, ok_body(head));
  EXPECT_EQ(broken.error, CallError::kBrokenStream);
  EXPECT_EQ(broken.status, "broken_stream");
  EXPECT_TRUE(is_retryable(broken.error));
  EXPECT_EQ(broken.text, "hi there");
  // An error event mid-stream (overloaded) is a server error.
  auto overloaded = parse_response(an, ok_body(head + "event: error\ndata: {\"type\":\"error\",\"error\":"
                                                      "{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"));
  EXPECT_EQ(overloaded.error, CallError::kServer);
  EXPECT_NE(overloaded.message.find("Overloaded"), std::string::npos);
}

TEST(ChatProtocol, ContextLengthErrorsAreTheirOwnKind) {
  LlmConfig oa = config(Protocol::kOpenAI), an = config(Protocol::kAnthropic);
  EXPECT_EQ(parse_response(oa, ok_body("<html>413 Request Entity Too Large</html>", 413)).error,
            CallError::kContextLength);
  EXPECT_EQ(parse_response(oa, ok_body(R"({"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens","code":"context_length_exceeded"}})", 400)).error,
            CallError::kContextLength);
  EXPECT_EQ(parse_response(an, ok_body(R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}})", 400)).error,
            CallError::kContextLength);
  EXPECT_FALSE(is_fatal(CallError::kContextLength));
  EXPECT_FALSE(is_retryable(CallError::kContextLength));
}

}  // namespace
}  // namespace llm
