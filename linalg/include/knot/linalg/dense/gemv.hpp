// --- Matrix-vector product  y = alpha op(A) x + beta y ---
//
// A: m x n, column-major, leading dimension lda. op(A) = A (Trans::No): x has n entries, y has m;
// op(A) = A' (Trans::Yes): x has m entries, y has n. x and y contiguous; y must not alias x or A.
// No scratch. Ends on a barrier (its only one).
//
// Each y_i is computed by one member exactly as gemm computes C(i,0) with B = x:
//   y_i = alpha (op(A)(i,0) x_0 + op(A)(i,1) x_1 + ...) + beta y_i     (left to right, from zero)
// so the result is bitwise the same for every group size. beta == 0 does not read y (it may hold
// NaN); alpha == 0 reads neither A nor x. An empty y does nothing; an empty x gives y = beta y.
//
// M, N fix m, n at compile time (the run-time values are then ignored).
#pragma once

#include "knot/linalg/dense/gemm.hpp"

namespace knot::linalg {

template <Trans TA, int M = kDynamic, int N = kDynamic, class G, class T>
KNOT_HD void gemv(G& g, int m_rt, int n_rt, T alpha, const T* A, int lda, const T* x, T beta, T* y) {
  constexpr int Rows = TA == Trans::No ? M : N;  // length of y
  const int m = extent<M>(m_rt), n = extent<N>(n_rt);
  const int ny = TA == Trans::No ? m : n, nx = TA == Trans::No ? n : m;
  constexpr int R = detail::tile_rows<G, Rows>();
  if (ny > 0) {
    const int units = (ny + R - 1) / R;
    for (int u = g.rank(); u < units; u += g.size())
      detail::product_unit<R, TA, Trans::No>(u, ny, nx, alpha, A, lda, x, nx, beta, y, ny);
  }
  g.sync();
}

}  // namespace knot::linalg
