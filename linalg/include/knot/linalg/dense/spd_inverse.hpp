// --- Inverse of a symmetric positive definite block  Ainv = A^-1 = L^-T L^-1,  A = L L' ---
//
// A: n x n, column-major, leading dimension lda; only its lower triangle (diagonal included) is
// read. Ainv: n x n, column-major, leading dimension ldi; on success both triangles are written
// and Ainv(i,j) and Ainv(j,i) are the same value (exact symmetry). Ainv must not alias A or
// scratch. Scratch: spd_inverse_scratch_size(n) = n*n elements (the factor, then L^-1).
//
// Steps, each ending on a barrier (any group but SerialGroup passes n + 5, whatever the data):
//   1. scratch <- lower triangle of A;   2. potrf on scratch (L);
//   3. column j of L^-1 into Ainv's lower triangle (a workspace until step 5), solving L y = e_j
//      by substitution (trsm's order, rows j..n-1), one member per column;
//   4. scratch <- L^-1;
//   5. Ainv(i,j) = Ainv(j,i) = sum_{k=i}^{n-1} L^-1(k,i) L^-1(k,j) for i >= j (k ascending),
//      one member per element.
// Every entry's operations are fixed by n alone, so the result is bitwise the same for every group
// size. Returns potrf's info on every member (and sets *info, if non-null, from one member). On
// failure (info != 0) Ainv is not written at all: it keeps whatever it held. n <= 0 does nothing.
//
// N fixes n at compile time (the run-time value is then ignored).
#pragma once

#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/dense/trsm.hpp"

namespace knot::linalg {

KNOT_HD constexpr int spd_inverse_scratch_size(int n) { return n > 0 ? n * n : 0; }

template <int N = kDynamic, class G, class T>
KNOT_HD int spd_inverse(G& g, int n_rt, const T* A, int lda, T* Ainv, int ldi, T* scratch,
                        int* info = nullptr) {
  const int n = extent<N>(n_rt);
  T* S = scratch;  // n x n, leading dimension n
  if (n <= 0) {
    if (info != nullptr && g.rank() == 0) *info = 0;
    g.sync();
    return 0;
  }

  for (int e = g.rank(); e < n * n; e += g.size()) {
    const int j = e / n, i = e - j * n;
    if (i >= j) S[e] = A[i + j * lda];
  }
  g.sync();

  const int fail = potrf<N>(g, n, S, n);

  if (fail == 0) {
    for (int j = g.rank(); j < n; j += g.size()) {
      T* y = Ainv + j + j * ldi;  // rows j..n-1 of column j
      y[0] = T(1);
      for (int i = 1; i < n - j; ++i) y[i] = T(0);
      detail::trsm_left_column<true, Trans::No, kDynamic>(n - j, T(1), S + j + j * n, n,
                                                           static_cast<const T*>(nullptr), y);
    }
  }
  g.sync();

  if (fail == 0) {
    for (int e = g.rank(); e < n * n; e += g.size()) {
      const int j = e / n, i = e - j * n;
      if (i >= j) S[e] = Ainv[i + j * ldi];
    }
  }
  g.sync();

  if (fail == 0) {
    for (int e = g.rank(); e < n * (n + 1) / 2; e += g.size()) {
      int i, j;
      detail::lower_triangle_index(e, n, i, j);
      T acc = T(0);
      for (int k = i; k < n; ++k) acc += S[k + i * n] * S[k + j * n];
      Ainv[i + j * ldi] = acc;
      Ainv[j + i * ldi] = acc;
    }
  }
  if (info != nullptr && g.rank() == 0) *info = fail;
  g.sync();
  return fail;
}

}  // namespace knot::linalg
