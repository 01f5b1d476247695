// Tests of the dashboard's JSON documents on a store filled by hand, with the
// engine's columns (experiments.gpu, trials) written as the engine writes them.
#include "daemon/serve/dashboard_api.h"

#include <gmock/gmock.h>

#include "daemon/cli/report.h"
#include "daemon/config.h"
#include "testing/ladder_rows.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using nlohmann::json;

const std::string kBase = "1111111111111111111111111111111111111111";
const std::string kTwo = "2222222222222222222222222222222222222222";

class DashboardApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store.add_run("t", "autoresearch/t", kBase);
    store.add_run("u", "autoresearch/u", kBase);
    store.put_program("p1", "# program v1\n");
    store.put_program("p2", "# program v2\n");
    base = store.create_experiment("t", true, kBase, "p1", "baseline", std::nullopt);
    store.set_proposal(base, "baseline");
    store.set_commit(base, kBase, "");
    store.set_metrics(base, {1.0, 2048.0, 30.0, R"({"val_bpb": 1.0})"});
    store.finish(base, status::kKept, "", "");
    hostile = store.create_experiment("t", false, kBase, "p2", "llm", std::nullopt);
    store.set_proposal(hostile, "<img src=x onerror=alert(1)>");
    store.set_commit(hostile, kTwo, "-a\n+b\n");
    store.add_attempt(hostile, 1, {"the prompt", "the answer", ""});
    store.set_metrics(hostile, {1.25, 1024.0, 30.0, "not json"});
    store.finish(hostile, status::kDiscarded, "no improvement", "tail\n");
    on_gpu = store.create_experiment("t", false, kBase, "p2", "llm", std::nullopt);
    store.set_proposal(on_gpu, "deeper");
    store.set_stage(on_gpu, ExperimentState::kRunning, "train", 1000.0, 1720.0, 1400.0);
    unplaced = store.create_experiment("t", false, kBase, "p2", "llm", std::nullopt);
    other_tag = store.create_experiment("u", false, kBase, "p1", "llm", std::nullopt);

    store.set_gpu(on_gpu, "1");
    store.set_gpu(hostile, "0");
    // Trials with chosen times (begin_trial stamps the clock).
    Database db((dir.path() / "results.db").string());
    db.exec("INSERT INTO trials(experiment_id, tag, gpu, purpose, commit_hash, started_at, ended_at, "
            "training_seconds, val_bpb, status) VALUES(" + std::to_string(hostile) +
            ", 't', '0', 'candidate', '" + kTwo + "', 900, 960, 30, 1.25, 'ok')");
    db.exec("INSERT INTO trials(experiment_id, tag, gpu, purpose, commit_hash, started_at) VALUES(" +
            std::to_string(on_gpu) + ", 't', '1', 'candidate', '" + kTwo + "', 1000)");
  }

  testing::TempDir dir;
  Store store{(dir.path() / "results.db").string()};
  int64_t base = 0, hostile = 0, on_gpu = 0, unplaced = 0, other_tag = 0;
  DashboardView view{"t", std::nullopt, false};
};

TEST_F(DashboardApiTest, StatusHasBestFiguresAndOneLanePerGpu) {
  view.daemon_pid = 4242;
  json s = api_status(store, view, 1200.0);
  EXPECT_EQ(s["tag"], "t");
  EXPECT_EQ(s["daemon"]["running"], true);
  EXPECT_EQ(s["daemon"]["pid"], 4242);
  EXPECT_EQ(s["best"]["id"], base);
  EXPECT_EQ(s["best"]["val_bpb"], 1.0);
  EXPECT_EQ(s["latest_id"], unplaced);
  EXPECT_EQ(s["figures"]["finished"], 2);
  EXPECT_EQ(s["figures"]["gpus"], 2);
  EXPECT_TRUE(s["sigma"].is_null());
  EXPECT_FALSE(s["noise"]["usable"]);
  EXPECT_EQ(s["llm"]["calls"], 0);

  ASSERT_EQ(s["lanes"].size(), 2u);  // "-" (unplaced) and "1"; GPU 0's experiment is finished
  EXPECT_EQ(s["lanes"][0]["gpu"], "-");
  EXPECT_EQ(s["lanes"][0]["experiments"][0]["id"], unplaced);
  EXPECT_TRUE(s["lanes"][0]["experiments"][0]["progress"].is_null());
  const json& lane = s["lanes"][1];
  EXPECT_EQ(lane["gpu"], "1");
  ASSERT_EQ(lane["experiments"].size(), 1u);
  EXPECT_EQ(lane["experiments"][0]["id"], on_gpu);
  EXPECT_EQ(lane["experiments"][0]["stage"], "train");
  EXPECT_DOUBLE_EQ(lane["experiments"][0]["progress"].get<double>(), 0.5);  // 200 of 400 expected seconds
  EXPECT_EQ(lane["experiments"][0]["stage_deadline"], 1720.0);
}

/// The lane entry of experiment id in a status document.
json lane_entry(const json& status, int64_t id) {
  for (const auto& lane : status["lanes"])
    for (const auto& x : lane["experiments"])
      if (x["id"] == id) return x;
  return nullptr;
}

// A bar and an expected end only for a stage under way with an estimate of its
// own: not for a build (its expected end is its timeout), not for a candidate
// that waits for a GPU with its build's fields still in the row.
TEST_F(DashboardApiTest, StatusNamesTheMetricAndItsGoal) {
  json s = api_status(store, view, 1200.0);
  EXPECT_EQ(s["metric"], json({{"name", "val_bpb"}, {"goal", "min"}}));
  view.metric = {"score", MetricGoal::kMax};
  s = api_status(store, view, 1200.0);
  EXPECT_EQ(s["metric"], json({{"name", "score"}, {"goal", "max"}}));
}

TEST_F(DashboardApiTest, AWaitingCandidateOrAStageWithoutAnEstimateHasNoProgressAndNoExpectedEnd) {
  view.daemon_pid = 1;
  int64_t c = store.create_experiment("t", false, kBase, "p2", "llm", std::nullopt);
  store.set_stage(c, ExperimentState::kBuilding, "build", 1000.0, 2800.0, 2800.0);
  json building = lane_entry(api_status(store, view, 1100.0), c);
  EXPECT_TRUE(building["progress"].is_null());
  EXPECT_TRUE(building["stage_expected"].is_null());
  EXPECT_EQ(building["stage_deadline"], 2800.0);
  store.set_state(c, ExperimentState::kBuilt);
  json built = lane_entry(api_status(store, view, 1100.0), c);
  EXPECT_EQ(built["state"], "built");
  EXPECT_TRUE(built["progress"].is_null());
  EXPECT_TRUE(built["stage_expected"].is_null());
  EXPECT_TRUE(built["stage_deadline"].is_null());
  json running = lane_entry(api_status(store, view, 1100.0), on_gpu);
  EXPECT_EQ(running["stage_expected"], 1400.0);
  EXPECT_DOUBLE_EQ(running["progress"].get<double>(), 0.25);
}

TEST_F(DashboardApiTest, ATrainingShareAboveOneIsClampedAndSaysSo) {
  auto rows = store.experiments("t");
  view.daemon_pid = 1;
  // One trial of 30 s of training over 2 GPUs × 10 s.
  json s = api_status(store, view, rows.front().started_at + 10);
  EXPECT_DOUBLE_EQ(s["figures"]["training_share"].get<double>(), 1.0);
  EXPECT_EQ(s["figures"]["training_share_clamped"], true);
  json later = api_status(store, view, rows.front().started_at + 100);
  EXPECT_EQ(later["figures"]["training_share_clamped"], false);
}

// Before the first experiment the lanes are empty; the status says what the data step runs.
// The researcher's ideas of the tag, each with what became of it, as status shows them.
TEST_F(DashboardApiTest, StatusListsTheTagsIdeasWithTheirOutcome) {
  EXPECT_TRUE(api_status(store, view, 1200.0)["ideas"].empty());
  const int64_t idea = store.add_idea("t", "try rotary embeddings", "dashboard");
  store.add_idea("other", "not this tag's", "cli");
  store.set_experiment_idea(hostile, idea);
  json ideas = api_status(store, view, 1200.0)["ideas"];
  ASSERT_EQ(ideas.size(), 1u);
  EXPECT_EQ(ideas[0]["id"], idea);
  EXPECT_EQ(ideas[0]["text"], "try rotary embeddings");
  EXPECT_EQ(ideas[0]["source"], "dashboard");
  EXPECT_EQ(ideas[0]["open"], idea_open(store.ideas("t")[0]));
  EXPECT_EQ(ideas[0]["outcome"], idea_outcome(store.ideas("t")[0]));
  EXPECT_NE(ideas[0]["outcome"], "waiting for the next proposal");
}

// The most tried regions of the memory: at most five, the most tried first, with their keep rates.
TEST_F(DashboardApiTest, StatusListsTheMostTriedRegionsWithTheirKeepRates) {
  EXPECT_TRUE(api_status(store, view, 1200.0)["regions"].empty());  // "-a\n+b\n" names no file
  auto finished = [&](const std::string& function, const std::string& state) {
    const int64_t id = store.create_experiment("t", false, kBase, "p2", "llm", std::nullopt);
    store.set_proposal(id, "change in " + function);
    store.set_commit(id, kTwo, "--- a/trainer/train.cu\n+++ b/trainer/train.cu\n@@ -10,1 +10,1 @@ void " + function +
                                   "() {\n-  x = 1;\n+  x = 2;\n");
    store.finish(id, state, "", "");
  };
  finished("step", status::kKept);
  finished("step", status::kDiscarded);
  finished("step", status::kDiscarded);
  finished("step", status::kCrash);
  finished("adam", status::kDiscarded);
  finished("adam", status::kKept);
  for (const char* f : {"f1", "f2", "f3", "f4"}) finished(f, status::kDiscarded);
  const json regions = api_status(store, view, 1200.0)["regions"];
  ASSERT_EQ(regions.size(), 5u);  // six regions tried: the top five
  EXPECT_EQ(regions[0]["region"], "trainer/train.cu: step");
  EXPECT_EQ(regions[0]["tries"], 4);
  EXPECT_EQ(regions[0]["kept"], 1);
  EXPECT_DOUBLE_EQ(regions[0]["keep_rate"].get<double>(), 0.25);
  EXPECT_EQ(regions[0]["outcomes"], json::parse(R"([{"status": "discarded", "count": 2}, {"status": "kept", "count": 1},
                                                   {"status": "crash", "count": 1}])"));
  EXPECT_EQ(regions[1]["region"], "trainer/train.cu: adam");
  EXPECT_DOUBLE_EQ(regions[1]["keep_rate"].get<double>(), 0.5);
  EXPECT_EQ(regions[2]["region"], "trainer/train.cu: f4");  // ties of one try: the most recent first
  // The other tag's changes are not this tag's memory.
  EXPECT_TRUE(api_status(store, DashboardView{"u", std::nullopt, false}, 1200.0)["regions"].empty());
}

TEST_F(DashboardApiTest, TheDataStepIsInTheStatusWhileItRuns) {
  const double now = 5000;
  EXPECT_TRUE(api_status(store, view, now)["data_step"].is_null());  // no daemon
  view.daemon_pid = 1;
  EXPECT_TRUE(api_status(store, view, now)["data_step"].is_null());  // nothing of it runs
  store.add_process_group(99997, 1, "prepare");
  json s = api_status(store, view, now);
  ASSERT_TRUE(s["data_step"].is_string());
  EXPECT_THAT(s["data_step"].get<std::string>(), ::testing::HasSubstr("the data step: preparing the dataset"));
}

TEST_F(DashboardApiTest, FiguresShareTheStatusArithmetic) {
  auto rows = store.experiments("t");
  StatusFigures f = status_figures(store, "t", rows, true, rows.front().started_at + 100);
  EXPECT_EQ(f.finished, 2);
  EXPECT_EQ(f.gpus, 2);
  EXPECT_DOUBLE_EQ(f.wall_s, 100);
  // Training counts the trials (every execution on a GPU): one finished trial
  // of 30 s over 2 GPUs × 100 s.
  EXPECT_DOUBLE_EQ(f.training_share, 30.0 / 200.0);
  ASSERT_TRUE(f.gpu_busy_share.has_value());
  // The finished trial ran 60 s; the open one runs to now, which is far past
  // its start here, so the share is dominated by it.
  EXPECT_GT(*f.gpu_busy_share, 0.3);
  view.daemon_pid = 1;  // the same figures as status_figures(..., daemon_running = true, ...)
  json s = api_status(store, view, rows.front().started_at + 100);
  EXPECT_DOUBLE_EQ(s["figures"]["training_share"].get<double>(), f.training_share);
}

TEST_F(DashboardApiTest, ExperimentsSinceAnIdAndOnlyTheTag) {
  json all = api_experiments(store, view, 0);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0]["id"], base);
  EXPECT_EQ(all[0]["baseline"], true);
  EXPECT_EQ(all[1]["description"], "<img src=x onerror=alert(1)>");  // data, escaped only by JSON
  EXPECT_EQ(all[1]["gpu"], "0");
  EXPECT_EQ(all[1]["final"], true);
  EXPECT_EQ(all[1]["val_bpb"], 1.25);
  EXPECT_FALSE(all[1].contains("diff"));  // the list stays small
  EXPECT_TRUE(all[3]["gpu"].is_null());
  EXPECT_TRUE(all[3]["commit"].is_null());
  EXPECT_EQ(all[3]["final"], false);
  json since = api_experiments(store, view, hostile);
  ASSERT_EQ(since.size(), 2u);
  EXPECT_EQ(since[0]["id"], on_gpu);
  EXPECT_TRUE(api_experiments(store, view, unplaced).empty());
}

TEST_F(DashboardApiTest, OneExperimentInFull) {
  auto doc = api_experiment(store, hostile);
  ASSERT_TRUE(doc.has_value());
  EXPECT_EQ((*doc)["diff"], "-a\n+b\n");
  EXPECT_EQ((*doc)["log_tail"], "tail\n");
  EXPECT_EQ((*doc)["summary"], "not json");  // kept as text when it does not parse
  ASSERT_EQ((*doc)["attempts"].size(), 1u);
  EXPECT_EQ((*doc)["attempts"][0]["prompt"], "the prompt");
  EXPECT_TRUE((*doc)["attempts"][0]["error"].is_null());
  ASSERT_EQ((*doc)["trials"].size(), 1u);
  EXPECT_EQ((*doc)["trials"][0]["gpu"], "0");
  EXPECT_EQ((*doc)["trials"][0]["training_seconds"], 30.0);
  EXPECT_EQ((*api_experiment(store, base))["summary"]["val_bpb"], 1.0);
  EXPECT_FALSE(api_experiment(store, 999).has_value());
}

TEST_F(DashboardApiTest, ProgramsWithTheExperimentsThatUsedThem) {
  json p = api_programs(store, view);
  ASSERT_EQ(p.size(), 2u);
  std::map<std::string, json> by_hash;
  for (const auto& v : p) by_hash[v["hash"]] = v;
  EXPECT_EQ(by_hash["p1"]["content"], "# program v1\n");
  EXPECT_EQ(by_hash["p1"]["experiments"], json::array({base}));  // tag u's experiment is not shown
  EXPECT_EQ(by_hash["p2"]["experiments"], json::array({hostile, on_gpu, unplaced}));
}

TEST_F(DashboardApiTest, ReadOnlyStoreReadsAndNeverWrites) {
  auto ro = Store::open_read_only((dir.path() / "results.db").string());
  EXPECT_EQ(api_experiments(*ro, view, 0).size(), 4u);
  // Refused by SQLite, reported with the file's name (as a store fault).
  try {
    ro->put_program("p3", "x");
    ADD_FAILURE() << "a read-only store wrote";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("results.db: attempt to write a readonly database"));
  }
  EXPECT_THROW(Store::open_read_only((dir.path() / "missing.db").string()), std::runtime_error);
  Database((dir.path() / "newer.db").string()).exec("PRAGMA user_version=99");
  try {
    Store::open_read_only((dir.path() / "newer.db").string());
    FAIL() << "a newer schema was accepted";
  } catch (const SqliteError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("has schema version 99"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "missing.db"));
}

// The API judges σ as the engine and `status` do: usable once it rests on
// kMinNoiseDf degrees of freedom (or with a prior), with the same line.
TEST_F(DashboardApiTest, NoiseSaysWhetherSigmaIsUsableAndAgreesWithStatus) {
  Database db((dir.path() / "results.db").string());
  auto noise_run = [&](double v) {
    db.exec("INSERT INTO trials(experiment_id, tag, gpu, purpose, commit_hash, started_at, ended_at, "
            "training_seconds, val_bpb, status) VALUES(" + std::to_string(base) + ", 't', '0', 'noise', '" + kBase +
            "', 100, 130, 30, " + std::to_string(v) + ", 'ok')");
  };
  NoiseRow round;
  round.created_at = 1000;
  round.reason = "start";
  store.add_noise_estimate("t", round);
  noise_run(1.000);
  noise_run(1.002);
  noise_run(0.998);  // df 2: measured, not usable
  json s = api_status(store, view, 1200.0);
  EXPECT_TRUE(s["sigma"].is_null());
  EXPECT_FALSE(s["noise"]["usable"]);
  EXPECT_EQ(s["noise"]["df"], 2);
  EXPECT_NEAR(s["noise"]["measured_sigma"].get<double>(), 0.002, 1e-9);
  EXPECT_THAT(s["noise"]["line"].get<std::string>(), ::testing::HasSubstr("σ not usable yet: 0.002000 on df 2"));
  EXPECT_THAT(render_status(store, "t", std::nullopt, 1200.0), ::testing::HasSubstr(s["noise"]["line"].get<std::string>()));

  noise_run(1.000);  // df 3: usable, with Student's t margin
  s = api_status(store, view, 1200.0);
  EXPECT_TRUE(s["noise"]["usable"]);
  EXPECT_EQ(s["noise"]["source"], "measured");
  EXPECT_NEAR(s["sigma"].get<double>(), s["noise"]["measured_sigma"].get<double>(), 1e-12);
  EXPECT_NEAR(s["noise"]["keep_margin"].get<double>(), 3.31, 0.01);
  EXPECT_THAT(render_status(store, "t", std::nullopt, 1200.0), ::testing::HasSubstr(s["noise"]["line"].get<std::string>()));

  view.noise.prior_sigma = 0.0015;  // a prior does not override a usable measurement
  EXPECT_EQ(api_status(store, view, 1200.0)["noise"]["source"], "measured");
}

TEST_F(DashboardApiTest, AnExperimentCarriesItsDecisionItsRuleAndItsRuns) {
  store.set_decision(hostile, "discarded: mean 1.250000 (n=1) against the incumbent's 1.000000 (n=1): Δ = -0.250000 "
                              "< 1.50·σΔ = 0.002121; σΔ = 0.001500·√(1/1+1/1) = 0.002121 (σ from noise.prior_sigma)",
                     1.25);
  auto doc = api_experiment(store, hostile);
  ASSERT_TRUE(doc);
  EXPECT_EQ((*doc)["decision"], store.decision(hostile));
  EXPECT_EQ((*doc)["decision_rule"], "σ prior");
  EXPECT_EQ((*doc)["runs"]["n"], 1);
  EXPECT_EQ((*doc)["runs"]["text"], "1.250000 ± 0.000000 (1)");
  EXPECT_TRUE((*api_experiment(store, unplaced))["decision"].is_null());
}

// The promotion ladder in /api/status and the labels in /api/experiments/<id>,
// on a promotion round's rows under the default ladder (rung 1 "2x").
TEST_F(DashboardApiTest, TheLadderAndTheLabelsWithTheirEvidence) {
  const testing::LadderRows rows = testing::add_ladder_rows(store, "lad");
  EXPECT_TRUE(api_status(store, DashboardView{"lad", std::nullopt, false}, 5000.0)["ladder"].is_null());
  DashboardView lad{"lad", std::nullopt, false};
  lad.ladder = ladder_settings(parse_config("", dir.path()));
  const json ladder = api_status(store, lad, 5000.0)["ladder"];
  ASSERT_TRUE(ladder.is_object()) << ladder.dump();
  EXPECT_NEAR(ladder["promotion_share"].get<double>(), 4800.0 / 5500.0, 1e-9);
  EXPECT_EQ(ladder["max_share"], 0.25);
  EXPECT_EQ(ladder["every"], 5);
  EXPECT_EQ(ladder["on_fail"], "label");
  ASSERT_EQ(ladder["rungs"].size(), 1u);
  const json& rung = ladder["rungs"][0];
  EXPECT_EQ(rung["rung"], 1);
  EXPECT_EQ(rung["name"], "2x");
  EXPECT_EQ(rung["depth_scale"], 2.0);
  EXPECT_EQ(rung["budget_s"], 600.0);
  EXPECT_EQ(rung["reference"], (json{{"id", rows.wider}, {"commit", testing::kLadderWider}}));
  EXPECT_TRUE(rung["base_commit"].is_null());
  EXPECT_NEAR(rung["sigma"].get<double>(), 0.0014142, 1e-6);
  EXPECT_EQ(rung["df"], 4);
  ASSERT_EQ(ladder["changes"].size(), 3u);
  EXPECT_EQ(ladder["changes"][0]["id"], rows.lower_lr);
  EXPECT_EQ(ladder["changes"][0]["description"], "lower lr");
  EXPECT_EQ(ladder["changes"][0]["labels"],
            (json::array({{{"rung", 1}, {"name", "2x"}, {"label", "transfers"}, {"words", "transfers at 2x"}}})));
  EXPECT_EQ(ladder["changes"][1]["labels"][0]["label"], "scale_bound");
  EXPECT_EQ(ladder["changes"][1]["labels"][0]["words"], "scale-bound at 2x");
  EXPECT_EQ(ladder["changes"][2]["labels"][0]["label"], "untested");

  const json doc = *api_experiment(store, rows.lower_lr, lad.ladder);
  ASSERT_EQ(doc["labels"].size(), 1u);
  EXPECT_EQ(doc["labels"][0]["rung"], 1);
  EXPECT_EQ(doc["labels"][0]["name"], "2x");
  EXPECT_EQ(doc["labels"][0]["label"], "transfers");
  EXPECT_EQ(doc["labels"][0]["decided_at"], 1000.0);
  EXPECT_EQ(parse_evidence_json(doc["labels"][0]["evidence"].dump()), rows.lower_lr_evidence);
  ASSERT_EQ(doc["trials"].size(), 3u);  // its run as configured, then its two at rung 1
  EXPECT_EQ(doc["trials"][0]["rung"], 0);
  EXPECT_EQ(doc["trials"][1]["rung"], 1);
  EXPECT_EQ(doc["runs"]["n"], 1);  // its own mean is rung 0's
  EXPECT_EQ(doc["runs"]["mean"], 0.99);
  const json deeper = *api_experiment(store, rows.deeper, lad.ladder);
  EXPECT_TRUE(deeper["labels"][0]["evidence"].is_null());
  EXPECT_TRUE((*api_experiment(store, rows.discarded))["labels"].empty());
}

}  // namespace
}  // namespace ard
