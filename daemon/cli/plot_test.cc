// Tests of the gnuplot script and of `plot` with Debian's gnuplot as a child.
#include "daemon/cli/plot.h"

#include <gmock/gmock.h>

#include "daemon/fatal_error.h"
#include "testing/test_util.h"

namespace ard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ExperimentRow row(int64_t id, const std::string& state, std::optional<double> val, double started_at) {
  ExperimentRow r;
  r.id = id;
  r.state = state;
  r.val_bpb = val;
  r.started_at = started_at;
  r.description = "it's <b>bold</b>'";
  return r;
}

const std::vector<ExperimentRow> kRows = {
    row(1, "kept", 1.0, 3600), row(2, "discarded", 1.1, 5400), row(3, "crash", std::nullopt, 7200),
    row(4, "kept", 0.9, 9000), row(5, "running", 0.95, 10800)};

TEST(Plot, FormatFromTheExtension) {
  EXPECT_EQ(plot_format("a/progress.png"), PlotFormat::kPng);
  EXPECT_EQ(plot_format("progress.svg"), PlotFormat::kSvg);
  EXPECT_FALSE(plot_format("progress.pdf").has_value());
  EXPECT_FALSE(plot_format("progress").has_value());
}

TEST(Plot, ScriptHoldsThePointsByStateAndTheBestStepLine) {
  std::string s = gnuplot_script(kRows, "t", PlotFormat::kPng, "/tmp/it's.png", false);
  EXPECT_THAT(s, HasSubstr("set terminal pngcairo size 1200,600"));
  EXPECT_THAT(s, HasSubstr("set output '/tmp/it''s.png'"));
  // The best-so-far line: the baseline, the improvement, held to the last experiment.
  EXPECT_THAT(s, HasSubstr("$d0 << EOD\n1 1\n4 0.9\n5 0.9\nEOD\n"));
  EXPECT_THAT(s, HasSubstr("with steps"));
  EXPECT_THAT(s, HasSubstr("EOD\n2 1.1\nEOD\n"));       // discarded
  EXPECT_THAT(s, HasSubstr("EOD\n1 1\n4 0.9\nEOD\n"));  // kept points
  EXPECT_THAT(s, HasSubstr("EOD\n5 0.95\nEOD\n"));      // in flight, in its own colour
  EXPECT_THAT(s, HasSubstr("title 'running'"));
  EXPECT_THAT(s, Not(HasSubstr("bold")));                // stored text never reaches gnuplot
  std::string by_time = gnuplot_script(kRows, "t", PlotFormat::kSvg, "p.svg", true);
  EXPECT_THAT(by_time, HasSubstr("set terminal svg"));
  EXPECT_THAT(by_time, HasSubstr("EOD\n0.5 1.1\nEOD\n"));  // hours since the first start
  EXPECT_THROW(gnuplot_script({row(1, "crash", std::nullopt, 0)}, "t", PlotFormat::kPng, "p.png", false), FatalError);
  EXPECT_THROW(gnuplot_script({}, "t", PlotFormat::kPng, "p.png", false), FatalError);
}

TEST(Plot, UnderGoalMaxTheBestLineFollowsTheHighestKept) {
  const std::vector<ExperimentRow> rows = {row(1, "kept", 0.5, 0), row(2, "kept", 0.7, 60), row(3, "kept", 0.6, 120),
                                           row(4, "discarded", 0.9, 180)};
  std::string s = gnuplot_script(rows, "t", PlotFormat::kPng, "p.png", false, {"score", MetricGoal::kMax});
  EXPECT_THAT(s, HasSubstr("$d0 << EOD\n1 0.5\n2 0.7\n4 0.7\nEOD\n"));
  EXPECT_THAT(s, HasSubstr("best score 0.7000"));
  EXPECT_THAT(s, HasSubstr("set ylabel 'score' noenhanced\n"));
  // The default goal: the lowest kept is the best.
  EXPECT_THAT(gnuplot_script(rows, "t", PlotFormat::kPng, "p.png", false), HasSubstr("$d0 << EOD\n1 0.5\n4 0.5\nEOD\n"));
}

// A failed experiment has no val_bpb: it is a mark at the top edge, above every
// value, in its status's colour, with a legend entry of its own.
TEST(Plot, ExperimentsWithoutAValueAreMarkedAtTheTop) {
  std::string s = gnuplot_script(kRows, "t", PlotFormat::kPng, "p.png", false);
  // values 0.9 .. 1.1: the range has a margin below, the marks' row above them
  EXPECT_THAT(s, HasSubstr("set yrange [0.89:1.132]\n"));
  EXPECT_THAT(s, HasSubstr("EOD\n3 1.124\nEOD\n"));
  EXPECT_THAT(s, HasSubstr("pt 11 ps 1.2 lc rgb '#c62828' title 'crash (no val_bpb)'"));
  EXPECT_THAT(s, HasSubstr("set label 1 'no val_bpb' at graph 0.005, first 1.124"));
  // Without a failure there is no mark and no label.
  std::string clean = gnuplot_script({row(1, "kept", 1.0, 0), row(2, "discarded", 1.2, 60)}, "t", PlotFormat::kPng,
                                     "p.png", false);
  EXPECT_THAT(clean, Not(HasSubstr("no val_bpb")));
  // An experiment still in flight without a value is not a failure.
  EXPECT_THAT(gnuplot_script({row(1, "kept", 1.0, 0), row(2, "building", std::nullopt, 60)}, "t", PlotFormat::kPng,
                             "p.png", false),
              Not(HasSubstr("no val_bpb")));
}

TEST(Plot, LabelsTitleAndTimeAxis) {
  std::vector<ExperimentRow> rows = {row(1, "kept", 0.987654321, 3600), row(2, "kept", 0.912345678, 5400)};
  std::string s = gnuplot_script(rows, "t", PlotFormat::kPng, "p.png", false);
  // "val_bpb" as written: enhanced text would make "_b" a subscript.
  EXPECT_THAT(s, HasSubstr("set ylabel 'val_bpb' noenhanced\n"));
  EXPECT_THAT(s, HasSubstr("set title 'autoresearchd: tag t, 2 experiments, best val_bpb 0.9123' noenhanced\n"));
  EXPECT_THAT(s, Not(HasSubstr("set xrange")));
  std::string by_time = gnuplot_script(rows, "t", PlotFormat::kPng, "p.png", true);
  // Hours start at 0: a fixed lower end and no left margin that would begin at -0.01 h.
  EXPECT_THAT(by_time, HasSubstr("set xrange [0:*]\nset offsets 0, graph 0.02, 0, 0\n"));
  EXPECT_THAT(by_time, HasSubstr("EOD\n0 0.987654321\n0.5 0.912345678\nEOD\n"));  // hours since the first
}

TEST(Plot, WritesAPngAtomically) {
  testing::TempDir dir;
  Store store((dir.path() / "results.db").string());
  store.add_run("t", "autoresearch/t", std::string(40, '1'));
  for (double v : {1.0, 0.95, 0.97}) {
    int64_t id = store.create_experiment("t", false, std::string(40, '1'), "", "x", std::nullopt);
    store.set_metrics(id, {v, std::nullopt, std::nullopt, ""});
    store.finish(id, v == 0.97 ? status::kDiscarded : status::kKept, "", "");
  }
  auto out = dir.path() / "progress.png";
  testing::write_file(out, "old");
  write_plot(store, "t", out, false);
  std::string png = testing::read_file(out);
  ASSERT_GT(png.size(), 5000u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  // IHDR: width and height, big-endian, at bytes 16..23.
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
           (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3]));
  };
  EXPECT_EQ(be32(16), 1200u);
  EXPECT_EQ(be32(20), 600u);
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_THAT(e.path().filename().string(), Not(HasSubstr(".tmp-")));  // nothing left behind

  try {
    write_plot(store, "t", dir.path() / "progress.jpg", false);
    FAIL() << "a .jpg was accepted";
  } catch (const FatalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("expected a .png or .svg file name"));
  }
  try {
    write_plot(store, "t", dir.path() / "no/such/dir/progress.png", false);
    FAIL() << "an unwritable path was accepted";
  } catch (const FatalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("plot: cannot write"));
  }
  EXPECT_EQ(testing::read_file(out).substr(0, 4), "\x89PNG");
}

}  // namespace
}  // namespace ard
