// diff_regions: hunks' new-side lines and their keys, several files, new,
// deleted and renamed files, a plain diff without git's headers, an empty one.
#include "daemon/decide/regions.h"

#include <gtest/gtest.h>

#include "daemon/git_repo.h"
#include "testing/test_util.h"

namespace ard {
namespace {

std::string git_header(const std::string& path) {
  return "diff --git a/" + path + " b/" + path + "\nindex 1111111..2222222 100644\n--- a/" + path + "\n+++ b/" + path + "\n";
}

/// Each region as "text | key".
std::vector<std::string> shown(const std::vector<DiffRegion>& regions) {
  std::vector<std::string> out;
  for (const auto& r : regions) out.push_back(region_text(r) + " | " + r.key);
  return out;
}

using Shown = std::vector<std::string>;

TEST(DiffRegions, AnEmptyDiffHasNone) {
  EXPECT_TRUE(diff_regions("").empty());
  EXPECT_TRUE(diff_regions("\n\n").empty());
}

TEST(DiffRegions, AHunkIsItsNewSideLinesKeyedByTheSectionHeadersFunction) {
  const std::string d = git_header("trainer/train.cu") +
                        "@@ -120,7 +120,8 @@ static void train_step(Model& m, Batch& b) {\n"
                        "   float a = 1;\n"
                        "   float b = 2;\n"
                        "   float c = 3;\n"
                        "-  float lr = 0.01f;\n"
                        "+  float lr = 0.02f;\n"
                        "+  float wd = 0.1f;\n"
                        "   step(m);\n"
                        "   sync();\n"
                        "   done();\n";
  const auto r = diff_regions(d);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].path, "trainer/train.cu");
  EXPECT_EQ(r[0].first, 120);
  EXPECT_EQ(r[0].last, 127);
  EXPECT_EQ(region_text(r[0]), "trainer/train.cu:120-127");
  EXPECT_EQ(r[0].key, "trainer/train.cu: train_step");
}

TEST(DiffRegions, ADefinitionInsideTheHunkBeforeTheChangeWinsOverTheSectionHeader) {
  const std::string d = git_header("trainer/model/layers.cu") +
                        "@@ -40,6 +40,6 @@ void old_neighbour(int x) {\n"
                        " }\n"
                        " \n"
                        "__global__ void rmsnorm_kernel(const float* x, float* y) {\n"
                        "-  float eps = 1e-6f;\n"
                        "+  float eps = 1e-5f;\n"
                        "   int i = threadIdx.x;\n"
                        " }\n";
  const auto r = diff_regions(d);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].key, "trainer/model/layers.cu: rmsnorm_kernel");
}

TEST(DiffRegions, AChangeAfterTheSectionsFunctionClosedFallsIntoItsBlockOfLines) {
  const std::string d = git_header("trainer/train.cu") +
                        "@@ -58,6 +58,6 @@ int helper(int x) {\n"
                        "   return x;\n"
                        " }\n"
                        " \n"
                        "-constexpr float kLr = 0.01f;\n"
                        "+constexpr float kLr = 0.02f;\n"
                        " constexpr int kSteps = 10;\n"
                        " \n";
  const auto r = diff_regions(d);
  ASSERT_EQ(r.size(), 1u);
  // The first changed line is line 61 on the new side: block 51-100.
  EXPECT_EQ(r[0].key, "trainer/train.cu: lines 51-100");
  EXPECT_EQ(region_text(r[0]), "trainer/train.cu:58-63");
}

TEST(DiffRegions, WithoutASectionHeaderTheBlockOfTheFirstChangedLine) {
  const std::string d = git_header("trainer/train.cu") +
                        "@@ -1,3 +1,3 @@\n"
                        " // hyperparameters\n"
                        "-constexpr float kLr = 0.01f;\n"
                        "+constexpr float kLr = 0.02f;\n"
                        " constexpr int kSteps = 10;\n"
                        "@@ -149,2 +149,3 @@\n"
                        " int x = 1;\n"
                        "+int y = 2;\n"
                        " int z = 3;\n";
  const auto r = diff_regions(d);
  EXPECT_EQ(shown(r), (Shown{"trainer/train.cu:1-3 | trainer/train.cu: lines 1-50",
                             "trainer/train.cu:149-151 | trainer/train.cu: lines 101-150"}));  // line 150
  EXPECT_EQ(region_keys(r), (std::vector<std::string>{"trainer/train.cu: lines 1-50", "trainer/train.cu: lines 101-150"}));
}

TEST(DiffRegions, SeveralFilesEachWithTheirHunks) {
  const std::string d = git_header("trainer/model/optim.cu") +
                        "@@ -10,3 +10,3 @@ void adamw_step(Params& p) {\n"
                        "   int a;\n"
                        "-  float b1 = 0.9f;\n"
                        "+  float b1 = 0.95f;\n"
                        "   int c;\n" +
                        git_header("trainer/train.cu") +
                        "@@ -200,2 +200,2 @@ int main(int argc, char** argv) {\n"
                        "-  run(1);\n"
                        "+  run(2);\n"
                        "   return 0;\n"
                        "@@ -300,3 +300,2 @@ int main(int argc, char** argv) {\n"
                        "   a();\n"
                        "-  b();\n"
                        "   c();\n";
  const auto r = diff_regions(d);
  EXPECT_EQ(shown(r), (Shown{"trainer/model/optim.cu:10-12 | trainer/model/optim.cu: adamw_step",
                             "trainer/train.cu:200-201 | trainer/train.cu: main",
                             "trainer/train.cu:300-301 | trainer/train.cu: main"}));
  EXPECT_EQ(region_keys(r).size(), 2u);  // both hunks of main are one key
}

TEST(DiffRegions, AHunkThatOnlyRemovesIsTheLineItRemovedAfter) {
  const std::string d = git_header("trainer/train.cu") +
                        "@@ -30,2 +29,0 @@ void setup() {\n"
                        "-  a();\n"
                        "-  b();\n";
  const auto r = diff_regions(d);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(region_text(r[0]), "trainer/train.cu:29");
  EXPECT_EQ(r[0].key, "trainer/train.cu: setup");
}

TEST(DiffRegions, ANewFileADeletedFileAndARename) {
  const std::string d =
      "diff --git a/trainer/model/new_kernel.cu b/trainer/model/new_kernel.cu\n"
      "new file mode 100644\n"
      "index 0000000..3333333\n"
      "--- /dev/null\n"
      "+++ b/trainer/model/new_kernel.cu\n"
      "@@ -0,0 +1,3 @@\n"
      "+// a new kernel\n"
      "+__global__ void k() {}\n"
      "+\n"
      "diff --git a/trainer/model/old.cu b/trainer/model/old.cu\n"
      "deleted file mode 100644\n"
      "index 4444444..0000000\n"
      "--- a/trainer/model/old.cu\n"
      "+++ /dev/null\n"
      "@@ -1,2 +0,0 @@\n"
      "-int a;\n"
      "-int b;\n"
      "diff --git a/trainer/model/a.cuh b/trainer/model/b.cuh\n"
      "similarity index 100%\n"
      "rename from trainer/model/a.cuh\n"
      "rename to trainer/model/b.cuh\n"
      "diff --git a/trainer/model/c.cuh b/trainer/model/d.cuh\n"
      "similarity index 90%\n"
      "rename from trainer/model/c.cuh\n"
      "rename to trainer/model/d.cuh\n"
      "--- a/trainer/model/c.cuh\n"
      "+++ b/trainer/model/d.cuh\n"
      "@@ -5,1 +5,1 @@ struct Tile {\n"
      "-  int w = 64;\n"
      "+  int w = 128;\n";
  EXPECT_EQ(shown(diff_regions(d)), (Shown{"trainer/model/new_kernel.cu:1-3 | trainer/model/new_kernel.cu (new file)",
                                            "trainer/model/old.cu | trainer/model/old.cu (deleted)",
                                            "trainer/model/b.cuh | trainer/model/b.cuh",  // a rename alone: the whole file
                                            "trainer/model/d.cuh:5 | trainer/model/d.cuh: struct Tile"}));
}

TEST(DiffRegions, APlainDiffWithoutGitsHeadersAndARemovedLineThatLooksLikeAHeader) {
  // "-- x" removed is "--- x" in the diff: inside a hunk it is a line, not a file.
  const std::string d =
      "--- a/trainer/train.cu\n"
      "+++ b/trainer/train.cu\n"
      "@@ -1,2 +1,2 @@ void f() {\n"
      "--- x\n"
      "+++ y\n"
      " z\n"
      "--- a/trainer/model/m.cu\n"
      "+++ b/trainer/model/m.cu\n"
      "@@ -7 +7 @@\n"
      "-a\n"
      "+b\n";
  EXPECT_EQ(shown(diff_regions(d)),
            (Shown{"trainer/train.cu:1-2 | trainer/train.cu: f", "trainer/model/m.cu:7 | trainer/model/m.cu: lines 1-50"}));
}

// The diffs the daemon stores come from libgit2: its section headers name the function.
TEST(DiffRegions, ADiffAsTheDaemonMakesIt) {
  GitLibrary git;
  testing::TempDir dir;
  std::string file = "// The trainer.\nconstexpr float kLr = 0.01f;\n\nstatic void train_step(int n) {\n";
  for (int i = 0; i < 20; ++i) file += "  work(" + std::to_string(i) + ");\n";
  file += "}\n";
  testing::write_file(dir.path() / "trainer/train.cu", file);
  const std::string base = GitRepo::init_with_files(dir.path(), "base");
  GitRepo repo(dir.path());
  std::string edited = file;
  edited.replace(edited.find("work(15)"), 8, "work(150)");
  edited.replace(edited.find("0.01f"), 5, "0.02f");
  const std::string commit = repo.commit_writes(base, {{"trainer/train.cu", edited}, {"trainer/model/k.cuh", "int k;\n"}},
                                                "m", "");
  EXPECT_EQ(shown(diff_regions(repo.diff(base, commit))),
            (Shown{"trainer/model/k.cuh:1 | trainer/model/k.cuh (new file)",
                   "trainer/train.cu:1-5 | trainer/train.cu: lines 1-50",         // the constant, before any function
                   "trainer/train.cu:17-23 | trainer/train.cu: train_step"}))  // from the hunk's section header
      << repo.diff(base, commit);
}

TEST(DefinitionName, FunctionsTypesAndWhatIsNeither) {
  EXPECT_EQ(definition_name("static void train_step(Model& m) {"), "train_step");
  EXPECT_EQ(definition_name("__global__ void __launch_bounds__(256) k2(float* x)"), "k2");
  EXPECT_EQ(definition_name("void Muon::step(float lr) {"), "Muon::step");
  EXPECT_EQ(definition_name("struct Hyper {"), "struct Hyper");
  EXPECT_EQ(definition_name("enum class Mode : int {"), "enum Mode");
  EXPECT_EQ(definition_name("namespace {"), "namespace");
  EXPECT_EQ(definition_name("void declared(int x);"), "");      // a declaration
  EXPECT_EQ(definition_name("  if (x) {"), "");                 // indented
  EXPECT_EQ(definition_name("float lr = scale(0.1f)"), "");     // an assignment
  EXPECT_EQ(definition_name("#define SQ(x) ((x) * (x))"), "");  // the preprocessor
  EXPECT_EQ(definition_name("}"), "");
}

}  // namespace
}  // namespace ard
