// The chat client against the fake LLM server, for both protocols: answers
// and usage, retries after 429 (honouring Retry-After, also between asks, on
// a fake clock), 500 and a hang past the timeout, no retry after 401/404 or a
// malformed or truncated answer, a storm of non-answers made unavailable,
// usage estimated when a server sends none, error events in a stream
// classified like HTTP statuses, every call reported to the sink, and the key
// never in a message.
#include "llm_client/chat_client.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "fake_llm_server.h"
#include "testing/test_util.h"

namespace llm {
namespace {

using nlohmann::json;

constexpr const char* kKey = "sk-test-0123456789abcdef";

struct RecordingSink : CallSink {
  std::vector<CallRecord> calls, started;
  void record(const CallRecord& c) override { calls.push_back(c); }
  void call_started(const CallRecord& c) override {
    EXPECT_EQ(started.size(), calls.size()) << "a call started before the last one was recorded";
    started.push_back(c);
  }
};

class ChatClientTest : public ::testing::TestWithParam<Protocol> {
 protected:
  void SetUp() override { setenv("ARD_TEST_LLM_KEY", kKey, 1); }

  bool anthropic() const { return GetParam() == Protocol::kAnthropic; }

  LlmConfig config(const testing::FakeLlmServer& server) const {
    LlmConfig c;
    c.protocol = GetParam();
    c.model = "test-model";
    c.base_url = server.base_url(anthropic());
    c.api_key_env = "ARD_TEST_LLM_KEY";
    c.max_output_tokens = 100;
    c.timeout_s = 5;
    c.connect_timeout_s = 2;
    c.retries = 3;
    c.backoff_s = 0.5;
    c.max_backoff_s = 10;
    c.prices["test-model"] = {2.0, 10.0};
    return c;
  }

  ChatClient client(const testing::FakeLlmServer& server, LlmConfig c = {}, Spend spent = {}) {
    if (c.model.empty()) c = config(server);
    return ChatClient(c, &sink_, [this](double s, const std::atomic<bool>*) { waits_.push_back(s); }, 42, spent,
                      [this](const std::string& line) { log_.push_back(line); }, [this] { return now_; });
  }

  Conversation question() const { return {"system text", {{"user", "propose something"}}}; }

  ard::testing::TempDir dir_;
  RecordingSink sink_;
  std::vector<double> waits_;
  std::vector<std::string> log_;
  double now_ = 1.7e9;  ///< the client's clock: moved by hand, never waited for
};

TEST_P(ChatClientTest, AnswerUsageCostAndHeaders) {
  testing::FakeLlmServer server(json::array({{{"answer", "DESCRIPTION: x"}}}), kKey, dir_.path());
  ChatClient c = client(server);
  ChatResult r = c.ask(question(), 7, 2);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.text, "DESCRIPTION: x");
  EXPECT_EQ(r.calls, 1);
  ASSERT_EQ(sink_.calls.size(), 1u);
  const CallRecord& rec = sink_.calls[0];
  EXPECT_EQ(rec.experiment_id, 7);
  EXPECT_EQ(rec.attempt, 2);
  EXPECT_EQ(rec.provider, anthropic() ? "anthropic" : "openai");
  EXPECT_EQ(rec.model, "test-model");
  EXPECT_EQ(rec.status, "ok");
  EXPECT_EQ(rec.error, "");
  EXPECT_GT(rec.input_tokens, 0);
  EXPECT_EQ(rec.output_tokens, 3);  // 14 characters / 4
  EXPECT_DOUBLE_EQ(rec.cost_usd, (rec.input_tokens * 2.0 + 3 * 10.0) / 1e6);
  EXPECT_GT(rec.latency_s, 0);

  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  const json& q = reqs[0];
  if (anthropic()) {
    EXPECT_EQ(q["path"], "/v1/messages");
    EXPECT_EQ(q["headers"]["x-api-key"], kKey);
    EXPECT_EQ(q["headers"]["anthropic-version"], "2023-06-01");
    EXPECT_EQ(q["body"]["system"], "system text");
    EXPECT_EQ(q["body"]["messages"].size(), 1u);
  } else {
    EXPECT_EQ(q["path"], "/v1/chat/completions");
    EXPECT_EQ(q["headers"]["authorization"], std::string("Bearer ") + kKey);
    EXPECT_EQ(q["body"]["messages"][0]["role"], "system");
  }
  EXPECT_EQ(q["body"]["model"], "test-model");
  EXPECT_EQ(q["body"]["max_tokens"], 100);
}

TEST_P(ChatClientTest, RateLimitHonoursRetryAfter) {
  testing::FakeLlmServer server(
      json::array({{{"status", 429}, {"retry_after", "3"}}, {{"status", 429}, {"retry_after", "1"}}, {{"answer", "ok"}}}),
      kKey, dir_.path());
  ChatClient c = client(server);
  ChatResult r = c.ask(question(), 1, 1);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.calls, 3);
  EXPECT_EQ(waits_, (std::vector<double>{3, 1}));
  ASSERT_EQ(sink_.calls.size(), 3u);
  EXPECT_EQ(sink_.calls[0].status, "http_429");
  EXPECT_NE(sink_.calls[0].error.find("rate limited"), std::string::npos);
  EXPECT_EQ(sink_.calls[2].status, "ok");
}

TEST_P(ChatClientTest, ServerErrorsBackOffWithJitterThenGiveUp) {
  testing::FakeLlmServer server(json::array({{{"status", 500}}, {{"status", 503}}, {{"status", 529}}, {{"status", 500}}}),
                                kKey, dir_.path());
  ChatClient c = client(server);
  ChatResult r = c.ask(question(), 1, 1);
  EXPECT_EQ(r.error, CallError::kServer);
  EXPECT_EQ(r.calls, 4);  // 1 + retries
  EXPECT_EQ(r.message.rfind("gave up after 4 calls: HTTP 500 from", 0), 0u) << r.message;
  ASSERT_EQ(waits_.size(), 3u);
  for (int i = 0; i < 3; ++i) {  // 0.5, 1, 2 s times a jitter in [0.5, 1]
    double base = 0.5 * (1 << i);
    EXPECT_GE(waits_[i], base * 0.5);
    EXPECT_LE(waits_[i], base);
  }
  EXPECT_EQ(sink_.calls.size(), 4u);
}

TEST_P(ChatClientTest, LongRetryAfterGivesBackToTheDaemon) {
  testing::FakeLlmServer server(json::array({{{"status", 429}, {"retry_after", "3600"}}}), kKey, dir_.path());
  ChatClient c = client(server);
  ChatResult r = c.ask(question(), 1, 1);
  EXPECT_EQ(r.error, CallError::kRateLimited);
  EXPECT_EQ(r.calls, 1);
  EXPECT_TRUE(waits_.empty());
  EXPECT_NE(r.message.find("provider asks to wait 3600 s"), std::string::npos);
}

TEST_P(ChatClientTest, HangPastTheTimeoutIsRetried) {
  testing::FakeLlmServer server(json::array({{{"hang_s", 4}, {"answer", "late"}}, {{"answer", "on time"}}}), kKey,
                                dir_.path());
  LlmConfig cfg = config(server);
  cfg.timeout_s = 1;
  ChatClient c = client(server, cfg);
  ChatResult r = c.ask(question(), 1, 1);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.text, "on time");
  ASSERT_EQ(sink_.calls.size(), 2u);
  EXPECT_EQ(sink_.calls[0].status, "timeout");
  EXPECT_GE(sink_.calls[0].latency_s, 0.9);
  EXPECT_EQ(waits_.size(), 1u);
}

TEST_P(ChatClientTest, MalformedTruncatedAndEmptyAreTheirOwnKinds) {
  testing::FakeLlmServer server(
      json::array({{{"raw", "{\"choices\": [ {\"mess"}}, {{"answer", "half an ans"}, {"truncated", true}}, {{"empty", true}}}),
      kKey, dir_.path());
  ChatClient c = client(server);
  ChatResult bad = c.ask(question(), 1, 1);
  EXPECT_EQ(bad.error, CallError::kBadJson);
  EXPECT_NE(bad.message.find("the body is not JSON"), std::string::npos);
  ChatResult cut = c.ask(question(), 1, 2);
  EXPECT_EQ(cut.error, CallError::kTruncated);
  EXPECT_EQ(cut.text, "half an ans");
  EXPECT_NE(cut.message.find("cut off at max_output_tokens (100"), std::string::npos);
  ChatResult empty = c.ask(question(), 1, 3);
  EXPECT_EQ(empty.error, CallError::kEmpty);
  EXPECT_EQ(server.requests().size(), 3u);  // none of these is retried
  std::vector<std::string> statuses;
  for (const auto& rec : sink_.calls) statuses.push_back(rec.status);
  EXPECT_EQ(statuses, (std::vector<std::string>{"bad_json", "truncated", "empty"}));
}

TEST_P(ChatClientTest, RefusedKeyIsFatalAndNeverEchoed) {
  testing::FakeLlmServer server(json::array({{{"status", 401}, {"echo_key", true}}}), kKey, dir_.path());
  ChatClient c = client(server);
  ChatResult r = c.ask(question(), 1, 1);
  EXPECT_EQ(r.error, CallError::kAuth);
  EXPECT_TRUE(is_fatal(r.error));
  EXPECT_EQ(r.calls, 1);
  EXPECT_EQ(r.message.find(kKey), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("[redacted]"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("check $ARD_TEST_LLM_KEY"), std::string::npos);
  EXPECT_EQ(sink_.calls[0].error.find(kKey), std::string::npos);
  EXPECT_EQ(sink_.calls[0].status, "http_401");
}

TEST_P(ChatClientTest, WrongKeyIsRefusedByTheServer) {
  testing::FakeLlmServer server(json::array({{{"answer", "never"}}}), "another-key", dir_.path());
  ChatClient c = client(server);
  ChatResult r = c.ask(question(), 1, 1);
  EXPECT_EQ(r.error, CallError::kAuth);
}

TEST_P(ChatClientTest, UnknownModelIsFatal) {
  testing::FakeLlmServer server(json::array({{{"status", 404}}}), kKey, dir_.path());
  ChatClient c = client(server);
  ChatResult r = c.ask(question(), 1, 1);
  EXPECT_EQ(r.error, CallError::kBadModel);
  EXPECT_NE(r.message.find("model 'test-model'"), std::string::npos);
  EXPECT_EQ(r.calls, 1);
}

TEST_P(ChatClientTest, NothingListeningIsAConnectError) {
  LlmConfig cfg;
  cfg.protocol = GetParam();
  cfg.model = "m";
  cfg.base_url = "http://127.0.0.1:9";  // discard port: nothing listens
  cfg.api_key_env = "";
  cfg.retries = 1;
  ChatClient c(cfg, &sink_, [this](double s, const std::atomic<bool>*) { waits_.push_back(s); });
  ChatResult r = c.ask(question(), 1, 1);
  EXPECT_EQ(r.error, CallError::kConnect);
  EXPECT_EQ(r.calls, 2);
  EXPECT_EQ(sink_.calls[0].status, "connect_error");
}

TEST_P(ChatClientTest, UnsetKeyVariableIsAnError) {
  LlmConfig cfg;
  cfg.protocol = GetParam();
  cfg.model = "m";
  cfg.api_key_env = "ARD_TEST_NO_SUCH_KEY";
  unsetenv("ARD_TEST_NO_SUCH_KEY");
  EXPECT_THROW(ChatClient(cfg, nullptr), MissingKeyError);
}

TEST_P(ChatClientTest, StreamedAnswerWithCachedUsageIsPriced) {
  testing::FakeLlmServer server(json::array({{{"answer", "DESCRIPTION: streamed in pieces"}, {"cached", 8},
                                              {"cache_write", anthropic() ? 4 : 0}}}),
                                kKey, dir_.path());
  LlmConfig cfg = config(server);
  cfg.prices["test-model"] = {2.0, 10.0, 0.2, 2.5};
  ChatClient c = client(server, cfg);
  ChatResult r = c.ask(question(), 1, 1);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.text, "DESCRIPTION: streamed in pieces");
  EXPECT_EQ(server.requests()[0]["body"]["stream"], true);
  if (!anthropic())  // usage asked for: OpenAI-compatible streams carry none otherwise
    EXPECT_EQ(server.requests()[0]["body"]["stream_options"]["include_usage"], true);
  ASSERT_EQ(sink_.calls.size(), 1u);
  const CallRecord& rec = sink_.calls[0];
  EXPECT_EQ(rec.cache_read_tokens, 8);
  EXPECT_EQ(rec.cache_write_tokens, anthropic() ? 4 : 0);
  EXPECT_GT(rec.input_tokens, 0);
  EXPECT_DOUBLE_EQ(rec.cost_usd, (rec.input_tokens * 2.0 + rec.output_tokens * 10.0 + 8 * 0.2 +
                                  rec.cache_write_tokens * 2.5) / 1e6);
}

TEST_P(ChatClientTest, BrokenStreamIsRetriedItsPartialTextRecordedAndLogged) {
  testing::FakeLlmServer server(
      json::array({{{"answer", "DESCRIPTION: this one breaks"}, {"break_after", 2}}, {{"answer", "DESCRIPTION: ok"}}}),
      kKey, dir_.path());
  ChatClient c = client(server);
  ChatResult r = c.ask(question(), 5, 1);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.text, "DESCRIPTION: ok");
  ASSERT_EQ(sink_.calls.size(), 2u);
  EXPECT_EQ(sink_.calls[0].status, "broken_stream");
  EXPECT_EQ(sink_.calls[0].response, "DESCRIPTION: thi");  // two events of 8 characters
  EXPECT_EQ(sink_.calls[0].retry, 0);
  ASSERT_EQ(waits_.size(), 1u);
  EXPECT_DOUBLE_EQ(sink_.calls[0].wait_s, waits_[0]);
  EXPECT_EQ(sink_.calls[1].retry, 1);
  EXPECT_EQ(sink_.calls[1].response, "");
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_NE(log_[0].find("#5"), std::string::npos);
  EXPECT_NE(log_[0].find("ended before its last event"), std::string::npos);
  EXPECT_NE(log_[0].find("retry in"), std::string::npos);
}

TEST_P(ChatClientTest, StalledStreamEndsAtTheIdleTimeoutAndIsRetried) {
  testing::FakeLlmServer server(
      json::array({{{"answer", "DESCRIPTION: stalls"}, {"stall_after", 1}, {"stall_s", 20}}, {{"answer", "fine"}}}),
      kKey, dir_.path());
  LlmConfig cfg = config(server);
  cfg.idle_timeout_s = 0.5;
  cfg.timeout_s = 30;
  ChatClient c = client(server, cfg);
  ChatResult r = c.ask(question(), 1, 1);
  ASSERT_TRUE(r.ok()) << r.message;
  ASSERT_EQ(sink_.calls.size(), 2u);
  EXPECT_EQ(sink_.calls[0].status, "timeout");
  EXPECT_NE(sink_.calls[0].error.find("idle_timeout_s"), std::string::npos) << sink_.calls[0].error;
  EXPECT_EQ(sink_.calls[0].response, "DESCRIPT");
  EXPECT_LT(sink_.calls[0].latency_s, 10);  // the idle timeout, not the stall or the total timeout
}

TEST_P(ChatClientTest, CancelEndsACallInFlight) {
  testing::FakeLlmServer server(json::array({{{"answer", "DESCRIPTION: stalls"}, {"stall_after", 1}, {"stall_s", 30}}}),
                                kKey, dir_.path());
  LlmConfig cfg = config(server);
  cfg.timeout_s = 60;
  cfg.idle_timeout_s = 60;
  ChatClient c = client(server, cfg);
  std::atomic<bool> cancel{false};
  testing::SetLater stop(cancel, std::chrono::milliseconds(500));
  auto start = std::chrono::steady_clock::now();
  ChatResult r = c.ask(question(), 1, 1, &cancel);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.error, CallError::kCancelled);
  EXPECT_NE(r.message.find("cancelled"), std::string::npos);
  EXPECT_LT(took, 5);  // the stream stalls for 30 s: only the flag ends it this soon
  EXPECT_TRUE(waits_.empty());
  ASSERT_EQ(sink_.calls.size(), 1u);
  EXPECT_EQ(sink_.calls[0].status, "cancelled");
}

TEST_P(ChatClientTest, CallsPerHourCapStopsRetries) {
  testing::FakeLlmServer server(json::array({{{"status", 500}}, {{"status", 500}}, {{"answer", "never"}}}), kKey,
                                dir_.path());
  LlmConfig cfg = config(server);
  cfg.max_calls_per_hour = 2;
  ChatClient c = client(server, cfg);
  ChatResult r = c.ask(question(), 1, 1);
  EXPECT_FALSE(r.ok());
  ASSERT_TRUE(r.capped.has_value());
  EXPECT_EQ(r.capped->reason, "LLM call cap 2/hour reached");
  EXPECT_DOUBLE_EQ(r.capped->retry_at, now_ + 3600);  // the client's clock did not move
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_P(ChatClientTest, CostCapCountsThePastSpendAndEveryCall) {
  testing::FakeLlmServer server(json::array({{{"answer", "one"}}, {{"answer", "two"}}}), kKey, dir_.path());
  LlmConfig cfg = config(server);
  cfg.max_cost_usd = 0.5;
  cfg.prices["test-model"] = {200000.0, 10.0};  // one call costs more than the cap
  {
    ChatClient spent_before = client(server, cfg, Spend{0.75, {}});
    ChatResult r = spent_before.ask(question(), 1, 1);
    ASSERT_TRUE(r.capped.has_value());
    EXPECT_EQ(r.capped->reason, "LLM cost cap $0.50 reached");
    EXPECT_TRUE(std::isinf(r.capped->retry_at));
    EXPECT_TRUE(server.requests().empty());
  }
  ChatClient c = client(server, cfg, Spend{0.1, {}});
  EXPECT_TRUE(c.ask(question(), 1, 1).ok());
  ChatResult second = c.ask(question(), 2, 1);
  ASSERT_TRUE(second.capped.has_value());
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_P(ChatClientTest, AProviderThatStaysDownIsLoggedOnce) {
  testing::FakeLlmServer server(json::array(), kKey, dir_.path());  // every request: 503
  LlmConfig cfg = config(server);
  cfg.retries = 0;
  ChatClient c = client(server, cfg);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(c.ask(question(), 4, 1).ok());
  EXPECT_EQ(sink_.calls.size(), 3u);  // every call recorded
  ASSERT_EQ(log_.size(), 1u);         // one log line
  EXPECT_NE(log_[0].find("script exhausted"), std::string::npos);
}

// 200s that are not answers (an HTML page, no text, an empty stream) are
// handed back as bad answers twice; the third in a row makes the provider
// unavailable, without retries inside the ask, until an answer comes.
TEST_P(ChatClientTest, AStormOfNonAnswersMakesTheProviderUnavailable) {
  json html = {{"raw", "<html><body>Sign in to the proxy</body></html>"}, {"content_type", "text/html"}};
  testing::FakeLlmServer server(json::array({html, {{"empty", true}}, html, html, {{"answer", "DESCRIPTION: back"}},
                                             html}),
                                kKey, dir_.path());
  ChatClient c = client(server);
  EXPECT_EQ(c.ask(question(), 1, 1).error, CallError::kBadJson);
  EXPECT_EQ(c.ask(question(), 1, 2).error, CallError::kEmpty);
  ChatResult third = c.ask(question(), 1, 3);
  EXPECT_EQ(third.error, CallError::kNoAnswer);
  EXPECT_TRUE(is_unavailable(third.error));
  EXPECT_FALSE(is_fatal(third.error));
  EXPECT_EQ(third.calls, 1);
  EXPECT_NE(third.message.find("3 responses in a row were not answers"), std::string::npos) << third.message;
  ChatResult fourth = c.ask(question(), 2, 1);  // still unavailable: one call, no retries
  EXPECT_EQ(fourth.error, CallError::kNoAnswer);
  EXPECT_EQ(fourth.calls, 1);
  EXPECT_TRUE(waits_.empty());
  EXPECT_EQ(server.requests().size(), 4u);
  EXPECT_TRUE(c.ask(question(), 3, 1).ok());                       // an answer ends the streak
  EXPECT_EQ(c.ask(question(), 4, 1).error, CallError::kBadJson);  // one non-answer is a bad answer again
  std::vector<std::string> statuses;
  for (const auto& rec : sink_.calls) statuses.push_back(rec.status);
  EXPECT_EQ(statuses, (std::vector<std::string>{"bad_json", "empty", "bad_json", "bad_json", "ok", "bad_json"}));
}

TEST_P(ChatClientTest, EmptyStreamsStopAtTheNonAnswerLimitInsideOneAsk) {
  testing::FakeLlmServer server(json::array({{{"empty_stream", true}}, {{"empty_stream", true}},
                                             {{"empty_stream", true}}, {{"empty_stream", true}}}),
                                kKey, dir_.path());
  ChatClient c = client(server);  // retries = 3
  ChatResult r = c.ask(question(), 1, 1);
  EXPECT_EQ(r.error, CallError::kNoAnswer);
  EXPECT_EQ(r.calls, kNonAnswerLimit);
  EXPECT_EQ(waits_.size(), static_cast<size_t>(kNonAnswerLimit - 1));  // backed off like a 5xx until then
  EXPECT_EQ(sink_.calls.back().status, "broken_stream");
}

// A server (or proxy) that sends no usage: the call's tokens are estimated
// from the bytes sent and received, recorded as estimated, priced, and the
// cost cap trips on them; the log says so once.
TEST_P(ChatClientTest, AnAnswerWithoutUsageIsEstimatedAndTheCostCapCountsIt) {
  for (bool stream : {true, false}) {
    SCOPED_TRACE(stream ? "stream" : "whole body");
    ard::testing::TempDir dir;
    testing::FakeLlmServer server(json::array({{{"answer", "DESCRIPTION: x"}, {"no_usage", true}},
                                               {{"answer", "never"}}}),
                                  kKey, dir.path());
    sink_.calls.clear();
    sink_.started.clear();
    log_.clear();
    LlmConfig cfg = config(server);
    cfg.stream = stream;
    cfg.max_cost_usd = 0.0003;
    cfg.prices["test-model"] = {10.0, 10.0};  // a call of ~30 estimated tokens costs ~$0.0003
    ChatClient c = client(server, cfg);
    ChatResult first = c.ask(question(), 1, 1);
    ASSERT_TRUE(first.ok()) << first.message;
    ASSERT_EQ(sink_.calls.size(), 1u);
    const CallRecord& rec = sink_.calls[0];
    EXPECT_TRUE(rec.usage_estimated);
    size_t sent = server.requests()[0]["body"].dump().size();
    EXPECT_GE(rec.input_tokens, static_cast<long>(sent / 4) - 10);  // the body as sent, about
    EXPECT_EQ(rec.output_tokens, 4);                                  // 14 characters
    EXPECT_DOUBLE_EQ(rec.cost_usd, (rec.input_tokens + rec.output_tokens) * 10.0 / 1e6);
    ChatResult second = c.ask(question(), 2, 1);
    ASSERT_TRUE(second.capped.has_value()) << "the estimate counts toward max_cost_usd";
    EXPECT_EQ(second.capped->reason, "LLM cost cap $0.00 reached");
    EXPECT_EQ(server.requests().size(), 1u);
    EXPECT_TRUE(c.ask(question(), 3, 1).capped.has_value());
    int warnings = 0;
    for (const auto& line : log_) warnings += line.find("sent no usage") != std::string::npos;
    EXPECT_EQ(warnings, 1);
  }
}

TEST_P(ChatClientTest, AnAuthErrorEventInAStreamIsFatalAndNamesTheKey) {
  json event = anthropic() ? json{{"type", "authentication_error"}, {"message", "invalid x-api-key"}}
                           : json{{"message", "Incorrect API key provided"}, {"type", "invalid_request_error"},
                                  {"code", "invalid_api_key"}};
  testing::FakeLlmServer server(json::array({{{"stream_error", event}}, {{"answer", "never"}}}), kKey, dir_.path());
  ChatClient c = client(server);
  ChatResult r = c.ask(question(), 1, 1);
  EXPECT_EQ(r.error, CallError::kAuth);
  EXPECT_TRUE(is_fatal(r.error));
  EXPECT_EQ(r.calls, 1);
  EXPECT_NE(r.message.find("check $ARD_TEST_LLM_KEY"), std::string::npos) << r.message;
  EXPECT_EQ(sink_.calls[0].status, "stream_error");
}

TEST_P(ChatClientTest, RateLimitAndServerErrorEventsAreRetried) {
  json rate = anthropic() ? json{{"type", "rate_limit_error"}, {"message", "slow down"}}
                          : json{{"message", "slow down"}, {"type", "requests"}, {"code", "rate_limit_exceeded"}};
  json busy = anthropic() ? json{{"type", "overloaded_error"}, {"message", "Overloaded"}}
                          : json{{"message", "The server had an error"}, {"type", "server_error"}};
  testing::FakeLlmServer server(json::array({{{"stream_error", rate}}, {{"stream_error", busy}}, {{"answer", "ok"}}}),
                                kKey, dir_.path());
  ChatClient c = client(server);
  ChatResult r = c.ask(question(), 1, 1);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.calls, 3);
  ASSERT_EQ(sink_.calls.size(), 3u);
  EXPECT_NE(sink_.calls[0].error.find("rate limited"), std::string::npos) << sink_.calls[0].error;
  EXPECT_NE(sink_.calls[1].error.find("server error"), std::string::npos) << sink_.calls[1].error;
}

// Retry-After: 120 with max_backoff_s 10: the ask gives back at once, and no
// call goes out before the 120 s have passed on the client's clock.
TEST_P(ChatClientTest, ALongRetryAfterHoldsEveryCallUntilItPasses) {
  testing::FakeLlmServer server(json::array({{{"status", 429}, {"retry_after", "120"}}, {{"answer", "on time"}},
                                             {{"status", 503}, {"retry_after", "99999"}}}),
                                kKey, dir_.path());
  LlmConfig cfg = config(server);
  cfg.retries = 0;
  ChatClient c = client(server, cfg);
  const double t0 = now_;
  ChatResult first = c.ask(question(), 1, 1);
  EXPECT_EQ(first.error, CallError::kRateLimited);
  EXPECT_DOUBLE_EQ(first.retry_at, t0 + 120);
  for (double later : {1.0, 60.0, 119.0}) {
    now_ = t0 + later;
    ChatResult early = c.ask(question(), 1, 2);
    EXPECT_EQ(early.calls, 0);
    EXPECT_TRUE(is_unavailable(early.error));
    EXPECT_DOUBLE_EQ(early.retry_at, t0 + 120);
    EXPECT_NE(early.message.find("(Retry-After); no call until then"), std::string::npos) << early.message;
  }
  EXPECT_EQ(server.requests().size(), 1u);
  now_ = t0 + 121;
  EXPECT_TRUE(c.ask(question(), 1, 3).ok());
  EXPECT_TRUE(waits_.empty());  // nothing slept: the clock moved
  // A Retry-After past the documented maximum is cut to it.
  ChatResult far = c.ask(question(), 2, 1);
  EXPECT_DOUBLE_EQ(far.retry_at, now_ + kMaxRetryAfterS);
}

// Each call is reported as started before it goes out (so a kill -9 during
// it leaves a row), then finished under the same key.
TEST_P(ChatClientTest, EveryCallIsRecordedAsStartedThenFinished) {
  testing::FakeLlmServer server(json::array({{{"status", 500}}, {{"answer", "DESCRIPTION: x"}}}), kKey, dir_.path());
  ChatClient c = client(server);
  ASSERT_TRUE(c.ask(question(), 6, 1).ok());
  ASSERT_EQ(sink_.started.size(), 2u);
  ASSERT_EQ(sink_.calls.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(sink_.started[i].status, "started");
    EXPECT_TRUE(sink_.started[i].usage_estimated);
    EXPECT_GT(sink_.started[i].input_tokens, 0);
    EXPECT_GT(sink_.started[i].cost_usd, 0);  // the input's estimate: what the caps count if the call never ends
    EXPECT_EQ(sink_.started[i].experiment_id, 6);
    EXPECT_FALSE(sink_.started[i].call_key.empty());
    EXPECT_EQ(sink_.started[i].call_key, sink_.calls[i].call_key);
  }
  EXPECT_NE(sink_.started[0].call_key, sink_.started[1].call_key);
  EXPECT_EQ(sink_.calls[1].status, "ok");
  EXPECT_FALSE(sink_.calls[1].usage_estimated);
}

INSTANTIATE_TEST_SUITE_P(BothProtocols, ChatClientTest, ::testing::Values(Protocol::kOpenAI, Protocol::kAnthropic),
                         [](const auto& info) { return std::string(protocol_name(info.param)); });

}  // namespace
}  // namespace llm
