// Tests of glob matching and the checks on edit paths.
#include "proposers/editable.h"

#include <gtest/gtest.h>

namespace ard {
namespace {

TEST(Glob, StarStaysInOneSegment) {
  EXPECT_TRUE(glob_match("trainer/*.cu", "trainer/train.cu"));
  EXPECT_FALSE(glob_match("trainer/*.cu", "trainer/model/a.cu"));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "a/c"));
  EXPECT_TRUE(glob_match("trainer/train.cu", "trainer/train.cu"));
  EXPECT_FALSE(glob_match("trainer/train.cu", "trainer/train.cuh"));
}

TEST(Glob, DoubleStarSpansSegments) {
  EXPECT_TRUE(glob_match("trainer/model/**", "trainer/model/attn.cuh"));
  EXPECT_TRUE(glob_match("trainer/model/**", "trainer/model/sub/x.cu"));
  EXPECT_FALSE(glob_match("trainer/model/**", "trainer/modelx/a"));
  EXPECT_FALSE(glob_match("trainer/model/**", "trainer/harness/eval.h"));
  EXPECT_TRUE(glob_match("**/*.cu", "a/b/c.cu"));
  EXPECT_TRUE(glob_match("**/*.cu", "c.cu"));
  EXPECT_TRUE(glob_match("a/**/z", "a/z"));
  EXPECT_TRUE(glob_match("a/**/z", "a/b/c/z"));
}

TEST(Editable, RejectsPathsOutsideTheGlobsWithTheReason) {
  EditablePaths e({"trainer/train.cu", "trainer/model/**"});
  EXPECT_EQ(e.check_write("trainer/model/optim.cuh"), "");
  EXPECT_EQ(e.check_write("trainer/harness/eval.h"), "edit touches trainer/harness/eval.h, which is not editable");
  EXPECT_NE(e.check_write("trainer/model/../harness/eval.h"), "");
  EXPECT_NE(e.check_write("/etc/passwd"), "");
  EXPECT_NE(e.check_write("trainer/model//a"), "");
  EXPECT_NE(e.check_write(""), "");
  EditablePaths all({"**"});
  EXPECT_NE(all.check_write(".git/config"), "");
}

}  // namespace
}  // namespace ard
