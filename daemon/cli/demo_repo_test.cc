// Tests of the demo's research repo: the night's make-up, the repo as the
// daemon will read it (config, script, trainer file, first commit), each
// candidate's true effect as the simulated trainer measures it, and the
// refusals.
#include "daemon/cli/demo_repo.h"

#include <set>
#include <sstream>

#include "daemon/config.h"
#include "daemon/decide/summary.h"
#include "daemon/git_repo.h"
#include "daemon/sim_trainer.h"
#include "proposers/scripted_proposer.h"
#include "testing/test_util.h"

namespace ard {
namespace {

namespace fs = std::filesystem;

GitLibrary git_library;

DemoSettings settings_in(const fs::path& dir) { return {dir, "/usr/local/bin/autoresearchd", 8799, true}; }

/// val_bpb of the trainer file `text` with its noise set to 0.
double noiseless_val(const fs::path& dir, std::string text) {
  const std::string noise = "noise_sigma 0.0015\n";
  const size_t at = text.find(noise);
  EXPECT_NE(at, std::string::npos);
  text.replace(at, noise.size(), "noise_sigma 0\n");
  text.replace(text.find("seconds 0.3\n"), 12, "seconds 0\n");
  testing::write_file(dir / "t.sim", text);
  SimRunFlags f;
  f.budget_s = 0.3;
  f.nonce = 1;
  std::ostringstream out, err;
  EXPECT_EQ(sim_simulate((dir / "t.sim").string(), f, out, err), 0) << err.str();
  auto parsed = parse_summary(out.str(), {"val_bpb"});
  EXPECT_TRUE(parsed.summary) << out.str();
  return parsed.summary ? parsed.summary->values.at("val_bpb") : 0;
}

TEST(DemoRepo, TheNightMixesGainsNullsRegressionsAndOneBrokenBuild) {
  const auto& night = demo_candidates();
  EXPECT_EQ(night.size(), 40u);
  int gains = 0, nulls = 0, worse = 0, broken = 0;
  std::set<std::string> knobs;
  for (const auto& c : night) {
    knobs.insert(c.knob);
    if (c.build_error) ++broken;
    else if (c.effect > 0) ++gains;
    else if (c.effect < 0) ++worse;
    else ++nulls;
  }
  EXPECT_EQ(knobs.size(), night.size());  // one line of the trainer file each
  EXPECT_EQ(broken, 1);
  EXPECT_GE(gains, 8);
  EXPECT_GE(nulls, 8);
  EXPECT_GE(worse, 8);
  // The first is a gain well above the noise (σ 0.0015), so the first keep comes early.
  EXPECT_GE(night.front().effect, 0.01);
}

TEST(DemoRepo, MakesACommittedRepoTheDaemonCanRead) {
  testing::TempDir tmp;
  auto made = make_demo_repo(settings_in(tmp / "demo"));
  ASSERT_TRUE(std::holds_alternative<DemoRepo>(made)) << std::get<std::string>(made);
  const DemoRepo& repo = std::get<DemoRepo>(made);
  EXPECT_EQ(repo.root, tmp / "demo");
  EXPECT_EQ(repo.candidates, 40u);

  GitRepo git(repo.root);
  EXPECT_EQ(git.head(), repo.commit);
  auto tracked = git.tracked_files();
  std::sort(tracked.begin(), tracked.end());
  EXPECT_EQ(tracked, (std::vector<std::string>{".gitignore", "autoresearch.toml", "night.json", "program.md",
                                                "trainer/train.sim"}));
  EXPECT_EQ(testing::shell("git -C " + testing::sh_quote(repo.root.string()) + " status --porcelain").out, "");
  EXPECT_EQ(testing::shell("git -C " + testing::sh_quote(repo.root.string()) + " branch --show-current").out, "main\n");

  Config c = load_config(repo.root);
  EXPECT_EQ(c.tag, "demo");
  EXPECT_EQ(c.editable, std::vector<std::string>{"trainer/train.sim"});
  EXPECT_EQ(c.gpus, std::vector<std::string>{"0"});
  EXPECT_EQ(c.preflight_gpu, "off");
  EXPECT_FALSE(c.data.enabled);
  EXPECT_STREQ(to_string(c.sandbox.mode), "bwrap");
  EXPECT_EQ(c.proposer_kind, "scripted");
  EXPECT_TRUE(c.serve.enabled);
  EXPECT_EQ(c.serve.port, 8799);
  EXPECT_EQ(c.build_command, "'/usr/local/bin/autoresearchd' sim-trainer build trainer/train.sim");
  ASSERT_EQ(c.stages.size(), 1u);
  EXPECT_EQ(c.stages[0].command,
            "'/usr/local/bin/autoresearchd' sim-trainer run trainer/train.sim --budget {budget} "
            "--budget-scale {budget_scale}");

  Config off = parse_config(demo_config_toml({tmp / "x", "/a/autoresearchd", 80, false}), tmp.path());
  EXPECT_STREQ(to_string(off.sandbox.mode), "off");
}

TEST(DemoRepo, EachCandidateChangesValBpbByItsTrueEffect) {
  testing::TempDir tmp;
  auto made = make_demo_repo(settings_in(tmp / "demo"));
  ASSERT_TRUE(std::holds_alternative<DemoRepo>(made)) << std::get<std::string>(made);
  const fs::path root = std::get<DemoRepo>(made).root;
  const std::string base = testing::read_file(root / "trainer/train.sim");
  const double base_val = noiseless_val(tmp.path(), base);
  EXPECT_NEAR(base_val, 0.99, 1e-9);

  ScriptedProposer proposer(root / "night.json");
  const auto& night = demo_candidates();
  for (size_t i = 0; i < night.size(); ++i) {
    SCOPED_TRACE("candidate " + std::to_string(i + 1) + " " + night[i].knob);
    ProposalContext ctx;
    ctx.files = {{"trainer/train.sim", base}};
    ProposalResult r = proposer.propose(ctx);
    ASSERT_TRUE(r.ok()) << r.error->message;
    ASSERT_EQ(r.proposal->writes.size(), 1u);
    const std::string& text = r.proposal->writes[0].content;
    EXPECT_EQ(r.proposal->description.rfind(night[i].knob + " " + night[i].from + " -> " + night[i].to, 0), 0u);
    testing::write_file(tmp / "c.sim", text);
    std::ostringstream out, err;
    if (night[i].build_error) {
      EXPECT_EQ(sim_build((tmp / "c.sim").string(), out, err), 1);
      EXPECT_NE(r.proposal->description.find("(true effect: does not build)"), std::string::npos);
      continue;
    }
    EXPECT_EQ(sim_build((tmp / "c.sim").string(), out, err), 0) << err.str();
    EXPECT_NEAR(noiseless_val(tmp.path(), text), base_val - night[i].effect, 1e-6);
  }
  ProposalResult past_the_end = proposer.propose(ProposalContext{});
  ASSERT_FALSE(past_the_end.ok());
  EXPECT_EQ(past_the_end.error->kind, ProposalError::Kind::kExhausted);
}

TEST(DemoRepo, RefusesWhatItCannotMake) {
  testing::TempDir tmp;
  testing::write_file(tmp / "full/keep.txt", "mine\n");
  EXPECT_EQ(std::get<std::string>(make_demo_repo(settings_in(tmp / "full"))),
            (tmp / "full").string() + " exists and is not an empty directory");
  EXPECT_EQ(testing::read_file(tmp / "full/keep.txt"), "mine\n");
  DemoSettings relative = settings_in(tmp / "a");
  relative.daemon = "build/autoresearchd";
  EXPECT_EQ(std::get<std::string>(make_demo_repo(relative)), "the daemon's path must be absolute: build/autoresearchd");
  DemoSettings spaced = settings_in(tmp / "b");
  spaced.daemon = "/opt/my tools/autoresearchd";
  EXPECT_EQ(std::get<std::string>(make_demo_repo(spaced)),
            "the daemon's path has a space, quote or backslash, which its stage command cannot name: "
            "/opt/my tools/autoresearchd");
  DemoSettings no_port = settings_in(tmp / "c");
  no_port.port = 0;
  EXPECT_EQ(std::get<std::string>(make_demo_repo(no_port)), "port out of range: 0");
  EXPECT_FALSE(fs::exists(tmp / "a"));
  // An empty directory is taken.
  fs::create_directories(tmp / "empty");
  EXPECT_TRUE(std::holds_alternative<DemoRepo>(make_demo_repo(settings_in(tmp / "empty"))));
}

}  // namespace
}  // namespace ard
