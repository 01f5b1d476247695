// Tests of the compiled-in pages: paths, types, and that the script never
// turns stored text into markup.
#include "daemon/serve/dashboard_pages.h"

#include <gmock/gmock.h>

#include <string>

namespace ard {
namespace {

using ::testing::HasSubstr;

TEST(DashboardPages, FindsEachPageByPath) {
  ASSERT_TRUE(find_asset("/").has_value());
  EXPECT_EQ(find_asset("/")->content_type, "text/html; charset=utf-8");
  EXPECT_THAT(std::string(find_asset("/")->body), HasSubstr("data-page=\"overview\""));
  EXPECT_THAT(std::string(find_asset("/experiment/12")->body), HasSubstr("data-page=\"experiment\""));
  EXPECT_THAT(std::string(find_asset("/programs")->body), HasSubstr("data-page=\"programs\""));
  EXPECT_EQ(find_asset("/app.js")->content_type, "application/javascript; charset=utf-8");
  EXPECT_EQ(find_asset("/app.css")->content_type, "text/css; charset=utf-8");
  for (const char* bad : {"/experiment/", "/experiment/1x", "/experiment/../app.js", "/index.html", "/app.js/",
                          "/experiment/1234567890123456789"})
    EXPECT_FALSE(find_asset(bad).has_value()) << bad;
}

TEST(DashboardPages, ScriptPutsStoredTextIntoTheDomOnlyAsText) {
  std::string js(find_asset("/app.js")->body);
  for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("})
    EXPECT_EQ(js.find(sink), std::string::npos) << sink;
  EXPECT_THAT(js, HasSubstr("document.createTextNode"));
  EXPECT_THAT(js, HasSubstr("animation: false"));  // screenshots never catch a chart mid-animation
}

TEST(DashboardPages, PagesHaveNoInlineScript) {
  // The Content-Security-Policy allows scripts from the server only.
  for (const char* path : {"/", "/experiment/1", "/programs"}) {
    std::string html(find_asset(path)->body);
    size_t pos = 0;
    while ((pos = html.find("<script", pos)) != std::string::npos) {
      EXPECT_EQ(html.compare(pos, 13, "<script src=\""), 0) << path;
      ++pos;
    }
  }
}

}  // namespace
}  // namespace ard
