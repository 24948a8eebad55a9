// json_line_test.cc — the one-object-per-line JSON reader (tools/trace/
// json_line.h): members of every kind, every escape, and each malformed
// input refused with its column; long lines and deep nesting stay cheap.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "json_line.h"

using coll::trace::JsonKind;
using coll::trace::JsonMember;
using coll::trace::jsonQuote;
using coll::trace::kMaxJsonDepth;
using coll::trace::parseJsonLine;

namespace {

std::vector<JsonMember> ok(const std::string& line) {
  auto r = parseJsonLine(line);
  INFO(line << " -> " << r.status().message());
  REQUIRE(r.isOk());
  return r.take();
}

std::string refused(const std::string& line) {
  auto r = parseJsonLine(line);
  INFO(line);
  REQUIRE_FALSE(r.isOk());
  CHECK(r.status().code() == collInvalidArgument);
  return r.status().message();
}

std::string decoded(const std::string& literal) {
  auto m = ok("{\"s\":" + literal + "}");
  REQUIRE(m.size() == 1);
  REQUIRE(m[0].kind == JsonKind::String);
  return m[0].text;
}

}  // namespace

TEST_CASE("json_line: members in order, strings and 64-bit integers", "[trace][json]") {
  auto m = ok(R"( {"a":"x", "b" : -5,"max":9223372036854775807,"min":-9223372036854775808,"z":0,"nz":-0} )");
  REQUIRE(m.size() == 6);
  CHECK(m[0].key == "a");
  CHECK(m[0].kind == JsonKind::String);
  CHECK(m[0].text == "x");
  CHECK(m[1].key == "b");
  CHECK(m[1].kind == JsonKind::Int);
  CHECK(m[1].integer == -5);
  CHECK(m[2].integer == INT64_MAX);
  CHECK(m[3].kind == JsonKind::Int);
  CHECK(m[3].integer == INT64_MIN);
  CHECK(m[4].integer == 0);
  CHECK(m[5].integer == 0);
  CHECK(ok("{}").empty());
  CHECK(ok("{\"a\":1}\r").size() == 1);  // a CRLF file's line
}

TEST_CASE("json_line: members of other kinds are kept as their kind", "[trace][json]") {
  auto m = ok(R"({"f":1.5,"e":1e3,"E":-2.5E-7,"big":9223372036854775808,"neg":-9223372036854775809,)"
              R"("t":true,"f2":false,"n":null,"o":{"x":[1,{"y":[]},"s\"",null],"z":{}},"a":[],"a2":[[1],[2,[3]]]})");
  REQUIRE(m.size() == 11);
  for (int i : {0, 1, 2, 3, 4}) CHECK(m[i].kind == JsonKind::Number);
  CHECK(m[5].kind == JsonKind::Bool);
  CHECK(m[6].kind == JsonKind::Bool);
  CHECK(m[7].kind == JsonKind::Null);
  CHECK(m[8].kind == JsonKind::Object);
  CHECK(m[9].kind == JsonKind::Array);
  CHECK(m[10].kind == JsonKind::Array);
  CHECK(m[10].key == "a2");
}

TEST_CASE("json_line: every escape, \\uXXXX with surrogate pairs, raw UTF-8", "[trace][json]") {
  CHECK(decoded(R"("\"\\\/\b\f\n\r\t")") == "\"\\/\b\f\n\r\t");
  CHECK(decoded(R"("\u0041\u00e9\u20AC")") == "A\xC3\xA9\xE2\x82\xAC");
  CHECK(decoded(R"("\ud83d\ude00")") == "\xF0\x9F\x98\x80");
  CHECK(decoded(R"("a\u0000b")") == std::string("a\0b", 3));
  CHECK(decoded("\"h\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"") == "h\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  // Keys are strings too.
  CHECK(ok(R"({"k\u0065y":1})")[0].key == "key");
}

TEST_CASE("json_line: jsonQuote writes what the reader reads back", "[trace][json]") {
  std::string all;
  for (int c = 1; c < 128; ++c) all.push_back(static_cast<char>(c));
  all += std::string("\0", 1) + "\xC3\xA9\xF0\x9F\x98\x80";
  const std::string q = jsonQuote(all);
  CHECK(q.find('\n') == std::string::npos);
  CHECK(q.find('\t') == std::string::npos);
  CHECK(q.find("\\u001b") != std::string::npos);
  CHECK(decoded(q) == all);
  CHECK(jsonQuote("a\"b") == R"("a\"b")");
}

TEST_CASE("json_line: malformed lines are refused with their column", "[trace][json]") {
  struct Bad {
    std::string line;
    std::string message;
  };
  const Bad bad[] = {
      {"", "column 1: empty line: expected an object"},
      {"   ", "column 4: empty line"},
      {"[1]", "column 1: expected '{' to start an object, found '['"},
      {"{\"a\":1", "column 7: expected ',' or '}' after a member, found the end of the line"},
      {"{\"a\":1,}", "column 8: expected a member name in quotes, found '}'"},
      {"{a:1}", "column 2: expected a member name in quotes, found 'a'"},
      {"{\"a\" 1}", "column 6: expected ':' after member \"a\", found '1'"},
      {"{\"a\":}", "column 6: expected a value, found '}'"},
      {"{\"a\":01}", "column 7: a number may not start with 0"},
      {"{\"a\":-}", "column 7: expected a digit, found '}'"},
      {"{\"a\":+1}", "column 6: expected a value, found '+'"},
      {"{\"a\":1.}", "column 8: expected a digit after '.', found '}'"},
      {"{\"a\":1e}", "column 8: expected an exponent, found '}'"},
      {"{\"a\":tru}", "column 6: expected a value, found 't'"},
      {"{\"a\":\"x}", "column 6: string not closed before the end of the line"},
      {"{\"a\":\"\\x\"}", "column 8: unknown escape: '\\' followed by 'x'"},
      {"{\"a\":\"\\", "column 7: '\\' at the end of the line"},
      {"{\"a\":\"\\u12\"}", "column 7: '\\u' needs four hex digits"},
      {"{\"a\":\"\\u12g4\"}", "column 7: '\\u' needs four hex digits"},
      {"{\"a\":\"\\ud800\"}", "column 7: high surrogate \\ud800 without a low one after it"},
      {"{\"a\":\"\\ud800\\u0041\"}", "column 7: high surrogate \\ud800 without a low one"},
      {"{\"a\":\"\\udc00\"}", "column 7: lone low surrogate \\udc00"},
      {"{\"a\":\"x\ty\"}", "column 8: control character 0x09 in a string (JSON writes it as \\u0009)"},
      {"{\"a\":\"\xFF\"}", "column 7: invalid UTF-8 (byte 0xff) in a string"},
      {"{\"a\":\"\xC0\x80\"}", "column 7: invalid UTF-8 (byte 0xc0)"},            // overlong
      {"{\"a\":\"\xED\xA0\x80\"}", "column 7: invalid UTF-8 (byte 0xed)"},        // a surrogate
      {"{\"a\":\"\xF4\x90\x80\x80\"}", "column 7: invalid UTF-8 (byte 0xf4)"},    // above U+10FFFF
      {"{\"a\":\"\xE2\x82\"}", "column 7: invalid UTF-8 (byte 0xe2)"},            // cut short
      {"{\"a\":1} x", "column 9: 'x' after the object"},
      {"{\"a\":1}{}", "column 8: '{' after the object"},
      {"{\"a\":[1,2}", "column 10: expected ',' or ']', found '}'"},
      {"{\"a\":[1,]}", "column 9: expected a value, found ']'"},
      {"{\"a\":{\"b\" 1}}", "column 11: expected ':', found '1'"},
      {"{\"a\":{1:2}}", "column 7: expected a member name in quotes, found '1'"},
      {"{\"a\":[", "column 7: the line ends inside a nested object or array"},
      {"{\"a\":1,\"b\":\x01}", "column 12: expected a value, found byte 0x01"},
  };
  for (const Bad& b : bad) {
    const std::string msg = refused(b.line);
    INFO(b.line);
    CHECK_THAT(msg, Catch::StartsWith(b.message));
  }
}

TEST_CASE("json_line: nesting is refused past its bound, without recursion", "[trace][json]") {
  // The line's object is one level: kMaxJsonDepth - 1 arrays inside it fit.
  const auto nested = [](size_t depth) {
    return "{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  };
  CHECK(ok(nested(kMaxJsonDepth - 1)).size() == 1);
  CHECK_THAT(refused(nested(kMaxJsonDepth)), Catch::Contains("nested deeper than 64 levels"));
  // A million brackets: refused at the bound, not a stack overflow.
  CHECK_THAT(refused("{\"a\":" + std::string(1000000, '[')), Catch::Contains("nested deeper"));
}

TEST_CASE("json_line: long lines are read in linear time", "[trace][json]") {
  const auto t0 = std::chrono::steady_clock::now();
  // One 8 MB string of escapes, and 200000 members.
  std::string s = "{\"s\":\"";
  for (int i = 0; i < 1000000; ++i) s += "\\u00e9ab";
  s += "\"}";
  auto m = ok(s);
  CHECK(m[0].text.size() == 4000000);
  std::string many = "{";
  for (int i = 0; i < 200000; ++i) many += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  many += "}";
  CHECK(ok(many).size() == 200000);
  // Quadratic work on these would take minutes; linear takes well under a second even unoptimized.
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
}
