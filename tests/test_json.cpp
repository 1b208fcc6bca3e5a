// course::json_string, which writes every string the runner and the benchmark files carry
// (test names, failure messages with a student's output in them).
#include <gtest/gtest.h>

#include <string>

#include "course/json.h"

namespace {

TEST(JsonString, QuotesPlainText) { EXPECT_EQ(course::json_string("abc"), "\"abc\""); }

TEST(JsonString, EscapesQuotesBackslashesAndWhiteSpace) {
  EXPECT_EQ(course::json_string("a\"b\\c\nd\re\tf"), "\"a\\\"b\\\\c\\nd\\re\\tf\"");
}

TEST(JsonString, EscapesOtherControlCharactersAsUnicode) {
  EXPECT_EQ(course::json_string(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(course::json_string(std::string(1, '\0')), "\"\\u0000\"");
}

TEST(JsonString, PassesUtf8Through) {
  EXPECT_EQ(course::json_string("\xc2\xb5s"), "\"\xc2\xb5s\"");  // "µs"
}

}  // namespace
