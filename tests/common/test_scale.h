// test_scale.h — which builds run a large test grid in full.
//
// The plain CI build runs every grid in full.  The ASan+UBSan and TSan
// builds are unoptimized and 3-15x slower; what they look for (bad memory
// accesses, undefined behaviour, races) every shape of a grid reaches at
// fewer sizes, so there a grid keeps the sizes a test names for it (say,
// the rank counts around powers of two) and drops the rest.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COLL_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define COLL_TEST_SANITIZED 1
#endif
#endif

namespace coll::testing {

#ifdef COLL_TEST_SANITIZED
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace coll::testing
