// Tests of the results store: migrations, experiment lifecycle, programs,
// attempts, LLM calls, sessions, and reads from a second connection (WAL).
#include "daemon/store/store.h"
#include "daemon/util/clock.h"

#include "daemon/schema_sql.h"  // kSchemaSql: the schema a test migrates from

#include <chrono>
#include <thread>

#include "testing/test_util.h"

namespace ard {
namespace {

constexpr const char* kBase = "1111111111111111111111111111111111111111";

TEST(Store, AppliesSchemaOnceAndUsesWal) {
  testing::TempDir dir;
  std::string path = (dir / "results.db").string();
  {
    Store store(path);
    EXPECT_EQ(store.version(), Store::latest_version());
    EXPECT_GE(Store::latest_version(), 1);
  }
  Store again(path);  // migrating an up-to-date database is a no-op
  EXPECT_EQ(again.version(), Store::latest_version());
  Database raw(path);
  auto s = raw.prepare("PRAGMA journal_mode");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.text(0), "wal");
}

TEST(Store, RefusesANewerSchema) {
  testing::TempDir dir;
  std::string path = (dir / "results.db").string();
  { Database raw(path); raw.exec("PRAGMA user_version=999"); }
  try {
    Store store(path);
    FAIL() << "no throw";
  } catch (const SqliteError& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
}

TEST(Store, ExperimentMovesThroughItsStates) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  EXPECT_EQ(store.run_base("t"), std::string(kBase));
  EXPECT_FALSE(store.run_base("other"));
  store.put_program("abc", "# program");
  store.put_program("abc", "# program");  // stored once
  EXPECT_EQ(store.program_count(), 1);

  int64_t id = store.create_experiment("t", false, kBase, "abc", "scripted", std::nullopt);
  EXPECT_EQ(store.experiment(id)->state, "proposing");
  EXPECT_EQ(store.unfinished().size(), 1u);
  store.set_proposal(id, "raise lr");
  store.set_commit(id, "2222", "diff --git");
  store.set_stage(id, ExperimentState::kRunning, "train", 10.0, 20.0, 15.0);
  store.set_pgid(id, 4242);
  auto mid = store.experiment(id);
  EXPECT_EQ(mid->state, "running");
  EXPECT_EQ(mid->stage, "train");
  EXPECT_EQ(mid->pgid, 4242);
  EXPECT_EQ(mid->commit, "2222");
  store.set_metrics(id, {0.99, 1024.0, 3.0, R"({"val_bpb":0.99})"});
  store.finish(id, status::kKept, "", "tail");
  auto done = store.experiment(id);
  EXPECT_EQ(done->state, "kept");
  EXPECT_EQ(done->description, "raise lr");
  EXPECT_DOUBLE_EQ(*done->val_bpb, 0.99);
  EXPECT_FALSE(done->pgid);
  EXPECT_TRUE(done->ended_at);
  EXPECT_TRUE(store.unfinished().empty());
  EXPECT_EQ(store.best("t")->id, id);
  EXPECT_FALSE(store.best("other"));
}

// Tries queue per tag in order, and remember the experiment that took each.
TEST(Store, TriesQueueInOrderAndRecordTheExperimentThatTookThem) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  const int64_t first = store.add_try("t", std::string(40, 'b'), kBase, "raise lr");
  store.add_try("t", std::string(40, 'c'), kBase, "wider mlp");
  store.add_try("other", std::string(40, 'd'), kBase, "elsewhere");
  auto tries = store.tries("t");
  ASSERT_EQ(tries.size(), 2u);
  EXPECT_EQ(tries[0].id, first);
  EXPECT_EQ(tries[0].commit, std::string(40, 'b'));
  EXPECT_EQ(tries[0].parent, kBase);
  EXPECT_EQ(tries[0].description, "raise lr");
  EXPECT_FALSE(tries[0].experiment);
  const int64_t e = store.create_experiment("t", false, kBase, "", "user", std::nullopt);
  store.take_try(first, e);
  EXPECT_EQ(store.tries("t")[0].experiment, e);
  EXPECT_FALSE(store.tries("t")[1].experiment);
}

// An idea is open until one of its experiments makes a change; one in
// flight holds it; three that made none give it up. Resumed rows keep their count.
TEST(Store, IdeasStayOpenUntilAnExperimentMakesAChange) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  const int64_t idea = store.add_idea("t", "try rotary embeddings", "cli");
  EXPECT_TRUE(store.ideas("other").empty());
  auto ideas = store.ideas("t");
  ASSERT_EQ(ideas.size(), 1u);
  EXPECT_EQ(ideas[0].text, "try rotary embeddings");
  EXPECT_EQ(ideas[0].source, "cli");
  EXPECT_TRUE(idea_open(ideas[0]));
  EXPECT_EQ(idea_outcome(ideas[0]), "waiting for the next proposal");

  // A proposal that made no change (a proposer error): asked again.
  int64_t e1 = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
  store.set_experiment_idea(e1, idea);
  EXPECT_EQ(store.experiment(e1)->idea_id, idea);
  EXPECT_FALSE(idea_open(store.ideas("t")[0]));  // in flight
  EXPECT_EQ(idea_outcome(store.ideas("t")[0]), "#" + std::to_string(e1) + " proposing");
  store.finish(e1, status::kProposerError, "no edit block", "");
  EXPECT_TRUE(idea_open(store.ideas("t")[0]));
  EXPECT_EQ(idea_outcome(store.ideas("t")[0]), "asked again (1 proposal(s) made no change of it)");

  // One that committed: the idea is tried, whatever became of the experiment.
  int64_t e2 = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
  store.set_experiment_idea(e2, idea);
  store.set_commit(e2, "2222", "diff");
  store.finish(e2, status::kDiscarded, "", "");
  EXPECT_FALSE(idea_open(store.ideas("t")[0]));
  EXPECT_EQ(idea_outcome(store.ideas("t")[0]), "#" + std::to_string(e2) + " discarded");

  // Three proposals without a change give a second idea up.
  const int64_t hard = store.add_idea("t", "something no model can write", "cli");
  for (int i = 0; i < kIdeaAttempts; ++i) {
    int64_t e = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
    store.set_experiment_idea(e, hard);
    store.finish(e, status::kPatchRejected, "the edit changes nothing", "");
  }
  ideas = store.ideas("t");
  ASSERT_EQ(ideas.size(), 2u);
  EXPECT_EQ(ideas[1].id, hard);
  EXPECT_FALSE(idea_open(ideas[1]));
  EXPECT_EQ(idea_outcome(ideas[1]), "given up: 3 proposal(s) made no change of it");
}

TEST(Store, KeepsAttemptsAndLlmCalls) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  int64_t id = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
  store.add_attempt(id, 1, {"prompt one", "bad", "no edit block"});
  store.add_attempt(id, 2, {"prompt two", "good", ""});
  auto a = store.attempts(id);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].error, "no edit block");
  EXPECT_EQ(a[1].response, "good");

  llm::CallRecord c;
  c.experiment_id = id;
  c.attempt = 1;
  c.provider = "openai";
  c.model = "m";
  c.input_tokens = 100;
  c.output_tokens = 20;
  c.cost_usd = 0.5;
  c.status = "ok";
  store.record(c);
  store.record(c);
  auto t = store.llm_totals();
  EXPECT_EQ(t.calls, 2);
  EXPECT_EQ(t.input_tokens, 200);
  EXPECT_EQ(t.output_tokens, 40);
  EXPECT_DOUBLE_EQ(t.cost_usd, 1.0);
}

TEST(Store, LlmTotalsSpendAndCallsArePerTag) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("mine", "autoresearch/mine", kBase);
  store.add_run("other", "autoresearch/other", kBase);
  int64_t mine = store.create_experiment("mine", false, kBase, "", "llm", std::nullopt);
  int64_t other = store.create_experiment("other", false, kBase, "", "llm", std::nullopt);
  llm::CallRecord c;
  c.experiment_id = mine;
  c.attempt = 1;
  c.provider = "anthropic";
  c.model = "m";
  c.input_tokens = 100;
  c.cache_read_tokens = 800;
  c.cache_write_tokens = 100;
  c.output_tokens = 50;
  c.cost_usd = 0.25;
  c.status = "broken_stream";
  c.error = "the stream ended";
  c.response = "DESCRIPTION: half";
  c.wait_s = 2.5;
  store.record(c);
  c.experiment_id = other;
  c.cost_usd = 9;
  store.record(c);

  LlmTotals t = store.llm_totals("mine");
  EXPECT_EQ(t.calls, 1);
  EXPECT_EQ(t.cache_read_tokens, 800);
  EXPECT_EQ(t.cache_write_tokens, 100);
  EXPECT_DOUBLE_EQ(t.cost_usd, 0.25);
  EXPECT_DOUBLE_EQ(t.cache_hit_rate(), 0.8);
  EXPECT_EQ(store.llm_totals().calls, 2);  // every tag

  llm::Spend s = store.spend("mine");
  EXPECT_DOUBLE_EQ(s.cost_usd, 0.25);
  ASSERT_EQ(s.call_times.size(), 1u);
  EXPECT_GT(s.call_times[0], now_seconds() - 60);
  EXPECT_DOUBLE_EQ(store.spend("none").cost_usd, 0);

  auto rows = store.llm_calls(mine);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].partial_text, "DESCRIPTION: half");
  EXPECT_DOUBLE_EQ(rows[0].wait_s, 2.5);
  EXPECT_EQ(rows[0].status, "broken_stream");
}

TEST(Store, DeletesOnlyExperimentsThatRecordedNothing) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  int64_t empty = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
  int64_t asked = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
  store.add_attempt(asked, 1, {"p", "", "http 503"});
  int64_t called = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
  llm::CallRecord c;
  c.experiment_id = called;
  store.record(c);
  int64_t done = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
  store.set_proposal(done, "x");
  EXPECT_TRUE(store.delete_if_empty(empty));
  EXPECT_FALSE(store.delete_if_empty(asked));
  EXPECT_FALSE(store.delete_if_empty(called));
  EXPECT_FALSE(store.delete_if_empty(done));
  EXPECT_EQ(store.experiments("t").size(), 3u);
}

TEST(Store, SecondConnectionReadsWhileWriterHoldsATransaction) {
  testing::TempDir dir;
  std::string path = (dir / "results.db").string();
  Store writer(path);
  writer.add_run("t", "autoresearch/t", kBase);
  writer.create_experiment("t", true, kBase, "", "baseline", std::nullopt);
  Database raw(path);
  raw.exec("BEGIN IMMEDIATE");
  raw.exec("INSERT INTO runs VALUES('u','b','c',0)");
  Store reader(path);  // WAL: readers are not blocked by the open write transaction
  EXPECT_EQ(reader.experiments("t").size(), 1u);
  raw.exec("ROLLBACK");
}

TEST(Store, ClosesSessionsLeftOpenByAKilledDaemon) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  int64_t a = store.begin_session("t", 100);
  store.set_session_data_dir(a, "/data");
  EXPECT_EQ(store.close_dead_sessions(), 1);
  auto s = store.last_session();
  EXPECT_EQ(s->end_reason, "killed");
  EXPECT_EQ(s->data_dir, "/data");
  int64_t b = store.begin_session("t", 101);
  store.end_session(b, "stopped");
  EXPECT_EQ(store.close_dead_sessions(), 0);
  EXPECT_EQ(store.last_session()->pid, 101);
}

TEST(Store, AKilledDaemonsRowsEndWhenItWasLastKnownToRun) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  int64_t session = store.begin_session("t", 100);
  EXPECT_FALSE(store.dead_sessions_alive_at());  // never written
  int64_t id = store.create_experiment("t", true, kBase, "", "baseline", std::nullopt);
  int64_t trial = store.begin_trial(id, "t", "0", "baseline", kBase);
  (void)trial;
  store.set_session_alive(session);
  const double alive = now_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the daemon is killed; the restart comes later
  auto at = store.dead_sessions_alive_at();
  ASSERT_TRUE(at);
  EXPECT_NEAR(*at, alive, 0.1);
  EXPECT_EQ(store.close_dead_sessions(), 1);
  store.close_open_trials(at);
  store.finish(id, status::kInterrupted, "the daemon stopped", "", at);
  EXPECT_EQ(*store.last_session()->ended_at, *at);
  EXPECT_EQ(*store.experiment(id)->ended_at, *at);
  EXPECT_EQ(*store.trials("t")[0].ended_at, *at);
  // Never before the row started.
  int64_t later = store.create_experiment("t", false, kBase, "", "scripted", std::nullopt);
  store.finish(later, status::kInterrupted, "", "", *at - 100);
  EXPECT_EQ(*store.experiment(later)->ended_at, store.experiment(later)->started_at);
}

TEST(Store, RestartClockMovesTheStartToNow) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  int64_t id = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
  double first = store.experiment(id)->started_at;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  store.restart_clock(id);
  EXPECT_GE(store.experiment(id)->started_at, first + 0.19);
}

TEST(Store, TrialsRecordTheirSlurmJobAndOpenOnesAreFound) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  store.put_program("abc", "# program");
  int64_t e = store.create_experiment("t", false, kBase, "abc", "offline", std::nullopt);
  int64_t local = store.begin_trial(e, "t", "0", "candidate", kBase);
  int64_t job = store.begin_trial(e, "t", "slurm:1", "candidate", kBase);
  int64_t done = store.begin_trial(e, "t", "slurm:2", "candidate", kBase);
  store.set_trial_job(job, "1234", "/logs/2-job.log");
  store.set_trial_node(job, "node07");
  store.set_trial_job(done, "1235", "/logs/3-job.log");
  store.end_trial(done, "ok", 1.0, 0.9, "{}");
  auto open = store.open_slurm_trials();
  ASSERT_EQ(open.size(), 1u);  // not the local trial, not the ended one
  EXPECT_EQ(open[0].id, job);
  EXPECT_EQ(open[0].experiment_id, e);
  EXPECT_EQ(open[0].slurm_job_id, "1234");
  EXPECT_EQ(open[0].slurm_log, "/logs/2-job.log");
  EXPECT_EQ(open[0].node, "node07");
  auto all = store.trials("t");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, local);
  EXPECT_EQ(all[0].slurm_job_id, "");
  store.close_open_trials();
  EXPECT_TRUE(store.open_slurm_trials().empty());
}

TEST(Store, TrialsRecordTheRungTheyRanAt) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  int64_t e = store.create_experiment("t", false, kBase, "", "offline", std::nullopt);
  store.begin_trial(e, "t", "0", "candidate", kBase);
  store.begin_trial(e, "t", "1", "promote", kBase, 1, 0, 2);
  auto all = store.trials("t");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].rung, 0);
  EXPECT_EQ(all[1].rung, 2);
}

TEST(Store, ChangeLabelsKeepEveryDecisionAndTheLastHolds) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  store.add_run("u", "autoresearch/u", kBase);
  int64_t a = store.create_experiment("t", false, kBase, "", "offline", std::nullopt);
  int64_t b = store.create_experiment("t", false, kBase, "", "offline", std::nullopt);
  int64_t other = store.create_experiment("u", false, kBase, "", "offline", std::nullopt);
  const std::string evidence = R"({"best_mean":0.98,"candidate_mean":0.97,"trials":[4,5]})";
  store.add_change_label({0, a, 1, "untested", "{}", 100});
  int64_t later = store.add_change_label({0, a, 1, "transfers", evidence, 200});
  store.add_change_label({0, a, 2, "scale_bound", evidence, 0});  // decided now
  store.add_change_label({0, b, 1, "scale_bound", evidence, 150});
  store.add_change_label({0, other, 1, "transfers", "{}", 150});

  auto labels = store.change_labels(a);
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_EQ(labels[0].label, "untested");
  EXPECT_EQ(labels[1].id, later);
  EXPECT_EQ(labels[1].evidence, evidence);
  EXPECT_DOUBLE_EQ(labels[1].decided_at, 200);
  EXPECT_GT(labels[2].decided_at, 1e9);

  auto at1 = store.change_label(a, 1);
  ASSERT_TRUE(at1);
  EXPECT_EQ(at1->label, "transfers");
  EXPECT_EQ(at1->rung, 1);
  EXPECT_EQ(store.change_label(b, 2), std::nullopt);

  auto current = store.current_change_labels("t");
  ASSERT_EQ(current.size(), 3u);  // a at rungs 1 and 2, b at rung 1; not tag u's
  EXPECT_EQ(current[0].experiment_id, a);
  EXPECT_EQ(current[0].label, "transfers");
  EXPECT_EQ(current[1].rung, 2);
  EXPECT_EQ(current[2].experiment_id, b);

  EXPECT_THROW(store.add_change_label({0, a, 1, "maybe", "{}", 0}), SqliteError);
  EXPECT_THROW(store.add_change_label({0, a, 0, "transfers", "{}", 0}), SqliteError);
  EXPECT_THROW(store.add_change_label({0, 999, 1, "transfers", "{}", 0}), SqliteError);  // no such experiment
}

TEST(Store, MigratesAVersion13StoreWithItsTrialsAtRungZero) {
  testing::TempDir dir;
  const std::string path = (dir / "results.db").string();
  {
    const std::string schema = kSchemaSql;
    const size_t v14 = schema.find("-- version 14");
    ASSERT_NE(v14, std::string::npos);
    Database raw(path);
    raw.exec(schema.substr(0, v14));
    raw.exec("PRAGMA user_version=13");
    raw.exec("INSERT INTO runs(tag, branch, base_commit, created_at) VALUES('t', 'autoresearch/t', '" +
             std::string(kBase) + "', 1)");
    raw.exec("INSERT INTO experiments(tag, is_baseline, parent_commit, state, started_at) VALUES('t', 1, '" +
             std::string(kBase) + "', 'kept', 1)");
    raw.exec("INSERT INTO trials(experiment_id, tag, gpu, purpose, commit_hash, started_at) VALUES(1, 't', '0', "
             "'baseline', '" + std::string(kBase) + "', 1)");
  }
  Store store(path);
  EXPECT_EQ(store.version(), Store::latest_version());
  auto trials = store.trials("t");
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].rung, 0);
  store.add_change_label({0, 1, 1, "transfers", "{}", 0});
  EXPECT_EQ(store.change_labels(1).size(), 1u);
}

TEST(Store, LlmTotalsPerTag) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  store.add_run("u", "autoresearch/u", kBase);
  int64_t a = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
  int64_t b = store.create_experiment("u", false, kBase, "", "llm", std::nullopt);
  store.record({a, 1, "openai", "m", 1.0, 100, 10, 0, 0, "ok", 0.5, ""});
  store.record({a, 2, "openai", "m", 1.0, 200, 20, 0, 0, "ok", 0.25, ""});
  store.record({b, 1, "openai", "m", 1.0, 1000, 100, 0, 0, "ok", 4.0, ""});
  LlmTotals t = store.llm_totals("t");
  EXPECT_EQ(t.calls, 2);
  EXPECT_EQ(t.input_tokens, 300);
  EXPECT_EQ(t.output_tokens, 30);
  EXPECT_DOUBLE_EQ(t.cost_usd, 0.75);
  EXPECT_EQ(store.llm_totals("u").calls, 1);
  EXPECT_EQ(store.llm_totals().calls, 3);
  EXPECT_EQ(t.estimated_calls, 0);
  llm::CallRecord guessed{a, 3, "openai", "m", 1.0, 50, 5, 0, 0, "ok", 0.125, ""};
  guessed.usage_estimated = true;
  store.record(guessed);
  EXPECT_EQ(store.llm_totals("t").estimated_calls, 1);
  EXPECT_DOUBLE_EQ(store.spend("t").cost_usd, 0.875);  // the caps count the estimate
  auto calls = store.llm_calls(a);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_FALSE(calls[0].usage_estimated);
  EXPECT_TRUE(calls[2].usage_estimated);
}

TEST(Store, ACallStartedIsRewrittenWhenItEndsAndInterruptedAfterAKill) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  int64_t a = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
  llm::CallRecord started{a, 1, "openai", "m", 0, 500, 0, 0, 0, "started", 0.01, ""};
  started.usage_estimated = true;
  started.call_key = "k1";
  store.call_started(started);
  llm::CallRecord done{a, 1, "openai", "m", 2.5, 480, 20, 0, 0, "ok", 0.02, ""};
  done.call_key = "k1";
  store.record(done);
  started.call_key = "k2";
  store.call_started(started);  // in flight when the daemon was killed
  EXPECT_EQ(store.llm_totals("t").calls, 2);
  EXPECT_DOUBLE_EQ(store.spend("t").cost_usd, 0.03);  // the caps count the call in flight
  EXPECT_EQ(store.spend("t").call_times.size(), 2u);
  EXPECT_EQ(store.close_started_calls(), 1);
  auto calls = store.llm_calls(a);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].status, "ok");
  EXPECT_EQ(calls[0].output_tokens, 20);
  EXPECT_FALSE(calls[0].usage_estimated);
  EXPECT_EQ(calls[1].status, "interrupted");
  EXPECT_EQ(calls[1].error, "the daemon was killed during the call");
  EXPECT_EQ(store.close_started_calls(), 0);
}

TEST(Store, RemembersALearntLimitPerProvider) {
  testing::TempDir dir;
  const std::string path = (dir / "results.db").string();
  {
    Store store(path);
    EXPECT_FALSE(store.learnt_limit("openai http://x/v1 m"));
    store.learn_limit("openai http://x/v1 m", 24000, "HTTP 413 from openai: the request is too long");
    store.learn_limit("openai http://x/v1 m", 18000, "HTTP 413 again");
    store.learn_limit("anthropic http://y m", 50000, "prompt is too long");
  }
  Store again(path);  // a later start
  EXPECT_EQ(again.learnt_limit("openai http://x/v1 m"), 18000);
  EXPECT_EQ(again.learnt_limit("anthropic http://y m"), 50000);
  EXPECT_FALSE(again.learnt_limit("openai http://x/v1 other-model"));
  auto all = again.learnt_limits();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].provider, "openai http://x/v1 m");
  EXPECT_EQ(all[1].reason, "HTTP 413 again");
}

TEST(Store, RecordsGroupsWithTheirLeadersStartTime) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  int64_t id = store.create_experiment("t", false, kBase, "", "scripted", std::nullopt);
  store.set_pgid(id, 4321, 987654);
  EXPECT_EQ(store.experiment(id)->pgid, 4321);
  EXPECT_EQ(store.experiment(id)->pgid_start, 987654);
  store.finish(id, status::kCrash, "x", "");
  EXPECT_FALSE(store.experiment(id)->pgid);
  EXPECT_FALSE(store.experiment(id)->pgid_start);

  int64_t g = store.add_process_group(555, 42, "prepare");
  auto live = store.live_process_groups();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].pgid, 555);
  EXPECT_EQ(live[0].leader_start, 42);
  EXPECT_EQ(live[0].what, "prepare");
  store.end_process_group(g);
  EXPECT_TRUE(store.live_process_groups().empty());
}

TEST(Store, ErrorsNameTheFile) {
  testing::TempDir dir;
  std::string path = (dir / "results.db").string();
  testing::write_file(path, std::string(4096, 'x'));
  try {
    Store store(path);
    FAIL() << "opened a file that is not a database";
  } catch (const SqliteError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": file is not a database");
  }
}

TEST(Store, NoticesItsFileWasDeleted) {
  testing::TempDir dir;
  std::string path = (dir / "results.db").string();
  Store store(path);
  store.add_run("t", "autoresearch/t", kBase);
  EXPECT_FALSE(store.file_problem());
  std::filesystem::remove(path);
  EXPECT_TRUE(store.file_problem());
  EXPECT_THROW(store.create_experiment("t", false, kBase, "", "x", std::nullopt), DatabaseFileLost);
}

}  // namespace
}  // namespace ard

namespace ard {
namespace {

TEST(Store, PromotionRoundsAskedStartedAndEnded) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  const int64_t asked = store.request_promotion("t");
  store.request_promotion("u");
  auto rounds = store.promotion_rounds("t");
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_TRUE(rounds[0].requested_at);
  EXPECT_FALSE(rounds[0].started_at);

  EXPECT_EQ(store.start_promotion_round(asked, "t", 1, "asked for"), asked);
  const int64_t due = store.start_promotion_round(0, "t", 2, "5 kept changes");
  EXPECT_NE(due, asked);
  store.end_promotion_round(asked, "the stack improved at 2x");
  rounds = store.promotion_rounds("t");
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[0].reason, "asked for");
  EXPECT_TRUE(rounds[0].started_at && rounds[0].ended_at);
  EXPECT_EQ(rounds[0].outcome, "the stack improved at 2x");
  EXPECT_EQ(rounds[1].rung, 2);
  EXPECT_FALSE(rounds[1].requested_at);
  EXPECT_FALSE(rounds[1].ended_at);
}

}  // namespace
}  // namespace ard
