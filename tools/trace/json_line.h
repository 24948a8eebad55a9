// json_line.h — one JSON object on one line, read without a JSON library.
// The flight recorder's dumps (docs/flight-recorder.md) hold flat objects of
// strings and integers, so members are returned flat: strings decoded
// (escapes, \uXXXX with surrogate pairs, UTF-8 checked), integers as
// int64_t.  Members of other kinds (fractions, true/false/null, nested
// objects and arrays) are checked and kept as their kind alone, so a reader
// can ignore members it does not know and name the kind it did not expect.
//
// Bounded: one pass over the line, nesting is followed with an explicit
// stack (no recursion) and refused deeper than kMaxJsonDepth.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "coll/base/status.h"

namespace coll::trace {

inline constexpr size_t kMaxJsonDepth = 64;

enum class JsonKind { String, Int, Number, Bool, Null, Object, Array };

// "a string", "an integer", ... for messages.
const char* jsonKindName(JsonKind k);

struct JsonMember {
  std::string key;
  JsonKind kind = JsonKind::Null;
  std::string text;     // String: the decoded value
  int64_t integer = 0;  // Int: the value
};

// The members of the object `line` holds, in order (duplicates kept).
// Errors are collInvalidArgument with a message that starts with
// "column N: " (1-based, in bytes).
Result<std::vector<JsonMember>> parseJsonLine(std::string_view line);

// `s` as a JSON string literal, quotes included: ", \ and control
// characters escaped, everything else as is.
std::string jsonQuote(std::string_view s);

}  // namespace coll::trace
