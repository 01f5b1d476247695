// Tests of experiment_state.h: every word round-trips, the final ones are
// final, and results.db.schema's comment lists exactly the enum's words.
#include "daemon/store/experiment_state.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace ard {
namespace {

TEST(ExperimentState, EveryWordRoundTripsAndOthersDoNot) {
  std::set<std::string> words;
  for (ExperimentState s : all_experiment_states()) {
    EXPECT_EQ(parse_experiment_state(to_string(s)), s) << to_string(s);
    words.insert(to_string(s));
  }
  EXPECT_EQ(words.size(), all_experiment_states().size());  // no word twice
  EXPECT_EQ(parse_experiment_state("Kept"), std::nullopt);
  EXPECT_EQ(parse_experiment_state(""), std::nullopt);
  EXPECT_EQ(parse_experiment_state("training"), std::nullopt);  // the engine's word, not the column's
}

TEST(ExperimentState, OnlyTheEndsAreFinal) {
  EXPECT_FALSE(is_final(ExperimentState::kEvaluated));
  EXPECT_FALSE(is_final(ExperimentState::kProposing));
  EXPECT_TRUE(is_final(ExperimentState::kKept));
  EXPECT_TRUE(is_final(ExperimentState::kEnvironmentError));
  EXPECT_TRUE(is_final_state("conflict"));
  EXPECT_FALSE(is_final_state("running"));
  EXPECT_FALSE(is_final_state("nonsense"));
}

// The schema's comment is what a reader of results.db sees; it must name the
// same states as the code, in the same order: "state moves a -> b -> ... ->
// one final status: x, y, z."
TEST(ExperimentState, TheSchemaCommentListsTheSameStates) {
  std::ifstream in(std::string(ARD_SOURCE_DIR) + "/results.db.schema");
  ASSERT_TRUE(in) << "results.db.schema not found";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string start = "-- One experiment. state moves ";
  size_t a = text.find(start);
  ASSERT_NE(a, std::string::npos);
  size_t b = text.find('.', a + start.size());
  ASSERT_NE(b, std::string::npos);
  std::string comment = text.substr(a + start.size(), b - a - start.size());
  comment = std::regex_replace(comment, std::regex("\\n--"), " ");
  std::vector<std::string> listed;
  std::regex word("[a-z_]+");
  const std::string final_marker = "one final status";
  for (std::sregex_iterator it(comment.begin(), comment.end(), word), end; it != end; ++it) {
    std::string w = it->str();
    if (w == "one" || w == "final" || w == "status") continue;
    listed.push_back(w);
  }
  ASSERT_NE(comment.find(final_marker), std::string::npos);
  std::vector<std::string> expected;
  for (ExperimentState s : all_experiment_states()) expected.push_back(to_string(s));
  EXPECT_EQ(listed, expected);
}

}  // namespace
}  // namespace ard
