// scoped_env.h — an environment variable set for the scope of a test, and
// put back as it was after (CI runs the suite with COLL_CHECK=1 set: a test
// that sets its own must not turn it off for the tests after it).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace colltest {

struct ScopedEnv {
  std::string name;
  std::optional<std::string> saved;
  ScopedEnv(const char* n, const char* v) : name(n) {
    if (const char* old = std::getenv(n)) saved = old;
    setenv(n, v, 1);
  }
  ~ScopedEnv() {
    if (saved) setenv(name.c_str(), saved->c_str(), 1);
    else unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

}  // namespace colltest
