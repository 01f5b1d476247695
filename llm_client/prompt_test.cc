// Tests for prompt.h: what the prompt holds, the history table within its
// token budget, and the last failure handed back verbatim.
#include "llm_client/prompt.h"

#include <gtest/gtest.h>

namespace llm {
namespace {

ard::HistoryEntry entry(long id, std::optional<double> bpb, const std::string& status, const std::string& d) {
  ard::HistoryEntry e;
  e.id = id;
  e.val_bpb = bpb;
  e.status = status;
  e.description = d;
  return e;
}

TEST(Prompt, HoldsProgramFilesHistoryAndInstructions) {
  ard::ProposalContext c;
  c.experiment_id = 4;
  c.program_md = "Make val_bpb low.\n";
  c.files = {{"trainer/train.cu", "constexpr int DEPTH = 8;\n"}, {"trainer/model/a.cuh", "// ```odd```\n"}};
  c.history = {entry(1, 1.0, "kept", "baseline"), entry(2, 1.1, "discarded", "wider")};
  Conversation conv = build_prompt(c, 1000);
  EXPECT_NE(conv.system.find("<<<<<<< SEARCH"), std::string::npos);  // our format, not program.md's
  ASSERT_EQ(conv.messages.size(), 1u);
  const std::string& u = conv.messages[0].content;
  EXPECT_NE(u.find("Make val_bpb low."), std::string::npos);
  EXPECT_NE(u.find("## trainer/train.cu\n\n```\nconstexpr int DEPTH = 8;\n```\n"), std::string::npos);
  EXPECT_NE(u.find("````\n// ```odd```\n````"), std::string::npos);  // a fence longer than any inside
  EXPECT_NE(u.find("| 2 | 1.100000 | discarded | wider |"), std::string::npos);
  EXPECT_NE(u.find("experiment 4"), std::string::npos);
  EXPECT_EQ(u.find("The last attempt failed"), std::string::npos);

  std::string r = render(conv);
  EXPECT_EQ(r.rfind("[system]\n", 0), 0u);
  EXPECT_NE(r.find("\n[user]\n# Research program"), std::string::npos);
}

TEST(Prompt, LastFailureIsExact) {
  ard::ProposalContext c;
  c.last_failure = ard::Failure{"build_fail", "train.cu:3:5: error: 'x' was not declared in this scope"};
  std::string u = build_prompt(c, 100).messages[0].content;
  EXPECT_NE(u.find("# The last attempt failed (build_fail)"), std::string::npos);
  EXPECT_NE(u.find("```\ntrain.cu:3:5: error: 'x' was not declared in this scope\n```"), std::string::npos);
}

TEST(Prompt, HistoryFitsTheBudgetBestFirstThenRecent) {
  std::vector<ard::HistoryEntry> h;
  for (int i = 1; i <= 200; ++i)
    h.push_back(entry(i, 1.0 + i * 0.001, i == 1 ? "kept" : "discarded", "experiment number " + std::to_string(i)));
  h[49] = entry(50, 0.9, "kept", "the best one");
  std::string t = history_table(h, 200);
  EXPECT_LE(estimate_tokens(t), 230);  // the budget plus the "not shown" line
  EXPECT_NE(t.find("Best so far: experiment 50 with val_bpb 0.900000."), std::string::npos);
  EXPECT_NE(t.find("| 50 | 0.900000 | kept | the best one |"), std::string::npos);
  EXPECT_NE(t.find("| 200 |"), std::string::npos);  // the most recent is shown
  EXPECT_EQ(t.find("| 2 |"), std::string::npos);    // old ones are not
  EXPECT_NE(t.find("older experiments not shown)"), std::string::npos);
  // Recent rows are in order, oldest first.
  EXPECT_LT(t.find("| 199 |"), t.find("| 200 |"));

  std::string all = history_table(h, 100000);
  EXPECT_EQ(all.find("not shown"), std::string::npos);
  EXPECT_NE(history_table({}, 100).find("No experiments yet"), std::string::npos);
}

TEST(Prompt, RetryMessageCarriesTheError) {
  std::string m = retry_message("edit 2 (diff, a.cu): hunk 1: ...");
  EXPECT_NE(m.find("edit 2 (diff, a.cu): hunk 1: ..."), std::string::npos);
}

}  // namespace
}  // namespace llm
