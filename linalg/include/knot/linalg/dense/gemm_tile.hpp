// --- Register-blocked serial product  C = alpha A op(B) + beta C  (one CPU thread) ---
//
// C: M x N, A: M x K, op(B): K x N with B K x N (Trans::No) or N x K (Trans::Yes). All column-major,
// X(i,j) = X[i + j*ldx]; C must not alias A or B. No scratch, no group, no barrier: this is the
// serial kernel for the larger fixed-size products (a few dozen rows), where linalg's gemm, one output
// column per tile, leaves one FMA chain as long as K per entry.
//
// C is cut into tiles of 8 rows x 4 columns kept in registers as 4-lane vectors: step p loads two
// vectors of column p of A, broadcasts 4 entries of op(B) and issues 8 independent FMAs. Each entry
// is summed over p in order from zero, then C(i,j) = alpha acc + beta C(i,j); beta == 0 does not read
// C. The bits need not equal gemm's (the compiler may contract differently).
//
// Shape:
//   Full    every entry of C.
//   LowerC  only the tiles that hold part of C's lower triangle (M == N): entries i >= j are right,
//           entries above the diagonal inside those tiles are formed too, the others left untouched.
//   LowerB  op(B) lower triangular (K >= N): only op(B)(p,j) with p >= j is read (B's lower triangle
//           for Trans::No, its upper one for Trans::Yes), the rest counts as zero.
//
// MR (8 by default, or 12) is the tile's height: 12-row tiles hold 12 accumulators and load 3 vectors
// for 12 FMAs a step, against 2 for 8 (the square-root Riccati's Nm product, 3% of its solve at
// (21, 3) and (36, 12)); every entry is summed the same way at either height, so the bits are the same.
//
// gemm_tile_dynamic<TB, S>(m, n, k, ...) is the same product at run-time sizes, for blocks whose size
// is not compiled in: the same 8 x 4 tiles, the m % 8 rows and n % 4 columns left over served by tiles
// of those fixed sizes, chosen at run time (linalg's gemm at a run-time row count runs one scalar FMA
// chain per entry). m or n <= 0 does nothing, k <= 0 gives C = beta C; LowerC needs m == n and LowerB
// k >= n (not checked).
//
// The vector path needs the host compiler's vector extensions (GCC, Clang); nvcc and other compilers
// get a plain triple loop with the same contract.
#pragma once

#include <utility>

#include "knot/linalg/dense/types.hpp"

namespace knot::linalg {

enum class TileShape { Full, LowerC, LowerB };

#if !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__))
#define KNOT_GEMM_TILE_SIMD 1
#else
#define KNOT_GEMM_TILE_SIMD 0
#endif

namespace detail {

#if KNOT_GEMM_TILE_SIMD
// 4 doubles: AVX's width; on narrower targets the compiler splits each operation in two.
typedef double Tile4 __attribute__((vector_size(32)));
typedef double Tile2 __attribute__((vector_size(16)));

// v = rows r < Lanes of x (contiguous); the other lanes zero. Unaligned loads and stores go through
// memcpy, which the compiler turns into one vector move. (Vectors pass by reference: by value they
// would change the calling convention between AVX and non-AVX builds.) A short vector is assembled
// from whole loads in registers: set lane by lane, GCC may build it in a stack slot (a 16- or 8-byte
// store reloaded 32 bytes wide, which store forwarding cannot serve: it serialized gemm_tile_dynamic's
// 6-row tiles).
template <int Lanes>
inline void tile_load(Tile4& v, const double* x) {
  if constexpr (Lanes == 4) {
    __builtin_memcpy(&v, x, sizeof(v));
  } else if constexpr (Lanes == 1) {
    v = Tile4{x[0], 0.0, 0.0, 0.0};
  } else {
    Tile2 lo;
    __builtin_memcpy(&lo, x, sizeof(lo));
    const Tile2 hi = {Lanes == 3 ? x[2] : 0.0, 0.0};
    v = __builtin_shufflevector(lo, hi, 0, 1, 2, 3);
  }
}

// x = alpha v + beta x on rows r < Lanes (beta == 0: x not read).
template <int Lanes>
inline void tile_store(double* x, const Tile4& v, double alpha, double beta) {
  if constexpr (Lanes == 4) {
    Tile4 c;
    if (beta == 0.0) {
      c = alpha * v;
    } else {
      __builtin_memcpy(&c, x, sizeof(c));
      c = alpha * v + beta * c;
    }
    __builtin_memcpy(x, &c, sizeof(c));
  } else {
    KNOT_UNROLL for (int l = 0; l < Lanes; ++l) x[l] = beta == 0.0 ? alpha * v[l] : alpha * v[l] + beta * x[l];
  }
}

// acc[v][c] (+/-)= sum_{p0 <= p < p1} A(4v.., p) op(B)(p, c): the first Rows rows of A (its vectors
// 4v..4v+3), columns c < NC of op(B) (op(B)(p,c) = B[p + c*ldb] or B[c + p*ldb]). With TriB only
// op(B)(p,c) with p >= p0 + c is used for the first NC steps (a lower-triangular op(B) whose
// diagonal block starts at p0); p1 >= p0 + NC then.
template <int Rows, int NC, Trans TB, bool Sub = false, bool TriB = false>
inline void tile_accumulate(Tile4 (&acc)[(Rows + 3) / 4][NC], int p0, int p1, const double* KNOT_RESTRICT A,
                            int lda, const double* KNOT_RESTRICT B, int ldb) {
  constexpr int NV = (Rows + 3) / 4, Tail = Rows - 4 * (NV - 1);
  auto step = [&](int p, int cmax) __attribute__((always_inline)) {
    Tile4 a[NV];
    KNOT_UNROLL for (int v = 0; v < NV; ++v) {
      Tile4 t;
      if (v + 1 < NV) {
        tile_load<4>(t, A + 4 * v + p * lda);
      } else {
        tile_load<Tail>(t, A + 4 * v + p * lda);
      }
#if defined(__AVX__)
      // Pins the vector in a register: GCC would otherwise fold the load into each of the NC FMAs
      // that use it, and the loads, not the FMAs, would bound the loop. (On a local, not on the array
      // element: an asm operand in the array kept the array on the stack, a store and a reload a step.)
      __asm__("" : "+v"(t));
#endif
      a[v] = t;
    }
    KNOT_UNROLL for (int c = 0; c < NC; ++c) {
      if (c <= cmax) {
        const double b = TB == Trans::No ? B[p + c * ldb] : B[c + p * ldb];
        KNOT_UNROLL for (int v = 0; v < NV; ++v) {
          if constexpr (Sub) {
            acc[v][c] -= a[v] * b;
          } else {
            acc[v][c] += a[v] * b;
          }
        }
      }
    }
  };
  int p = p0;
  if constexpr (TriB) {
    KNOT_UNROLL for (int q = 0; q < NC; ++q) step(p0 + q, q);
    p = p0 + NC;
  }
  for (; p < p1; ++p) step(p, NC);
}

// One tile: rows i0 .. i0+Rows-1, columns j0 .. j0+NC-1 of C.
template <int Rows, int NC, Trans TB, TileShape S>
inline void gemm_tile_block(int i0, int j0, int k, double alpha, const double* A, int lda, const double* B, int ldb,
                            double beta, double* C, int ldc) {
  constexpr int NV = (Rows + 3) / 4, Tail = Rows - 4 * (NV - 1);
  Tile4 acc[NV][NC] = {};
  const double* b = TB == Trans::No ? B + j0 * ldb : B + j0;  // op(B)(p, j0 + c)
  if constexpr (S == TileShape::LowerB) {
    tile_accumulate<Rows, NC, TB, false, true>(acc, j0, k, A + i0, lda, b, ldb);
  } else {
    tile_accumulate<Rows, NC, TB>(acc, 0, k, A + i0, lda, b, ldb);
  }
  KNOT_UNROLL for (int c = 0; c < NC; ++c) {
    double* col = C + i0 + (j0 + c) * ldc;
    KNOT_UNROLL for (int v = 0; v < NV; ++v) {
      if (v + 1 < NV) {
        tile_store<4>(col + 4 * v, acc[v][c], alpha, beta);
      } else {
        tile_store<Tail>(col + 4 * v, acc[v][c], alpha, beta);
      }
    }
  }
}

// Columns j0 .. j0+NC-1: MR-row tiles down, then the M % MR rows left.
template <int M, int NC, Trans TB, TileShape S, int MR = 8>
inline void gemm_tile_columns(int j0, int k, double alpha, const double* A, int lda, const double* B, int ldb,
                              double beta, double* C, int ldc) {
  constexpr int Full = M / MR * MR;
  int i0 = S == TileShape::LowerC ? j0 / MR * MR : 0;
  for (; i0 < Full; i0 += MR) gemm_tile_block<MR, NC, TB, S>(i0, j0, k, alpha, A, lda, B, ldb, beta, C, ldc);
  if constexpr (M % MR != 0) gemm_tile_block<M % MR, NC, TB, S>(Full, j0, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

// fn.template operator()<R>() for the R in 1..Max that equals r; nothing for any other r.
template <int Max, class Fn>
inline void with_fixed(int r, Fn&& fn) {
  [&]<int... Is>(std::integer_sequence<int, Is...>) {
    (void)((r == Is + 1 ? (fn.template operator()<Is + 1>(), true) : false) || ...);
  }(std::make_integer_sequence<int, Max>{});
}

// gemm_tile_columns at a run-time row count m: the last m % MR rows by the tile of that height.
// Flattened: GCC would otherwise leave some tiles' tile_accumulate as a call, with the accumulators
// in memory (a third of the time at m = 22).
template <int NC, Trans TB, TileShape S, int MR = 8>
__attribute__((flatten)) inline void gemm_tile_columns_dynamic(int m, int j0, int k, double alpha, const double* A, int lda, const double* B,
                                      int ldb, double beta, double* C, int ldc) {
  const int full = m / MR * MR;
  int i0 = S == TileShape::LowerC ? j0 / MR * MR : 0;
  for (; i0 < full; i0 += MR) gemm_tile_block<MR, NC, TB, S>(i0, j0, k, alpha, A, lda, B, ldb, beta, C, ldc);
  with_fixed<MR - 1>(m - full, [&]<int Rows>() {
    gemm_tile_block<Rows, NC, TB, S>(full, j0, k, alpha, A, lda, B, ldb, beta, C, ldc);
  });
}
#endif

// The same contract without vectors: one entry at a time, summed over p in order (the path of nvcc and
// other compilers; defined everywhere so that the host tests reach it).
template <Trans TB, TileShape S>
inline void gemm_tile_loop(int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb,
                           double beta, double* C, int ldc) {
  for (int j = 0; j < n; ++j) {
    const int i0 = S == TileShape::LowerC ? j / 8 * 8 : 0;
    for (int i = i0; i < m; ++i) {
      double acc = 0.0;
      for (int p = S == TileShape::LowerB ? j : 0; p < k; ++p)
        acc += A[i + p * lda] * (TB == Trans::No ? B[p + j * ldb] : B[j + p * ldb]);
      C[i + j * ldc] = beta == 0.0 ? alpha * acc : alpha * acc + beta * C[i + j * ldc];
    }
  }
}

}  // namespace detail

template <Trans TB, int M, int N, int K, TileShape S = TileShape::Full, int MR = 8>
inline void gemm_tile(double alpha, const double* A, int lda, const double* B, int ldb, double beta, double* C,
                      int ldc) {
  static_assert(M >= 1 && N >= 1 && K >= 0, "gemm_tile: fixed sizes only");
  static_assert(S != TileShape::LowerC || M == N, "gemm_tile: LowerC needs a square C");
  static_assert(S != TileShape::LowerB || K >= N, "gemm_tile: LowerB needs K >= N");
#if KNOT_GEMM_TILE_SIMD
  constexpr int NR = 4, Full = N / NR * NR;
  for (int j0 = 0; j0 < Full; j0 += NR)
    detail::gemm_tile_columns<M, NR, TB, S, MR>(j0, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if constexpr (N % NR != 0)
    detail::gemm_tile_columns<M, N % NR, TB, S, MR>(Full, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
  detail::gemm_tile_loop<TB, S>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

template <Trans TB, TileShape S = TileShape::Full, int MR = 8>
inline void gemm_tile_dynamic(int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb,
                              double beta, double* C, int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k < 0) k = 0;
#if KNOT_GEMM_TILE_SIMD
  constexpr int NR = 4;
  const int full = n / NR * NR;
  for (int j0 = 0; j0 < full; j0 += NR)
    detail::gemm_tile_columns_dynamic<NR, TB, S, MR>(m, j0, k, alpha, A, lda, B, ldb, beta, C, ldc);
  detail::with_fixed<NR - 1>(n - full, [&]<int NC>() {
    detail::gemm_tile_columns_dynamic<NC, TB, S, MR>(m, full, k, alpha, A, lda, B, ldb, beta, C, ldc);
  });
#else
  detail::gemm_tile_loop<TB, S>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

}  // namespace knot::linalg
