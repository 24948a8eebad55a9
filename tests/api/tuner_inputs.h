// tuner_inputs.h — the tuner tests' inputs: a 4-rank-ish machine with a
// fast link, and a tuner made under a COLL_ALGO setting.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>

#include "tuner/tuner.h"

namespace colltest {

inline coll::tune::TunerInputs inputs(int n) {
  coll::tune::TunerInputs in;
  in.nranks = n;
  in.maxChannels = 2;
  in.slotPayloadBytes = 256 << 10;
  in.cost = {0.5e-6, 1.0 / 10e9};
  return in;
}

// A tuner created while COLL_ALGO=algo (unset again before returning).
inline coll::tune::Tuner forcedTuner(const char* algo, const coll::tune::TunerInputs& in) {
  setenv("COLL_ALGO", algo, 1);
  auto t = coll::tune::Tuner::create(in);
  unsetenv("COLL_ALGO");
  REQUIRE(t.isOk());
  return t.take();
}

}  // namespace colltest
