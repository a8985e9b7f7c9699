// The minimal JSON reader/writer behind safetensors headers and metrics lines.
#include <gtest/gtest.h>

#include "test_util.h"
#include "core/error.h"
#include "io/json.h"

namespace vt::test {
namespace {

TEST(Json, ParsesNestedValuesInOrder) {
  io::JsonValue v = io::parse_json(" {\"b\": [1, -2, [], {}], \"a\" : {\"x\": \"y\"}, \"n\": 0}\n ");
  ASSERT_TRUE(v.is_object());
  ASSERT_EQ(v.object.size(), 3u);
  EXPECT_EQ(v.object[0].first, "b");
  EXPECT_EQ(v.object[1].first, "a");
  const io::JsonValue* b = v.find("b");
  ASSERT_TRUE(b && b->is_array());
  ASSERT_EQ(b->array.size(), 4u);
  EXPECT_EQ(b->array[0].integer, 1);
  EXPECT_EQ(b->array[1].integer, -2);
  EXPECT_TRUE(b->array[2].is_array());
  EXPECT_TRUE(b->array[3].is_object());
  EXPECT_EQ(v.find("a")->find("x")->string, "y");
  EXPECT_EQ(v.find("n")->integer, 0);
  EXPECT_EQ(v.find("missing"), nullptr);
  EXPECT_EQ(io::to_json(v), R"({"b":[1,-2,[],{}],"a":{"x":"y"},"n":0})");
}

TEST(Json, StringEscapesAndUnicode) {
  io::JsonValue v = io::parse_json(R"("q\" b\\ s\/ \b\f\n\r\t \u0041\u00e9\u20ac\ud83d\ude00")");
  EXPECT_EQ(v.string, "q\" b\\ s/ \b\f\n\r\t A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  EXPECT_EQ(io::json_quote("a\"b\\c\nd\x01"), R"("a\"b\\c\nd\u0001")");
  // Whatever we write reads back identically.
  std::string nasty = "tab\t nl\n quote\" bs\\ ctl\x1f utf8 \xc3\xa9";
  EXPECT_EQ(io::parse_json(io::json_quote(nasty)).string, nasty);
}

TEST(Json, IntegersCoverTheFull64BitRange) {
  EXPECT_EQ(io::parse_json("9223372036854775807").integer, INT64_MAX);
  EXPECT_EQ(io::parse_json("-9223372036854775808").integer, INT64_MIN);
  EXPECT_EQ(io::to_json(io::JsonValue::make_int(INT64_MIN)), "-9223372036854775808");
  EXPECT_CONTAINS(error_of([] { io::parse_json("9223372036854775808"); }), "out of the 64-bit range");
  EXPECT_CONTAINS(error_of([] { io::parse_json("-9223372036854775809"); }), "out of the 64-bit range");
}

TEST(Json, MalformedInputIsRejectedWithAnOffset) {
  struct Case {
    const char* text;
    const char* expect;
  };
  std::vector<Case> cases = {
      {"", "unexpected end"},
      {"{\"a\":1", "unexpected end"},
      {"{\"a\" 1}", "offset 5: expected ':'"},
      {"[1 2]", "expected ']'"},
      {"{1: 2}", "expected a string key"},
      {"{\"a\":1,\"a\":2}", "duplicate key \"a\""},
      {"1.5", "floating-point"},
      {"1e3", "floating-point"},
      {"true", "only objects, arrays, strings and integers"},
      {"01", "leading zeros"},
      {"-", "expected a digit"},
      {"\"abc", "unexpected end"},
      {"\"a\nb\"", "control character"},
      {"\"\\x\"", "bad escape"},
      {"\"\\u12g4\"", "bad hex digit"},
      {"\"\\ud800\"", "unpaired surrogate"},
      {"\"\\udc00\"", "unpaired surrogate"},
      {"{} x", "after the value"},
  };
  for (const auto& c : cases) {
    std::string e = error_of([&] { io::parse_json(c.text); });
    EXPECT_CONTAINS(e, "[json] offset");
    EXPECT_CONTAINS(e, c.expect);
  }
  std::string deep(100, '[');
  EXPECT_CONTAINS(error_of([&] { io::parse_json(deep); }), "nesting deeper");
}

}  // namespace
}  // namespace vt::test
