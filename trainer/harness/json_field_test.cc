// The JSON-lines field reader: decoding, skipping, and malformed lines.
#include "harness/json_field.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

std::string get(std::string_view line, std::string_view field = "text") {
  std::string v;
  EXPECT_EQ(json_string_field(line, field, v), FieldResult::kFound) << line;
  return v;
}

std::string error_of(std::string_view line) {
  std::string v;
  try {
    json_string_field(line, "text", v);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(JsonField, DecodesEscapes) {
  EXPECT_EQ(get(R"({"text": "a\"b\\c\/d\n\t\r\b\f"})"), "a\"b\\c/d\n\t\r\b\f");
  EXPECT_EQ(get(R"({"text":"caf\u00e9 \u4e2d"})"), "caf\xC3\xA9 \xE4\xB8\xAD");
  EXPECT_EQ(get(R"({"text":"\ud83d\ude00"})"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(get("{\"text\":\"raw \xC3\xA9\"}"), "raw \xC3\xA9");
  EXPECT_EQ(get(R"({"text":""})"), "");
}

TEST(JsonField, SkipsOtherValuesAndNestedKeys) {
  EXPECT_EQ(get(R"({"meta": {"text": "inner"}, "n": -1.5e3, "ok": [true, false, null, {"a": []}], "text": "outer"})"),
            "outer");
  EXPECT_EQ(get(R"( { "source" : "x" , "body" : "b" } )", "body"), "b");
}

TEST(JsonField, MissingOrNotAString) {
  std::string v;
  EXPECT_EQ(json_string_field(R"({"meta": {"text": "inner"}})", "text", v), FieldResult::kMissing);
  EXPECT_EQ(json_string_field(R"({"text": 12})", "text", v), FieldResult::kNotString);
  EXPECT_EQ(json_string_field(R"({"text": null})", "text", v), FieldResult::kNotString);
}

TEST(JsonField, MalformedLinesSayWhere) {
  EXPECT_EQ(error_of(R"({"text": "abc)"), "invalid JSON at column 14: unterminated string");
  EXPECT_EQ(error_of(R"({"text": "a"} x)"), "invalid JSON at column 15: trailing characters after the object");
  EXPECT_EQ(error_of(R"(["text"])"), "invalid JSON at column 1: expected an object");
  EXPECT_EQ(error_of(R"({"text": "a",})"), "invalid JSON at column 14: expected '\"'");
  EXPECT_EQ(error_of(R"({"text": "\ud800"})"), "invalid JSON at column 17: lone high surrogate");
  EXPECT_EQ(error_of(R"({"text": "\udc00"})"), "invalid JSON at column 17: lone low surrogate");
  EXPECT_EQ(error_of(R"({"text": "\q"})"), "invalid JSON at column 12: bad escape");
  EXPECT_EQ(error_of("{\"text\": \"tab\there\"}"), "invalid JSON at column 14: control character in string");
  EXPECT_EQ(error_of(R"({"n": 01})"), "invalid JSON at column 8: expected '}'");
}

}  // namespace
}  // namespace harness
