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

}  // namespace
}  // namespace ard
