// Tests of the scripted proposer: replay by position, errors, bad scripts.
#include "proposers/scripted_proposer.h"

#include <gmock/gmock.h>

#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;

ProposalContext with_history(int proposed) {
  ProposalContext c;
  HistoryEntry base;
  base.baseline = true;
  c.history.push_back(base);
  for (int i = 0; i < proposed; ++i) c.history.push_back({});
  return c;
}

// After a restart, the experiments taken up again are in flight, not in the
// history: they were proposed, and the next call takes the entry after them.
TEST(ScriptedProposer, ExperimentsInFlightCountAsProposed) {
  testing::TempDir dir;
  testing::write_file(dir / "s.json", R"([
    {"description": "one", "writes": [{"path": "a.cu", "content": "1"}]},
    {"description": "two", "writes": [{"path": "a.cu", "content": "2"}]},
    {"description": "three", "writes": [{"path": "a.cu", "content": "3"}]}
  ])");
  ScriptedProposer p(dir / "s.json");
  ProposalContext c = with_history(1);
  c.in_flight.push_back({2, "abc1234", "two", std::nullopt, "committed", false});
  auto r = p.propose(c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.proposal->description, "three");
}

TEST(ScriptedProposer, ReplaysEntriesByPosition) {
  testing::TempDir dir;
  testing::write_file(dir / "s.json", R"([
    {"description": "one", "writes": [{"path": "a.cu", "content": "1"}]},
    {"error": "bad_edit", "message": "no edit block"},
    {"description": "three", "writes": [{"path": "a.cu", "content": "3"}, {"path": "b.cu", "content": "x"}]}
  ])");
  ScriptedProposer p(dir / "s.json");
  auto r0 = p.propose(with_history(0));
  ASSERT_TRUE(r0.ok());
  EXPECT_EQ(r0.proposal->description, "one");
  EXPECT_EQ(r0.proposal->writes[0].content, "1");
  ASSERT_EQ(r0.proposal->attempts.size(), 1u);
  EXPECT_THAT(r0.proposal->attempts[0].response, HasSubstr("\"one\""));
  auto r1 = p.propose(with_history(1));
  ASSERT_FALSE(r1.ok());
  EXPECT_EQ(r1.error->kind, ProposalError::Kind::kBadEdit);
  EXPECT_EQ(r1.error->message, "no edit block");
  EXPECT_EQ(p.propose(with_history(2)).proposal->writes.size(), 2u);
  auto r3 = p.propose(with_history(3));
  EXPECT_EQ(r3.error->kind, ProposalError::Kind::kExhausted);
}

TEST(ScriptedProposer, BadScriptsNameTheEntry) {
  testing::TempDir dir;
  testing::write_file(dir / "s.json", R"([{"description": "x", "writes": []}])");
  try {
    ScriptedProposer p(dir / "s.json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("entry 1: missing writes"));
  }
  testing::write_file(dir / "t.json", "{");
  EXPECT_THROW(ScriptedProposer(dir / "t.json"), std::runtime_error);
  EXPECT_THROW(ScriptedProposer(dir / "missing.json"), std::runtime_error);
}

// Only a script that says it holds a fix is asked to fix builds: the others
// would spend their next ideas on the broken files.
TEST(ScriptedProposer, FixesBuildsOnlyWithAFixEntry) {
  testing::TempDir dir;
  testing::write_file(dir / "plain.json", R"([{"description": "one", "writes": [{"path": "a.cu", "content": "1"}]}])");
  EXPECT_FALSE(ScriptedProposer(dir / "plain.json").fixes_builds());
  testing::write_file(dir / "fix.json", R"([
    {"description": "break", "writes": [{"path": "a.cu", "content": "("}]},
    {"description": "repair", "fix": true, "writes": [{"path": "a.cu", "content": "1"}]}
  ])");
  EXPECT_TRUE(ScriptedProposer(dir / "fix.json").fixes_builds());
  testing::write_file(dir / "bad.json", R"([{"description": "x", "fix": "yes", "writes": [{"path": "a.cu", "content": "1"}]}])");
  try {
    ScriptedProposer p(dir / "bad.json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("entry 1: fix must be true or false"));
  }
}

TEST(ScriptedProposer, EditsChangeTheFilesItIsGivenAndAddUp) {
  testing::TempDir dir;
  testing::write_file(dir / "s.json", R"([
    {"description": "one", "edits": [{"path": "a.cu", "find": "x 0", "replace": "x 1"}]},
    {"description": "two", "edits": [{"path": "a.cu", "find": "y 0", "replace": "y 2"}]},
    {"description": "gone", "edits": [{"path": "a.cu", "find": "z 0", "replace": "z 3"}]}
  ])");
  ScriptedProposer p(dir / "s.json");
  ProposalContext c = with_history(0);
  c.files = {{"a.cu", "x 0\ny 0\n"}};
  auto r0 = p.propose(c);
  ASSERT_TRUE(r0.ok());
  EXPECT_EQ(r0.proposal->writes.at(0).content, "x 1\ny 0\n");
  c = with_history(1);
  c.files = {{"a.cu", "x 1\ny 0\n"}};  // the best now has the first edit
  auto r1 = p.propose(c);
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1.proposal->writes.at(0).content, "x 1\ny 2\n");
  c = with_history(2);
  c.files = {{"a.cu", "x 1\ny 2\n"}};
  auto r2 = p.propose(c);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error->kind, ProposalError::Kind::kBadEdit);
  EXPECT_THAT(r2.error->message, HasSubstr("a.cu: the text to replace is not in the file: z 0"));
  testing::write_file(dir / "t.json", R"([{"description": "x", "edits": [{"path": "a.cu", "find": ""}]}])");
  try {
    ScriptedProposer bad(dir / "t.json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("entry 1: each edit needs"));
  }
}

}  // namespace
}  // namespace ard
