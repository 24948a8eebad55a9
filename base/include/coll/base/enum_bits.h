// enum_bits.h — the bits of a C enum argument as an int.
//
// A C caller may pass any value in an enum parameter; loading an enum that
// holds no enumerator's value is undefined behaviour in C++, so arguments
// are read as bits, checked, and only then converted.
#pragma once

#include <cstring>

namespace coll {

template <typename E>
int enumBits(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

}  // namespace coll
