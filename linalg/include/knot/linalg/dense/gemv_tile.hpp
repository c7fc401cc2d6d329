// --- Serial matrix-vector products on 4-lane vectors (one CPU thread, fixed sizes) ---
//
//   gemv_tile_t<M, N, Tri>(A, lda, x, beta, y):       y = A'x + beta y     (beta 0 or 1; 0: y not read)
//   gemv_tile_n<M, N, Tri, Sub>(A, lda, x, y):        y += A x  (y -= A x with Sub)
//
// A: M x N, column-major, A(i,j) = A[i + j*lda]; x, y must not alias A or each other. Tri: A is lower
// triangular and only its lower triangle is read (rows i >= j of column j, rounded down to a vector
// boundary: entries above the diagonal inside that vector must be zero, as in a factor stored with a
// zero strict upper triangle).
//
// These are the vector sweeps of the Riccati recursions and the LQ residuals. linalg's gemv keeps one
// FMA chain per output entry for the transposed product (one dot product of length M each); here A's
// columns are read as 4-row vectors: gemv_tile_t sums four columns at once in four accumulators and
// reduces their lanes at the end; gemv_tile_n keeps y in registers and adds x_j A(:,j) column by
// column. Rows past the last multiple of 4 are loaded lane by lane, never past the column's end. The
// order of the sums differs from gemv's: results agree to rounding, not bit for bit.
//
// Without the host compiler's vector extensions (nvcc, other compilers) a plain loop with the same
// contract.
#pragma once

#include "knot/linalg/dense/gemm_tile.hpp"
#include "knot/linalg/dense/types.hpp"

namespace knot::linalg {

namespace detail {
#if KNOT_GEMM_TILE_SIMD
inline void tile_store_all(double* x, const Tile4& v) { __builtin_memcpy(x, &v, sizeof(v)); }

// Rows 4v .. 4v+3 of column `col` (the tail vector: only the rows < M, the other lanes zero).
template <int M>
inline void column_vector(Tile4& a, const double* col, int v) {
  constexpr int NV = (M + 3) / 4, Tail = M - 4 * (NV - 1);
  if (v + 1 < NV) {
    tile_load<4>(a, col + 4 * v);
  } else {
    tile_load<Tail>(a, col + 4 * v);
  }
}

// The sums of the lanes of a, b, c, d as one vector.
inline void lane_sums(Tile4& out, const Tile4& a, const Tile4& b, const Tile4& c, const Tile4& d) {
  const Tile4 ab = __builtin_shufflevector(a, b, 0, 4, 2, 6) + __builtin_shufflevector(a, b, 1, 5, 3, 7);
  const Tile4 cd = __builtin_shufflevector(c, d, 0, 4, 2, 6) + __builtin_shufflevector(c, d, 1, 5, 3, 7);
  out = __builtin_shufflevector(ab, cd, 0, 1, 4, 5) + __builtin_shufflevector(ab, cd, 2, 3, 6, 7);
}
#endif
}  // namespace detail

template <int M, int N, bool Tri = false>
inline void gemv_tile_t(const double* KNOT_RESTRICT A, int lda, const double* KNOT_RESTRICT x, double beta,
                        double* KNOT_RESTRICT y) {
  static_assert(M >= 1 && N >= 1, "gemv_tile_t: fixed sizes only");
  static_assert(!Tri || M >= N, "gemv_tile_t: a triangular A needs M >= N");
#if KNOT_GEMM_TILE_SIMD
  using detail::Tile4;
  constexpr int NV = (M + 3) / 4;
  Tile4 xv[NV];
  KNOT_UNROLL for (int v = 0; v < NV; ++v) detail::column_vector<M>(xv[v], x, v);
  KNOT_UNROLL for (int j0 = 0; j0 < N; j0 += 4) {
    Tile4 acc[4] = {};
    KNOT_UNROLL for (int c = 0; c < 4; ++c) {
      if (j0 + c < N) {
        KNOT_UNROLL for (int v = 0; v < NV; ++v) {
          if (!Tri || v >= (j0 + c) / 4) {
            Tile4 a;
            detail::column_vector<M>(a, A + (j0 + c) * lda, v);
            acc[c] += a * xv[v];
          }
        }
      }
    }
    Tile4 s;
    detail::lane_sums(s, acc[0], acc[1], acc[2], acc[3]);
    KNOT_UNROLL for (int c = 0; c < 4; ++c) {
      if (j0 + c < N) y[j0 + c] = beta == 0.0 ? s[c] : y[j0 + c] + s[c];
    }
  }
#else
  for (int j = 0; j < N; ++j) {
    double acc = 0.0;
    for (int i = Tri ? j / 4 * 4 : 0; i < M; ++i) acc += A[i + j * lda] * x[i];
    y[j] = beta == 0.0 ? acc : y[j] + acc;
  }
#endif
}

template <int M, int N, bool Tri = false, bool Sub = false>
inline void gemv_tile_n(const double* KNOT_RESTRICT A, int lda, const double* KNOT_RESTRICT x,
                        double* KNOT_RESTRICT y) {
  static_assert(M >= 1 && N >= 1, "gemv_tile_n: fixed sizes only");
  static_assert(!Tri || M >= N, "gemv_tile_n: a triangular A needs M >= N");
#if KNOT_GEMM_TILE_SIMD
  using detail::Tile4;
  constexpr int NV = (M + 3) / 4, Tail = M - 4 * (NV - 1);
  Tile4 acc[NV];
  KNOT_UNROLL for (int v = 0; v < NV; ++v) detail::column_vector<M>(acc[v], y, v);
  KNOT_UNROLL for (int j = 0; j < N; ++j) {
    const double xj = x[j];
    KNOT_UNROLL for (int v = 0; v < NV; ++v) {
      if (!Tri || v >= j / 4) {
        Tile4 a;
        detail::column_vector<M>(a, A + j * lda, v);
        if constexpr (Sub) {
          acc[v] -= a * xj;
        } else {
          acc[v] += a * xj;
        }
      }
    }
  }
  KNOT_UNROLL for (int v = 0; v < NV; ++v) {
    if (v + 1 < NV || Tail == 4) {
      detail::tile_store_all(y + 4 * v, acc[v]);
    } else {
      KNOT_UNROLL for (int l = 0; l < Tail; ++l) y[4 * v + l] = acc[v][l];
    }
  }
#else
  for (int j = 0; j < N; ++j)
    for (int i = Tri ? j / 4 * 4 : 0; i < M; ++i) y[i] = Sub ? y[i] - A[i + j * lda] * x[j] : y[i] + A[i + j * lda] * x[j];
#endif
}

}  // namespace knot::linalg
