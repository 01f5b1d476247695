// Tests of status, show and export rendering on a store filled by hand.
#include "daemon/cli/report.h"

#include <gmock/gmock.h>

#include "daemon/config.h"
#include "daemon/util/clock.h"
#include "testing/ladder_rows.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kBase = "1111111111111111111111111111111111111111";
const std::string kTwo = "2222222222222222222222222222222222222222";

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store.add_run("t", "autoresearch/t", kBase);
    store.put_program("p1", "# program\n");
    int64_t a = store.create_experiment("t", true, kBase, "p1", "baseline", std::nullopt);
    store.set_proposal(a, "baseline");
    store.set_commit(a, kBase, "");
    store.set_metrics(a, {1.0, 2048.0, 30.0, "{}"});
    store.finish(a, status::kKept, "", "");
    int64_t b = store.create_experiment("t", false, kBase, "p1", "scripted", std::nullopt);
    store.set_proposal(b, "wider\tmlp");
    store.set_commit(b, kTwo, "+wider\n");
    store.set_metrics(b, {1.25, 1024.0, 30.0, "{}"});
    store.add_attempt(b, 1, {"the prompt", "the response", ""});
    store.finish(b, status::kDiscarded, "no improvement", "tail line\n");
    int64_t c = store.create_experiment("t", false, kBase, "p1", "scripted", std::nullopt);
    store.set_proposal(c, "touch harness");
    store.finish(c, status::kPatchRejected, "edit touches x, which is not editable", "");
    running = store.create_experiment("t", false, kBase, "p1", "scripted", std::nullopt);
    store.set_proposal(running, "deeper");
    store.set_stage(running, ExperimentState::kRunning, "train", 1000.0, 1720.0, 1420.0);
  }
  testing::TempDir dir;
  Store store{(dir / "results.db").string()};
  int64_t running = 0;
};

TEST_F(ReportTest, TsvHasTheFiveColumnsAndOnlyCommittedFinishedRows) {
  EXPECT_EQ(render_tsv(store, "t"),
            "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n"
            "1111111\t1.000000\t2.0\tkeep\tbaseline\n"
            "2222222\t1.250000\t1.0\tdiscard\twider mlp\n");
  EXPECT_EQ(render_tsv(store, "other"), "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n");
}

// A duplicate has a commit but never ran: results.tsv leaves it out.
TEST_F(ReportTest, TsvLeavesDuplicatesOut) {
  const std::string before = render_tsv(store, "t");
  int64_t dup = store.create_experiment("t", false, kBase, "p1", "scripted", std::nullopt);
  store.set_proposal(dup, "wider mlp, again");
  store.set_commit(dup, std::string(40, '3'), "+wider\n");
  store.finish(dup, status::kDuplicate, "repeats #2 (discarded: wider mlp), similarity 1.00 (the same change)", "");
  EXPECT_EQ(render_tsv(store, "t"), before);
}

TEST_F(ReportTest, StatusShowsHistoryBestThroughputAndTheRunningStage) {
  std::string s = render_status(store, "t", 4242, 1030.0);
  EXPECT_THAT(s, HasSubstr("running (pid 4242)"));
  EXPECT_THAT(s, HasSubstr("   2  2222222   1.250000  +0.250000  discarded"));
  EXPECT_THAT(s, HasSubstr("wider mlp"));
  EXPECT_THAT(s, HasSubstr("best: 1.000000 at 1111111 (#1 baseline)"));
  EXPECT_THAT(s, HasSubstr("experiments: 3 finished"));
  EXPECT_THAT(s, HasSubstr("llm: 0 calls"));
  EXPECT_THAT(s, HasSubstr("(cache hit 0.0%)"));
  EXPECT_THAT(s, HasSubstr("now: #4 running stage train, 30.0s elapsed, expected end"));
  EXPECT_THAT(s, HasSubstr("(timeout at"));
  EXPECT_THAT(s, HasSubstr("  val_bpb      delta  status"));
  EXPECT_THAT(s, Not(HasSubstr("higher is better")));
  std::string dead = render_status(store, "t", std::nullopt, 1030.0);
  EXPECT_THAT(dead, HasSubstr("not running"));
  EXPECT_THAT(dead, HasSubstr("next start marks it interrupted"));
}

TEST_F(ReportTest, StatusNamesTheMetricAndSaysWhenHigherIsBetter) {
  const std::string s = render_status(store, "t", 4242, 1030.0, {}, {"score", MetricGoal::kMax});
  EXPECT_THAT(s, HasSubstr("    score      delta  status"));
  EXPECT_THAT(s, HasSubstr("best: 1.000000 at 1111111 (#1 baseline), score: higher is better\n"));
}

// The research memory's most tried regions, at most five, with their keep
// rates; none before a finished change names a file.
TEST_F(ReportTest, StatusShowsTheMostTriedRegionsAndTheirKeepRates) {
  EXPECT_THAT(render_status(store, "t", std::nullopt, 1030.0), Not(HasSubstr("most tried regions")));
  auto finished = [&](const std::string& function, const std::string& state) {
    const int64_t id = store.create_experiment("t", false, kBase, "p1", "scripted", std::nullopt);
    store.set_proposal(id, "change in " + function);
    store.set_commit(id, kTwo, "--- a/trainer/train.cu\n+++ b/trainer/train.cu\n@@ -10,1 +10,1 @@ void " + function +
                                   "() {\n-  x = 1;\n+  x = 2;\n");
    store.finish(id, state, "", "");
  };
  for (const char* state : {status::kKept, status::kDiscarded, status::kDiscarded, status::kCrash}) finished("step", state);
  finished("adam", status::kKept);
  finished("adam", status::kDuplicate);
  for (const char* f : {"f1", "f2", "f3", "f4"}) finished(f, status::kBuildFail);
  const std::string s = render_status(store, "t", std::nullopt, 1030.0);
  EXPECT_THAT(s, HasSubstr("most tried regions (tries, kept, keep rate):\n"
                           "     4     1   25%  trainer/train.cu: step\n"
                           "     2     1   50%  trainer/train.cu: adam\n"
                           "     1     0    0%  trainer/train.cu: f4\n"));
  EXPECT_THAT(s, HasSubstr("     1     0    0%  trainer/train.cu: f2\n  (1 more region)\n"));
  EXPECT_THAT(s, Not(HasSubstr("trainer/train.cu: f1\n")));
}

// A stage without an estimate of its own (a build: its expected end is its
// timeout) shows its timeout only; a candidate waiting for a decision shows no
// elapsed time and no ends.
TEST_F(ReportTest, NoExpectedEndWithoutAnEstimateAndNoneWhileWaiting) {
  int64_t b = store.create_experiment("t", false, kBase, "p1", "scripted", std::nullopt);
  store.set_proposal(b, "wider");
  store.set_stage(b, ExperimentState::kBuilding, "build", 1000.0, 2800.0, 2800.0);
  std::string s = render_status(store, "t", 4242, 1030.0);
  EXPECT_THAT(s, HasSubstr("  build: #5 building stage build, 30.0s elapsed, timeout at "));
  EXPECT_THAT(s, Not(HasSubstr("#5 building stage build, 30.0s elapsed, expected end")));
  EXPECT_THAT(s, HasSubstr("now: #4 running stage train, 30.0s elapsed, expected end "));
  store.set_state(running, ExperimentState::kEvaluated);
  s = render_status(store, "t", 4242, 1030.0);
  EXPECT_THAT(s, HasSubstr("now: #4 evaluated stage train\n"));
}

TEST_F(ReportTest, ATrainingShareAboveTheWallTimeIsClampedAndSaysSo) {
  int64_t session = store.begin_session("t", 4242);
  double start = store.sessions("t").front().started_at;
  (void)session;
  // 60 s of reported training (two experiments of 30 s) in 10 s of wall time.
  StatusFigures f = status_figures(store, "t", store.experiments("t"), true, start + 10);
  EXPECT_DOUBLE_EQ(f.training_share, 1.0);
  EXPECT_TRUE(f.training_share_clamped);
  EXPECT_THAT(render_status(store, "t", 4242, start + 10),
              HasSubstr("training share of wall time: 100.0% (clamped: the trainers reported more training time than "
                        "that)"));
  // Within the wall time: as reported, not clamped.
  StatusFigures later = status_figures(store, "t", store.experiments("t"), true, start + 600);
  EXPECT_DOUBLE_EQ(later.training_share, 0.1);
  EXPECT_FALSE(later.training_share_clamped);
  EXPECT_THAT(render_status(store, "t", 4242, start + 600), Not(HasSubstr("clamped")));
}

TEST_F(ReportTest, AnUnknownTagIsOneLineNamingTheTagsThereAre) {
  EXPECT_EQ(unknown_tag(store, "t"), std::nullopt);
  EXPECT_EQ(unknown_tag(store, "nope"), "no experiments with tag nope in this repo's results (the tag: t)");
  store.add_run("other", "autoresearch/other", kBase);
  store.create_experiment("other", false, kBase, "p1", "scripted", std::nullopt);
  EXPECT_EQ(unknown_tag(store, "nope"), "no experiments with tag nope in this repo's results (tags: other, t)");
  store.add_run("fresh", "autoresearch/fresh", kBase);  // started, no experiment yet: known
  EXPECT_EQ(unknown_tag(store, "fresh"), std::nullopt);
  testing::TempDir empty;
  Store none((empty / "results.db").string());
  EXPECT_EQ(unknown_tag(none, "main"), "no experiments with tag main in this repo's results (no tag has any yet)");
}

// Before the first experiment, the data step builds the trainer and runs
// prepare (minutes on a cold GPU box): status says so instead of "idle".
TEST_F(ReportTest, DuringTheDataStepStatusSaysWhatItRuns) {
  store.add_run("fresh", "autoresearch/fresh", kBase);
  const double now = now_seconds();
  EXPECT_THAT(render_status(store, "fresh", 4242, now), HasSubstr("now: idle"));
  int64_t build = store.add_process_group(99999, 1, "data-build");
  EXPECT_THAT(render_status(store, "fresh", 4242, now + 77),
              HasSubstr("now: the data step: building the trainer at the branch tip (1m"));
  store.end_process_group(build);
  store.add_process_group(99998, 1, "prepare");
  EXPECT_THAT(render_status(store, "fresh", 4242, now + 90), HasSubstr("now: the data step: preparing the dataset"));
  EXPECT_THAT(render_status(store, "fresh", std::nullopt, now + 90), HasSubstr("now: nothing"));  // no daemon
}

TEST_F(ReportTest, StatusCountsTheLlmCallsOfItsTagOnly) {
  store.add_run("other", "autoresearch/other", kBase);
  int64_t o = store.create_experiment("other", false, kBase, "p1", "llm", std::nullopt);
  store.record({o, 1, "openai", "m", 1.0, 1000, 100, 0, 0, "ok", 4.0, ""});
  store.record({running, 1, "openai", "m", 1.0, 10, 5, 0, 0, "ok", 0.5, ""});
  EXPECT_THAT(render_status(store, "t", 1, 1030.0), HasSubstr("llm: 1 calls, 10 input + 0 cached + 0 cache-write + 5 output tokens (cache hit 0.0%), $0.5000"));
  EXPECT_THAT(render_status(store, "other", 1, 1030.0), HasSubstr("llm: 1 calls, 1000 input"));
}

// A prompt cut to fit, a limit a server taught, calls with estimated usage:
// status says each.
TEST_F(ReportTest, StatusShowsACutPromptALearntLimitAndEstimatedUsage) {
  EXPECT_THAT(render_status(store, "t", 1, 1030.0), Not(HasSubstr("llm prompt within")));
  int64_t e = store.create_experiment("t", false, kBase, "p1", "llm", std::nullopt);
  store.add_attempt(e, 1,
                    {"[prompt within 24000 tokens (lowered from llm.context_tokens 32000 by a server's refusal): cut "
                     "older history rows (history within 400 tokens) after: HTTP 413]\n[system]\nYou are...",
                     "DESCRIPTION: x", ""});
  store.learn_limit("openai http://h/v1 m", 24000, "HTTP 413 from openai: the request is too long");
  llm::CallRecord guessed{e, 1, "openai", "m", 1.0, 50, 5, 0, 0, "ok", 0.1, ""};
  guessed.usage_estimated = true;
  store.record(guessed);
  std::string s = render_status(store, "t", 1, 1030.0);
  EXPECT_THAT(s, HasSubstr("\nllm prompt within 24000 tokens (lowered from llm.context_tokens 32000 by a server's "
                           "refusal): cut older history rows (history within 400 tokens) after: HTTP 413\n"));
  EXPECT_THAT(s, HasSubstr("llm limit: openai http://h/v1 m: prompts within 24000 tokens since "));
  EXPECT_THAT(s, HasSubstr("(1 call with estimated usage: the server sent none)"));
  // A later whole prompt: nothing to say.
  int64_t f = store.create_experiment("t", false, kBase, "p1", "llm", std::nullopt);
  store.add_attempt(f, 1, {"[system]\nYou are...", "DESCRIPTION: y", ""});
  EXPECT_THAT(render_status(store, "t", 1, 1030.0), Not(HasSubstr("llm prompt within")));
}

TEST_F(ReportTest, ProposerErrorsGetADescription) {
  int64_t e = store.create_experiment("t", false, kBase, "p1", "llm", std::nullopt);
  store.finish(e, status::kProposerError,
               "the model's answer had no edit block after 3 rounds of asking again with the error\nsecond line", "");
  auto row = *store.experiment(e);
  EXPECT_EQ(display_description(row), "(proposer error: the model's answer had no edit block after 3 rounds of...)");
  EXPECT_THAT(render_status(store, "t", 1, 1030.0), HasSubstr("(proposer error: the model's answer"));
  EXPECT_THAT(*render_show(store, e), HasSubstr("description:  (proposer error: the model's"));
  EXPECT_EQ(display_description(*store.experiment(2)), "wider\tmlp");  // others keep their own
}

TEST_F(ReportTest, ShowReadsTheLogTailFromTheLogFileWhenTheRowHasNone) {
  store.finish(running, status::kInterrupted, "the daemon stopped while the experiment was running", "");
  testing::write_file(dir / "logs/4-check.log", "check output\n");
  testing::write_file(dir / "logs/4-train.log", "step 1\nstep 2\n");
  testing::write_file(dir / "logs/40-train.log", "not this one\n");
  std::filesystem::last_write_time(dir / "logs/4-check.log",
                                   std::filesystem::last_write_time(dir / "logs/4-train.log") - std::chrono::seconds(5));
  auto s = render_show(store, running, dir / "logs");
  ASSERT_TRUE(s);
  EXPECT_THAT(*s, HasSubstr("--- log tail\nstep 1\nstep 2\n"));
  EXPECT_THAT(*s, ::testing::Not(HasSubstr("not this one")));
}

TEST_F(ReportTest, ShowPrintsEverythingStored) {
  auto s = render_show(store, 2);
  ASSERT_TRUE(s);
  EXPECT_THAT(*s, HasSubstr("status:       discarded"));
  EXPECT_THAT(*s, HasSubstr("commit:       " + kTwo));
  EXPECT_THAT(*s, HasSubstr("prompt:\nthe prompt\n"));
  EXPECT_THAT(*s, HasSubstr("response:\nthe response\n"));
  EXPECT_THAT(*s, HasSubstr("--- diff\n+wider\n"));
  EXPECT_THAT(*s, HasSubstr("--- log tail\ntail line\n"));
  EXPECT_THAT(*s, HasSubstr("--- program.md (p1)\n# program\n"));
  EXPECT_THAT(*s, HasSubstr("error:        no improvement"));
  EXPECT_FALSE(render_show(store, 99));
}

// The default ladder (rung 1 "2x"): status has the promotion ladder with
// every kept change's label, show the experiment's label with its evidence
// and its runs at the rung, which leave its own mean (rung 0) alone.
TEST_F(ReportTest, StatusAndShowPrintThePromotionLadderAndItsLabels) {
  const testing::LadderRows ladder = testing::add_ladder_rows(store, "lad");
  const LadderSettings settings = ladder_settings(parse_config("", dir.path()));
  const std::string status = render_status(store, "lad", std::nullopt, 5000.0, {}, {}, settings);
  EXPECT_THAT(status, HasSubstr("promotion ladder (a round every 5 kept changes, on_fail label): GPU time at rungs above "
                                "0 87.3% of 25% allowed (promote.max_share)\n"
                                "  2x (rung 1): depth_scale 2, budget 600 s; reference #" +
                                std::to_string(ladder.wider) + " a200000; σ at 2x = 0.001414 (df 4)\n"));
  EXPECT_THAT(status, HasSubstr("a100000  transfers at 2x    lower lr\n"));
  EXPECT_THAT(status, HasSubstr("a200000  scale-bound at 2x  wider mlp\n"));
  EXPECT_THAT(status, HasSubstr("a300000  untested at 2x     deeper\n"));
  EXPECT_THAT(render_status(store, "lad", std::nullopt, 5000.0), Not(HasSubstr("promotion ladder")));
  // The mean ± spread column counts rung 0 only.
  EXPECT_THAT(status, HasSubstr("0.990000 ± 0.000000 (1)"));

  const std::string show = *render_show(store, ladder.lower_lr, {}, settings);
  EXPECT_THAT(show, HasSubstr("runs:         0.990000 ± 0.000000 (1)\n"));
  EXPECT_THAT(show, HasSubstr("  promote    gpu 0   scale 1.0000 (calibration 0) rung 1 val_bpb 0.940000 ok a100000\n"));
  EXPECT_THAT(show, HasSubstr("at larger scales:\n  2x (rung 1): transfers at 2x, decided "));
  EXPECT_THAT(show, HasSubstr("the change 0.941000 (n 2) against the commit before it 0.951000 (n 2): Δ = +0.010000, "
                              "σ at the rung 0.001414, against its gain at rung 0 g = +0.012000: λ = +24.01; trials "));
  EXPECT_THAT(show, HasSubstr("    its runs at 2x: 0.941000 ± 0.001414 (2); trials "));
  EXPECT_THAT(*render_show(store, ladder.discarded, {}, settings), Not(HasSubstr("at larger scales")));
}

TEST(FormatDuration, PicksTheUnit) {
  EXPECT_EQ(format_duration(12.34), "12.3s");
  EXPECT_EQ(format_duration(245), "4m05s");
  EXPECT_EQ(format_duration(3720), "1h02m");
}

}  // namespace
TEST(Report, LlmLineAndCallsShowCacheRetriesAndPartialText) {
  LlmTotals t{3, 100, 40, 800, 100, 0.1234};
  EXPECT_EQ(llm_status_line(t),
            "llm: 3 calls, 100 input + 800 cached + 100 cache-write + 40 output tokens (cache hit 80.0%), $0.1234\n");
  LlmCallRow broken;
  broken.attempt = 1;
  broken.status = "broken_stream";
  broken.error = "the stream ended before its last event";
  broken.partial_text = "DESCRIPTION: half";
  broken.wait_s = 2.5;
  LlmCallRow ok;
  ok.attempt = 1;
  ok.retry = 1;
  ok.status = "ok";
  std::string s = render_llm_calls({broken, ok});
  EXPECT_THAT(s, HasSubstr("round 1 call 1: broken_stream"));
  EXPECT_THAT(s, HasSubstr("; waited 2.5s before the next call\npartial text (17 bytes):\nDESCRIPTION: half\n"));
  EXPECT_THAT(s, HasSubstr("round 1 call 2: ok"));
  EXPECT_THAT(s, Not(HasSubstr("estimated")));
  ok.usage_estimated = true;
  EXPECT_THAT(render_llm_calls({ok}), HasSubstr(" out (estimated: no usage sent), $"));
}

}  // namespace ard
