// --- Triangular solve with many right-hand sides  op(A) X = alpha B  or  X op(A) = alpha B ---
//
// B: m x n, column-major, leading dimension ldb; overwritten by X. A: triangular with a non-unit
// diagonal, m x m (Side::Left) or n x n (Side::Right), column-major, leading dimension lda; only
// its UL triangle is read. op(A) = A (Trans::No) or A' (Trans::Yes). A must not alias B. No
// scratch. Ends on a barrier (its only one).
//
// Left: the columns of B are independent systems, Right: the rows are; members split them. Each
// system M x = alpha b (M = op(A) for Left, op(A)' for Right) is solved by substitution in the
// order that eliminates unknowns (forward when M is lower, backward when upper):
//   x_i = (alpha b_i - M(i,k1) x_k1 - M(i,k2) x_k2 - ...) * (1 / M(i,i))   (k1, k2, ... in order)
// so the result is bitwise the same for every group size, and trsv gives the same bits for n = 1.
// Multiplying by the reciprocal (as LAPACK's potf2 and Eigen's trsm do) costs at most an ulp per
// entry over dividing and takes the divisions off the substitution's critical path: with a fixed
// height each member divides m times in all instead of m times per column.
// alpha == 0 sets B = 0 without reading A (BLAS). m or n <= 0 does nothing.
//
// M, N fix m, n at compile time (the run-time values are then ignored).
#pragma once

#include "knot/linalg/dense/types.hpp"

namespace knot::linalg {

namespace detail {

// Whether op(A) is lower triangular: a transpose swaps the triangles.
template <Uplo UL, Trans TA>
inline constexpr bool kOpLower = (UL == Uplo::Lower) == (TA == Trans::No);

template <Trans TA>
inline constexpr Trans kFlip = TA == Trans::No ? Trans::Yes : Trans::No;

// The step-th unknown eliminated, of `len`.
template <bool Forward>
KNOT_HD constexpr int pivot_at(int step, int len) {
  return Forward ? step : len - 1 - step;
}

// Solves M x = alpha b for one column b (m rows, contiguous), M = op(A), in elimination order.
// The fixed-height path multiplies by inv[k] = 1 / M(k,k) (computed by the caller, once), the
// run-time one forms 1 / M(k,k) itself; the two are the same operations. With m fixed and small the column lives in registers:
// updating it in memory would stall store-to-load forwarding when the next step reloads it at
// another vector width.
template <bool Forward, Trans TA, int Mc, class T>
KNOT_HD void trsm_left_column(int m, T alpha, const T* KNOT_RESTRICT A, int lda, const T* inv,
                              T* KNOT_RESTRICT b) {
  if constexpr (Mc != kDynamic && Mc >= 1 && Mc <= 32) {
    T x[Mc];
    KNOT_UNROLL for (int i = 0; i < Mc; ++i) x[i] = b[i];
    if (alpha != T(1)) {
      KNOT_UNROLL for (int i = 0; i < Mc; ++i) x[i] *= alpha;
    }
    KNOT_UNROLL for (int s = 0; s < Mc; ++s) {
      const int k = pivot_at<Forward>(s, Mc);
      x[k] *= inv[k];
      KNOT_UNROLL for (int i = 0; i < Mc; ++i) {
        if (Forward ? i > k : i < k) x[i] -= op_at<TA>(A, lda, i, k) * x[k];
      }
    }
    KNOT_UNROLL for (int i = 0; i < Mc; ++i) b[i] = x[i];
  } else {
    if (alpha != T(1))
      for (int i = 0; i < m; ++i) b[i] *= alpha;
    for (int s = 0; s < m; ++s) {
      const int k = pivot_at<Forward>(s, m);
      const T xk = b[k] * (T(1) / A[k + k * lda]);
      b[k] = xk;
      if constexpr (Forward) {
        for (int i = k + 1; i < m; ++i) b[i] -= op_at<TA>(A, lda, i, k) * xk;
      } else {
        for (int i = 0; i < k; ++i) b[i] -= op_at<TA>(A, lda, i, k) * xk;
      }
    }
  }
}

}  // namespace detail

template <Side S, Uplo UL, Trans TA, int M = kDynamic, int N = kDynamic, class G, class T>
KNOT_HD void trsm(G& g, int m_rt, int n_rt, T alpha, const T* KNOT_RESTRICT A, int lda,
                  T* KNOT_RESTRICT B, int ldb) {
  const int m = extent<M>(m_rt), n = extent<N>(n_rt);
  if (m > 0 && n > 0) {
    if (alpha == T(0)) {
      for (int j = 0; j < n; ++j)
        for (int i = g.rank(); i < m; i += g.size()) B[i + j * ldb] = T(0);
    } else if constexpr (S == Side::Left) {
      constexpr bool fwd = detail::kOpLower<UL, TA>;
      if constexpr (M != kDynamic && M >= 1 && M <= 32) {
        // The reciprocals once per member, not once per column: divisions are the slow part.
        T inv[M];
        KNOT_UNROLL for (int k = 0; k < M; ++k) inv[k] = T(1) / A[k + k * lda];
        for (int j = g.rank(); j < n; j += g.size())
          detail::trsm_left_column<fwd, TA, M>(m, alpha, A, lda, inv, B + j * ldb);
      } else {
        for (int j = g.rank(); j < n; j += g.size())
          detail::trsm_left_column<fwd, TA, M>(m, alpha, A, lda, static_cast<const T*>(nullptr),
                                               B + j * ldb);
      }
    } else {
      // Row i solves x op(A) = alpha B(i,:), i.e. op(A)' x' = alpha B(i,:)'. Rows are innermost, so
      // the serial group updates whole columns at a time.
      constexpr Trans TM = detail::kFlip<TA>;
      constexpr bool fwd = detail::kOpLower<UL, TM>;
      if (alpha != T(1))
        for (int l = 0; l < n; ++l)
          for (int i = g.rank(); i < m; i += g.size()) B[i + l * ldb] *= alpha;
      for (int s = 0; s < n; ++s) {
        const int k = detail::pivot_at<fwd>(s, n);
        const T inv = T(1) / A[k + k * lda];
        T* bk = B + k * ldb;
        for (int i = g.rank(); i < m; i += g.size()) bk[i] *= inv;
        const int l0 = fwd ? k + 1 : 0, l1 = fwd ? n : k;
        for (int l = l0; l < l1; ++l) {
          const T mlk = detail::op_at<TM>(A, lda, l, k);
          T* bl = B + l * ldb;
          for (int i = g.rank(); i < m; i += g.size()) bl[i] -= mlk * bk[i];
        }
      }
    }
  }
  g.sync();
}

}  // namespace knot::linalg
