// Tests for edit_format.h: each edit form, paths on the line before a block,
// and the errors of answers that cannot be used.
#include "llm_client/edit_format.h"

#include <gtest/gtest.h>

namespace llm {
namespace {

TEST(EditFormat, SearchReplaceBlocksWithPathLines) {
  ParsedAnswer a = parse_answer(R"(I will raise the depth.

DESCRIPTION: deeper model, 10 layers

```cpp
trainer/train.cu
<<<<<<< SEARCH
constexpr int DEPTH = 8;
=======
constexpr int DEPTH = 10;
>>>>>>> REPLACE
```

**`trainer/model/gpt.cuh`**
```
<<<<<<< SEARCH
  a();
=======
  b();
>>>>>>> REPLACE
<<<<<<< SEARCH
  c();
=======
>>>>>>> REPLACE
```
)");
  ASSERT_EQ(a.error, "");
  EXPECT_EQ(a.description, "deeper model, 10 layers");
  ASSERT_EQ(a.edits.size(), 3u);
  auto& e0 = std::get<SearchReplace>(a.edits[0].op);
  EXPECT_EQ(e0.path, "trainer/train.cu");
  EXPECT_EQ(e0.search, "constexpr int DEPTH = 8;\n");
  EXPECT_EQ(e0.replace, "constexpr int DEPTH = 10;\n");
  EXPECT_EQ(a.edits[1].path(), "trainer/model/gpt.cuh");
  EXPECT_EQ(a.edits[2].path(), "trainer/model/gpt.cuh");  // no path line: the previous block's file
  EXPECT_EQ(std::get<SearchReplace>(a.edits[2].op).replace, "");  // deletion
  EXPECT_EQ(a.edits[2].number, 3);
}

TEST(EditFormat, UnifiedDiffs) {
  ParsedAnswer a = parse_answer(R"(DESCRIPTION: **lower lr**
```diff
diff --git a/trainer/train.cu b/trainer/train.cu
--- a/trainer/train.cu
+++ b/trainer/train.cu
@@ -1,3 +1,3 @@
 int a;
-float lr = 1;
+float lr = 0.5;

--- a/trainer/model/x.cuh
+++ b/trainer/model/x.cuh
@@ -5 +5 @@
-old
+new
```
done)");
  ASSERT_EQ(a.error, "");
  EXPECT_EQ(a.description, "lower lr");
  ASSERT_EQ(a.edits.size(), 2u);
  auto& d0 = std::get<UnifiedDiff>(a.edits[0].op);
  EXPECT_EQ(d0.path, "trainer/train.cu");
  EXPECT_EQ(d0.text, "--- a/trainer/train.cu\n+++ b/trainer/train.cu\n@@ -1,3 +1,3 @@\n int a;\n-float lr = 1;\n+float lr = 0.5;\n");
  EXPECT_EQ(a.edits[1].path(), "trainer/model/x.cuh");
  EXPECT_STREQ(a.edits[1].kind(), "diff");
}

TEST(EditFormat, WholeFile) {
  ParsedAnswer a = parse_answer(
      "DESCRIPTION: rewrite\n=== FILE: trainer/model/x.cuh ===\n```cpp\nline 1\n\nline 3\n```\n=== END FILE ===\n");
  ASSERT_EQ(a.error, "");
  ASSERT_EQ(a.edits.size(), 1u);
  EXPECT_EQ(std::get<WholeFile>(a.edits[0].op).content, "line 1\n\nline 3\n");  // fence stripped
  EXPECT_STREQ(a.edits[0].kind(), "whole file");
}

TEST(EditFormat, DotSlashPathsAndLongDescriptions) {
  ParsedAnswer a = parse_answer("DESCRIPTION: " + std::string(300, 'x') +
                                "\n./trainer/train.cu\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"
                                "=== FILE: ./trainer/model/x.cuh ===\nc\n=== END FILE ===\n");
  ASSERT_EQ(a.error, "");
  EXPECT_EQ(a.edits[0].path(), "trainer/train.cu");
  EXPECT_EQ(a.edits[1].path(), "trainer/model/x.cuh");
  EXPECT_EQ(a.description.size(), 200u);
  EXPECT_TRUE(a.description.ends_with("..."));
}

TEST(EditFormat, Errors) {
  EXPECT_EQ(parse_answer("DESCRIPTION: x\nI think we should raise the lr.").error,
            "the answer holds no edit: no SEARCH/REPLACE block, no unified diff and no === FILE: block");
  EXPECT_EQ(parse_answer("a.cu\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n").error,
            "the answer has no 'DESCRIPTION: <one line>' line");
  EXPECT_EQ(parse_answer("DESCRIPTION: x\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n").error,
            "edit 1 (SEARCH/REPLACE): no file path on the line before <<<<<<< SEARCH");
  EXPECT_EQ(parse_answer("DESCRIPTION: x\na.cu\n<<<<<<< SEARCH\nx\n=======\ny\n").error,
            "edit 1 (SEARCH/REPLACE, a.cu): no >>>>>>> REPLACE line; the answer may be cut off");
  EXPECT_EQ(parse_answer("DESCRIPTION: x\na.cu\n<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n").error,
            "edit 1 (SEARCH/REPLACE, a.cu): SEARCH section has no ======= line after it");
  EXPECT_EQ(parse_answer("DESCRIPTION: x\n=== FILE: a.cu ===\nint x;\n").error,
            "edit 1 (whole file, a.cu): no '=== END FILE ===' line; the answer may be cut off");
}

TEST(EditFormat, InstructionsShowEveryForm) {
  std::string s = edit_format_instructions();
  for (const char* part : {"DESCRIPTION:", "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", "+++ b/", "=== FILE:",
                           "=== END FILE ==="})
    EXPECT_NE(s.find(part), std::string::npos) << part;
  // The example in the instructions parses as the format it describes.
  ParsedAnswer a = parse_answer(s);
  EXPECT_EQ(a.error, "");
  EXPECT_GE(a.edits.size(), 2u);
}

}  // namespace
}  // namespace llm
