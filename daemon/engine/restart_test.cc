// settle_last_sessions on a store a killed daemon left: what ends, what is
// deleted, what is decided, and what runs again, each with its log line.
#include "daemon/engine/restart.h"

#include <gmock/gmock.h>

#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

const std::string kBase(40, 'a');

TEST(SettleLastSessions, AKilledSessionsRowsEndAndThoseWithACommitRunAgain) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  store.add_run("t", "autoresearch/t", kBase);
  const int64_t session = store.begin_session("t", 1);
  store.set_session_alive(session);
  const int64_t baseline = store.create_experiment("t", true, kBase, "", "baseline", std::nullopt);
  store.set_commit(baseline, kBase, "");
  store.set_metrics(baseline, {1.0, std::nullopt, std::nullopt, ""});
  store.finish(baseline, status::kKept, "", "");
  const int64_t running = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);
  store.set_proposal(running, "wider");
  store.set_commit(running, std::string(40, 'b'), "diff");
  store.set_stage(running, ExperimentState::kRunning, "train", 10.0, 20.0, 15.0);
  const int64_t asking = store.create_experiment("t", false, kBase, "", "llm", std::nullopt);  // no proposal yet

  std::vector<std::string> lines;
  SettleSettings settings{"t", "val_bpb", KeepSettings{}, 0.0, dir.path()};
  const std::vector<Resume> resumes = settle_last_sessions(store, settings, [&](const std::string& l) { lines.push_back(l); });

  EXPECT_EQ(store.experiment(running)->state, status::kInterrupted);
  EXPECT_EQ(store.experiment(running)->error, "the daemon stopped while the experiment was running (stage train)");
  EXPECT_FALSE(store.experiment(asking)) << "a row that only waited for a proposal is deleted";
  EXPECT_TRUE(store.unfinished().empty());
  EXPECT_EQ(store.sessions("t").back().end_reason, "killed");
  ASSERT_EQ(resumes.size(), 1u);
  EXPECT_EQ(resumes[0].id, running);
  EXPECT_EQ(resumes[0].runs, 0);
  EXPECT_THAT(lines, Contains("reconcile: closed 1 session(s) of a killed daemon"));
  EXPECT_THAT(lines, Contains("reconcile: #" + std::to_string(running) + " marked interrupted (was running (stage train))"));
  EXPECT_THAT(lines, Contains("#" + std::to_string(asking) +
                              " removed at restart: it had no proposal and no LLM call; its id stays unused"));
}

TEST(SettleLastSessions, AFirstStartFindsNothingToSettle) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  std::vector<std::string> lines;
  SettleSettings settings{"t", "val_bpb", KeepSettings{}, 0.0, dir.path()};
  EXPECT_TRUE(settle_last_sessions(store, settings, [&](const std::string& l) { lines.push_back(l); }).empty());
  EXPECT_TRUE(lines.empty());
}

}  // namespace
}  // namespace ard
