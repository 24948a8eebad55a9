// gemm.cc — see gemm.h.
#include "nn/gemm.h"

#include <algorithm>
#include <mutex>
#include <vector>

#if COLL_TRAINER_HAVE_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int num_threads);
extern "C" char* openblas_get_corename(void);
#endif

namespace coll::train::nn {

bool haveOpenBlas() { return COLL_TRAINER_HAVE_OPENBLAS != 0; }

void blasSingleThread() {
#if COLL_TRAINER_HAVE_OPENBLAS
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
#endif
}

const char* blasKernels() {
#if COLL_TRAINER_HAVE_OPENBLAS
  return openblas_get_corename();
#else
  return "";
#endif
}

namespace {

// Copies op(X)[r0:r0+rows, c0:c0+cols] into a dense row-major tile.
template <class T>
void packTile(Trans t, const T* X, int ld, int r0, int rows, int c0, int cols, T* out) {
  if (t == Trans::No) {
    for (int r = 0; r < rows; ++r) std::copy_n(X + size_t(r0 + r) * ld + c0, cols, out + size_t(r) * cols);
  } else {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) out[size_t(r) * cols + c] = X[size_t(c0 + c) * ld + (r0 + r)];
  }
}

}  // namespace

template <class T>
void gemmBuiltin(Trans ta, Trans tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B,
                 int ldb, T beta, T* C, int ldc) {
  for (int i = 0; i < M; ++i) {
    T* c = C + size_t(i) * ldc;
    if (beta == T(0)) {
      std::fill_n(c, N, T(0));
    } else if (beta != T(1)) {
      for (int j = 0; j < N; ++j) c[j] *= beta;
    }
  }
  if (K == 0 || alpha == T(0)) return;
  // Blocks: op(A) tile MB x KB and op(B) tile KB x NB stay in cache.
  constexpr int MB = 64, KB = 128, NB = 512;
  std::vector<T> at(size_t(MB) * KB), bt(size_t(KB) * NB);
  for (int k0 = 0; k0 < K; k0 += KB) {
    const int kb = std::min(KB, K - k0);
    for (int j0 = 0; j0 < N; j0 += NB) {
      const int nb = std::min(NB, N - j0);
      packTile(tb, B, ldb, k0, kb, j0, nb, bt.data());
      for (int i0 = 0; i0 < M; i0 += MB) {
        const int mb = std::min(MB, M - i0);
        packTile(ta, A, lda, i0, mb, k0, kb, at.data());
        for (int i = 0; i < mb; ++i) {
          T* c = C + size_t(i0 + i) * ldc + j0;
          for (int p = 0; p < kb; ++p) {
            const T a = alpha * at[size_t(i) * kb + p];
            const T* b = bt.data() + size_t(p) * nb;
            for (int j = 0; j < nb; ++j) c[j] += a * b[j];
          }
        }
      }
    }
  }
}

template <>
void gemm<float>(Trans ta, Trans tb, int M, int N, int K, float alpha, const float* A, int lda,
                 const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
#if COLL_TRAINER_HAVE_OPENBLAS
  blasSingleThread();
  cblas_sgemm(CblasRowMajor, ta == Trans::Yes ? CblasTrans : CblasNoTrans,
              tb == Trans::Yes ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
  gemmBuiltin(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

template <>
void gemm<double>(Trans ta, Trans tb, int M, int N, int K, double alpha, const double* A, int lda,
                  const double* B, int ldb, double beta, double* C, int ldc) {
  if (M <= 0 || N <= 0) return;
#if COLL_TRAINER_HAVE_OPENBLAS
  blasSingleThread();
  cblas_dgemm(CblasRowMajor, ta == Trans::Yes ? CblasTrans : CblasNoTrans,
              tb == Trans::Yes ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
  gemmBuiltin(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

template void gemmBuiltin<float>(Trans, Trans, int, int, int, float, const float*, int, const float*, int,
                                 float, float*, int);
template void gemmBuiltin<double>(Trans, Trans, int, int, int, double, const double*, int, const double*,
                                  int, double, double*, int);

}  // namespace coll::train::nn
