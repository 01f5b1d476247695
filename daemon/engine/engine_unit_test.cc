// The engine's decisions run against a FakeExecutor (fake_executor.h): a real
// git repo, store and scripted proposer, but no child processes; every run's
// end is scripted from the Run, so the pipeline's order (noise rounds,
// confirmations, stops) can be checked run by run. Confirmations and noise
// rounds are on, as by default.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "daemon/decide/run_evidence.h"
#include "daemon/engine/engine.h"
#include "daemon/engine/fake_executor.h"
#include "proposers/scripted_proposer.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using testing::write_file;

const std::string kBase = "val_bpb 1.0\n#\n# a-slot\n#\n#\n# b-slot\n#\n";

/// A passed run: the metric `value`, with the steps the noise rounds count.
RunEnd measured_end(double value) {
  RunEnd end;
  end.kind = RunEnd::Kind::kOk;
  Summary summary;
  summary.values = {{"val_bpb", value}, {"training_seconds", 1}, {"num_steps", 100}};
  end.summary = summary;
  end.value = value;
  return end;
}

RunEnd built_end() {
  RunEnd end;
  end.kind = RunEnd::Kind::kOk;
  return end;
}

bool is_best_run(const ard::Run& run) {
  return run.purpose == purpose::kBaseline || run.purpose == purpose::kNoise || run.purpose == purpose::kIncumbent;
}

class EngineUnit : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = dir.path() / "research";
    write_file(repo / "trainer/train.cu", kBase);
    write_file(repo / "program.md", "# program\nLower val_bpb.\n");
    write_file(repo / ".gitignore", "build/\n");
    ASSERT_EQ(testing::commit_base_repo(repo), 0);
  }

  /// script: the proposer's JSON entries.
  /// extra: TOML appended to the config. top: top-level keys, before the tables.
  void write_setup(const std::string& script, const std::string& extra = "", const std::string& top = "lookahead = 1\n") {
    write_file(repo / "script.json", script);
    config = parse_config(std::string(R"(tag = "unit"
)") + top + std::string(R"(retry_wait_s = 0.2
[build]
command = "true"
[[stage]]
name = "train"
command = "train --budget {budget}"
[data]
enabled = false
[preflight]
gpu = "off"
[sandbox]
mode = "off"
[proposer]
kind = "scripted"
script = "script.json"
)") + extra,
                          repo);
  }

  /// Runs the engine on GPUs "0" and "1" until it stops; end: the script of the runs' ends;
  /// until: set, the daemon stops once it holds of the experiments' rows (looked at every 20 ms).
  void run_engine(FakeExecutor::Script end,
                  std::function<bool(const std::vector<ExperimentRow>&)> until = nullptr) {
    StateDir state(repo);
    state.create();
    Log log(state.log_file(), false);
    Store store(state.db().string());
    ScriptedProposer proposer(repo / "script.json");
    boost::asio::io_context io;
    auto executor = std::make_unique<FakeExecutor>(io, std::move(end));
    FakeExecutor* fake = executor.get();
    fake_ = fake;
    Engine engine(io, config, state, store, proposer, log, {"0", "1"}, std::move(executor));
    // A test whose stop never comes fails instead of waiting for proposals that the script has no more of.
    boost::asio::steady_timer deadline(io, std::chrono::seconds(60));
    deadline.async_wait([this](const boost::system::error_code& e) {
      if (!e) {
        ADD_FAILURE() << "the daemon was still running after 60 s";
        stop_soon();
      }
    });
    boost::asio::steady_timer poll(io);
    std::function<void()> look = [&] {
      poll.expires_after(std::chrono::milliseconds(20));
      poll.async_wait([&](const boost::system::error_code& e) {
        if (e) return;
        if ((until && until(store.experiments("unit"))) || (until_store && until_store(store))) stop_soon();
        else look();
      });
    };
    if (until || until_store) look();
    engine.run();
    runs = fake->runs();
    daemon_log = testing::read_file(state.log_file());
    experiments = store.experiments("unit");
    trials = store.trials("unit");
    labels = store.current_change_labels("unit");
    rounds = store.promotion_rounds("unit");
    fake_ = nullptr;
  }

  /// Has the daemon stop, as SIGTERM does: once, handled on the loop after the current handler.
  void stop_soon() {
    if (!std::exchange(stop_raised_, true)) raise(SIGTERM);
  }

  /// Runs of the best: 1.000 and 1.010 by turns, so σ is known and near 0.007.
  std::optional<RunEnd> best_run_end() { return measured_end(best_runs_++ % 2 ? 1.010 : 1.000); }

  /// Builds pass, the best's runs as above, every candidate measured far worse (1.2).
  FakeExecutor::Script every_candidate_worse() {
    return [this](const ard::Run& run, size_t) -> std::optional<RunEnd> {
      if (run.build) return built_end();
      if (is_best_run(run)) return best_run_end();
      return measured_end(1.2);
    };
  }

  testing::TempDir dir;
  std::filesystem::path repo;
  Config config;
  std::vector<ard::Run> runs;
  std::string daemon_log;  ///< daemon.log, for a failure's message
  std::vector<ExperimentRow> experiments;
  std::vector<TrialRow> trials;
  std::vector<ChangeLabelRow> labels;
  std::vector<PromotionRoundRow> rounds;
  /// Set: the daemon also stops once it holds of the store (looked at every 20 ms).
  std::function<bool(Store&)> until_store;
  int best_runs_ = 0;
  bool stop_raised_ = false;
  FakeExecutor* fake_ = nullptr;  ///< while run_engine runs: its executor, for a test to end a held run
};

const std::string kOneEdit = R"([{"description": "edit a", "edits": [{"path": "trainer/train.cu", "find": "# a-slot", "replace": "# a-slot changed"}]}])";

// The start's noise round runs the best on every GPU, and no candidate's
// stages start before both of the round's runs were measured.
TEST_F(EngineUnit, TheStartRoundRunsTheBestOnEveryGpuBeforeAnyCandidate) {
  write_setup(kOneEdit);
  run_engine([&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
    if (run.build) return built_end();
    if (is_best_run(run)) return best_run_end();
    stop_soon();
    return measured_end(0.5);
  });
  std::set<std::string> best_gpus;
  size_t first_candidate = runs.size();
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].build) continue;
    if (is_best_run(runs[i])) {
      if (i < first_candidate) best_gpus.insert(runs[i].gpu);
    } else if (first_candidate == runs.size()) {
      first_candidate = i;
    }
  }
  ASSERT_LT(first_candidate, runs.size()) << "no candidate ran";
  EXPECT_EQ(best_gpus, (std::set<std::string>{"0", "1"}));
  for (const auto& run : runs) EXPECT_GT(run.experiment, 0) << "a ard::Run names its experiment's row";
}

// The baseline is the first GPU's run. A candidate built before it (the
// baseline's build still running) trains on the other GPU, not on the one the
// baseline waits for. Noise rounds are off: with them, candidates wait for the
// start round, and this order cannot arise.
TEST_F(EngineUnit, ACandidateBuiltBeforeTheBaselineLeavesItTheGpuItWaitsFor) {
  write_setup(kOneEdit, "[noise]\nrounds = false\n");
  run_engine([&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
    if (run.build && run.experiment == 1) return std::nullopt;  // the baseline (#1): still building at the stop
    if (run.build) return built_end();
    stop_soon();
    return std::nullopt;  // the candidate trains until the stop
  });
  const ard::Run* trained = nullptr;
  for (const auto& run : runs)
    if (!run.build && !trained) trained = &run;
  ASSERT_TRUE(trained) << "the candidate never trained:\n" << daemon_log;
  EXPECT_EQ(trained->purpose, purpose::kCandidate);
  EXPECT_EQ(trained->gpu, "1");
}

// A candidate whose first run the keep rule cannot decide (|Δ| within the
// noise) runs again, on the other GPU, as a confirmation.
TEST_F(EngineUnit, AnUndecidedCandidateIsConfirmedOnTheOtherGpu) {
  write_setup(kOneEdit);
  run_engine([&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
    if (run.build) return built_end();
    if (is_best_run(run)) return best_run_end();
    if (run.purpose == purpose::kConfirm) stop_soon();
    // Better than the best's mean 1.005 by more than the futility bound (1.5·σΔ) and less than the keep margin.
    return measured_end(0.994);
  });
  const ard::Run* first = nullptr;
  const ard::Run* confirm = nullptr;
  for (const auto& run : runs) {
    if (run.build || is_best_run(run)) continue;
    if (run.purpose == purpose::kCandidate && !first) first = &run;
    if (run.purpose == purpose::kConfirm && !confirm) confirm = &run;
  }
  ASSERT_TRUE(first) << "the candidate never ran";
  ASSERT_TRUE(confirm) << "the candidate was decided after one run:\n" << daemon_log;
  EXPECT_EQ(confirm->experiment, first->experiment);
  EXPECT_NE(confirm->gpu, first->gpu);
}

// A stop while a candidate's stages run ends that run (the executor's stop),
// records the experiment as interrupted and winds the daemon down.
TEST_F(EngineUnit, AStopWhileARunIsInFlightEndsItInterrupted) {
  write_setup(kOneEdit);
  int64_t held = 0;
  run_engine([&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
    if (run.build) return built_end();
    if (is_best_run(run)) return best_run_end();
    held = run.experiment;
    stop_soon();
    return std::nullopt;  // in flight until stop_all
  });
  ASSERT_GT(held, 0);
  const ExperimentRow* row = nullptr;
  for (const auto& e : experiments)
    if (e.id == held) row = &e;
  ASSERT_TRUE(row);
  EXPECT_EQ(row->state, status::kInterrupted);
  EXPECT_NE(row->error.find("stopped during stage train"), std::string::npos) << row->error;
}

const ExperimentRow* row_of(const std::vector<ExperimentRow>& rows, int64_t id) {
  for (const auto& r : rows)
    if (r.id == id) return &r;
  return nullptr;
}

/// n proposals, each an edit of its own line of kBase (a change of "val_bpb 1.0" to "val_bpb 1.0 <i>").
std::string n_edits(int n) {
  std::string script = "[";
  for (int i = 0; i < n; ++i)
    script += std::string(i ? "," : "") + R"({"description": "edit )" + std::to_string(i) +
              R"(", "edits": [{"path": "trainer/train.cu", "find": "# a-slot", "replace": "# a-slot )" +
              std::to_string(i) + R"("}]})";
  return script + "]";
}

// A stop while candidates stand in every phase before a decision: two train
// (one per GPU), one is built and waits for a GPU, one builds, the others are
// committed and wait for the one build slot. Each ends interrupted, saying
// where the stop found it, and the daemon exits with nothing left running.
TEST_F(EngineUnit, AStopInEveryPhaseEndsEachCandidateInterruptedSayingWhere) {
  write_setup(n_edits(12), "", "lookahead = 3\nmax_builds = 1\n");
  int candidate_builds = 0;
  run_engine(
      [&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
        if (run.build && run.experiment == 1) return built_end();  // the best's runs are the baseline's row
        if (is_best_run(run)) return best_run_end();
        if (run.build) return ++candidate_builds <= 3 ? std::optional<RunEnd>(built_end()) : std::nullopt;
        return std::nullopt;  // trains until the stop
      },
      [&](const std::vector<ExperimentRow>& rows) {
        std::map<std::string, int> in;
        for (const auto& r : rows) ++in[r.state];
        return in["running"] == 2 && in["built"] == 1 && in["building"] == 1 && in["committed"] >= 1;
      });
  std::map<std::string, int> where;
  for (const auto& e : experiments) {
    if (e.is_baseline) continue;
    EXPECT_EQ(e.state, status::kInterrupted) << "#" << e.id << " " << e.state << "\n" << daemon_log;
    ++where[e.error];
  }
  EXPECT_EQ(where["stopped during stage train"], 2) << daemon_log;
  EXPECT_EQ(where["stopped during the build"], 1) << daemon_log;
  EXPECT_GE(where["stopped before it ran"], 2) << daemon_log;  // the built one and the committed ones
  EXPECT_NE(daemon_log.find("stopping: waiting for #"), std::string::npos) << daemon_log;
}

const std::string kThreeEdits = R"([
  {"description": "edit a", "edits": [{"path": "trainer/train.cu", "find": "# a-slot", "replace": "# a-slot changed"}]},
  {"description": "edit b", "edits": [{"path": "trainer/train.cu", "find": "# b-slot", "replace": "# b-slot changed"}]},
  {"description": "edit a again", "edits": [{"path": "trainer/train.cu", "find": "# a-slot", "replace": "# a-slot fixed"}]}])";

// A candidate measured while the new best's re-runs are still on their way is
// not decided against a mean about to move: it waits (defer), and once the
// last re-run is in, the judge rules, here a confirmation on another GPU. The
// candidate is #3: its first run beat the old best, so its change was
// re-applied onto the new best (#2) and measured there, close to #2.
TEST_F(EngineUnit, ACandidateMeasuredBeforeTheBestsReRunsWaitsForThemThenIsConfirmed) {
  write_setup(kThreeEdits);
  std::optional<size_t> held;  // the new best's first re-run: in flight until the test ends it
  bool released = false;
  run_engine(
      [&](const ard::Run& run, size_t index) -> std::optional<RunEnd> {
        if (run.build) return built_end();
        if (run.purpose == purpose::kIncumbent) {
          if (held || released) return measured_end(0.90);
          held = index;
          return std::nullopt;
        }
        if (is_best_run(run)) return best_run_end();
        if (run.experiment == 2) return measured_end(0.90);  // far better than the base's 1.005: kept at once
        if (run.experiment != 3) return measured_end(1.2);
        if (run.purpose == purpose::kCandidate) return measured_end(0.80);
        if (run.purpose == purpose::kConfirm) stop_soon();
        return measured_end(0.888);  // on the new best: better by 1.5 to 3 σΔ, to be confirmed
      },
      [&](const std::vector<ExperimentRow>& rows) {
        const ExperimentRow* c = row_of(rows, 3);
        // Measured on the new best (0.888, not its first run's 0.80) and waiting: now the re-run ends.
        if (held && c && c->state == "evaluated" && c->val_bpb && *c->val_bpb > 0.85) {
          fake_->end_held(*held, measured_end(0.90));
          held.reset();
          released = true;
        }
        return false;
      });
  EXPECT_TRUE(released) << "#3 was never measured while the re-run was held:\n" << daemon_log;
  EXPECT_EQ(row_of(experiments, 2)->state, status::kKept) << daemon_log;
  const ard::Run* reapplied = nullptr;
  const ard::Run* confirm = nullptr;
  for (const auto& run : runs) {
    if (run.experiment == 3 && run.purpose == purpose::kReapplied) reapplied = &run;
    if (run.experiment == 3 && run.purpose == purpose::kConfirm) confirm = &run;
  }
  ASSERT_TRUE(reapplied) << daemon_log;
  ASSERT_TRUE(confirm) << "the waiting candidate was not confirmed:\n" << daemon_log;
  EXPECT_NE(confirm->gpu, reapplied->gpu);
  // Ruled once the best's mean rested on its three runs, not on the two before the held one.
  const size_t line = daemon_log.find("#3 runs again on GPU " + confirm->gpu);
  ASSERT_NE(line, std::string::npos) << daemon_log;
  EXPECT_NE(daemon_log.substr(line, daemon_log.find('\n', line) - line).find("the incumbent's 0.900000 (n=3)"),
            std::string::npos)
      << daemon_log;
}

// A stop while a candidate's decision waits for the best's re-runs ends it
// interrupted, saying what it waited for.
TEST_F(EngineUnit, AStopWhileADecisionWaitsForTheBestsReRunsSaysSo) {
  write_setup(kThreeEdits);
  bool held = false;
  run_engine(
      [&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
        if (run.build) return built_end();
        if (run.purpose == purpose::kIncumbent) {
          if (!std::exchange(held, true)) return std::nullopt;  // the new best's first re-run lasts
          return measured_end(0.90);
        }
        if (is_best_run(run)) return best_run_end();
        if (run.experiment == 2) return measured_end(0.90);
        if (run.experiment != 3) return measured_end(1.2);
        return measured_end(run.purpose == purpose::kCandidate ? 0.80 : 0.888);
      },
      [&](const std::vector<ExperimentRow>& rows) {
        const ExperimentRow* c = row_of(rows, 3);
        return c && c->state == "evaluated" && c->val_bpb && *c->val_bpb > 0.85;  // measured on the new best
      });
  const ExperimentRow* c = row_of(experiments, 3);
  ASSERT_TRUE(c) << daemon_log;
  EXPECT_EQ(c->state, status::kInterrupted) << daemon_log;
  EXPECT_EQ(c->error, "stopped while its decision waited for runs of the best") << daemon_log;
}

// A run that meets a fault of the machine is built and run again once the
// fault clears; a fault that follows the same experiment a third time is
// the experiment's own, and it fails as a crash.
TEST_F(EngineUnit, AMachineFaultRunsItAgainUntilItFollowsTheExperimentAThirdTime) {
  write_setup(kOneEdit);
  int64_t faulted = 0;
  run_engine(
      [&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
        if (run.build) return built_end();
        if (is_best_run(run)) return best_run_end();
        faulted = run.experiment;
        RunEnd end;
        end.kind = RunEnd::Kind::kMachineFault;
        end.fault = EnvironmentFault(dir.path(), std::nullopt, "No space left on device");
        end.detail = end.fault->message();
        return end;
      },
      [&](const std::vector<ExperimentRow>& rows) {
        const ExperimentRow* r = faulted ? row_of(rows, faulted) : nullptr;
        return r && r->state == status::kCrash;
      });
  ASSERT_GT(faulted, 0);
  int builds = 0, stage_runs = 0;
  for (const auto& run : runs)
    if (run.experiment == faulted) ++(run.build ? builds : stage_runs);
  EXPECT_EQ(stage_runs, 3);
  EXPECT_EQ(builds, 3) << "built again before each run again";
  const ExperimentRow* r = row_of(experiments, faulted);
  ASSERT_TRUE(r);
  EXPECT_NE(r->error.find("each of the 3 times"), std::string::npos) << r->error;
  int environment_errors = 0;
  for (const auto& t : trials) environment_errors += t.status == status::kEnvironmentError ? 1 : 0;
  EXPECT_EQ(environment_errors, 2);
}

// A build that fails owes a fix when the proposer fixes builds (a script with a
// "fix" entry): the next proposal is asked to fix it, and its row says which
// experiment it fixes.
TEST_F(EngineUnit, AFailedBuildIsFollowedByAFixOfIt) {
  write_setup(R"([
  {"description": "edit a", "edits": [{"path": "trainer/train.cu", "find": "# a-slot", "replace": "# a-slot changed"}]},
  {"description": "fix a", "fix": true,
   "edits": [{"path": "trainer/train.cu", "find": "# b-slot", "replace": "# b-slot changed"}]},
  {"description": "edit a again", "edits": [{"path": "trainer/train.cu", "find": "# a-slot", "replace": "# a-slot fixed"}]}])");
  int64_t baseline = 0, broken = 0;
  run_engine(
      [&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
        if (!baseline) baseline = run.experiment;
        if (run.build && run.experiment != baseline && (!broken || broken == run.experiment)) {
          broken = run.experiment;
          RunEnd end;
          end.kind = RunEnd::Kind::kBuildFailed;
          end.detail = "build failed (exit code 1): train.cu:3: error: expected ';'";
          end.failure_detail = "train.cu:3: error: expected ';'";
          return end;
        }
        if (run.build) return built_end();
        if (is_best_run(run)) return best_run_end();
        return measured_end(1.2);
      },
      [&](const std::vector<ExperimentRow>& rows) {
        for (const auto& r : rows)
          if (r.fix_of && !r.commit.empty()) return true;
        return false;
      });
  ASSERT_GT(broken, 0);
  const ExperimentRow* failed = row_of(experiments, broken);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->state, status::kBuildFail);
  EXPECT_NE(failed->error.find("expected ';'"), std::string::npos) << failed->error;
  const ExperimentRow* fix = nullptr;
  for (const auto& r : experiments)
    if (r.fix_of) fix = &r;
  ASSERT_TRUE(fix) << daemon_log;
  EXPECT_EQ(*fix->fix_of, broken);
}

/// The script of two candidates made against the same best, both far better
/// than it: the first measured is kept, the second is then stale.
std::optional<RunEnd> two_winners(const ard::Run& run, std::map<int64_t, int>& runs_of_row) {
  if (run.build) return built_end();
  const int k = runs_of_row[run.experiment]++;
  const double wobble = k % 2 ? 0.010 : 0.0;  // σ near 0.007, as the best's runs
  // Row 1 is the baseline's, the first of a fresh store: its runs, the rounds' included.
  if (run.experiment == 1) return measured_end(1.000 + wobble);
  if (run.purpose == purpose::kReapplied) return measured_end(0.800 + wobble);
  return measured_end((run.experiment % 2 ? 0.900 : 0.850) + wobble);
}

// A candidate that beat the best it was made against, after another was
// kept meanwhile, has its change re-applied onto the new best and measured
// again there: a run of the cherry-picked commit, its row naming the commit
// it came from.
TEST_F(EngineUnit, AStaleWinnerIsReappliedOntoTheNewBestAndRunAgain) {
  write_setup(kThreeEdits);
  std::map<int64_t, int> runs_of_row;
  run_engine(
      [&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
        if (run.purpose == purpose::kReapplied) stop_soon();
        return two_winners(run, runs_of_row);
      });
  const ard::Run* reapplied = nullptr;
  for (const auto& run : runs)
    if (run.purpose == purpose::kReapplied) reapplied = &run;
  ASSERT_TRUE(reapplied) << daemon_log;
  const ExperimentRow* row = row_of(experiments, reapplied->experiment);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->commit, reapplied->commit);
  EXPECT_FALSE(row->reapplied_from.empty());
  EXPECT_NE(row->reapplied_from, reapplied->commit);
  bool ran_before = false;  // its first run, of the commit it was made as
  for (const auto& run : runs)
    ran_before = ran_before || (run.experiment == row->id && !run.build && run.commit == row->reapplied_from);
  EXPECT_TRUE(ran_before);
}

// Two candidates that change the same line: once one is kept, the other's
// change does not apply onto the new best, and it ends as a conflict
// without being measured there.
TEST_F(EngineUnit, AStaleWinnerWhoseChangeDoesNotApplyEndsAsAConflict) {
  write_setup(R"([
  {"description": "edit a", "edits": [{"path": "trainer/train.cu", "find": "# a-slot", "replace": "# a-slot one"}]},
  {"description": "edit a otherwise", "edits": [{"path": "trainer/train.cu", "find": "# a-slot", "replace": "# a-slot two"}]}])");
  std::map<int64_t, int> runs_of_row;
  run_engine([&](const ard::Run& run, size_t) { return two_winners(run, runs_of_row); },
             [&](const std::vector<ExperimentRow>& rows) {
               for (const auto& r : rows)
                 if (r.state == status::kConflict) return true;
               return false;
             });
  const ExperimentRow* conflict = nullptr;
  for (const auto& r : experiments)
    if (r.state == status::kConflict) conflict = &r;
  ASSERT_TRUE(conflict) << daemon_log;
  EXPECT_NE(conflict->error.find("does not apply onto"), std::string::npos) << conflict->error;
  for (const auto& run : runs) EXPECT_NE(run.purpose, purpose::kReapplied);
}

// ---------------------------------------------------------------- stop and restart

/// The candidate's first stage run of `runs` (neither a build nor a run of the best), or null.
const ard::Run* first_candidate_run(const std::vector<ard::Run>& runs, int64_t experiment) {
  for (const auto& run : runs)
    if (!run.build && run.experiment == experiment && !is_best_run(run)) return &run;
  return nullptr;
}

// A candidate whose run a stop cut short runs again at the next start, from
// the commit it had, and is decided there: nothing in flight is dropped.
TEST_F(EngineUnit, ARunCutShortByAStopRunsAgainFromItsCommitAtTheNextStart) {
  write_setup(kOneEdit);
  int64_t held = 0;
  std::string commit;
  run_engine([&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
    if (run.build) return built_end();
    if (is_best_run(run)) return best_run_end();
    held = run.experiment;
    commit = run.commit;
    stop_soon();
    return std::nullopt;
  });
  ASSERT_GT(held, 0);
  ASSERT_EQ(row_of(experiments, held)->state, status::kInterrupted);
  EXPECT_NE(daemon_log.find("1 interrupted experiment(s) run again at the next start"), std::string::npos) << daemon_log;

  stop_raised_ = false;
  run_engine(
      [&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
        if (run.build) return built_end();
        if (is_best_run(run)) return best_run_end();
        return measured_end(0.5);
      },
      [&](const std::vector<ExperimentRow>& rows) {
        const ExperimentRow* r = row_of(rows, held);
        return r && r->state == status::kKept;
      });
  const ExperimentRow* row = row_of(experiments, held);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->state, status::kKept) << daemon_log;
  EXPECT_EQ(row->commit, commit);
  EXPECT_EQ(row->resumes, 1);
  const ard::Run* again = first_candidate_run(runs, held);
  ASSERT_TRUE(again) << daemon_log;
  EXPECT_EQ(again->commit, commit);
  EXPECT_EQ(again->purpose, purpose::kCandidate);
  EXPECT_NE(daemon_log.find("#" + std::to_string(held) + " resumed (stopped during stage train; 1 of at most 2)"),
            std::string::npos)
      << daemon_log;
}

// A stop during a confirmation: the restart keeps the first run, and the
// candidate's next run is the confirmation again, not a first run.
TEST_F(EngineUnit, AConfirmationCutShortByAStopIsAskedForAgainAfterTheRestart) {
  write_setup(kOneEdit);
  int64_t held = 0;
  run_engine([&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
    if (run.build) return built_end();
    if (is_best_run(run)) return best_run_end();
    if (run.purpose == purpose::kConfirm) {
      held = run.experiment;
      stop_soon();
      return std::nullopt;
    }
    return measured_end(0.994);  // within the noise: confirmed (see AnUndecidedCandidateIsConfirmedOnTheOtherGpu)
  });
  ASSERT_GT(held, 0) << daemon_log;

  stop_raised_ = false;
  run_engine(
      [&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
        if (run.build) return built_end();
        if (is_best_run(run)) return best_run_end();
        return measured_end(0.994);
      },
      [&](const std::vector<ExperimentRow>& rows) {
        const ExperimentRow* r = row_of(rows, held);
        return r && is_final_state(r->state) && r->state != status::kInterrupted;
      });
  const ard::Run* again = first_candidate_run(runs, held);
  ASSERT_TRUE(again) << daemon_log;
  EXPECT_EQ(again->purpose, purpose::kConfirm);
  std::vector<std::string> statuses;  // its trials, in order
  for (const auto& t : trials)
    if (t.experiment_id == held) statuses.push_back(t.purpose + " " + t.status);
  ASSERT_GE(statuses.size(), 3u);
  EXPECT_EQ(statuses[0], "candidate ok");
  EXPECT_EQ(statuses[1], "confirm interrupted");
  EXPECT_EQ(statuses[2], "confirm ok");
  EXPECT_EQ(row_of(experiments, held)->resumes, 1);
}

// A candidate cut short by every stop runs again twice; the third time it
// stays interrupted, and the restart says why.
TEST_F(EngineUnit, ACandidateInterruptedThreeTimesStaysInterrupted) {
  write_setup(kOneEdit);
  int64_t held = 0;
  auto hold = [&](const ard::Run& run, size_t) -> std::optional<RunEnd> {
    if (run.build) return built_end();
    if (is_best_run(run)) return best_run_end();
    held = run.experiment;
    stop_soon();
    return std::nullopt;
  };
  for (int start = 0; start < 3; ++start) {
    stop_raised_ = false;
    run_engine(hold);
  }
  ASSERT_GT(held, 0);
  EXPECT_EQ(row_of(experiments, held)->resumes, 2);
  stop_raised_ = false;
  run_engine(hold, [&](const std::vector<ExperimentRow>&) { return true; });
  const ExperimentRow* row = row_of(experiments, held);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->state, status::kInterrupted);
  EXPECT_EQ(row->resumes, 2);
  EXPECT_EQ(first_candidate_run(runs, held), nullptr) << "it ran a fourth time";
  EXPECT_NE(daemon_log.find("reconcile: #" + std::to_string(held) + " was interrupted 3 times: it stays interrupted"),
            std::string::npos)
      << daemon_log;
}

// ---------------------------------------------------------------- duplicates

// A proposal that repeats a change already tried (here: one still in flight,
// the same edit proposed for the other GPU) is recorded as a duplicate and
// never built or run; the proposer is told which experiment it repeats.
TEST_F(EngineUnit, AChangeThatRepeatsOneInFlightIsADuplicateAndNeverBuilt) {
  write_setup(R"([
  {"description": "edit a", "edits": [{"path": "trainer/train.cu", "find": "# a-slot", "replace": "# a-slot\nlr 0.02"}]},
  {"description": "edit a, again", "edits": [{"path": "trainer/train.cu", "find": "# a-slot", "replace": "# a-slot\nlr   0.02  // the same"}]},
  {"description": "edit b", "edits": [{"path": "trainer/train.cu", "find": "# b-slot", "replace": "# b-slot\nlr 0.03"}]}])");
  run_engine(
      every_candidate_worse(),
      [&](const std::vector<ExperimentRow>& rows) {
        int finished = 0;
        for (const auto& r : rows) finished += is_final_state(r.state) ? 1 : 0;
        return finished >= 4;
      });
  const ExperimentRow* first = nullptr;
  const ExperimentRow* again = nullptr;
  for (const auto& r : experiments) {
    if (r.description == "edit a") first = &r;
    if (r.description == "edit a, again") again = &r;
  }
  ASSERT_TRUE(first && again) << daemon_log;
  EXPECT_EQ(again->state, status::kDuplicate);
  EXPECT_EQ(again->error.rfind("repeats #" + std::to_string(first->id) + " (", 0), 0u) << again->error;
  EXPECT_NE(again->error.find("similarity 1.00 (the same change)"), std::string::npos) << again->error;
  EXPECT_FALSE(again->commit.empty());
  for (const auto& run : runs) EXPECT_NE(run.experiment, again->id) << "a duplicate was built or run";
  for (const auto& t : trials) EXPECT_NE(t.experiment_id, again->id);
  EXPECT_NE(daemon_log.find("#" + std::to_string(again->id) + " duplicate: repeats #"), std::string::npos) << daemon_log;
}

// ---------------------------------------------------------------- ideas

// An idea queued before the start goes to the first proposal, whose row
// links to it; the next proposal gets none (the idea is tried).
TEST_F(EngineUnit, AQueuedIdeaGoesToTheNextProposalAndItsRowLinksToIt) {
  write_setup(kThreeEdits);
  int64_t idea = 0;
  {
    StateDir state(repo);
    state.create();
    Store store(state.db().string());
    idea = store.add_idea("unit", "try a wider a-slot", "cli");
  }
  run_engine(
      every_candidate_worse(),
      [&](const std::vector<ExperimentRow>& rows) {
        int committed = 0;
        for (const auto& r : rows) committed += !r.is_baseline && !r.commit.empty();
        return committed >= 2;
      });
  std::vector<const ExperimentRow*> candidates;
  for (const auto& r : experiments)
    if (!r.is_baseline && !r.commit.empty()) candidates.push_back(&r);
  ASSERT_GE(candidates.size(), 2u) << daemon_log;
  EXPECT_EQ(candidates[0]->idea_id, idea);
  EXPECT_FALSE(candidates[1]->idea_id);
  EXPECT_NE(daemon_log.find("#" + std::to_string(candidates[0]->id) + " is asked to try idea " + std::to_string(idea) +
                            ": try a wider a-slot"),
            std::string::npos)
      << daemon_log;
}

}  // namespace
}  // namespace ard

// ---------------------------------------------------------------- promotion rounds

namespace ard {
namespace {

/// A run's end reporting the model's size, as the trainer's summary does.
RunEnd sized_end(double value, double depth, double params_m) {
  RunEnd end = measured_end(value);
  end.summary->values["depth"] = depth;
  end.summary->values["num_params_M"] = params_m;
  return end;
}

/// Whether the run is a promotion run (at rung 1 of the default ladder: twice the budget).
bool at_rung(const ard::Run& run) { return run.purpose == purpose::kPromote; }

bool round_ended(Store& store) {
  for (const auto& r : store.promotion_rounds("unit"))
    if (r.ended_at) return true;
  return false;
}

std::string label_of(const std::vector<ChangeLabelRow>& labels, int64_t experiment) {
  for (const auto& l : labels)
    if (l.experiment_id == experiment && l.rung == 1) return l.label;
  return "untested";
}

class EnginePromotion : public EngineUnit {
 protected:
  /// The kept changes (#2, #3 of n_edits(2)) measured far better at rung 0;
  /// at rung 1 a run of experiment e's commit gives rung1(e) (the base: #1).
  FakeExecutor::Script script(std::function<double(int64_t experiment)> rung1, double rung1_depth = 16) {
    return [this, rung1, rung1_depth](const ard::Run& run, size_t) -> std::optional<RunEnd> {
      if (run.build) return built_end();
      if (at_rung(run)) {
        EXPECT_NE(run.stages.front().command.find("--budget 600"), std::string::npos) << run.stages.front().command;
        const double jitter = rung_runs_++ % 2 ? 0.002 : 0;
        return sized_end(rung1(run.experiment) + jitter, rung1_depth, 40);
      }
      if (is_best_run(run)) {
        RunEnd end = *best_run_end();
        return sized_end(end.value, 8, 10);
      }
      return sized_end(run.experiment == 2 ? 0.95 : 0.90, 8, 10);
    };
  }
  /// The ladder as the shipped trainer gets it by default (its stage takes
  /// {depth_scale}; this one's does not, so the rung is written out).
  void setup(const std::string& script, const std::string& extra) {
    write_setup(script, extra + "[[rung]]\nname = \"2x\"\nvalues = { depth_scale = 2 }\n");
  }
  int rung_runs_ = 0;
};

/// Every round is let in at once: a round waits until its runs fit promote.max_share of the
/// night's GPU time, and these nights are a few fake seconds long.
const std::string kPromoteEvery2 = "[promote]\nevery = 2\nmax_share = 1\n";
/// Two edits of lines of their own: both kept, the second re-applied onto the first.
const std::string kTwoSlots = R"([
  {"description": "edit a", "edits": [{"path": "trainer/train.cu", "find": "# a-slot", "replace": "# a-slot changed"}]},
  {"description": "edit b", "edits": [{"path": "trainer/train.cu", "find": "# b-slot", "replace": "# b-slot changed"}]}])";

// Two kept changes make a round: the base and each change at rung 1 (twice
// the budget), one run each, and the base again until σ at the rung rests on
// df 3; each change keeps most of its rung-0 gain on top of the one before
// it, so each transfers, with its evidence.
TEST_F(EnginePromotion, EachChangeThatHelpsAtTheRungTransfers) {
  setup(kTwoSlots, kPromoteEvery2);
  until_store = round_ended;
  run_engine(script([](int64_t e) { return e == 1 ? 0.90 : e == 2 ? 0.87 : 0.84; }));
  ASSERT_EQ(rounds.size(), 1u) << daemon_log;
  EXPECT_EQ(rounds[0].rung, 1);
  EXPECT_TRUE(rounds[0].ended_at);
  EXPECT_THAT(rounds[0].outcome, ::testing::StartsWith("the stack of 2 change(s) gained 0.0")) << daemon_log;
  EXPECT_THAT(rounds[0].outcome, ::testing::EndsWith(" at rung 1; #2, #3 transfer(s)")) << daemon_log;
  EXPECT_EQ(label_of(labels, 2), "transfers") << daemon_log;
  EXPECT_EQ(label_of(labels, 3), "transfers");
  int base_runs = 0, best_runs = 0;
  for (const auto& t : trials)
    if (t.rung == 1) {
      EXPECT_EQ(t.purpose, purpose::kPromote);
      (t.experiment_id == 1 ? base_runs : best_runs) += t.status == "ok";
    }
  EXPECT_EQ(base_runs, 4);  // one, then three more for σ on df 3
  EXPECT_EQ(best_runs, 2);  // #2 and #3, one run each
  auto evidence = parse_evidence_json(labels[1].evidence);  // #3 against #2
  ASSERT_TRUE(evidence);
  EXPECT_EQ(evidence->best_n, 1);
  EXPECT_NEAR(evidence->best_mean, 0.871, 0.0011);  // 0.87, and the fake's jitter of 0 or 0.002
  EXPECT_NEAR(evidence->delta, 0.03, 0.0021);
  ASSERT_TRUE(evidence->gain_at_rung0 && evidence->lambda);  // what the transfer rule tested against, kept
  EXPECT_GT(*evidence->gain_at_rung0, 0);  // #3 gained at rung 0 on #2's runs there (the fake's best re-runs blur how much)
  EXPECT_GT(*evidence->lambda, 1);
  EXPECT_NE(daemon_log.find("promotion round at rung 1 (2x): 2 kept change(s) against #1"), std::string::npos) << daemon_log;
}

// The second change (#3) undoes the first's gain at the rung: it is
// scale-bound, measured against #2, while #2 transfers.
TEST_F(EnginePromotion, AChangeThatHurtsAtTheRungIsScaleBound) {
  setup(kTwoSlots, kPromoteEvery2);
  until_store = round_ended;
  // #2 helps at the rung, #3 undoes it.
  run_engine(script([](int64_t e) { return e == 1 ? 0.90 : e == 2 ? 0.85 : 0.95; }));
  ASSERT_EQ(rounds.size(), 1u) << daemon_log;
  EXPECT_EQ(label_of(labels, 2), "transfers") << daemon_log;
  EXPECT_EQ(label_of(labels, 3), "scale_bound") << daemon_log;
  EXPECT_THAT(rounds[0].outcome, ::testing::StartsWith("the stack of 2 change(s) lost 0.0"));
  EXPECT_THAT(rounds[0].outcome, ::testing::EndsWith(" at rung 1; #2 transfer(s); #3 scale-bound"));
  auto evidence = parse_evidence_json(labels[1].evidence);
  ASSERT_TRUE(evidence);
  EXPECT_LT(evidence->delta, 0);
}

// promote.on_fail = "revert": the scale-bound change's revert is queued as a
// try, which the next experiment takes and the judge decides like any other.
TEST_F(EnginePromotion, OnFailRevertProposesTheRevertOfTheScaleBoundChange) {
  setup(kTwoSlots, kPromoteEvery2 + "on_fail = \"revert\"\n");
  until_store = [](Store& store) {
    for (const auto& e : store.experiments("unit"))
      if (e.description.rfind("revert #3", 0) == 0 && is_final_state(e.state)) return true;
    return false;
  };
  run_engine(script([](int64_t e) { return e == 1 ? 0.90 : e == 2 ? 0.85 : 0.95; }));
  ASSERT_EQ(label_of(labels, 3), "scale_bound") << daemon_log;
  const ExperimentRow* revert = nullptr;
  for (const auto& e : experiments)
    if (e.description.rfind("revert #3", 0) == 0) revert = &e;
  ASSERT_TRUE(revert) << daemon_log;
  EXPECT_EQ(revert->description, "revert #3 (scale-bound at 2x)");
  EXPECT_EQ(revert->proposer, "user");
  EXPECT_NE(revert->diff.find("-# b-slot changed"), std::string::npos) << revert->diff;
  EXPECT_NE(daemon_log.find("#3 is scale-bound at 2x; its revert"), std::string::npos) << daemon_log;
}

// A run at the rung that reports the rung-0 model's depth did not run the
// larger model: tampered, never a result, so the prefix it measured did not improve.
TEST_F(EnginePromotion, ARunAtTheRungOfTheWrongSizeIsTampered) {
  setup(kTwoSlots, kPromoteEvery2);
  until_store = round_ended;
  run_engine(script([](int64_t) { return 0.9; }, 8));
  ASSERT_EQ(rounds.size(), 1u) << daemon_log;
  int tampered = 0;
  for (const auto& t : trials) tampered += t.rung == 1 && t.status == status::kTampered;
  EXPECT_GE(tampered, 1) << daemon_log;
  EXPECT_NE(daemon_log.find("depth 8 where the rung asks 8 x 2 = 16"), std::string::npos) << daemon_log;
  EXPECT_TRUE(labels.empty());  // the reference itself failed at the rung: no labels
  EXPECT_NE(rounds[0].outcome.find("the reference #1 failed at rung 1"), std::string::npos) << rounds[0].outcome;
}

// A round cut short by a stop resumes at the next start: its finished runs
// count, the reference is not run again, and the labels are stored once.
TEST_F(EnginePromotion, ARoundStoppedHalfwayResumesAtTheNextStart) {
  setup(kTwoSlots, kPromoteEvery2);
  until_store = [](Store& store) {
    int done = 0;
    for (const auto& t : store.trials("unit")) done += t.rung == 1 && t.status == "ok";
    return done >= 3;
  };
  const auto rung1 = [](int64_t e) { return e == 1 ? 0.90 : e == 2 ? 0.87 : 0.84; };
  const FakeExecutor::Script first = script(rung1);
  run_engine([&](const ard::Run& run, size_t i) -> std::optional<RunEnd> {
    if (at_rung(run) && run.experiment == 3) return std::nullopt;  // the best's runs at the rung: cut short by the stop
    return first(run, i);
  });
  ASSERT_EQ(rounds.size(), 1u) << daemon_log;
  ASSERT_FALSE(rounds[0].ended_at) << daemon_log;
  const size_t first_runs = trials.size();
  int ok_before = 0;
  for (const auto& t : trials) ok_before += t.rung == 1 && t.status == "ok";
  until_store = round_ended;
  stop_raised_ = false;
  run_engine(script(rung1));
  ASSERT_EQ(rounds.size(), 1u) << daemon_log;
  EXPECT_TRUE(rounds[0].ended_at) << daemon_log;
  EXPECT_NE(rounds[0].reason.find("(resumed)"), std::string::npos);
  int ok_after = 0;
  for (const auto& t : trials) ok_after += t.rung == 1 && t.status == "ok";
  // Resumed, not restarted: after the stop only #3's two runs (and a run of the base while σ at
  // the rung rested on df 2) were still to come.
  EXPECT_GE(ok_before, 3);
  EXPECT_LE(ok_after - ok_before, 3) << "the round started over after the restart:\n" << daemon_log;
  EXPECT_GT(trials.size(), first_runs);
  EXPECT_EQ(label_of(labels, 3), "transfers") << daemon_log;
}

// `autoresearchd promote` asks for a round before promote.every kept changes;
// promote.gpus = 1 keeps the rung's runs on the last GPU.
TEST_F(EnginePromotion, ARoundAskedForRunsOnTheReservedGpu) {
  setup(n_edits(1), "[promote]\ngpus = 1\nmax_share = 1\n");
  {
    StateDir state(repo);
    state.create();
    Store store(state.db().string());
    store.request_promotion("unit");
  }
  until_store = round_ended;
  run_engine(script([](int64_t e) { return e == 1 ? 0.90 : 0.85; }));
  ASSERT_EQ(rounds.size(), 1u) << daemon_log;
  EXPECT_TRUE(rounds[0].requested_at);
  EXPECT_NE(rounds[0].reason.find("a round was requested with 1 kept change(s)"), std::string::npos) << rounds[0].reason;
  int at_rung_runs = 0;
  for (const auto& run : runs)
    if (at_rung(run) && !run.build) {
      ++at_rung_runs;
      EXPECT_EQ(run.gpu, "1");
    }
  EXPECT_GE(at_rung_runs, 5);
}

// promote.max_share caps the GPU time at rungs above 0: a round whose runs
// would take the night past it does not start, however many changes are kept
// (here 2 kept changes, a round of 3 commits x 2 runs x twice a rung-0 run's
// time, against a night of some 15 rung-0 runs and a share of 5 %).
// Two kept changes, fewer than promote.every (5): no round is due by count,
// but once the script is used up the proposer waits and nothing is left at
// rung 0, so the idle GPU takes a round of both.
TEST_F(EnginePromotion, TheIdleGpuPromotesWhatWasKeptWhileTheProposerWaits) {
  setup(kTwoSlots, "[promote]\nevery = 5\nmax_share = 1\n");
  until_store = round_ended;
  run_engine(script([](int64_t e) { return e == 1 ? 0.90 : e == 2 ? 0.87 : 0.84; }));
  ASSERT_EQ(rounds.size(), 1u) << daemon_log;
  EXPECT_THAT(rounds[0].reason, ::testing::StartsWith("the proposer waits (nothing to propose: "));
  EXPECT_THAT(rounds[0].reason, ::testing::HasSubstr("so the idle GPUs take a round with 2 kept change(s)"));
  EXPECT_EQ(label_of(labels, 2), "transfers") << daemon_log;
  EXPECT_EQ(label_of(labels, 3), "transfers") << daemon_log;
}

TEST_F(EnginePromotion, NoRoundStartsThatWouldTakeTheNightPastItsShare) {
  setup(kTwoSlots, "[promote]\nevery = 1\nmax_share = 0.05\n");
  until_store = [](Store& store) {
    int kept = 0;
    for (const auto& e : store.experiments("unit")) kept += e.state == "kept";
    return kept >= 3;
  };
  run_engine(script([](int64_t) { return 0.9; }));
  EXPECT_TRUE(rounds.empty()) << daemon_log;
  for (const auto& t : trials) EXPECT_EQ(t.rung, 0);
  EXPECT_EQ(daemon_log.find("promotion round"), std::string::npos) << daemon_log;
}

}  // namespace
}  // namespace ard
