// Tests for prompt.h: what the prompt holds, the history table within its
// token budget, and the last failure handed back verbatim.
#include "llm_client/prompt.h"

#include <gtest/gtest.h>

#include <algorithm>

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

/// A memory of `regions` regions, region i tried regions - i times, two records each.
ard::TriedMemory memory(int regions) {
  ard::TriedMemory m;
  int all = 0;
  for (int i = 0; i < regions; ++i) {
    ard::TriedRegion r;
    r.region = "trainer/train.cu: function_" + std::to_string(i);
    r.tries = regions - i;
    all += r.tries;
    r.outcomes = {{"discarded", r.tries - 1}, {"kept", 1}};
    r.closest = {{100L + i, "raise the rate of function " + std::to_string(i), "kept", 3.31, "trainer/train.cu:10-20"},
                 {200L + i, "lower it again", "crash", std::nullopt, "trainer/train.cu:12"}};
    m.regions.push_back(r);
  }
  m.totals = {{"discarded", all - regions}, {"kept", regions}};
  return m;
}

TEST(Prompt, HoldsProgramFilesHistoryAndInstructions) {
  ard::ProposalContext c;
  c.experiment_id = 4;
  c.program_md = "Make val_bpb low.\n";
  c.files = {{"trainer/train.cu", "constexpr int DEPTH = 8;\n"}, {"trainer/model/a.cuh", "// ```odd```\n"}};
  c.history = {entry(1, 1.0, "kept", "baseline"), entry(2, 1.1, "discarded", "wider")};
  LlmConfig cfg;
  cfg.history_tokens = 1000;
  Conversation conv = build_prompt(c, cfg).conversation;
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
  EXPECT_NE(r.find("\n[user]\n# Editable files"), std::string::npos);
  // Stable first: files and program.md before the breakpoint, history after.
  size_t cut = conv.messages[0].cache_prefix;
  EXPECT_LT(u.find("Make val_bpb low."), cut);
  EXPECT_LT(u.find("## trainer/train.cu"), cut);
  EXPECT_GT(u.find("| 2 | 1.100000"), cut);
}

// What other workers have in flight is listed after the history, so the model
// does not propose it again; it shares the history's allowance.
TEST(Prompt, ExperimentsInFlightFollowTheHistoryWithinItsAllowance) {
  ard::ProposalContext c;
  c.experiment_id = 9;
  c.history = {entry(1, 1.0, "kept", "baseline")};
  c.in_flight = {entry(7, std::nullopt, "running", "rotary base 50000"), entry(8, std::nullopt, "committed", "wider mlp")};
  LlmConfig cfg;
  cfg.history_tokens = 1000;
  const std::string u = build_prompt(c, cfg).conversation.messages[0].content;
  const size_t list = u.find("Proposed and not measured yet");
  ASSERT_NE(list, std::string::npos);
  EXPECT_GT(list, u.find("| 1 | 1.000000 | kept | baseline |"));
  EXPECT_NE(u.find("- experiment 7 (running): rotary base 50000\n- experiment 8 (committed): wider mlp\n"),
            std::string::npos);
  EXPECT_EQ(in_flight_list(c.in_flight, 0), "");
  EXPECT_EQ(in_flight_list({}, 1000), "");
  // Room for the heading and one line (+2: each piece is rounded up on its own).
  const std::string one = in_flight_list(c.in_flight, estimate_tokens(in_flight_list({c.in_flight[0]}, 1000)) + 2);
  EXPECT_NE(one.find("experiment 7"), std::string::npos);
  EXPECT_NE(one.find("(1 more not shown)"), std::string::npos);
}

// A queued idea is its own section, before the history, after the stable prefix.
TEST(Prompt, AResearchersIdeaComesBeforeTheHistory) {
  ard::ProposalContext c;
  c.experiment_id = 5;
  c.history = {entry(1, 1.0, "kept", "baseline")};
  c.idea = "Try rotary embeddings with base 50000.";
  LlmConfig cfg;
  cfg.history_tokens = 1000;
  const Conversation conv = build_prompt(c, cfg).conversation;
  const std::string& u = conv.messages[0].content;
  const size_t idea = u.find("# The researcher's idea to try now\n\nTry rotary embeddings with base 50000.\n");
  ASSERT_NE(idea, std::string::npos);
  EXPECT_LT(idea, u.find("# Past experiments"));
  EXPECT_GE(idea, conv.messages[0].cache_prefix);
  c.idea.clear();
  EXPECT_EQ(build_prompt(c, cfg).conversation.messages[0].content.find("idea to try"), std::string::npos);
}

// A profile's focus is its own section, before the history, after the stable
// prefix: the profiles share the cached prefix.
TEST(Prompt, AProfilesFocusComesBeforeTheHistoryAfterTheStablePrefix) {
  ard::ProposalContext c;
  c.experiment_id = 5;
  c.history = {entry(1, 1.0, "kept", "baseline")};
  LlmConfig cfg;
  cfg.history_tokens = 1000;
  const Conversation plain = build_prompt(c, cfg).conversation;
  c.focus = "Architecture changes only.";
  const Conversation conv = build_prompt(c, cfg).conversation;
  const std::string& u = conv.messages[0].content;
  const size_t focus = u.find("# Your focus\n\nArchitecture changes only.\n");
  ASSERT_NE(focus, std::string::npos);
  EXPECT_LT(focus, u.find("# Past experiments"));
  EXPECT_GE(focus, conv.messages[0].cache_prefix);
  EXPECT_EQ(conv.messages[0].cache_prefix, plain.messages[0].cache_prefix);
  EXPECT_EQ(plain.messages[0].content.find("# Your focus"), std::string::npos);
}

// What was tried where follows the history, before the failure, after the stable prefix.
TEST(Prompt, TriedBeforeFollowsTheHistoryWithCountsRecordsAndTotals) {
  ard::ProposalContext c;
  c.experiment_id = 30;
  c.history = {entry(1, 1.0, "kept", "baseline")};
  c.tried = memory(2);
  c.last_failure = ard::Failure{"crash", "nan at step 10"};
  LlmConfig cfg;
  const Conversation conv = build_prompt(c, cfg).conversation;
  const std::string& u = conv.messages[0].content;
  const size_t at = u.find("# Tried before, by region");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GT(at, u.find("# Past experiments"));
  EXPECT_LT(at, u.find("# The last attempt failed"));
  EXPECT_GE(at, conv.messages[0].cache_prefix);
  EXPECT_NE(u.find("- trainer/train.cu: function_0: 2 tries (1 discarded, 1 kept)\n"
                   "  - #100 kept, Δσ +3.3, trainer/train.cu:10-20: raise the rate of function 0\n"
                   "  - #200 crash, Δσ unknown, trainer/train.cu:12: lower it again\n"
                   "- trainer/train.cu: function_1: 1 try (0 discarded, 1 kept)\n"),
            std::string::npos)
      << u.substr(at);
  EXPECT_NE(u.find("Totals: 3 experiments with a change: 1 discarded, 2 kept.\n"), std::string::npos);
  c.tried = {};
  EXPECT_EQ(build_prompt(c, cfg).conversation.messages[0].content.find("Tried before"), std::string::npos);
}

TEST(Prompt, AHigherIsBetterMetricIsWordedAsSuch) {
  ard::ProposalContext c;
  c.experiment_id = 3;
  c.program_md = "Raise the score.\n";
  c.files = {{"solver.py", "x = 1\n"}};
  c.metric = "score";
  c.goal = ard::MetricGoal::kMax;
  c.history = {entry(1, 0.5, "kept", "baseline"), entry(2, 0.7, "kept", "better"), entry(3, 0.6, "discarded", "worse")};
  c.tried = memory(1);
  LlmConfig cfg;
  cfg.history_tokens = 1000;
  const Conversation conv = build_prompt(c, cfg).conversation;
  EXPECT_NE(conv.system.find("kept only if it raises score."), std::string::npos);
  const std::string& u = conv.messages[0].content;
  EXPECT_NE(u.find("Best so far: experiment 2 with score 0.700000."), std::string::npos);
  EXPECT_NE(u.find("| id | score | status | description |"), std::string::npos);
  EXPECT_NE(u.find("Δσ is (its score − best) / σ"), std::string::npos);
  // The default: lower val_bpb is better, worded as it always was.
  c.metric = "val_bpb";
  c.goal = ard::MetricGoal::kMin;
  const Conversation low = build_prompt(c, cfg).conversation;
  EXPECT_NE(low.system.find("kept only if it lowers val_bpb."), std::string::npos);
  EXPECT_NE(low.messages[0].content.find("Best so far: experiment 1 with val_bpb 0.500000."), std::string::npos);
  EXPECT_NE(low.messages[0].content.find("Δσ is (best − its val_bpb) / σ"), std::string::npos);
}

TEST(Prompt, TriedBeforeFitsItsBudgetMostTriedFirst) {
  const ard::TriedMemory m = memory(40);
  const std::string all = tried_section(m, 100000);
  EXPECT_EQ(all.find("not shown"), std::string::npos);
  EXPECT_NE(all.find("function_39"), std::string::npos);
  for (long budget : {150L, 300L, 600L}) {
    const std::string t = tried_section(m, budget);
    SCOPED_TRACE(budget);
    EXPECT_LE(estimate_tokens(t), budget + 2);  // each piece is rounded up on its own
    EXPECT_NE(t.find("function_0: 40 tries"), std::string::npos);  // the most tried first
    EXPECT_EQ(t.find("function_39"), std::string::npos);
    EXPECT_NE(t.find("Totals: "), std::string::npos);
  }
  EXPECT_NE(tried_section(m, 600).find("less tried regions not shown)"), std::string::npos);
  EXPECT_EQ(tried_section(m, 60), "");  // not even the heading, one region and the totals
  EXPECT_EQ(tried_section({}, 100000), "");
}

TEST(Prompt, LastFailureIsExact) {
  ard::ProposalContext c;
  c.last_failure = ard::Failure{"build_fail", "train.cu:3:5: error: 'x' was not declared in this scope"};
  std::string u = build_prompt(c, LlmConfig{}).conversation.messages[0].content;
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

TEST(Prompt, HistoryMarksTheKeptChangesThatDoNotTransferToTheLargerScale) {
  std::vector<ard::HistoryEntry> h = {entry(1, 1.0, "kept", "baseline"), entry(2, 0.99, "kept", "wider mlp"),
                                      entry(3, 0.98, "kept", "deeper attention")};
  h[1].scale = "transfers at 2x";
  std::string t = history_table(h, 100000);
  EXPECT_NE(t.find("| 2 | 0.990000 | kept, transfers at 2x | wider mlp |"), std::string::npos) << t;
  EXPECT_EQ(t.find("do not build on them"), std::string::npos);  // no scale-bound change: nothing to say
  h[2].scale = "scale-bound at 2x";
  t = history_table(h, 100000);
  EXPECT_NE(t.find("| 3 | 0.980000 | kept, scale-bound at 2x | deeper attention |"), std::string::npos) << t;
  EXPECT_NE(t.find("Kept changes marked scale-bound helped this model but not the larger one"), std::string::npos);
  EXPECT_LT(t.find("Best so far"), t.find("Kept changes marked scale-bound"));
}

TEST(Prompt, RetryMessageCarriesTheError) {
  std::string m = retry_message("edit 2 (diff, a.cu): hunk 1: ...");
  EXPECT_NE(m.find("edit 2 (diff, a.cu): hunk 1: ..."), std::string::npos);
}

ard::ProposalContext big_tree() {
  ard::ProposalContext c;
  c.experiment_id = 9;
  c.program_md = "Lower val_bpb.\n";
  c.files = {{"trainer/train.cu", "// The training program.\n" + std::string(20000, 'x') + "\n"},
             {"trainer/model/small.cuh", "// A small header.\nint f();\n"},
             {"trainer/model/huge.cuh", "// A huge header.\n" + std::string(60000, 'h') + "\n"},
             {"trainer/model/kernels.cu", "// Kernels of small.cuh.\n" + std::string(30000, 'k') + "\n"}};
  for (int i = 1; i <= 300; ++i) c.history.push_back(entry(i, 1.0, "discarded", "idea number " + std::to_string(i)));
  c.last_failure = ard::Failure{"build_fail", std::string(50000, 'e')};
  return c;
}

LlmConfig small_config() {
  LlmConfig cfg;
  cfg.context_tokens = 14000;
  cfg.read_bytes = 8000;  // a reserve of 2256 tokens
  cfg.first_request_tokens = 12000;
  return cfg;
}

/// The surface of surface_bytes, 300 history rows, a memory of 40 regions.
ard::ProposalContext remembering_tree(size_t surface_bytes) {
  ard::ProposalContext c;
  c.experiment_id = 400;
  c.program_md = "Lower val_bpb.\n";
  c.files = {{"trainer/train.cu", "// The training program.\n" + std::string(surface_bytes, 'x') + "\n"}};
  for (int i = 1; i <= 300; ++i) c.history.push_back(entry(i, 1.0, "discarded", "idea number " + std::to_string(i)));
  c.tried = memory(40);
  return c;
}

// As the limit falls, the tried-before section goes first, before any history row.
TEST(Prompt, TriedBeforeIsCutFirstBeforeTheHistory) {
  ard::ProposalContext c = remembering_tree(20000);
  LlmConfig cfg = small_config();
  cfg.first_request_tokens = 100000;  // no goal: the limit alone
  const Prompt whole = build_prompt(c, cfg, 14000);
  ASSERT_TRUE(whole.cuts.empty()) << cut_note(whole, cfg);
  const std::string& all = whole.conversation.messages[0].content;
  ASSERT_NE(all.find("# Tried before"), std::string::npos);
  const auto rows = [](const std::string& u) { return std::count(u.begin(), u.end(), '\n'); };
  const long full_history = rows(all.substr(all.find("# Past experiments"), all.find("# Tried before") - all.find("# Past experiments")));
  bool tried_went = false, history_went = false;
  for (long limit = 14000; limit >= 8000; limit -= 50) {
    const Prompt p = build_prompt(c, cfg, limit);
    SCOPED_TRACE("limit " + std::to_string(limit) + ": " + cut_note(p, cfg));
    EXPECT_LE(estimate_tokens(render(p.conversation)), limit);
    const std::string& u = p.conversation.messages[0].content;
    const size_t tried = u.find("# Tried before");
    const size_t past = u.find("# Past experiments");
    const size_t end = tried != std::string::npos ? tried : u.find("Propose the next experiment");
    const long history = rows(u.substr(past, end - past));
    if (!p.cuts.empty()) EXPECT_EQ(p.cuts[0].rfind("the tried-before section", 0), 0u);
    if (history < full_history) {
      history_went = true;
      EXPECT_EQ(tried, std::string::npos) << "history rows cut while the tried-before section stays";
      EXPECT_GE(p.cuts.size(), 2u);
    }
    if (tried == std::string::npos) tried_went = true;
    else EXPECT_FALSE(tried_went) << "the section came back at a lower limit";
  }
  EXPECT_TRUE(tried_went);
  EXPECT_TRUE(history_went);
}

// The goal (first_request_tokens) neither cuts the tried-before section nor
// makes the history give way to it: without the section, the request fills
// the goal as it would without the memory.
TEST(Prompt, TriedBeforeIsOutsideTheFirstRequestGoal) {
  ard::ProposalContext c = remembering_tree(8000);
  c.last_failure = ard::Failure{"crash", std::string(50000, 'e')};  // fills its allowance
  LlmConfig cfg;
  cfg.first_request_tokens = 5000;  // the history gives way, but not down to its floor
  const Prompt p = build_prompt(c, cfg);
  EXPECT_TRUE(p.cuts.empty()) << cut_note(p, cfg);
  const std::string& u = p.conversation.messages[0].content;
  const size_t tried = u.find("# Tried before"), failed = u.find("# The last attempt failed");
  ASSERT_NE(tried, std::string::npos);
  const std::string section = u.substr(tried, failed - tried);
  EXPECT_GT(estimate_tokens(section), cfg.history_tokens / 2 - 60);  // whole
  const std::string history = u.substr(u.find("# Past experiments"), tried - u.find("# Past experiments"));
  EXPECT_NE(history.find("older experiments not shown"), std::string::npos);  // the goal cut the history...
  EXPECT_GT(std::count(history.begin(), history.end(), '\n'), 20);            // ...not to its floor
  const long without = estimate_tokens(render(p.conversation)) - estimate_tokens(section);
  EXPECT_LE(without, cfg.first_request_tokens);
  EXPECT_GE(without, cfg.first_request_tokens - 200) << "the history gave way to the section";
}

TEST(Prompt, LeavesTheReadReserveSurfaceWholeHeadersThatFitTheRestMapped) {
  ard::ProposalContext c = big_tree();
  LlmConfig cfg = small_config();
  Prompt p = build_prompt(c, cfg);
  EXPECT_EQ(p.limit, 14000);
  EXPECT_LE(estimate_tokens(render(p.conversation)), 14000 - cfg.read_reserve_tokens());
  EXPECT_EQ(p.whole, (std::vector<std::string>{"trainer/model/small.cuh", "trainer/train.cu"}));
  EXPECT_EQ(p.mapped, (std::vector<std::string>{"trainer/model/huge.cuh", "trainer/model/kernels.cu"}));
  EXPECT_TRUE(p.cuts.empty()) << cut_note(p, cfg);
  EXPECT_EQ(cut_note(p, cfg), "");
  const std::string& u = p.conversation.messages[0].content;
  EXPECT_NE(u.find("- trainer/model/kernels.cu (30026 bytes): Kernels of small.cuh."), std::string::npos);
  EXPECT_NE(u.find("characters cut"), std::string::npos);   // the failure, cut to its allowance
  EXPECT_NE(u.find("not shown)"), std::string::npos);       // the history, cut to its allowance
  // The stable part does not depend on the history or the failure.
  ard::ProposalContext later = c;
  later.history.push_back(entry(301, 0.9, "kept", "better"));
  later.last_failure.reset();
  later.tried = memory(5);
  Prompt q = build_prompt(later, cfg);
  size_t n = p.conversation.messages[0].cache_prefix;
  EXPECT_EQ(q.conversation.messages[0].cache_prefix, n);
  EXPECT_EQ(q.conversation.messages[0].content.substr(0, n), u.substr(0, n));
}

TEST(Prompt, HeadersStayWithinTheFirstRequestGoal) {
  ard::ProposalContext c = big_tree();
  LlmConfig cfg = small_config();
  cfg.context_tokens = 100000;  // room for everything, but the goal holds the headers back
  Prompt p = build_prompt(c, cfg);
  EXPECT_EQ(p.whole, (std::vector<std::string>{"trainer/model/small.cuh", "trainer/train.cu"}));
  EXPECT_LE(estimate_tokens(render(p.conversation)), cfg.first_request_tokens);
  cfg.first_request_tokens = 40000;
  EXPECT_EQ(build_prompt(c, cfg).whole,
            (std::vector<std::string>{"trainer/model/huge.cuh", "trainer/model/small.cuh", "trainer/train.cu"}));
}

// The cliff is gone: as the limit falls, the prompt gives up, in order, the
// tried-before section's room, older history rows, the failure's log, the map's descriptions, program.md's tail
// and the READ reserve; the research surface goes to the map only when all of
// them are spent, and the request always fits.
TEST(Prompt, DegradesInOrderTheResearchSurfaceLast) {
  ard::ProposalContext c = big_tree();
  c.program_md = "# Program\n";
  for (int i = 0; i < 150; ++i) c.program_md += "Line " + std::to_string(i) + " of the research program: try things.\n";
  LlmConfig cfg = small_config();
  const std::vector<std::string> order = {"the tried-before section", "older history rows", "the last failure's log",
                                          "the map's descriptions", "program.md's tail", "the READ reserve"};
  size_t most_cut = 0;
  bool surface_went = false;
  for (long limit = 14000; limit >= 2000; limit -= 250) {
    Prompt p = build_prompt(c, cfg, limit);
    SCOPED_TRACE("limit " + std::to_string(limit) + ": " + cut_note(p, cfg));
    EXPECT_EQ(p.limit, limit);
    long sent = estimate_tokens(render(p.conversation));
    bool surface_whole = std::find(p.whole.begin(), p.whole.end(), "trainer/train.cu") != p.whole.end();
    if (surface_whole) {
      ASSERT_FALSE(surface_went) << "the surface came back at a lower limit";
      EXPECT_LE(sent, limit);
      // The cuts so far are a prefix of the order, each named once.
      ASSERT_LE(p.cuts.size(), order.size());
      for (size_t k = 0; k < p.cuts.size(); ++k) EXPECT_EQ(p.cuts[k].rfind(order[k], 0), 0u) << p.cuts[k];
      most_cut = std::max(most_cut, p.cuts.size());
    } else {
      // Moved only once everything before it was cut.
      if (!surface_went) EXPECT_EQ(most_cut, order.size());
      surface_went = true;
      ASSERT_FALSE(p.cuts.empty());
      EXPECT_EQ(p.cuts[0], "trainer/train.cu in the map");
    }
    const std::string& u = p.conversation.messages[0].content;
    bool program_cut = std::any_of(p.cuts.begin(), p.cuts.end(), [](auto& x) { return x.rfind("program.md", 0) == 0; });
    EXPECT_EQ(u.find("[program.md cut here: ") != std::string::npos, program_cut);
    EXPECT_NE(u.find("Line 0 of the research program"), std::string::npos);  // its opening always stays
    EXPECT_NE(u.find("Propose the next experiment"), std::string::npos);
  }
  EXPECT_TRUE(surface_went);
  Prompt low = build_prompt(c, cfg, 9000);
  EXPECT_EQ(cut_note(low, cfg).rfind("prompt within 9000 tokens (lowered from llm.context_tokens 14000 by a server's "
                                     "refusal): cut the tried-before section (within 0 tokens), older history rows",
                                     0),
            0u)
      << cut_note(low, cfg);
}

TEST(Prompt, ReadReplyGivesFilesAndRangesWithinItsLimit) {
  std::vector<ard::EditableFile> files = {{"a.cu", "one\ntwo\nthree\nfour\n"}, {"big.cu", std::string(5000, 'b')}};
  std::string r = read_reply({{"a.cu", 2, 3}, {"nope.cu"}, {"big.cu"}}, files, 1000);
  EXPECT_NE(r.find("## a.cu lines 2-3 of 4\n\n```\ntwo\nthree\n```"), std::string::npos);
  EXPECT_NE(r.find("## nope.cu\n\nNot an editable file"), std::string::npos);
  EXPECT_NE(r.find("## big.cu\n\nNot shown: 5000 bytes"), std::string::npos);
  // The limit counts file text: a file of exactly that size is shown whole.
  std::string whole = read_reply({{"big.cu"}}, files, 5000);
  EXPECT_NE(whole.find("## big.cu\n\n```\n" + std::string(5000, 'b')), std::string::npos);
}

}  // namespace
}  // namespace llm
