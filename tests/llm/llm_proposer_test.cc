// The LLM proposer against the fake LLM server: a good answer becomes file
// writes and a description; a bad edit is asked again with the exact error
// in the same conversation; every round is an attempt; a provider that stays
// down is kUnavailable and a refused key is kFatal.
#include "llm_client/llm_proposer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <map>
#include <thread>

#include "llm_client/prompt.h"
#include "proposers/offline_proposer.h"

#include "fake_llm_server.h"
#include "proposers/editable.h"
#include "testing/test_util.h"

namespace llm {
namespace {

using nlohmann::json;

constexpr const char* kKey = "sk-proposer-key-42";
const char* kTrain = "constexpr int DEPTH = 8;  // blocks\nconstexpr float MATRIX_LR = 0.04f;  // lr\nint main() {}\n";

/// Counts calls and keeps learnt limits the way the store does.
struct NullSink : CallSink {
  int calls = 0;
  std::map<std::string, long> limits;
  void record(const CallRecord&) override { ++calls; }
  std::optional<long> learnt_limit(const std::string& provider) override {
    auto it = limits.find(provider);
    return it == limits.end() ? std::nullopt : std::optional<long>(it->second);
  }
  void learn_limit(const std::string& provider, long tokens, const std::string&) override { limits[provider] = tokens; }
};

class LlmProposerTest : public ::testing::TestWithParam<Protocol> {
 protected:
  void SetUp() override { setenv("ARD_TEST_PROPOSER_KEY", kKey, 1); }

  std::unique_ptr<LlmProposer> proposer(const testing::FakeLlmServer& server, int attempts = 3) {
    return proposer(config(server, attempts));
  }

  std::unique_ptr<LlmProposer> proposer(LlmConfig c, Spend spent = {}, std::unique_ptr<ard::Proposer> on_cap = nullptr) {
    PathPolicy policy = [p = ard::EditablePaths({"trainer/train.cu", "trainer/model/**"})](const std::string& path) {
      return p.check_write(path);
    };
    return std::make_unique<LlmProposer>(c, policy, &sink_, [](double, const std::atomic<bool>*) {}, spent,
                                         std::move(on_cap));
  }

  LlmConfig config(const testing::FakeLlmServer& server, int attempts = 3) const {
    LlmConfig c;
    c.protocol = GetParam();
    c.model = "m";
    c.base_url = server.base_url(GetParam() == Protocol::kAnthropic);
    c.api_key_env = "ARD_TEST_PROPOSER_KEY";
    c.retries = 1;
    c.backoff_s = 0;
    c.max_edit_attempts = attempts;
    return c;
  }

  /// A tree larger than a small budget: a header, a big kernel file, a long history.
  ard::ProposalContext big_context() const {
    ard::ProposalContext c = context();
    c.files.push_back({"trainer/model/k.cuh", "// Kernel declarations.\nvoid k();\n"});
    c.files.push_back({"trainer/model/k.cu", "// Kernels of k.cuh.\nvoid k() {}\n" + std::string(40000, '/') + "\n"});
    for (int i = 2; i <= 400; ++i) c.history.push_back({i, "c" + std::to_string(i), "idea " + std::to_string(i), 1.3, "discarded"});
    return c;
  }

  /// Estimated tokens of the text a request sent (system and messages).
  static long sent_tokens(const json& request) {
    std::string text;
    const json& b = request["body"];
    auto add = [&](const json& content) {
      if (content.is_string()) text += content.get<std::string>();
      else for (const json& block : content) text += block.value("text", "");
    };
    if (b.contains("system")) add(b["system"]);
    for (const json& m : b["messages"]) add(m["content"]);
    return estimate_tokens(text);
  }

  ard::ProposalContext context() const {
    ard::ProposalContext c;
    c.experiment_id = 3;
    c.program_md = "Lower val_bpb.\n";
    c.files = {{"trainer/train.cu", kTrain}};
    c.history = {{1, "abc1234", "baseline", 1.25, "kept"}};
    c.best_val_bpb = 1.25;
    return c;
  }

  /// The text of the last user message of request i.
  static std::string last_user(const json& request) {
    const json& content = request["body"]["messages"].back()["content"];
    if (content.is_string()) return content;
    std::string text;
    for (const json& block : content) text += block.value("text", "");
    return text;
  }

  ard::testing::TempDir dir_;
  NullSink sink_;
};

const std::string kGood =
    "DESCRIPTION: depth 10\ntrainer/train.cu\n<<<<<<< SEARCH\nconstexpr int DEPTH = 8;  // blocks\n=======\n"
    "constexpr int DEPTH = 10;  // blocks\n>>>>>>> REPLACE\n";

TEST_P(LlmProposerTest, GoodAnswerBecomesWrites) {
  testing::FakeLlmServer server(json::array({{{"answer", "Here it is.\n" + kGood}}}), kKey, dir_.path());
  auto p = proposer(server);
  EXPECT_EQ(p->name(), std::string("llm:") + protocol_name(GetParam()) + "/m");
  EXPECT_TRUE(p->fixes_builds());  // it reads the compiler's errors and repairs the files
  ard::ProposalResult r = p->propose(context());
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.proposal->description, "depth 10");
  ASSERT_EQ(r.proposal->writes.size(), 1u);
  EXPECT_EQ(r.proposal->writes[0].content.rfind("constexpr int DEPTH = 10;", 0), 0u);
  ASSERT_EQ(r.proposal->attempts.size(), 1u);
  const ard::ProposalAttempt& a = r.proposal->attempts[0];
  EXPECT_EQ(a.error, "");
  EXPECT_NE(a.response.find("DESCRIPTION: depth 10"), std::string::npos);
  // The stored prompt is what was sent: instructions, program.md, files, history.
  EXPECT_NE(a.prompt.find("<<<<<<< SEARCH"), std::string::npos);
  EXPECT_NE(a.prompt.find("Lower val_bpb."), std::string::npos);
  EXPECT_NE(a.prompt.find("constexpr float MATRIX_LR = 0.04f;"), std::string::npos);
  EXPECT_NE(a.prompt.find("| 1 | 1.250000 | kept | baseline |"), std::string::npos);
  EXPECT_EQ(sink_.calls, 1);
}

TEST_P(LlmProposerTest, BadEditIsAskedAgainWithTheExactError) {
  std::string wrong = "DESCRIPTION: depth 10\ntrainer/train.cu\n<<<<<<< SEARCH\nconstexpr int DEPTH = 6;\n=======\n"
                      "constexpr int DEPTH = 10;\n>>>>>>> REPLACE\n";
  std::string outside = "DESCRIPTION: cheat\n=== FILE: trainer/harness/eval.h ===\nint x;\n=== END FILE ===\n";
  testing::FakeLlmServer server(json::array({{{"answer", wrong}}, {{"answer", outside}}, {{"answer", kGood}}}), kKey,
                                dir_.path());
  ard::ProposalResult r = proposer(server)->propose(context());
  ASSERT_TRUE(r.ok()) << r.error->message;
  ASSERT_EQ(r.proposal->attempts.size(), 3u);
  const auto& at = r.proposal->attempts;
  EXPECT_EQ(at[0].error,
            "edit 1 (SEARCH/REPLACE, trainer/train.cu): SEARCH text matches nowhere, not even ignoring whitespace; "
            "this line is not in the file: 'constexpr int DEPTH = 6;'");
  EXPECT_EQ(at[1].error,
            "edit 1 (whole file, trainer/harness/eval.h): refused: edit touches trainer/harness/eval.h, which is not "
            "editable");
  EXPECT_EQ(at[2].error, "");
  EXPECT_EQ(at[1].prompt.rfind("[user]\nYour edit could not be used:\n\n" + at[0].error, 0), 0u) << at[1].prompt;

  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  // The same conversation, growing: the bad answer, then the error.
  const json& third = reqs[2]["body"]["messages"];
  size_t base = GetParam() == Protocol::kOpenAI ? 1 : 0;  // OpenAI carries the system message first
  ASSERT_EQ(third.size(), base + 5);
  EXPECT_EQ(third[base + 1]["role"], "assistant");
  EXPECT_EQ(third[base + 1]["content"], wrong);
  EXPECT_NE(last_user(reqs[1]).find(at[0].error), std::string::npos);
  EXPECT_NE(last_user(reqs[2]).find(at[1].error), std::string::npos);
}

TEST_P(LlmProposerTest, TruncatedAndMalformedAnswersAreAskedAgain) {
  testing::FakeLlmServer server(
      json::array({{{"answer", "DESCRIPTION: x\ntrainer/train.cu\n<<<<<<< SEARCH\n"}, {"truncated", true}},
                   {{"raw", "not json at all"}}, {{"answer", kGood}}}),
      kKey, dir_.path());
  ard::ProposalResult r = proposer(server)->propose(context());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.proposal->attempts.size(), 3u);
  EXPECT_NE(r.proposal->attempts[0].error.find("cut off at max_output_tokens"), std::string::npos);
  EXPECT_NE(r.proposal->attempts[1].error.find("the body is not JSON"), std::string::npos);
}

TEST_P(LlmProposerTest, EveryAttemptBadIsBadEdit) {
  std::string prose = "DESCRIPTION: idea\nI would raise the learning rate.";
  testing::FakeLlmServer server(json::array({{{"answer", prose}}, {{"answer", prose}}}), kKey, dir_.path());
  ard::ProposalResult r = proposer(server, 2)->propose(context());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ard::ProposalError::Kind::kBadEdit);
  EXPECT_EQ(r.error->attempts.size(), 2u);
  EXPECT_EQ(r.error->message,
            "2 answers gave no usable edit; the last: the answer holds no edit: no SEARCH/REPLACE block, no unified "
            "diff and no === FILE: block");
}

TEST_P(LlmProposerTest, ProviderDownIsUnavailable) {
  testing::FakeLlmServer server(json::array({{{"status", 500}}, {{"status", 502}}}), kKey, dir_.path());
  ard::ProposalResult r = proposer(server)->propose(context());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ard::ProposalError::Kind::kUnavailable);
  EXPECT_EQ(r.error->attempts.size(), 1u);
  EXPECT_NE(r.error->message.find("gave up after 2 calls"), std::string::npos);
  EXPECT_EQ(r.error->attempts[0].prompt.rfind("[system]\n", 0), 0u);  // what was sent, though nothing came back
  EXPECT_EQ(r.error->attempts[0].error, r.error->message);
  EXPECT_EQ(sink_.calls, 2);
}

TEST_P(LlmProposerTest, RefusedKeyIsFatal) {
  testing::FakeLlmServer server(json::array({{{"answer", kGood}}}), "not-our-key", dir_.path());
  ard::ProposalResult r = proposer(server)->propose(context());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ard::ProposalError::Kind::kFatal);
  EXPECT_NE(r.error->message.find("HTTP 401"), std::string::npos);
  EXPECT_EQ(r.error->message.find(kKey), std::string::npos);
}

TEST_P(LlmProposerTest, RequestStaysWithinContextTokens) {
  testing::FakeLlmServer server(json::array({{{"answer", kGood}}}), kKey, dir_.path());
  LlmConfig c = config(server);
  c.context_tokens = 6000;
  c.read_bytes = 2000;
  ard::ProposalResult r = proposer(c)->propose(big_context());
  ASSERT_TRUE(r.ok()) << r.error->message;
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_LE(sent_tokens(reqs[0]), 6000 - c.read_reserve_tokens());  // the READ reserve left free
  std::string u = last_user(reqs[0]);
  EXPECT_NE(u.find("## trainer/model/k.cuh"), std::string::npos);                 // a header, whole
  EXPECT_NE(u.find("- trainer/model/k.cu (40034 bytes): Kernels of k.cuh."), std::string::npos);  // mapped
  EXPECT_EQ(u.find(std::string(1000, '/')), std::string::npos);
  if (GetParam() == Protocol::kAnthropic)  // a cache breakpoint after the stable part
    EXPECT_TRUE(reqs[0]["body"]["messages"][0]["content"][0].contains("cache_control"));
}

TEST_P(LlmProposerTest, TooLongRequestsLowerTheLimitAndSayWhatWasCut) {
  for (json refusal : {json{{"status", 413}},
                       json{{"status", 400}, {"message", "This model's maximum context length is 4096 tokens"}}}) {
    ard::testing::TempDir dir;
    testing::FakeLlmServer server(json::array({refusal, {{"answer", kGood}}}), kKey, dir.path());
    LlmConfig c = config(server);
    c.context_tokens = 8000;
    c.read_bytes = 4000;
    ard::ProposalResult r = proposer(c)->propose(big_context());
    ASSERT_TRUE(r.ok()) << r.error->message;
    const auto& attempts = r.proposal->attempts;
    ASSERT_EQ(attempts.size(), 2u);
    EXPECT_NE(attempts[0].error.find("too long"), std::string::npos) << attempts[0].error;
    EXPECT_NE(attempts[0].prompt.find("[system]"), std::string::npos);  // what was sent, though it failed
    auto reqs = server.requests();
    ASSERT_EQ(reqs.size(), 2u);
    // The limit is three quarters of what was refused.
    const std::string head = "[prompt within ";
    ASSERT_EQ(attempts[1].prompt.rfind(head, 0), 0u) << attempts[1].prompt.substr(0, 300);
    const long lowered = std::stol(attempts[1].prompt.substr(head.size()));
    EXPECT_NEAR(lowered, sent_tokens(reqs[0]) * 3 / 4, 20);
    EXPECT_NE(attempts[1].prompt.find(" tokens (lowered from llm.context_tokens 8000 by a server's refusal): cut "),
              std::string::npos);
    EXPECT_NE(attempts[1].prompt.find(" after: HTTP " + std::to_string(refusal["status"].get<int>())),
              std::string::npos);
    EXPECT_LE(sent_tokens(reqs[1]), lowered);
    EXPECT_EQ(sink_.limits.begin()->second, lowered);
    sink_.limits.clear();
  }
}

// A proxy that refuses bodies over 60 KB: the first experiment pays one 413,
// the next ones and the next start (a new proposer over the same store)
// begin at the remembered limit.
TEST_P(LlmProposerTest, ALearntLimitIsRememberedAcrossExperimentsAndStarts) {
  json answers = json::array();
  for (int i = 0; i < 4; ++i) answers.push_back({{"answer", kGood}});
  testing::FakeLlmServer server(answers, kKey, dir_.path(), 60000);
  LlmConfig c = config(server);
  ard::ProposalContext ctx = big_context();
  std::string big_train = kTrain;
  for (int i = 0; i < 1300; ++i) big_train += "float step_" + std::to_string(i) + "(float x) { return x * 0.5f; }\n";
  ctx.files[0].content = big_train;  // about 60 KB: with the rest, past the proxy's limit
  auto p = proposer(c);
  ASSERT_TRUE(p->propose(ctx).ok());
  ASSERT_TRUE(p->propose(ctx).ok());
  ASSERT_TRUE(proposer(c)->propose(ctx).ok());  // the next start
  auto reqs = server.requests();
  int refused = 0;
  for (const auto& q : reqs) refused += q.contains("refused");
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(reqs.size(), 4u);
  ASSERT_EQ(sink_.limits.size(), 1u);
  EXPECT_EQ(sink_.limits.begin()->first, std::string(protocol_name(GetParam())) + " " + c.base_url + " m");
}

// At the defaults a READ round returns a 16 KB model file whole, next to a
// 40 KB train.cu and a 16 KB program.md.
TEST_P(LlmProposerTest, AReadOfASixteenKilobyteFileSucceedsAtTheDefaults) {
  testing::FakeLlmServer server(json::array({{{"answer", "READ: trainer/model/big.cu"}}, {{"answer", kGood}}}), kKey,
                                dir_.path());
  LlmConfig c = config(server);
  ard::ProposalContext ctx = big_context();
  ctx.files[0].content = std::string(kTrain) + std::string(40000, '/') + "\n";
  ctx.program_md = std::string(16384, 'p') + "\n";
  std::string model = "// A big kernel file.\n";
  while (model.size() < 16384) model += "__global__ void k" + std::to_string(model.size()) + "() {}\n";
  model.resize(16384);
  ctx.files.push_back({"trainer/model/big.cu", model});
  ard::ProposalResult r = proposer(c)->propose(ctx);
  ASSERT_TRUE(r.ok()) << r.error->message;
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_NE(last_user(reqs[0]).find(std::string(40000, '/')), std::string::npos);  // train.cu whole
  EXPECT_NE(last_user(reqs[1]).find(model), std::string::npos);
  EXPECT_EQ(last_user(reqs[1]).find("Not shown"), std::string::npos);
}

// 200s that are not answers: a handful of calls, then the provider is
// unavailable (the daemon's wait), not a proposer_error.
TEST_P(LlmProposerTest, AStormOfMalformedAnswersIsUnavailableAfterAHandfulOfCalls) {
  json html = {{"raw", "<html>502 Bad Gateway</html>"}, {"content_type", "text/html"}};
  json storm = json::array();
  for (int i = 0; i < 20; ++i) storm.push_back(html);
  testing::FakeLlmServer server(storm, kKey, dir_.path());
  auto p = proposer(server);
  ard::ProposalResult r = p->propose(context());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ard::ProposalError::Kind::kUnavailable);
  EXPECT_NE(r.error->message.find("not answers"), std::string::npos) << r.error->message;
  EXPECT_LE(server.requests().size(), 5u);
  const size_t before = server.requests().size();
  ard::ProposalResult again = p->propose(context());  // after the daemon's wait
  EXPECT_EQ(again.error->kind, ard::ProposalError::Kind::kUnavailable);
  EXPECT_EQ(server.requests().size(), before + 1);
}

TEST_P(LlmProposerTest, AnAuthErrorEventInAStreamIsFatal) {
  json event = GetParam() == Protocol::kAnthropic
                   ? json{{"type", "permission_error"}, {"message", "not allowed"}}
                   : json{{"message", "Incorrect API key provided"}, {"code", "invalid_api_key"}};
  testing::FakeLlmServer server(json::array({{{"stream_error", event}}}), kKey, dir_.path());
  ard::ProposalResult r = proposer(server)->propose(context());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ard::ProposalError::Kind::kFatal);
  EXPECT_NE(r.error->message.find("check $ARD_TEST_PROPOSER_KEY"), std::string::npos) << r.error->message;
}

TEST_P(LlmProposerTest, ALongRetryAfterIsHandedToTheDaemon) {
  testing::FakeLlmServer server(json::array({{{"status", 429}, {"retry_after", "120"}}}), kKey, dir_.path());
  double before = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  ard::ProposalResult r = proposer(server)->propose(context());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ard::ProposalError::Kind::kUnavailable);
  EXPECT_GE(r.error->retry_at, before + 120);
  EXPECT_LT(r.error->retry_at, before + 180);
}

TEST_P(LlmProposerTest, ReadRoundsGiveFilesAndAreBounded) {
  testing::FakeLlmServer server(
      json::array({{{"answer", "Let me look first.\nREAD: trainer/model/k.cu 1-2\nREAD: trainer/model/k.cuh"}},
                   {{"answer", "READ: trainer/train.cu"}},
                   {{"answer", kGood}}}),
      kKey, dir_.path());
  LlmConfig c = config(server);
  c.max_read_rounds = 1;
  ard::ProposalResult r = proposer(c)->propose(big_context());
  ASSERT_TRUE(r.ok()) << r.error->message;
  const auto& attempts = r.proposal->attempts;
  ASSERT_EQ(attempts.size(), 3u);
  EXPECT_EQ(attempts[0].error, "");
  EXPECT_NE(attempts[1].prompt.find("## trainer/model/k.cu lines 1-2 of 3"), std::string::npos);
  EXPECT_NE(attempts[1].prompt.find("void k() {}"), std::string::npos);
  EXPECT_NE(attempts[1].error.find("no READ rounds left"), std::string::npos);
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_NE(last_user(reqs[1]).find("// Kernel declarations."), std::string::npos);
  EXPECT_NE(last_user(reqs[2]).find("no READ rounds left (1 used)"), std::string::npos);
  EXPECT_NE(reqs[0]["body"].dump().find("READ: trainer/model/attention.cuh"), std::string::npos);  // documented
}

TEST_P(LlmProposerTest, CostCapPausesOrFallsBackToOffline) {
  testing::FakeLlmServer server(json::array({{{"answer", kGood}}}), kKey, dir_.path());
  LlmConfig c = config(server);
  c.max_cost_usd = 0.5;
  c.prices["m"] = {3.0, 15.0};
  ard::ProposalResult paused = proposer(c, Spend{0.5, {}})->propose(context());
  ASSERT_FALSE(paused.ok());
  EXPECT_EQ(paused.error->kind, ard::ProposalError::Kind::kPaused);
  EXPECT_EQ(paused.error->message, "LLM cost cap $0.50 reached");
  EXPECT_TRUE(std::isinf(paused.error->retry_at));

  auto offline = std::make_unique<ard::OfflineProposer>(ard::OfflineConfig{});
  ard::ProposalResult fallback = proposer(c, Spend{0.5, {}}, std::move(offline))->propose(context());
  ASSERT_TRUE(fallback.ok()) << fallback.error->message;
  EXPECT_EQ(fallback.proposal->description.rfind("offline:", 0), 0u) << fallback.proposal->description;
  EXPECT_NE(fallback.proposal->attempts[0].error.find("LLM cost cap $0.50 reached; proposed by offline"),
            std::string::npos);
  EXPECT_TRUE(server.requests().empty());
}

TEST_P(LlmProposerTest, CallCapPausesUntilTheHourHasRoom) {
  testing::FakeLlmServer server(json::array({{{"answer", "no edit here"}}, {{"answer", kGood}}}), kKey, dir_.path());
  LlmConfig c = config(server);
  c.max_calls_per_hour = 1;
  ard::ProposalResult r = proposer(c)->propose(context());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ard::ProposalError::Kind::kPaused);
  EXPECT_EQ(r.error->message, "LLM call cap 1/hour reached");
  EXPECT_GT(r.error->retry_at, 0);
  EXPECT_FALSE(std::isinf(r.error->retry_at));
  ASSERT_EQ(r.error->attempts.size(), 2u);  // the bad answer, then the round the cap stopped
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_P(LlmProposerTest, StopMidStreamIsUnavailableAndKeepsWhatWasSent) {
  testing::FakeLlmServer server(json::array({{{"answer", kGood}, {"stall_after", 1}, {"stall_s", 30}}}), kKey,
                                dir_.path());
  LlmConfig c = config(server);
  c.timeout_s = 60;
  std::atomic<bool> cancel{false};
  ard::ProposalContext ctx = context();
  ctx.cancel = &cancel;
  testing::SetLater stop(cancel, std::chrono::milliseconds(500));
  auto start = std::chrono::steady_clock::now();
  ard::ProposalResult r = proposer(c)->propose(ctx);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ard::ProposalError::Kind::kUnavailable);
  EXPECT_NE(r.error->message.find("cancelled"), std::string::npos);
  EXPECT_LT(took, 5);  // the stream stalls for 30 s
  ASSERT_EQ(r.error->attempts.size(), 1u);
  EXPECT_NE(r.error->attempts[0].prompt.find("[system]"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(BothProtocols, LlmProposerTest, ::testing::Values(Protocol::kOpenAI, Protocol::kAnthropic),
                         [](const auto& info) { return std::string(protocol_name(info.param)); });

}  // namespace
}  // namespace llm
