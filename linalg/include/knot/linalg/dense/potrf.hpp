// --- Cholesky factorization  A = L L'  (lower, in place) ---
//
// A: n x n, column-major, leading dimension lda. On entry the lower triangle (diagonal included)
// holds the symmetric matrix; on success it holds L. The strict upper triangle is never read or
// written. No scratch. Ends on a barrier; any group but SerialGroup passes n + 1 barriers, whatever
// the data.
//
// Returns, on every member, 0 on success or j + 1 where column j is the first whose pivot
//   d_j = A(j,j) - sum_{k<j} L(j,k)^2
// is not positive or not finite (NaN, Inf); *info (if non-null) is set to the same value by one
// member before the closing barrier. On failure columns >= j are left as they came in, columns < j
// hold the factor so far, and the remaining phases only keep the barrier sequence: the routine
// takes no square root of a non-positive number and divides by no zero.
//
// Each entry is computed by one member as
//   L(i,j) = (A(i,j) - L(i,0) L(j,0) - L(i,1) L(j,1) - ... - L(i,j-1) L(j,j-1)) / sqrt(d_j)
// (left to right), so the result is bitwise the same for every group size. (A true division, not a
// reciprocal: unlike trsm's, these divisions are independent of one another and cost little.)
//
// N fixes n at compile time (the run-time value is then ignored); the serial group then keeps a
// block of up to 16 x 16 in registers.
//
// potrf_strided is the same factorization on strided storage: element (i,j) of the matrix and of
// L lives at A[i*rs + j*cs], and only entries with i >= j are touched. Since a symmetric matrix is
// its own transpose, one core serves four storage orders:
//   column-major, lower, A = L L'   rs = 1,   cs = lda   (what potrf does)
//   column-major, upper, A = U'U    rs = lda, cs = 1     (U(j,i) = L(i,j) sits at j + i*lda)
//   row-major,    lower, A = L L'   rs = lda, cs = 1
//   row-major,    upper, A = U'U    rs = 1,   cs = lda   (the same bytes as column-major lower)
// In the upper cases the factor written is U = L', in the upper triangle; the lower one is untouched.
#pragma once

#include <cmath>

#include "knot/linalg/dense/types.hpp"

namespace knot::linalg {

namespace detail {

struct ColMajorIndex {
  int ld;
  KNOT_HD constexpr int operator()(int i, int j) const { return i + j * ld; }
};

struct StridedIndex {
  int rs, cs;
  KNOT_HD constexpr int operator()(int i, int j) const { return i * rs + j * cs; }
};

// The serial group with a fixed small n: the same operations on a private copy, fully unrolled,
// so the factor stays in registers and the compiler schedules across columns. Stops at the first
// failing pivot, leaving that column and the later ones as they came in.
template <int N, class T, class Index>
KNOT_HD int potrf_fixed(T* A, Index at) {
  using std::sqrt;
  T L[N][N];
  KNOT_UNROLL for (int j = 0; j < N; ++j) {
    KNOT_UNROLL for (int i = 0; i < N; ++i) {
      if (i >= j) L[i][j] = A[at(i, j)];
    }
  }
  int fail = 0;
  KNOT_UNROLL for (int j = 0; j < N; ++j) {
    T d = L[j][j];
    KNOT_UNROLL for (int k = 0; k < N; ++k) {
      if (k < j) d -= L[j][k] * L[j][k];
    }
    if (!positive_finite(d)) {
      fail = j + 1;
      break;
    }
    const T root = sqrt(d);
    L[j][j] = root;
    KNOT_UNROLL for (int i = 0; i < N; ++i) {
      if (i > j) {
        T t = L[i][j];
        KNOT_UNROLL for (int k = 0; k < N; ++k) {
          if (k < j) t -= L[i][k] * L[j][k];
        }
        L[i][j] = t / root;
      }
    }
    KNOT_UNROLL for (int i = 0; i < N; ++i) {
      if (i >= j) A[at(i, j)] = L[i][j];
    }
  }
  return fail;
}

// Left-looking, one phase per column. Every member computes the pivot d_j itself (the same bits
// everywhere), so all agree on success or failure without exchanging anything, and nobody needs
// L(j,j) stored during phase j: member 0 stores it in phase j + 1, when nobody reads it any more.
template <int N, class G, class T, class Index>
KNOT_HD int potrf_cooperative(G& g, int n_rt, T* A, Index at, int* info) {
  using std::sqrt;
  const int n = extent<N>(n_rt);
  int fail = 0;
  T last_root = T(0);  // sqrt(d_{j-1}), still to be stored
  for (int j = 0; j < n; ++j) {
    if (fail == 0) {
      if (j > 0 && g.rank() == 0) A[at(j - 1, j - 1)] = last_root;
      T d = A[at(j, j)];
      for (int k = 0; k < j; ++k) d -= A[at(j, k)] * A[at(j, k)];
      if (!positive_finite(d)) {
        fail = j + 1;
      } else {
        const T root = sqrt(d);
        for (int i = j + 1 + g.rank(); i < n; i += g.size()) {
          T t = A[at(i, j)];
          for (int k = 0; k < j; ++k) t -= A[at(i, k)] * A[at(j, k)];
          A[at(i, j)] = t / root;
        }
        last_root = root;
      }
    }
    g.sync();
  }
  if (fail == 0 && n > 0 && g.rank() == 0) A[at(n - 1, n - 1)] = last_root;
  if (info != nullptr && g.rank() == 0) *info = fail;
  g.sync();
  return fail;
}

template <int N, class G, class T, class Index>
KNOT_HD int potrf_core(G& g, int n, T* A, Index at, int* info) {
  if constexpr (kSerial<G> && N >= 1 && N <= 16) {
    const int fail = potrf_fixed<N>(A, at);
    if (info != nullptr) *info = fail;
    g.sync();
    return fail;
  } else {
    return potrf_cooperative<N>(g, n, A, at, info);
  }
}

}  // namespace detail

template <int N = kDynamic, class G, class T>
KNOT_HD int potrf_strided(G& g, int n, T* A, int rs, int cs, int* info = nullptr) {
  return detail::potrf_core<N>(g, n, A, detail::StridedIndex{rs, cs}, info);
}

template <int N = kDynamic, class G, class T>
KNOT_HD int potrf(G& g, int n, T* A, int lda, int* info = nullptr) {
  return detail::potrf_core<N>(g, n, A, detail::ColMajorIndex{lda}, info);
}

}  // namespace knot::linalg
