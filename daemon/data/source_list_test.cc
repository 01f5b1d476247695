// The source list format, the fetch plan, and the shipped C4 list.
#include "daemon/data/source_list.h"

#include <gtest/gtest.h>

#include "daemon/config.h"

namespace ard {
namespace {

TEST(SourceList, ExpandsARangeZeroPaddedToItsWidth) {
  SourceList l = parse_source_list(
      "# comment\n\ntrain https://h/x/t.{008..011}-of-1.json.gz  # four\nval http://h/v.json.gz?download=1\n", "l.urls");
  ASSERT_EQ(l.train.size(), 4u);
  EXPECT_EQ(l.train[0], "https://h/x/t.008-of-1.json.gz");
  EXPECT_EQ(l.train[3], "https://h/x/t.011-of-1.json.gz");
  ASSERT_EQ(l.val.size(), 1u);
  FetchPlan p = plan_fetch(l, 2, "/c/sources/l");
  ASSERT_EQ(p.train.size(), 2u);
  EXPECT_EQ(p.train[1].dest, "/c/sources/l/t.009-of-1.json.gz");
  EXPECT_EQ(p.val[0].dest, "/c/sources/l/v.json.gz");
  EXPECT_EQ(fetch_dir("/c", "data_sources/c4-en.urls"), "/c/sources/c4-en");
}

TEST(SourceList, BadLinesNameTheFileAndLine) {
  auto error = [](const std::string& text) {
    try {
      parse_source_list(text, "l.urls");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("train\n"), "l.urls:1: expected `train URL` or `val URL`");
  EXPECT_EQ(error("\ntest https://h/a.gz\n"), "l.urls:2: 'test' is neither train nor val");
  EXPECT_EQ(error("train ftp://h/a.gz"), "l.urls:1: 'ftp://h/a.gz' is not an http:// or https:// URL");
  EXPECT_EQ(error("train https://h/a.json"), "l.urls:1: 'a.json' is not a .gz file");
  EXPECT_EQ(error("train https://h/a{1..0}.gz"), "l.urls:1: bad range {1..0}");
  EXPECT_EQ(error("train https://h/a{1-2}.gz"), "l.urls:1: a range is written {00000..01023}");
}

TEST(SourceList, ThePlanNeedsEnoughTrainFilesAndAValFile) {
  SourceList l = parse_source_list("train https://h/{0..2}.gz\n", "l.urls");
  EXPECT_THROW(plan_fetch(l, 2, "/c"), ConfigError);  // no val
  l.val.push_back("https://h/v.gz");
  try {
    plan_fetch(l, 4, "/c");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "data.shards: 4 train files asked, the source list has 3");
  }
}

TEST(SourceList, TheShippedC4ListHasEveryShard) {
  SourceList l = read_source_list(ARD_SOURCE_DIR "/data_sources/c4-en.urls");
  ASSERT_EQ(l.train.size(), 1024u);
  EXPECT_EQ(l.train[0], "https://huggingface.co/datasets/allenai/c4/resolve/main/en/c4-train.00000-of-01024.json.gz");
  EXPECT_EQ(l.train[1023],
            "https://huggingface.co/datasets/allenai/c4/resolve/main/en/c4-train.01023-of-01024.json.gz");
  ASSERT_EQ(l.val.size(), 1u);
  EXPECT_EQ(l.val[0],
            "https://huggingface.co/datasets/allenai/c4/resolve/main/en/c4-validation.00000-of-00008.json.gz");
  EXPECT_EQ(plan_fetch(l, 12, "/c").train.size(), 12u);
}

}  // namespace
}  // namespace ard
