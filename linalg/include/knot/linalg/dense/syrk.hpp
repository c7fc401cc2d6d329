// --- Symmetric rank-k update  C = alpha A A' + beta C  (No)  or  C = alpha A'A + beta C  (Yes) ---
//
// C: n x n, column-major, leading dimension ldc; only its UL triangle (diagonal included) is read
// and written, the other strict triangle is left untouched. A: n x k (Trans::No) or k x n
// (Trans::Yes), column-major, leading dimension lda. C must not alias A. No scratch. Ends on a
// barrier (its only one).
//
// With a = A (No) or A' (Yes), each element of the triangle is computed by one member as
//   C(i,j) = alpha (a(i,0) a(j,0) + a(i,1) a(j,1) + ...) + beta C(i,j)   (left to right, from zero)
// which is gemm's order, so syrk equals gemm(a, a') bitwise on the triangle, for every group size.
// beta == 0 does not read C; alpha == 0 does not read A. n <= 0 does nothing; k <= 0 gives C = beta C.
//
// N, K fix n, k at compile time (the run-time values are then ignored).
#pragma once

#include "knot/linalg/dense/gemm.hpp"

namespace knot::linalg {

template <Uplo UL, Trans TA, int N = kDynamic, int K = kDynamic, class G, class T>
KNOT_HD void syrk(G& g, int n_rt, int k_rt, T alpha, const T* A, int lda, T beta, T* C, int ldc) {
  constexpr Trans TB = TA == Trans::No ? Trans::Yes : Trans::No;  // op(B) = a'
  const int n = extent<N>(n_rt), k = extent<K>(k_rt);
  if (n > 0) {
    if constexpr (detail::kSerial<G>) {
      // Column strips of the triangle, R rows per tile.
      constexpr int R = detail::tile_rows<G, N>();
      for (int j = 0; j < n; ++j) {
        const int lo = UL == Uplo::Lower ? j : 0, hi = UL == Uplo::Lower ? n : j + 1;
        for (int i0 = lo; i0 < hi; i0 += R)
          detail::product_tile<R, TA, TB>(detail::min_int(R, hi - i0), k, alpha, A, lda, A, lda, beta, C,
                                          ldc, i0, j);
      }
    } else {
      // One element per member at a time, walking the triangle column by column.
      for (int e = g.rank(); e < n * (n + 1) / 2; e += g.size()) {
        int i, j;
        detail::lower_triangle_index(e, n, i, j);
        if constexpr (UL == Uplo::Upper) {
          const int t = i;
          i = j;
          j = t;
        }
        detail::product_tile<1, TA, TB>(1, k, alpha, A, lda, A, lda, beta, C, ldc, i, j);
      }
    }
  }
  g.sync();
}

}  // namespace knot::linalg
