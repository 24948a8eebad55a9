// gemm.h — row-major C = alpha * op(A) * op(B) + beta * C for float and
// double: OpenBLAS (one thread) when the build found it, else the built-in
// blocked loop.  beta == 0 overwrites C (NaNs in C do not leak through).
#pragma once

namespace coll::train::nn {

enum class Trans : bool { No = false, Yes = true };

// op(A): M x K, op(B): K x N, C: M x N; lda/ldb/ldc are row strides of the
// stored (untransposed) matrices.
template <class T>
void gemm(Trans ta, Trans tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb,
          T beta, T* C, int ldc);

// The built-in loop, always compiled (tests compare it with the BLAS path).
template <class T>
void gemmBuiltin(Trans ta, Trans tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B,
                 int ldb, T beta, T* C, int ldc);

bool haveOpenBlas();
// The CPU kernels OpenBLAS chose ("Cooperlake", "Haswell", ...; "" without
// it): a DYNAMIC_ARCH build picks them from the CPU unless OPENBLAS_CORETYPE
// forces others, and on this project's VMs that is worth 1.5x in gemm time.
const char* blasKernels();
// Sets OpenBLAS to one thread (idempotent; a no-op without OpenBLAS).
void blasSingleThread();

}  // namespace coll::train::nn
