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

TEST(Editable, RefusesNulAndControlCharacters) {
  EditablePaths e({"trainer/train.cu", "trainer/model/**"});
  // A NUL path is matched in full but a write stops at the NUL: a file other than the one checked.
  EXPECT_EQ(e.check_write(std::string("trainer/model/a.cu\0.sh", 22)),
            "edit path has a NUL or control character: refused");
  EXPECT_NE(e.check_write("trainer/model/a\nb.cu"), "");
  EXPECT_NE(e.check_write("trainer/model/a\x1b[2Jb.cu"), "");
  EXPECT_NE(e.check_write("trainer/model/a\x7f.cu"), "");
  EXPECT_EQ(e.check_write("trainer/model/utf8-\xc3\xa9.cu"), "");  // bytes above 0x7f are not control characters
}

TEST(Editable, ProtectedPathsAreNeverWritableWhateverTheGlobs) {
  EditablePaths e({"trainer/model/**"});
  EXPECT_EQ(e.check_write("trainer/model/CMakeLists.txt"),
            "edit touches trainer/model/CMakeLists.txt, which is never editable (the harness, a build file, .git or "
            "the daemon's state)");
  EXPECT_NE(e.check_write("trainer/model/extra.cmake"), "");
  EXPECT_EQ(e.check_write("trainer/model/cmake.cu"), "");
  EXPECT_TRUE(is_protected_path("trainer/harness/eval.h"));
  EXPECT_TRUE(is_protected_path(".autoresearchd/results.db"));
  EXPECT_TRUE(is_protected_path("CMakeLists.txt"));
  EXPECT_TRUE(is_protected_path(".gitignore"));
  EXPECT_TRUE(is_protected_path("trainer/model/.gitattributes"));
  EXPECT_TRUE(is_protected_path(".gitmodules"));
  EXPECT_FALSE(is_protected_path("trainer/model/gitignore.cu"));
  EXPECT_FALSE(is_protected_path("trainer/harnessx/a.h"));
  EXPECT_FALSE(is_protected_path("trainer/train.cu"));
}

TEST(EditableGlobs, RefusesGlobsThatReachTheHarnessNamingThem) {
  const std::vector<std::string> tracked = {"trainer/train.cu", "trainer/model/attention.cu",
                                            "trainer/harness/eval.h", "trainer/harness/loader.cc",
                                            "trainer/CMakeLists.txt", "daemon/cli/cli.cc", "cmake/deps.cmake"};
  EXPECT_EQ(check_editable_globs({"trainer/train.cu", "trainer/model/**"}, tracked), "");
  EXPECT_EQ(check_editable_globs({"trainer/model/*.cu", "trainer/*.cu"}, tracked), "");
  EXPECT_EQ(check_editable_globs({"**"}, tracked), "editable[0]: \"**\" would let an edit change trainer/harness/eval.h");
  EXPECT_EQ(check_editable_globs({"trainer/train.cu", "trainer/**"}, tracked),
            "editable[1]: \"trainer/**\" would let an edit change trainer/harness/eval.h");
  EXPECT_EQ(check_editable_globs({"trainer/harness/eval.h"}, tracked),
            "editable[0]: \"trainer/harness/eval.h\" would let an edit change trainer/harness/eval.h");
  EXPECT_EQ(check_editable_globs({"trainer/*"}, tracked),
            "editable[0]: \"trainer/*\" would let an edit change trainer/CMakeLists.txt");
  EXPECT_EQ(check_editable_globs({"*/deps.*"}, tracked), "editable[0]: \"*/deps.*\" would let an edit change cmake/deps.cmake");
  EXPECT_EQ(check_editable_globs({"*/config"}, {}), "editable[0]: \"*/config\" would let an edit change .git/config");
  // By shape: no file there yet, but the glob would reach one.
  EXPECT_EQ(check_editable_globs({"trainer/harness/new_*.h"}, {}),
            "editable[0]: \"trainer/harness/new_*.h\" would let an edit change trainer/harness/...");
  EXPECT_EQ(check_editable_globs({"**/*.cu"}, {}),
            "editable[0]: \"**/*.cu\" would let an edit change .autoresearchd/worktrees/main/trainer/train.cu");
  EXPECT_EQ(check_editable_globs({"trainer/**/*.cu"}, {}),
            "editable[0]: \"trainer/**/*.cu\" would let an edit change trainer/harness/...");
  EXPECT_EQ(check_editable_globs({"trainer/harness"}, {}),
            "editable[0]: \"trainer/harness\" would let an edit change trainer/harness");
}

TEST(EditableGlobs, GitsOwnFilesAreRefusedForWhatTheyAre) {
  EXPECT_EQ(check_editable_globs({".gitignore"}, {}), "editable[0]: \".gitignore\" would let an edit change .gitignore");
  EXPECT_EQ(check_editable_globs({".git*"}, {}), "editable[0]: \".git*\" would let an edit change .gitignore");
  EXPECT_EQ(check_editable_globs({"*"}, {}), "editable[0]: \"*\" would let an edit change CMakeLists.txt");
}

TEST(EditableGlobs, AGlobThatCanNeverMatchIsRefusedWithTheReason) {
  EXPECT_EQ(check_editable_globs({"trainer/model/"}, {}),
            "editable[0]: \"trainer/model/\" can never match a file: it ends with '/' (globs match files, not "
            "directories)");
  EXPECT_EQ(check_editable_globs({"trainer//train.cu"}, {}),
            "editable[0]: \"trainer//train.cu\" can never match a file: it has an empty segment ('//')");
  EXPECT_EQ(check_editable_globs({"trainer/model/a**b"}, {}),
            "editable[0]: \"trainer/model/a**b\" can never match a file: '**' must be a whole segment ('a/**/b'), not "
            "part of 'a**b'");
  EXPECT_EQ(check_editable_globs({"./trainer/train.cu"}, {}),
            "editable[0]: \"./trainer/train.cu\" can never match a file: it has a '.' segment (paths are normalized)");
  EXPECT_EQ(glob_never_matches("trainer\\train.cu"), "it holds a '\\' (paths are '/'-separated)");
  // Matching no file yet is fine: an edit may add one.
  EXPECT_EQ(check_editable_globs({"trainer/model/new_*.cu", "trainer/model/**/*.cuh"}, {}), "");
}

}  // namespace
}  // namespace ard
