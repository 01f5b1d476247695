// Tests for edit_apply.h and unified_diff.h: exact and whitespace-tolerant
// matches, ambiguous and missing ones, paths outside the editable globs and
// files that do not exist, several files at once, unified diffs (libgit2)
// and whole files. Nothing is applied when any edit fails.
#include "llm_client/edit_apply.h"

#include <gtest/gtest.h>

#include "llm_client/unified_diff.h"
#include "proposers/editable.h"

namespace llm {
namespace {

const char* kTrain =
    "#include \"harness/constants.h\"\n"
    "constexpr int DEPTH = 8;  // blocks\n"
    "constexpr float MATRIX_LR = 0.04f;  // Muon lr\n"
    "int main() {\n"
    "  for (int i = 0; i < 3; ++i) {\n"
    "    step(i);\n"
    "  }\n"
    "  return 0;\n"
    "}\n";
const char* kModel = "void step(int i) {\n  update(i);\n}\nvoid other() {\n  update(0);\n}\n";

std::vector<ard::EditableFile> files() { return {{"trainer/train.cu", kTrain}, {"trainer/model/gpt.cuh", kModel}}; }

PathPolicy policy() {
  return [p = ard::EditablePaths({"trainer/train.cu", "trainer/model/**"})](const std::string& path) {
    return p.check_write(path);
  };
}

ApplyResult apply(const std::string& answer) {
  ParsedAnswer a = parse_answer(answer);
  EXPECT_EQ(a.error, "") << answer;
  return apply_edits(a.edits, files(), policy());
}

TEST(EditApply, ExactMatch) {
  ApplyResult r = apply(
      "DESCRIPTION: d\ntrainer/train.cu\n<<<<<<< SEARCH\nconstexpr int DEPTH = 8;  // blocks\n=======\n"
      "constexpr int DEPTH = 12;  // blocks\n>>>>>>> REPLACE\n");
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.writes.size(), 1u);
  EXPECT_EQ(r.writes[0].path, "trainer/train.cu");
  std::string want = kTrain;
  want.replace(want.find("= 8;"), 4, "= 12;");
  EXPECT_EQ(r.writes[0].content, want);
}

TEST(EditApply, WhitespaceTolerantMatchKeepsFileIndentation) {
  // The model lost the indentation and doubled a space; the file's indentation wins.
  ApplyResult r = apply(
      "DESCRIPTION: d\ntrainer/train.cu\n<<<<<<< SEARCH\nfor (int i = 0;  i < 3; ++i) {\n  step(i);\n}\n=======\n"
      "for (int i = 0; i < 6; ++i) {\n  step(i);\n  step(i);\n}\n>>>>>>> REPLACE\n");
  ASSERT_EQ(r.error, "");
  EXPECT_NE(r.writes[0].content.find("  for (int i = 0; i < 6; ++i) {\n    step(i);\n    step(i);\n  }\n  return 0;"),
            std::string::npos)
      << r.writes[0].content;
}

TEST(EditApply, BlankLinesDoNotMatter) {
  // The model dropped the file's blank line and added one of its own.
  std::string content = "int a;\n\nint b;\nint c;\n";
  EXPECT_EQ(apply_search_replace(content, "int a;\nint b;\n\nint c;\n", "int x;\n"), "");
  EXPECT_EQ(content, "int x;\n");
}

TEST(EditApply, AmbiguousMatchIsAnErrorNamingTheBlock) {
  ApplyResult r = apply("DESCRIPTION: d\ntrainer/model/gpt.cuh\n<<<<<<< SEARCH\n  update(\n=======\n  x(\n>>>>>>> REPLACE\n");
  EXPECT_TRUE(r.writes.empty());
  // "  update(\n" is not a whole line of the file: no match at line starts, then no whole-line match.
  EXPECT_NE(r.error.find("edit 1 (SEARCH/REPLACE, trainer/model/gpt.cuh): SEARCH text matches nowhere"), std::string::npos)
      << r.error;

  ApplyResult twice = apply("DESCRIPTION: d\ntrainer/model/gpt.cuh\n<<<<<<< SEARCH\n}\n=======\n};\n>>>>>>> REPLACE\n");
  EXPECT_EQ(twice.error,
            "edit 1 (SEARCH/REPLACE, trainer/model/gpt.cuh): SEARCH text matches 2 places (lines 3, 6); include more "
            "surrounding lines so that it matches one");
  ApplyResult loose = apply("DESCRIPTION: d\ntrainer/model/gpt.cuh\n<<<<<<< SEARCH\nvoid step(int i) {\n update(i);\n=======\nx\n>>>>>>> REPLACE\n"
                            "trainer/model/gpt.cuh\n<<<<<<< SEARCH\n    }\n=======\n};\n>>>>>>> REPLACE\n");
  EXPECT_NE(loose.error.find("edit 2 (SEARCH/REPLACE, trainer/model/gpt.cuh): SEARCH text matches 2 places ignoring whitespace (lines 2, 5)"),
            std::string::npos)
      << loose.error;
}

TEST(EditApply, MissingMatchSaysWhichLineIsNotThere) {
  ApplyResult r = apply(
      "DESCRIPTION: d\ntrainer/train.cu\n<<<<<<< SEARCH\nconstexpr int DEPTH = 9;  // blocks\n=======\nx\n>>>>>>> REPLACE\n");
  EXPECT_TRUE(r.writes.empty());
  EXPECT_EQ(r.error,
            "edit 1 (SEARCH/REPLACE, trainer/train.cu): SEARCH text matches nowhere, not even ignoring whitespace; "
            "this line is not in the file: 'constexpr int DEPTH = 9; // blocks'");
  ApplyResult order = apply("DESCRIPTION: d\ntrainer/train.cu\n<<<<<<< SEARCH\nint main() {\n#include \"harness/constants.h\"\n=======\nx\n>>>>>>> REPLACE\n");
  EXPECT_NE(order.error.find("each of its lines is in the file, but not together in this order"), std::string::npos);
}

TEST(EditApply, OutsideTheAllowlistOrMissingFileIsRefused) {
  ApplyResult r = apply(
      "DESCRIPTION: d\ntrainer/harness/eval.h\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n"
      "=== FILE: trainer/model/new.cuh ===\nint x;\n=== END FILE ===\n"
      "=== FILE: ../etc/passwd ===\nroot\n=== END FILE ===\n");
  EXPECT_TRUE(r.writes.empty());
  EXPECT_EQ(r.error,
            "edit 1 (SEARCH/REPLACE, trainer/harness/eval.h): refused: edit touches trainer/harness/eval.h, which is not "
            "editable\n"
            "edit 2 (whole file, trainer/model/new.cuh): refused: trainer/model/new.cuh does not exist; the editable "
            "files are: trainer/train.cu, trainer/model/gpt.cuh\n"
            "edit 3 (whole file, ../etc/passwd): refused: edit path '../etc/passwd' is not a plain path inside the repo");
}

TEST(EditApply, MultiFileAllOrNothing) {
  std::string both =
      "DESCRIPTION: d\ntrainer/train.cu\n<<<<<<< SEARCH\n    step(i);\n=======\n    step(i + 1);\n>>>>>>> REPLACE\n"
      "trainer/model/gpt.cuh\n<<<<<<< SEARCH\nvoid other() {\n  update(0);\n=======\nvoid other() {\n  update(1);\n>>>>>>> REPLACE\n";
  ApplyResult r = apply(both);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.writes.size(), 2u);
  EXPECT_NE(r.writes[0].content.find("step(i + 1);"), std::string::npos);
  EXPECT_NE(r.writes[1].content.find("update(1);"), std::string::npos);

  ApplyResult bad = apply(both + "trainer/train.cu\n<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE\n");
  EXPECT_TRUE(bad.writes.empty());
  EXPECT_EQ(bad.error.rfind("edit 3 (SEARCH/REPLACE, trainer/train.cu): SEARCH text matches nowhere", 0), 0u) << bad.error;

  // Later edits apply to the result of earlier ones on the same file.
  ApplyResult chain = apply(
      "DESCRIPTION: d\ntrainer/train.cu\n<<<<<<< SEARCH\n  return 0;\n=======\n  return 1;\n>>>>>>> REPLACE\n"
      "<<<<<<< SEARCH\n  return 1;\n=======\n  return 2;\n>>>>>>> REPLACE\n");
  ASSERT_EQ(chain.error, "");
  EXPECT_NE(chain.writes[0].content.find("return 2;"), std::string::npos);

  ApplyResult noop = apply("DESCRIPTION: d\ntrainer/train.cu\n<<<<<<< SEARCH\n  return 0;\n=======\n  return 0;\n>>>>>>> REPLACE\n");
  EXPECT_EQ(noop.error, "the edits leave every file as it was");
}

TEST(EditApply, UnifiedDiffWithLibgit2) {
  ApplyResult r = apply(R"(DESCRIPTION: d
```diff
--- a/trainer/train.cu
+++ b/trainer/train.cu
@@ -2,3 +2,3 @@
 constexpr int DEPTH = 8;  // blocks
-constexpr float MATRIX_LR = 0.04f;  // Muon lr
+constexpr float MATRIX_LR = 0.02f;  // Muon lr
 int main() {
--- a/trainer/model/gpt.cuh
+++ b/trainer/model/gpt.cuh
@@ -4,3 +4,4 @@
 void other() {
   update(0);
+  update(1);
 }
```
)");
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.writes.size(), 2u);
  std::string want = kTrain;
  want.replace(want.find("0.04f"), 5, "0.02f");
  EXPECT_EQ(r.writes[0].content, want);
  EXPECT_EQ(r.writes[1].content, "void step(int i) {\n  update(i);\n}\nvoid other() {\n  update(0);\n  update(1);\n}\n");
}

TEST(UnifiedDiff, WrongLineNumbersAndCountsAreRepaired) {
  std::string content = kTrain;
  // Header says line 40 and wrong counts; the hunk's own lines say where it goes.
  std::string err = apply_unified_diff(content, "trainer/train.cu",
                                       "--- a/trainer/train.cu\n+++ b/trainer/train.cu\n@@ -40,7 +40,9 @@ int main\n"
                                       "   return 0;\n-}\n+}\n+// end\n");
  ASSERT_EQ(err, "");
  EXPECT_TRUE(content.ends_with("    step(i);\n  }\n  return 0;\n}\n// end\n")) << content;
}

TEST(UnifiedDiff, ErrorsSayWhy) {
  std::string content = kTrain;
  EXPECT_EQ(apply_unified_diff(content, "trainer/train.cu",
                               "--- a/trainer/train.cu\n+++ b/trainer/train.cu\n@@ -1,2 +1,2 @@\n int x;\n-int y;\n+int z;\n"),
            "hunk 1: its context and '-' lines do not occur in the file as one block; this line is not in the file: "
            "'int x;'");
  EXPECT_EQ(content, kTrain);
  EXPECT_EQ(apply_unified_diff(content, "trainer/train.cu",
                               "--- /dev/null\n+++ b/trainer/train.cu\n@@ -0,0 +1 @@\n+x\n"),
            "the diff must modify the existing file, not create, delete or rename one");
}

TEST(EditApply, WholeFileReplacement) {
  ApplyResult r = apply("DESCRIPTION: d\n=== FILE: trainer/model/gpt.cuh ===\nvoid step(int) {}\n=== END FILE ===\n");
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.writes.size(), 1u);
  EXPECT_EQ(r.writes[0].path, "trainer/model/gpt.cuh");
  EXPECT_EQ(r.writes[0].content, "void step(int) {}\n");
}

TEST(EditApply, FileWithoutFinalNewline) {
  std::string content = "a\nb";
  EXPECT_EQ(apply_search_replace(content, "b\n", "c\n"), "");
  EXPECT_EQ(content, "a\nc");
  EXPECT_EQ(apply_search_replace(content, "\n", "x\n"), "the SEARCH part is empty; copy the current lines to replace into it");
}

}  // namespace
}  // namespace llm
