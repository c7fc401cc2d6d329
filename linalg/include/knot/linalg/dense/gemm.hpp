// --- General matrix product  C = alpha op(A) op(B) + beta C ---
//
// C: m x n. op(A): m x k, so A is m x k (Trans::No) or k x m (Trans::Yes). op(B): k x n, so B is
// k x n (No) or n x k (Yes). All column-major, X(i,j) = X[i + j*ldx]. C must not alias A or B.
// No scratch. Ends on a barrier (its only one).
//
// Each element of C is computed by one member, always as
//   acc = op(A)(i,0) op(B)(0,j) + op(A)(i,1) op(B)(1,j) + ...     (left to right, from zero)
//   C(i,j) = alpha acc + beta C(i,j)
// so the result is bitwise the same for every group size. BLAS conventions: beta == 0 does not
// read C (it may hold NaN), alpha == 0 reads neither A nor B. m or n <= 0 does nothing; k <= 0
// gives C = beta C.
//
// M, N, K fix m, n, k at compile time (the run-time values are then ignored), so that the serial
// group's loops unroll.
#pragma once

#include "knot/linalg/dense/types.hpp"

namespace knot::linalg {

namespace detail {

// C(i0+r, j) = alpha sum_p op(A)(i0+r, p) op(B)(p, j) + beta C(i0+r, j) for r < rows <= R.
// The R sums are independent, so they pipeline (and vectorize when op(A) = A).
template <int R, Trans TA, Trans TB, class T>
KNOT_HD void product_tile(int rows, int k, T alpha, const T* KNOT_RESTRICT A, int lda,
                          const T* KNOT_RESTRICT B, int ldb, T beta, T* KNOT_RESTRICT C, int ldc, int i0,
                          int j) {
  T acc[R];
  for (int r = 0; r < R; ++r) acc[r] = T(0);
  if (alpha != T(0)) {
    for (int p = 0; p < k; ++p) {
      const T b = op_at<TB>(B, ldb, p, j);
      for (int r = 0; r < rows; ++r) acc[r] += op_at<TA>(A, lda, i0 + r, p) * b;
    }
  }
  T* c = C + i0 + j * ldc;
  if (beta == T(0)) {
    for (int r = 0; r < rows; ++r) c[r] = alpha * acc[r];
  } else {
    for (int r = 0; r < rows; ++r) c[r] = alpha * acc[r] + beta * c[r];
  }
}

// Tile u of a column-major m x n output cut into column strips of R rows.
template <int R, Trans TA, Trans TB, class T>
KNOT_HD void product_unit(int u, int m, int k, T alpha, const T* A, int lda, const T* B, int ldb,
                          T beta, T* C, int ldc) {
  const int tiles = (m + R - 1) / R;
  const int j = u / tiles, i0 = (u - j * tiles) * R;
  if (m - i0 >= R) {
    product_tile<R, TA, TB>(R, k, alpha, A, lda, B, ldb, beta, C, ldc, i0, j);
  } else {
    product_tile<R, TA, TB>(m - i0, k, alpha, A, lda, B, ldb, beta, C, ldc, i0, j);
  }
}

}  // namespace detail

template <Trans TA, Trans TB, int M = kDynamic, int N = kDynamic, int K = kDynamic, class G, class T>
KNOT_HD void gemm(G& g, int m_rt, int n_rt, int k_rt, T alpha, const T* A, int lda, const T* B, int ldb,
                  T beta, T* C, int ldc) {
  const int m = extent<M>(m_rt), n = extent<N>(n_rt), k = extent<K>(k_rt);
  constexpr int R = detail::tile_rows<G, M>();
  if (m > 0 && n > 0) {
    const int units = (m + R - 1) / R * n;
    for (int u = g.rank(); u < units; u += g.size())
      detail::product_unit<R, TA, TB>(u, m, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  g.sync();
}

}  // namespace knot::linalg
