// The LLM proposer against the fake LLM server: a good answer becomes file
// writes and a description; a bad edit is asked again with the exact error
// in the same conversation; every round is an attempt; a provider that stays
// down is kUnavailable and a refused key is kFatal.
#include "llm_client/llm_proposer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "proposers/editable.h"
#include "testing/test_util.h"
#include "fake_llm_server.h"

namespace llm {
namespace {

using nlohmann::json;

constexpr const char* kKey = "sk-proposer-key-42";
const char* kTrain = "constexpr int DEPTH = 8;  // blocks\nconstexpr float MATRIX_LR = 0.04f;  // lr\nint main() {}\n";

struct NullSink : CallSink {
  int calls = 0;
  void record(const CallRecord&) override { ++calls; }
};

class LlmProposerTest : public ::testing::TestWithParam<Protocol> {
 protected:
  void SetUp() override { setenv("ARD_TEST_PROPOSER_KEY", kKey, 1); }

  std::unique_ptr<LlmProposer> proposer(const testing::FakeLlmServer& server, int attempts = 3) {
    LlmConfig c;
    c.protocol = GetParam();
    c.model = "m";
    c.base_url = server.base_url(GetParam() == Protocol::kAnthropic);
    c.api_key_env = "ARD_TEST_PROPOSER_KEY";
    c.retries = 1;
    c.backoff_s = 0;
    c.max_edit_attempts = attempts;
    PathPolicy policy = [p = ard::EditablePaths({"trainer/train.cu", "trainer/model/**"})](const std::string& path) {
      return p.check_write(path);
    };
    return std::make_unique<LlmProposer>(c, policy, &sink_, [](double) {});
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
  static std::string last_user(const json& request) { return request["body"]["messages"].back()["content"]; }

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
  EXPECT_EQ(r.error->attempts[0].prompt, "");  // not stored again while the provider is down
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

INSTANTIATE_TEST_SUITE_P(BothProtocols, LlmProposerTest, ::testing::Values(Protocol::kOpenAI, Protocol::kAnthropic),
                         [](const auto& info) { return std::string(protocol_name(info.param)); });

}  // namespace
}  // namespace llm
