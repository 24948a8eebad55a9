// catch.hpp — lets the tests, written for Catch2 2.x (Debian 12's catch2),
// build against Catch2 3.x (e.g. Ubuntu 24.04, the GPU machines), where the
// single header is gone.  Only on the include path when CMake found v3.
#pragma once

#include <catch2/catch_all.hpp>

#include <string>

using Catch::Approx;

namespace Catch {
namespace Matchers {
// v2's string Contains; in v3 `Contains` matches a range's elements, so a
// non-template overload (preferred on a tie) keeps the v2 meaning.
inline StringContainsMatcher Contains(const std::string& s, CaseSensitive cs = CaseSensitive::Yes) {
  return ContainsSubstring(s, cs);
}
inline StringContainsMatcher Contains(const char* s, CaseSensitive cs = CaseSensitive::Yes) {
  return ContainsSubstring(s, cs);
}
}  // namespace Matchers
using Matchers::Contains;
}  // namespace Catch
