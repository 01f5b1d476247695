// The daemon's proposer factory builds the "llm" and "offline" kinds from
// autoresearch.toml, and stops with a one-line error naming the key when
// their tables are wrong or the key's variable is unset.
#include <gmock/gmock.h>
#include <stdlib.h>

#include "daemon/proposer_factory.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;

struct NullSink : llm::CallSink {
  void record(const llm::CallRecord&) override {}
};

std::string error_of(const std::string& toml, const std::filesystem::path& repo) {
  NullSink sink;
  try {
    make_proposer(parse_config(toml, repo), sink);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ProposerKinds, OfflineIsTheDefaultWithoutAnLlmTable) {
  testing::TempDir dir;
  NullSink sink;
  EXPECT_EQ(make_proposer(parse_config("", dir.path()), sink)->name(), "offline");
  EXPECT_EQ(error_of("[offline]\nmax_factor = 0.5\n", dir.path()), "offline.max_factor: must be in [1, 100], got 0.5");
}

TEST(ProposerKinds, LlmFromItsTable) {
  testing::TempDir dir;
  NullSink sink;
  setenv("ARD_KINDS_TEST_KEY", "k", 1);
  auto p = make_proposer(
      parse_config("[llm]\nprovider = 'anthropic'\nmodel = 'm'\napi_key_env = 'ARD_KINDS_TEST_KEY'\n", dir.path()), sink);
  EXPECT_EQ(p->name(), "llm:anthropic/m");
  unsetenv("ARD_KINDS_UNSET_KEY");
  EXPECT_THAT(error_of("[llm]\nprovider = 'openai'\nmodel = 'm'\napi_key_env = 'ARD_KINDS_UNSET_KEY'\n", dir.path()),
              HasSubstr("llm.api_key_env: environment variable ARD_KINDS_UNSET_KEY is not set"));
  EXPECT_EQ(error_of("[llm]\nprovider = 'openai'\nmodel = 'm'\nretries = -1\n", dir.path()),
            "llm.retries: must be in [0, 100], got -1");
  EXPECT_EQ(error_of("[proposer]\nkind = 'llm'\n", dir.path()), "proposer.kind: \"llm\" needs an [llm] table");
}

TEST(ProposerKinds, CostCapStartsFromTheTagsSpendAndCanFallBackOffline) {
  testing::TempDir dir;
  setenv("ARD_KINDS_TEST_KEY", "k", 1);
  struct SpentSink : llm::CallSink {
    std::string asked;
    void record(const llm::CallRecord&) override {}
    llm::Spend spend(const std::string& tag) override {
      asked = tag;
      return {2.0, {}};
    }
  } sink;
  const std::string llm = "tag = 'night'\n[llm]\nprovider = 'openai'\nmodel = 'm'\napi_key_env = 'ARD_KINDS_TEST_KEY'\n"
                          "base_url = 'http://127.0.0.1:9'\nmax_cost_usd = 1.5\n";
  // Without a price the cap cannot be enforced: refused at start.
  EXPECT_THAT(error_of(llm, dir.path()), HasSubstr("llm.max_cost_usd: needs a price for model 'm'"));
  const std::string priced = "[llm.prices.m]\ninput = 1\noutput = 2\n";

  ProposalContext context;
  context.files = {{"trainer/train.cu", "constexpr float LR = 0.04f;  // lr\nint main() {}\n"}};
  auto paused = make_proposer(parse_config(llm + priced, dir.path()), sink)->propose(context);
  EXPECT_EQ(sink.asked, "night");
  ASSERT_FALSE(paused.ok());
  EXPECT_EQ(paused.error->kind, ProposalError::Kind::kPaused);
  EXPECT_EQ(paused.error->message, "LLM cost cap $1.50 reached");

  auto offline = make_proposer(parse_config(llm + "on_cap = 'offline'\n" + priced, dir.path()), sink)->propose(context);
  ASSERT_TRUE(offline.ok()) << offline.error->message;
  EXPECT_EQ(offline.proposal->description.rfind("offline:", 0), 0u);
}

}  // namespace
}  // namespace ard
