// Tests of the proposer factory: the scripted kind, and one-line config
// errors for unknown kinds and bad scripts.
#include "daemon/proposer_factory.h"

#include <gmock/gmock.h>

#include "proposers/swarm_proposer.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;

struct NullSink : llm::CallSink {
  void record(const llm::CallRecord&) override {}
};

TEST(ProposerFactory, BuildsTheScriptedProposerFromARepoRelativeScript) {
  testing::TempDir dir;
  testing::write_file(dir / "edits.json", "[]");
  NullSink sink;
  Config c = parse_config("[proposer]\nkind = 'scripted'\nscript = 'edits.json'\n", dir.path());
  EXPECT_EQ(make_proposer(c, sink)->name(), "scripted");
}

TEST(ProposerFactory, ErrorsNameTheKey) {
  testing::TempDir dir;
  NullSink sink;
  try {
    make_proposer(parse_config("[proposer]\nkind = 'psychic'\n", dir.path()), sink);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("proposer.kind: unknown proposer 'psychic'"));
  }
  try {
    make_proposer(parse_config("[proposer]\nkind = 'scripted'\n", dir.path()), sink);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("proposer.script: required"));
  }
  try {
    make_proposer(parse_config("[proposer]\nkind = 'scripted'\nscript = 'missing.json'\n", dir.path()), sink);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("proposer.script:"));
  }
}

TEST(ProposerFactory, RefusesToPassTheApiKeyToChildren) {
  testing::TempDir dir;
  NullSink sink;
  setenv("ARD_FACTORY_TEST_KEY", "sk-factory-test", 1);
  const std::string llm = "[llm]\nprovider = 'openai'\nmodel = 'm'\napi_key_env = 'ARD_FACTORY_TEST_KEY'\n";
  try {
    make_proposer(parse_config("[env]\npass = ['PATH', 'ARD_FACTORY_TEST_KEY']\n" + llm, dir.path()), sink);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("env.pass: 'ARD_FACTORY_TEST_KEY' holds the API key"));
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("sk-factory-test")));
  }
  EXPECT_EQ(make_proposer(parse_config(llm, dir.path()), sink)->name().rfind("llm", 0), 0u);
  unsetenv("ARD_FACTORY_TEST_KEY");
}

// Profiles make the swarm: one proposer per profile, each llm one with its own model.
TEST(ProposerFactory, ProfilesMakeTheSwarmWithOneProposerEach) {
  testing::TempDir dir;
  NullSink sink;
  setenv("ARD_FACTORY_TEST_KEY", "sk-factory-test", 1);
  const Config c = parse_config(R"(
[llm]
provider = "openai"
model = "base"
api_key_env = "ARD_FACTORY_TEST_KEY"
[[proposer.profile]]
name = "arch"
model = "big"
addendum = "Architecture changes only."
[[proposer.profile]]
name = "cheap"
kind = "offline"
)", dir.path());
  const auto proposer = make_proposer(c, sink);
  auto* swarm = dynamic_cast<SwarmProposer*>(proposer.get());
  ASSERT_NE(swarm, nullptr);
  EXPECT_EQ(swarm->name(), "swarm(arch, cheap)");
  EXPECT_THAT(swarm->member_name(0), HasSubstr("big"));
  EXPECT_EQ(swarm->member_name(1), "offline");
  EXPECT_EQ(swarm->profiles()[0].addendum, "Architecture changes only.");
  unsetenv("ARD_FACTORY_TEST_KEY");
}

}  // namespace
}  // namespace ard
