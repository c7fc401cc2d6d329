// --- Triangular solve with one right-hand side  op(A) x = b  (in place) ---
//
// A: n x n triangular with a non-unit diagonal, column-major, leading dimension lda; only its UL
// triangle is read. op(A) = A (Trans::No) or A' (Trans::Yes). x: n entries, contiguous; holds b on
// entry and the solution on return; must not alias A. No scratch. Ends on a barrier; a group of
// more than one thread passes n + 1 barriers, whatever the data.
//
// Cooperative column sweep: step s takes the s-th unknown k in elimination order (forward when
// op(A) is lower, backward when upper); every member computes x_k = x_k * (1 / op(A)(k,k)) itself,
// then each member subtracts op(A)(i,k) x_k from the rows i it owns (i = rank mod size) among
// those still unsolved. Per entry that is
//   x_i = (b_i - op(A)(i,k1) x_k1 - op(A)(i,k2) x_k2 - ...) * (1 / op(A)(i,i))
// exactly trsm's order, so trsv equals trsm<Side::Left> with one column bitwise, for every group
// size. n <= 0 does nothing.
//
// N fixes n at compile time (the run-time value is then ignored).
#pragma once

#include "knot/linalg/dense/trsm.hpp"

namespace knot::linalg {

template <Uplo UL, Trans TA, int N = kDynamic, class G, class T>
KNOT_HD void trsv(G& g, int n_rt, const T* KNOT_RESTRICT A, int lda, T* KNOT_RESTRICT x) {
  constexpr bool fwd = detail::kOpLower<UL, TA>;
  const int n = extent<N>(n_rt);
  if constexpr (detail::kSerial<G> && N != kDynamic && N >= 1 && N <= 32) {
    T inv[N];
    KNOT_UNROLL for (int k = 0; k < N; ++k) inv[k] = T(1) / A[k + k * lda];
    detail::trsm_left_column<fwd, TA, N>(n, T(1), A, lda, inv, x);
    g.sync();
  } else {
    // x_k is read by every member during its step, so its owner stores it one step later, when
    // only rows that are still unsolved (never k) are touched.
    const int p = g.size(), me = g.rank();
    int k_prev = -1;
    T x_prev = T(0);
    for (int s = 0; s < n; ++s) {
      const int k = detail::pivot_at<fwd>(s, n);
      if (k_prev >= 0 && k_prev % p == me) x[k_prev] = x_prev;
      const T xk = x[k] * (T(1) / A[k + k * lda]);
      if constexpr (fwd) {
        int first = (me - (k + 1)) % p;  // first owned row after k
        if (first < 0) first += p;
        for (int i = k + 1 + first; i < n; i += p) x[i] -= detail::op_at<TA>(A, lda, i, k) * xk;
      } else {
        for (int i = me; i < k; i += p) x[i] -= detail::op_at<TA>(A, lda, i, k) * xk;
      }
      k_prev = k;
      x_prev = xk;
      g.sync();
    }
    if (k_prev >= 0 && k_prev % p == me) x[k_prev] = x_prev;
    g.sync();
  }
}

}  // namespace knot::linalg
