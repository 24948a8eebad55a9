// gemm_test.cc — the gemm in use (OpenBLAS or built-in) and the built-in
// loop against a naive triple loop, every transpose combination.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "nn/gemm.h"
#include "nn/layers.h"

using namespace coll::train::nn;

namespace {

template <class T>
void runCase(Trans ta, Trans tb, int M, int N, int K, T alpha, T beta) {
  Rng rng(uint64_t(M * 131 + N * 7 + K));
  // Stored shapes with padded row strides.
  const int aRows = ta == Trans::No ? M : K, aCols = ta == Trans::No ? K : M;
  const int bRows = tb == Trans::No ? K : N, bCols = tb == Trans::No ? N : K;
  const int lda = aCols + 3, ldb = bCols + 1, ldc = N + 2;
  std::vector<T> A(size_t(aRows) * lda), B(size_t(bRows) * ldb), C0(size_t(M) * ldc);
  for (auto& v : A) v = T(rng.uniform(-1, 1));
  for (auto& v : B) v = T(rng.uniform(-1, 1));
  for (auto& v : C0) v = beta == T(0) ? std::numeric_limits<T>::quiet_NaN() : T(rng.uniform(-1, 1));
  auto a = [&](int i, int p) { return ta == Trans::No ? A[size_t(i) * lda + p] : A[size_t(p) * lda + i]; };
  auto b = [&](int p, int j) { return tb == Trans::No ? B[size_t(p) * ldb + j] : B[size_t(j) * ldb + p]; };
  std::vector<T> C1 = C0, C2 = C0;
  gemm<T>(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C1.data(), ldc);
  gemmBuiltin<T>(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C2.data(), ldc);
  const double tol = sizeof(T) == 4 ? 1e-4 : 1e-12;
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double ref = 0;
      for (int p = 0; p < K; ++p) ref += double(a(i, p)) * double(b(p, j));
      ref *= double(alpha);
      if (beta != T(0)) ref += double(beta) * double(C0[size_t(i) * ldc + j]);
      INFO("i " << i << " j " << j);
      REQUIRE(double(C1[size_t(i) * ldc + j]) == Approx(ref).margin(tol));
      REQUIRE(double(C2[size_t(i) * ldc + j]) == Approx(ref).margin(tol));
    }
    // Padding columns untouched.
    for (int j = N; j < ldc; ++j) {
      const T c0 = C0[size_t(i) * ldc + j], c1 = C1[size_t(i) * ldc + j], c2 = C2[size_t(i) * ldc + j];
      if (std::isnan(c0)) {
        CHECK(std::isnan(c1));
        CHECK(std::isnan(c2));
      } else {
        CHECK(c1 == c0);
        CHECK(c2 == c0);
      }
    }
  }
}

}  // namespace

TEMPLATE_TEST_CASE("gemm: every transpose, strides, alpha/beta, vs naive", "[gemm]", float, double) {
  for (Trans ta : {Trans::No, Trans::Yes})
    for (Trans tb : {Trans::No, Trans::Yes}) {
      runCase<TestType>(ta, tb, 37, 53, 131, TestType(0.7), TestType(0));
      runCase<TestType>(ta, tb, 70, 600, 140, TestType(1), TestType(1.3));  // crosses the built-in blocks
      runCase<TestType>(ta, tb, 1, 1, 1, TestType(2), TestType(1));
      runCase<TestType>(ta, tb, 5, 4, 0, TestType(1), TestType(0.5));  // K = 0: C = beta C
      runCase<TestType>(ta, tb, 5, 4, 0, TestType(1), TestType(0));    // K = 0, beta 0: C = 0 (NaNs gone)
    }
}

TEST_CASE("gemm backend is reported", "[gemm]") {
  INFO("OpenBLAS: " << haveOpenBlas());
  CHECK(true);
}
