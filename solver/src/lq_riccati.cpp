// Riccati backend: backward recursion on the cost-to-go V_k(x) = 1/2 x'P_k x + p_k'x, forward rollout.
//
// Classical recursion (every size), from P_N = Q_N, p_N = q_N (P = P_{k+1}, p = p_{k+1}):
//   T   = A'P (A' copied once so that the product runs down columns),   W = P B
//   Hxx = Q + T A,   Hxu = S' + T B,   Huu = R + B'W
//   pc  = P c + p,   hx = q + A' pc,   hu = r + B' pc
//   Huu = L L'                                  (Cholesky; a failing pivot is NotPositiveDefinite)
//   Y   = Hxu L^-T,  kt = L^-1 hu
//   P_k = Hxx - Y Y',   p_k = hx - Y kt      (the lower triangle by gemm, then mirrored: P_k is exactly
//                                             symmetric)
// At a state size outside RiccatiNx every product of this recursion runs on run-time-size vector
// kernels (gemm_tile_dynamic and the helpers under "Run-time state sizes").
// Square-root recursion (the fixed sizes of kSqrt; tried first), on the Cholesky factor
// P_{k+1} = Lp Lp' (Lp_N = chol(Q_N)):
//   Nm = [B A]' Lp                              (triangular product; Nm Nm' = [B'PB B'PA; A'PB A'PA])
//   [R S; S' Q] + Nm Nm' = [L 0; Y Lk] [L 0; Y Lk]'   (one Cholesky of order nu + nx, Nm Nm' summed
//                                                      inside it and never stored)
// so L L' = Huu, Y = Hxu L^-T and Lk Lk' = Hxx - Y Y' = P_k, the factor the next stage needs: about
// 2/3 of the classical arithmetic, with no A'PA double product. The vectors are the classical ones
// with P c = Lp (Lp' c). It needs every P_k positive definite: at the first pivot that is not (a
// positive semidefinite cost, e.g. zero state weights or a terminal cost only), or a Huu that is not,
// the solve restarts with the classical recursion, which needs only Huu positive definite and reports
// the failing stage. The products run on gemm_tile's register-blocked 8 x 4 tiles; nu and nx are
// padded to multiples of 4 with decoupled unit pivots (SqrtLayout), which leaves the results exact.
//
// At run-time sizes (nx outside RiccatiNx, or nu > 8) the same square-root recursion runs on the
// run-time-size kernels (sqrt_backward_rt) where sqrt_runtime says it is faster, else the classical.
//
// Forward, from x_0 = x_init:
//   u_k = -L^-T (Y' x_k + kt),   x_{k+1} = A x_k + B u_k + c,   lambda_k = P_k x_k + p_k
// (P_k x_k = Lk (Lk' x_k) on the square-root path.) u_k minimizes the stage cost plus
// V_{k+1}(A x_k + B u + c): its gradient R u + S x + r + B'(P (A x + B u + c) + p) = Huu u + Hxu' x + hu
// vanishes. lambda_k = grad V_k(x_k) is the costate; solve_primal() skips its sweep. resolve() (new
// vectors, same matrices) reruns only the vector half of whichever recursion the last solve used.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "knot/linalg/dense/gemm.hpp"
#include "knot/linalg/dense/gemm_tile.hpp"
#include "knot/linalg/dense/gemv_tile.hpp"
#include "knot/linalg/dense/gemv.hpp"
#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/dense/syrk.hpp"
#include "knot/linalg/dense/trsm.hpp"
#include "knot/linalg/dense/trsv.hpp"
#include "lq_internal.hpp"

namespace knot::solver::detail {
namespace {

using linalg::Side;
using linalg::Trans;
using linalg::Uplo;

struct RiccatiWork {
  double* P;    // N+1 blocks nx x nx (full symmetric)
  double* p;    // N+1 vectors nx
  double* L;    // N blocks nu x nu (Cholesky factor of Huu, lower)
  double* Y;    // N blocks nx x nu
  double* kt;   // N vectors nu
  double* At;   // nx x nx scratch
  double* T;    // nx x nx scratch
  double* W;    // nx x nu scratch
  double* pc;   // nx scratch
  // Square-root path (kSqrt sizes only, in the space of P, L, Y, At, T, W; see SqrtLayout: nu4, nx4, ld):
  double* F;    // N+1 blocks ld x ld: stage k < N the factor [L 0 0; 0 I 0; Y 0 Lk], stage N Lk = chol(Q_N)
  double* Xt;   // ld x nx4 scratch: [B'; 0; A'] (zero rows and columns where nx, nu round up); one
                // per stage, xt_stride apart, with LqOptions::reuse_dynamics
  std::size_t xt_stride;  // 0: one Xt serves every stage
  bool xt_reuse;          // this solve's Xt blocks already hold its [B' A'] (dynamics_unchanged)
  double* Nm;   // ld x nx scratch: Xt Lp_{k+1}
  double* h;    // ld scratch: [hu; 0; hx]
  double* t;    // nx scratch
  double* Q4;   // nx4 x nx4 scratch [Q_k 0; 0 I] (nx4 > nx only)
};

// C = alpha A op(B) + beta C (A not transposed). Blocks of more than 16 rows are cut into equal row
// panels of at most 16: linalg's serial tile then holds a whole panel column in registers (1.5x at
// nx = 28). Lower: only the panels' columns that reach the lower triangle are formed (C symmetric,
// mirrored afterwards), which skips a quarter of the product at two panels. A run-time row count
// (a state size outside RiccatiNx) goes to gemm_tile's 8 x 4 register tiles instead (Lower: only the
// tiles that reach the lower triangle); linalg's gemm would run it as scalar FMA chains.
template <Trans TB, int M, int N, int K, bool Lower = false>
void gemm_rows(int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb, double beta,
               double* C, int ldc) {
  Serial g;
#if KNOT_GEMM_TILE_SIMD
  if constexpr (M == kDynamic) {
    constexpr auto shape = Lower ? linalg::TileShape::LowerC : linalg::TileShape::Full;
    linalg::gemm_tile_dynamic<TB, shape>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
#endif
  if constexpr (M != kDynamic && M > 16) {
    constexpr int P = (M + 15) / 16, H = (M + P - 1) / P;
    [&]<int... Is>(std::integer_sequence<int, Is...>) {
      (linalg::gemm<Trans::No, TB, (Is + 1 < P ? H : M - (P - 1) * H), (Lower ? std::min((Is + 1) * H, M) : N), K>(
           g, Is + 1 < P ? H : M - (P - 1) * H, Lower ? std::min((Is + 1) * H, n) : n, k, alpha, A + Is * H, lda, B, ldb,
           beta, C + Is * H, ldc),
       ...);
    }(std::make_integer_sequence<int, P>{});
  } else {
    linalg::gemm<Trans::No, TB, M, N, K>(g, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

// ---- Run-time state sizes
//
// At a state size outside RiccatiNx (NX == kDynamic) transpose_block, mirror_lower and linalg's gemm
// and trsm loop over a run-time row count one scalar at a time (the solver is built without GCC's
// loop vectorizer). The helpers below run those steps on gemm_tile's 4-lane vectors instead, as
// lq_internal's mv_n / mv_t do for the matrix-vector products; with NX fixed they call the usual
// kernels.

#if KNOT_GEMM_TILE_SIMD
using linalg::detail::Tile4;
using linalg::detail::tile_accumulate;
using linalg::detail::tile_load;
using linalg::detail::tile_store_all;

// out(:, q) = row q of the 4 x 4 block r (r[c] its column c): columns q = 0..3 of out, 4 rows each.
inline void transpose4(const Tile4 (&r)[4], double* out, int ldo) {
  const Tile4 t0 = __builtin_shufflevector(r[0], r[1], 0, 4, 2, 6),
              t1 = __builtin_shufflevector(r[0], r[1], 1, 5, 3, 7),
              t2 = __builtin_shufflevector(r[2], r[3], 0, 4, 2, 6),
              t3 = __builtin_shufflevector(r[2], r[3], 1, 5, 3, 7);
  tile_store_all(out, __builtin_shufflevector(t0, t2, 0, 1, 4, 5));
  tile_store_all(out + ldo, __builtin_shufflevector(t1, t3, 0, 1, 4, 5));
  tile_store_all(out + 2 * ldo, __builtin_shufflevector(t0, t2, 2, 3, 6, 7));
  tile_store_all(out + 3 * ldo, __builtin_shufflevector(t1, t3, 2, 3, 6, 7));
}

// dst (n x m) = src' (src m x n): 4 x 4 blocks in registers, the rows and columns past the last
// multiple of 4 one entry at a time.
inline void transpose_dynamic(int m, int n, const double* src, int lds, double* dst, int ldd) {
  const int m4 = m / 4 * 4, n4 = n / 4 * 4;
  for (int j = 0; j < n4; j += 4)
    for (int i = 0; i < m4; i += 4) {
      Tile4 r[4];
      KNOT_UNROLL for (int c = 0; c < 4; ++c) tile_load<4>(r[c], src + i + (j + c) * lds);
      transpose4(r, dst + j + i * ldd, ldd);
    }
  for (int j = 0; j < n; ++j)
    for (int i = m4; i < m; ++i) dst[j + i * ldd] = src[i + j * lds];
  for (int j = n4; j < n; ++j)
    for (int i = 0; i < m4; ++i) dst[j + i * ldd] = src[i + j * lds];
}

// Upper triangle of a (n x n) <- its lower triangle: by 4-column panels, the panel below each 4 x 4
// diagonal block transposed into the row panel right of it, the diagonal blocks entry by entry.
inline void mirror_dynamic(int n, double* a, int lda) {
  for (int j0 = 0; j0 < n; j0 += 4) {
    const int w = std::min(4, n - j0);
    for (int j = j0 + 1; j < j0 + w; ++j)
      for (int i = j0; i < j; ++i) a[i + j * lda] = a[j + i * lda];
    if (w == 4) transpose_dynamic(n - j0 - 4, 4, a + (j0 + 4) + j0 * lda, lda, a + j0 + (j0 + 4) * lda, lda);
  }
}
#endif

// dst (n x m) = src' (src m x n) and a's upper triangle <- its lower one (a n x n): transpose_block and
// mirror_lower, at a run-time state size by 4 x 4 blocks in registers.
template <int NX, int M, int N>
void transpose_rows(int m, int n, const double* src, int lds, double* dst, int ldd) {
#if KNOT_GEMM_TILE_SIMD
  if constexpr (NX == kDynamic) {
    transpose_dynamic(m, n, src, lds, dst, ldd);
    return;
  }
#endif
  transpose_block<M, N>(m, n, src, lds, dst, ldd);
}

template <int NX>
void mirror_rows(int n, double* a, int lda) {
#if KNOT_GEMM_TILE_SIMD
  if constexpr (NX == kDynamic) {
    mirror_dynamic(n, a, lda);
    return;
  }
#endif
  mirror_lower<NX>(n, a, lda);
}

// L += B'W (L nu x nu, B and W nx x nu): at a run-time nx, column j as B' W(:, j) by dot products.
template <int NX, int NU>
void add_bt_w(int nx, int nu, const double* B, const double* W, double* L) {
#if KNOT_GEMM_TILE_SIMD
  if constexpr (NX == kDynamic) {
    for (int j = 0; j < nu; ++j) gemv_t_dynamic(nx, nu, B, nx, W + j * nx, 1.0, L + j * nu);
    return;
  }
#endif
  Serial g;
  linalg::gemm<Trans::Yes, Trans::No, NU, NU, NX>(g, nu, nu, nx, 1.0, B, nx, W, nx, 1.0, L, nu);
}

// Y <- Y L^-T (Y nx x nu, L lower triangular nu x nu). At a run-time nx left-looking, column j as
// (Y(:, j) - Y(:, 0..j-1) L(j, 0..j-1)') / L(j, j): one column product each.
template <int NX, int NU>
void solve_y(int nx, int nu, const double* L, double* Y) {
#if KNOT_GEMM_TILE_SIMD
  if constexpr (NX == kDynamic) {
    for (int j = 0; j < nu; ++j) {
      const double inv = 1.0 / L[j + j * nu];
      column_product<Trans::Yes>(nx, j, -inv, Y, nx, L + j, nu, inv, Y + j * nx);
    }
    return;
  }
#endif
  Serial g;
  linalg::trsm<Side::Right, Uplo::Lower, Trans::Yes, NX, NU>(g, nx, nu, 1.0, L, nu, Y, nx);
}

// Backward recursion; returns -1 on success, else the failing stage.
template <int NX, int NU>
int riccati_backward(int nx_rt, int nu_rt, int N, const LqData& d, const RiccatiWork& w) {
  const int nx = linalg::extent<NX>(nx_rt), nu = linalg::extent<NU>(nu_rt);
  Serial g;
  const std::size_t sxx = static_cast<std::size_t>(nx) * nx, sxu = static_cast<std::size_t>(nx) * nu;
  std::memcpy(w.P + N * sxx, d.Q_k(N), sxx * sizeof(double));
  std::memcpy(w.p + static_cast<std::size_t>(N) * nx, d.q_k(N), nx * sizeof(double));
  for (int k = N - 1; k >= 0; --k) {
    const double* A = d.A_k(k);
    const double* B = d.B_k(k);
    const double* P = w.P + (k + 1) * sxx;
    const double* p = w.p + static_cast<std::size_t>(k + 1) * nx;
    double* Pk = w.P + k * sxx;
    double* pk = w.p + static_cast<std::size_t>(k) * nx;
    double* L = w.L + static_cast<std::size_t>(k) * nu * nu;
    double* Y = w.Y + k * sxu;
    double* kt = w.kt + static_cast<std::size_t>(k) * nu;

    transpose_rows<NX, NX, NX>(nx, nx, A, nx, w.At, nx);
    gemm_rows<Trans::No, NX, NX, NX>(nx, nx, nx, 1.0, w.At, nx, P, nx, 0.0, w.T, nx);
    gemm_rows<Trans::No, NX, NU, NX>(nx, nu, nx, 1.0, P, nx, B, nx, 0.0, w.W, nx);
    std::memcpy(Pk, d.Q_k(k), sxx * sizeof(double));
    gemm_rows<Trans::No, NX, NX, NX, true>(nx, nx, nx, 1.0, w.T, nx, A, nx, 1.0, Pk, nx);
    transpose_rows<NX, NU, NX>(nu, nx, d.S_k(k), nu, Y, nx);
    gemm_rows<Trans::No, NX, NU, NX>(nx, nu, nx, 1.0, w.T, nx, B, nx, 1.0, Y, nx);
    std::memcpy(L, d.R_k(k), static_cast<std::size_t>(nu) * nu * sizeof(double));
    add_bt_w<NX, NU>(nx, nu, B, w.W, L);

    std::memcpy(w.pc, p, nx * sizeof(double));
    mv_n<NX, NX>(nx, nx, P, nx, d.c_k(k), w.pc);
    std::memcpy(pk, d.q_k(k), nx * sizeof(double));
    mv_n<NX, NX>(nx, nx, w.At, nx, w.pc, pk);
    std::memcpy(kt, d.r_k(k), nu * sizeof(double));
    mv_t<NX, NU>(nx, nu, B, nx, w.pc, 1.0, kt);

    if (linalg::potrf<NU>(g, nu, L, nu) != 0) return k;
    solve_y<NX, NU>(nx, nu, L, Y);
    gemm_rows<Trans::Yes, NX, NX, NU, true>(nx, nx, nu, -1.0, Y, nx, Y, nx, 1.0, Pk, nx);
    mirror_rows<NX>(nx, Pk, nx);
    linalg::trsv<Uplo::Lower, Trans::No, NU>(g, nu, L, nu, kt);
    mv_n<NX, NU, true>(nx, nu, Y, nx, kt, pk);
  }
  return -1;
}

// The vector half of the backward recursion, with P_{k+1}, L_k, Y_k of the last riccati_backward
// (the matrices are unchanged; only c, q, r differ).
template <int NX, int NU>
void riccati_backward_vectors(int nx_rt, int nu_rt, int N, const LqData& d, const RiccatiWork& w) {
  const int nx = linalg::extent<NX>(nx_rt), nu = linalg::extent<NU>(nu_rt);
  Serial g;
  const std::size_t sxx = static_cast<std::size_t>(nx) * nx, sxu = static_cast<std::size_t>(nx) * nu;
  std::memcpy(w.p + static_cast<std::size_t>(N) * nx, d.q_k(N), nx * sizeof(double));
  for (int k = N - 1; k >= 0; --k) {
    const double* p = w.p + static_cast<std::size_t>(k + 1) * nx;
    double* pk = w.p + static_cast<std::size_t>(k) * nx;
    double* kt = w.kt + static_cast<std::size_t>(k) * nu;
    std::memcpy(w.pc, p, nx * sizeof(double));
    mv_n<NX, NX>(nx, nx, w.P + (k + 1) * sxx, nx, d.c_k(k), w.pc);
    std::memcpy(pk, d.q_k(k), nx * sizeof(double));
    mv_t<NX, NX>(nx, nx, d.A_k(k), nx, w.pc, 1.0, pk);
    std::memcpy(kt, d.r_k(k), nu * sizeof(double));
    mv_t<NX, NU>(nx, nu, d.B_k(k), nx, w.pc, 1.0, kt);
    linalg::trsv<Uplo::Lower, Trans::No, NU>(g, nu, w.L + static_cast<std::size_t>(k) * nu * nu, nu, kt);
    mv_n<NX, NU, true>(nx, nu, w.Y + k * sxu, nx, kt, pk);
  }
}

template <int NX, int NU>
void riccati_forward(int nx_rt, int nu_rt, int N, const LqData& d, const RiccatiWork& w, LqSolution& s,
                     bool costate) {
  const int nx = linalg::extent<NX>(nx_rt), nu = linalg::extent<NU>(nu_rt);
  Serial g;
  const std::size_t sxx = static_cast<std::size_t>(nx) * nx, sxu = static_cast<std::size_t>(nx) * nu;
  std::memcpy(s.x_k(0), d.x_init.data(), nx * sizeof(double));
  for (int k = 0; k < N; ++k) {
    const double* x = s.x_k(k);
    double* u = s.u_k(k);
    double* xn = s.x_k(k + 1);
    const double* L = w.L + static_cast<std::size_t>(k) * nu * nu;
    std::memcpy(u, w.kt + static_cast<std::size_t>(k) * nu, nu * sizeof(double));
    mv_t<NX, NU>(nx, nu, w.Y + k * sxu, nx, x, 1.0, u);
    linalg::trsv<Uplo::Lower, Trans::Yes, NU>(g, nu, L, nu, u);
    for (int i = 0; i < nu; ++i) u[i] = -u[i];
    std::memcpy(xn, d.c_k(k), nx * sizeof(double));
    mv_n<NX, NX>(nx, nx, d.A_k(k), nx, x, xn);
    mv_n<NX, NU>(nx, nu, d.B_k(k), nx, u, xn);
  }
  if (!costate) return;
  for (int k = 0; k <= N; ++k) {
    double* lam = s.lambda_k(k);
    std::memcpy(lam, w.p + static_cast<std::size_t>(k) * nx, nx * sizeof(double));
    mv_n<NX, NX>(nx, nx, w.P + k * sxx, nx, s.x_k(k), lam);
  }
}

// ---- Square-root path ----

constexpr int round4(int n) { return (n + 3) / 4 * 4; }

// Sizes that run the square-root recursion first (fixed ones). Its cost follows the padded order
// round4(nu) + round4(nx), the classical one's grows with nu and nx themselves, so it pays from some nu
// on at each nx, soonest where nu needs no padding (nu = 4). Backward + forward at N = 50, medians of
// 5-7 repetitions in us, classical / square root, both recursions side by side in one run (/tmp driver):
//   nx >= 15, every nu:     (15, 1) 42.6 / 39.9   (15, 4) 54.9 / 41.3   (16, 1) 57.5 / 38.3
//   nx 11..14 from nu 3:    (11, 3) 28.1 / 25.9   (13, 3) 39.8 / 36.1   (14, 3) 39.6 / 38.2
//                           (14, 5) 49.4 / 49.3 is a tie; (12, 2) 23.4 / 24.0, (14, 2) 34.8 / 37.6
//   nx 7..10 at nu 4, 7, 8: (8, 4) 17.6 / 15.3   (10, 4) 23.8 / 22.6   (7, 7) 25.6 / 23.2
//                           (10, 7) 36.3 / 32.1; (10, 3) 20.0 / 22.3, (7, 5) 18.8 / 22.2, (8, 2) 11.3 / 14.0
//   (14, 7, 64): 78.2 / 66.2. Below nx = 7 mostly slower ((5, 8) 18.4 / 19.4); (4, 8) and (6, 8),
//   about 10% faster, are left out.
template <int NX, int NU>
inline constexpr bool kSqrt = NX != kDynamic && NU != kDynamic &&
                              (NX >= 15 || (NX >= 11 && NU >= 3) || (NX >= 8 && NU == 4) || (NX >= 7 && NU >= 7));

// Run-time sizes (a state size outside RiccatiNx, or nu > 8) that run the run-time-size square-root
// recursion first (sqrt_backward_rt, whose factor has the order round4(nx + nu): w = the padding, 0..3).
// Both recursions at run time, N = 50, square root / classical (medians of 3 interleaved runs of 201 x
// 10 solves, one core; /tmp driver, 2026-12-04, AMD EPYC Zen 5):
//   nu >= 9 from nx = 3:  (3, 9) 0.94  (4, 9) 1.01  (5, 10) 0.79  (13, 10) 0.63  (16, 12) 0.54;
//                         (1, 9) 1.33, (2, 9) 1.12, (2, 11) 1.01 left out
//   nx 17..23 (nu <= 8):  no padding: (17, 3) 0.98  (19, 1) 0.98  (21, 3) 0.95  (21, 7) 0.89
//                         (22, 2) 0.97  (23, 5) 0.93; (18, 2) 1.02 is the one loss
//                         w <= 2 from nu = 5, and nu = 8: (17, 6) 0.92  (18, 5) 0.95  (19, 7) 0.97
//                         (17, 8) 0.99  (21, 8) 0.96; (17, 5) 1.00, (21, 5) 1.00 ties
//                         left out: (17, 1) 1.11  (18, 3) 1.14  (19, 2) 1.12  (21, 4) 1.05
//                         (22, 3) 1.13  (23, 3) 1.08  (19, 4) 0.98  (23, 4) 1.00
//   nx 25..31:            all but w = 3 with nu <= 3: (25, 3) 0.87  (27, 1) 0.89  (29, 3) 0.87
//                         (30, 7) 0.98  (31, 8) 0.90; left out (26, 3) 1.01  (30, 3) 1.05  (31, 2) 1.02
//                         (27, 2) 1.00
//   nx >= 32, every nu:   (33, 1) 0.99  (36, 1) 0.90  (40, 3) 0.92  (48, 2) 0.90 (measured on the layout
//                         that padded nx and nu apart, whose order is never smaller)
inline bool sqrt_runtime(int nx, int nu) {
  const int w = round4(nx + nu) - nx - nu;
  if (nu >= 9) return nx >= 3;
  if (nx >= 32) return true;
  if (nx >= 25) return !(w == 3 && nu <= 3);
  return w == 0 || (w <= 2 && nu >= 5) || nu == 8;
}

#if KNOT_GEMM_TILE_SIMD
// dst = src' for src Rows x Cols (column-major): 4 x 4 blocks transposed in registers; the rows and
// columns that round Rows and Cols up to multiples of 4 are written into dst as zeros.
template <int Rows, int Cols>
void transpose_tiles(const double* src, int lds, double* dst, int ldd) {
  constexpr int RB = (Rows + 3) / 4, CB = (Cols + 3) / 4;
  KNOT_UNROLL for (int bi = 0; bi < RB; ++bi) {
    KNOT_UNROLL for (int bj = 0; bj < CB; ++bj) {
      Tile4 r[4];
      KNOT_UNROLL for (int c = 0; c < 4; ++c) {
        const double* col = src + 4 * bi + (4 * bj + c) * lds;
        if (4 * bj + c >= Cols) {
          r[c] = Tile4{};
        } else if (4 * bi + 4 <= Rows) {
          tile_load<4>(r[c], col);
        } else {
          tile_load<Rows % 4>(r[c], col);
        }
      }
      transpose4(r, dst + 4 * bj + 4 * bi * ldd, ldd);  // column 4 bi + q of dst holds row 4 bi + q of src
    }
  }
}

// Columns j0 .. j0+NC-1 of the Cholesky factor (left-looking, see chol_update): tiles of 8 (then 4)
// rows from row j0 down to NP. The first tile holds the NC x NC diagonal block: its columns are
// finished one after the other (update by the previous ones, pivot, scale), and the block's factor
// (dl, inv) finishes the tiles below with the same operations. h0 points at entry (j0, j0) of the
// matrix to factor (leading dimension ld0), H at that of its factor's storage.
// NP, KN kDynamic: np_rt, kn_rt (the run-time-size square root).
template <int NC, int NP, int KN>
int chol_panel(int j0, int jb, double* H, int ld, const double* h0, int ld0, const double* Nm, int ldn,
               int np_rt = NP, int kn_rt = KN) {
  const int NPv = linalg::extent<NP>(np_rt), KNv = linalg::extent<KN>(kn_rt);
  double dl[4][4] = {}, inv[4] = {};
  auto tile = [&]<int NV, bool Diag>(int i0) __attribute__((always_inline)) -> int {
    Tile4 acc[NV][NC];
    KNOT_UNROLL for (int c = 0; c < NC; ++c) {
      KNOT_UNROLL for (int v = 0; v < NV; ++v) tile_load<4>(acc[v][c], h0 + (i0 - j0) + 4 * v + c * ld0);
    }
    if (KNv > 0) tile_accumulate<4 * NV, NC, Trans::Yes>(acc, 0, KNv, Nm + i0, ldn, Nm + j0, ldn);
    tile_accumulate<4 * NV, NC, Trans::Yes, true>(acc, jb, j0, H + i0, ld, H + j0, ld);
    if constexpr (Diag) {
      // The NC x NC diagonal block by LDL' steps on its unscaled columns u_c: u_c -= u_c2 (u_c2[c] /
      // d_c2), d_c = u_c[c]. Only one division per column stays on the chain from column to column;
      // the square roots and their reciprocals (L(:, c) = u_c / sqrt(d_c)) come after, all at once.
      double id[NC];
      KNOT_UNROLL for (int c = 0; c < NC; ++c) {
        KNOT_UNROLL for (int c2 = 0; c2 < NC; ++c2) {
          if (c2 < c) acc[0][c] -= acc[0][c2] * (acc[0][c2][c] * id[c2]);
        }
        const double d = acc[0][c][c];
        if (!linalg::detail::positive_finite(d)) return j0 + c + 1;
        id[c] = 1.0 / d;
      }
      KNOT_UNROLL for (int c = 0; c < NC; ++c) {
        dl[c][c] = std::sqrt(acc[0][c][c]);
        inv[c] = 1.0 / dl[c][c];
      }
      KNOT_UNROLL for (int c = 0; c < NC; ++c) {
        acc[0][c] *= inv[c];
        KNOT_UNROLL for (int r = 0; r < NC; ++r) {
          if (r > c) dl[r][c] = acc[0][c][r];
          if (r < c) acc[0][c][r] = 0.0;  // keeps the strict upper triangle zero
        }
        acc[0][c][c] = dl[c][c];
      }
    }
    // The rows below the diagonal block: L(i, c) = (g_ic - sum_c2 L(i, c2) L(c, c2)) / L(c, c).
    KNOT_UNROLL for (int c = 0; c < NC; ++c) {
      KNOT_UNROLL for (int c2 = 0; c2 < NC; ++c2) {
        if (c2 < c) {
          KNOT_UNROLL for (int v = Diag ? 1 : 0; v < NV; ++v) acc[v][c] -= acc[v][c2] * dl[c][c2];
        }
      }
      KNOT_UNROLL for (int v = Diag ? 1 : 0; v < NV; ++v) acc[v][c] *= inv[c];
    }
    KNOT_UNROLL for (int c = 0; c < NC; ++c) {
      KNOT_UNROLL for (int v = 0; v < NV; ++v) tile_store_all(H + i0 + 4 * v + (j0 + c) * ld, acc[v][c]);
    }
    return 0;
  };
  // The diagonal tile first (8 rows where they fit), then 12-row tiles at orders from 40, 8-row
  // tiles, and 4 rows where left. The tile height changes no entry's arithmetic.
  int i0 = j0;
  if (NPv - j0 < 8) return tile.template operator()<1, true>(i0);
  if (const int f = tile.template operator()<2, true>(i0)) return f;
  i0 += 8;
  if (NPv >= 40)  // 12-row tiles: 2% faster at order 48, 1.5% slower at 24 (no change at 36)
    for (; i0 + 12 <= NPv; i0 += 12) tile.template operator()<3, false>(i0);
  for (; i0 + 8 <= NPv; i0 += 8) tile.template operator()<2, false>(i0);
  if (i0 < NPv) tile.template operator()<1, false>(i0);
  return 0;
}

// Rows and columns jb .. N-1 of H <- the lower Cholesky factor of G + Nm Nm' (N x N, N % 4 == 0,
// Nm N x KN; columns before jb of H hold a finished factor, or zeros). G is read from H above
// column NU4 and from Q (N - NU4 square, entry (i, j) of G at Q[(i - NU4) + (j - NU4) ldq]) from there
// on, only its lower triangle and the diagonal blocks. Left-looking by panels of 4 columns: each tile
// sums its Nm Nm' and -L L' terms in registers, so Nm Nm' is never stored. Writes zeros in H's
// strict upper triangle within the diagonal blocks. Returns 0, or j + 1 for the first pivot j that
// is not positive and finite (H then partly overwritten).
// N, KN, NU4 kDynamic: n_rt, kn_rt, nu4_rt (multiples of 4 all the same).
template <int N, int KN, int NU4>
int chol_update(int jb, double* H, int ld, const double* Q, int ldq, const double* Nm, int ldn, int n_rt = N,
                int kn_rt = KN, int nu4_rt = NU4) {
  static_assert((N == kDynamic || N % 4 == 0) && (NU4 == kDynamic || NU4 % 4 == 0));
  const int n = linalg::extent<N>(n_rt), nu4 = linalg::extent<NU4>(nu4_rt);
  for (int j0 = jb; j0 < n; j0 += 4) {
    const double* h0 = j0 < nu4 ? H + j0 + j0 * ld : Q + (j0 - nu4) + (j0 - nu4) * ldq;
    if (const int f = chol_panel<4, N, KN>(j0, jb, H, ld, h0, j0 < nu4 ? ld : ldq, Nm, ldn, n, kn_rt)) return f;
  }
  return 0;
}

// Layout of the square-root factor of a stage, order n = nu4 + nx4 with nu4 = round4(nu), nx4 =
// round4(nx): rows and columns nu .. nu4-1 and nu4 + nx .. n-1 are unit pivots that couple to nothing
// (so L, Y and Lk all start on vector boundaries and every panel is 4 columns wide):
// F = [L 0 0 0; 0 I 0 0; Y 0 Lk 0; 0 0 0 I] with L nu x nu, Y nx x nu at row nu4, Lk at (nu4, nu4).
// The padding is the exact problem with nx4 states, the nx4 - nx extra ones decoupled: A4 = [A 0; 0 0],
// B4 = [B; 0], Q4 = [Q 0; 0 I], S4 = [S 0] give P4 = [P 0; 0 I] at every stage. As the padded states
// come last, no real entry of a factor depends on them (a Cholesky factor's leading block is that of
// the leading block); they only need positive pivots. Vectors are never padded: every product on them
// runs over the nx real rows (gemv_tile takes any fixed size), so nothing reads or writes past a
// stage's entries.
template <int NX, int NU>
struct SqrtLayout {
  static constexpr int nx4 = round4(NX), nu4 = round4(NU), n = nu4 + nx4, ld = n;
  static constexpr std::size_t block = static_cast<std::size_t>(ld) * n;
  static constexpr int lp = nu4 + nu4 * ld;  // offset of Lk
  static constexpr bool padded = nx4 != NX;
};

// Square-root backward recursion (P_{k+1} = Lp Lp', Lp lower with a zero strict upper triangle):
//   Nm = [B'; 0; A'] Lp                                    (Nm Nm' = [B'PB . B'PA; . . .; A'PB . A'PA])
//   [R . S; . I .; S' . Q] + Nm Nm' = F F',  F = [L 0 0; 0 I 0; Y 0 Lk]   (one Cholesky of order n)
// L L' = Huu, Y = Hxu L^-T and Lk Lk' = Hxx - Y Y' = P_k: the factor of the next stage. Stage N:
// Lk = chol(Q_N). Vectors as in the classical recursion, with P c = Lp (Lp' c). Returns false at the
// first pivot that fails (P_k or Huu not positive definite); the caller then runs the classical
// recursion.
template <int NX, int NU>
bool sqrt_backward(int, int, int N, const LqData& d, const RiccatiWork& w) {
  using Lay = SqrtLayout<NX, NU>;
  constexpr int nx = NX, nu = NU, nx4 = Lay::nx4, nu4 = Lay::nu4, n = Lay::n, ld = Lay::ld;
  Serial g;
  // The state block of the matrix to factor as chol_update reads it (nx4 x nx4, lower triangle and
  // diagonal blocks): Q_k itself, or, padded, its lower triangle copied into Q4 = [Q_k 0; 0 I], whose
  // other entries are set once here (chol_update would read past Q_k's block).
  if constexpr (Lay::padded) {
    std::fill(w.Q4, w.Q4 + nx4 * nx4, 0.0);
    for (int i = nx; i < nx4; ++i) w.Q4[i + i * nx4] = 1.0;
  }
  auto state_block = [&](int k) -> const double* {
    if constexpr (Lay::padded) {
      const double* Q = d.Q_k(k);
      // Unrolled, so that every column's copy has a fixed length (no call to memcpy).
      KNOT_UNROLL for (int j = 0; j < nx; ++j)
        std::memcpy(w.Q4 + j + j * nx4, Q + j + j * nx, (nx - j) * sizeof(double));
      return w.Q4;
    } else {
      return d.Q_k(k);
    }
  };
  if (chol_update<n, 0, nu4>(nu4, w.F + N * Lay::block, ld, state_block(N), nx4, nullptr, ld) != 0) return false;
  std::memcpy(w.p + static_cast<std::size_t>(N) * nx, d.q_k(N), nx * sizeof(double));
  for (int k = N - 1; k >= 0; --k) {
    const double* A = d.A_k(k);
    const double* B = d.B_k(k);
    const double* R = d.R_k(k);
    const double* S = d.S_k(k);
    const double* Lp = w.F + (k + 1) * Lay::block + Lay::lp;
    const double* p = w.p + static_cast<std::size_t>(k + 1) * nx;
    double* F = w.F + k * Lay::block;
    double* pk = w.p + static_cast<std::size_t>(k) * nx;
    double* kt = w.kt + static_cast<std::size_t>(k) * nu;

    // Xt = [B'; 0; A'] (transpose_tiles writes the zero rows and columns of the padding), Nm = Xt Lp
    // (Lp's real nx x nx block: its padded columns would add zero columns to Nm).
    double* Xt = w.Xt + k * w.xt_stride;
    if (!w.xt_reuse) {
      transpose_tiles<nx, nu>(B, nx, Xt, ld);
      transpose_tiles<nx, nx>(A, nx, Xt + nu4, ld);
    }
    linalg::gemm_tile<Trans::No, n, nx, nx, linalg::TileShape::LowerB, 12>(1.0, Xt, ld, Lp, ld, 0.0, w.Nm, ld);
    // The first nu4 columns of the matrix to factor (lower triangle); the rest is read from Q.
    for (int j = 0; j < nu4; ++j)
      for (int i = j; i < nu4; ++i) F[i + j * ld] = j < nu && i < nu ? R[i + j * nu] : i == j ? 1.0 : 0.0;
    transpose_tiles<nu, nx>(S, nu, F + nu4, ld);
    if (chol_update<n, nx, nu4>(0, F, ld, state_block(k), nx4, w.Nm, ld) != 0) return false;

    // pc = P c + p, [hu; 0; hx] = [r; 0; q] + Xt pc, kt = L^-1 hu, p_k = hx - Y kt (the nu4 + nx rows
    // of h that are not padding).
    linalg::gemv_tile_t<nx, nx, true>(Lp, ld, d.c_k(k), 0.0, w.t);
    std::memcpy(w.pc, p, nx * sizeof(double));
    linalg::gemv_tile_n<nx, nx, true>(Lp, ld, w.t, w.pc);
    for (int i = 0; i < nu4; ++i) w.h[i] = i < nu ? d.r_k(k)[i] : 0.0;
    std::memcpy(w.h + nu4, d.q_k(k), nx * sizeof(double));
    linalg::gemv_tile_n<nu4 + nx, nx, false>(Xt, ld, w.pc, w.h);
    std::memcpy(kt, w.h, nu * sizeof(double));
    linalg::trsv<Uplo::Lower, Trans::No, NU>(g, nu, F, ld, kt);
    std::memcpy(pk, w.h + nu4, nx * sizeof(double));
    linalg::gemv_tile_n<nx, nu, false, true>(F + nu4, ld, kt, pk);
  }
  return true;
}

// The vector half of sqrt_backward on its stored factors (LqSolver::resolve).
template <int NX, int NU>
void sqrt_backward_vectors(int, int, int N, const LqData& d, const RiccatiWork& w) {
  using Lay = SqrtLayout<NX, NU>;
  constexpr int nx = NX, nu = NU, nu4 = Lay::nu4, ld = Lay::ld;
  Serial g;
  std::memcpy(w.p + static_cast<std::size_t>(N) * nx, d.q_k(N), nx * sizeof(double));
  for (int k = N - 1; k >= 0; --k) {
    const double* Lp = w.F + (k + 1) * Lay::block + Lay::lp;
    const double* F = w.F + k * Lay::block;
    double* pk = w.p + static_cast<std::size_t>(k) * nx;
    double* kt = w.kt + static_cast<std::size_t>(k) * nu;
    linalg::gemv_tile_t<nx, nx, true>(Lp, ld, d.c_k(k), 0.0, w.t);
    std::memcpy(w.pc, w.p + static_cast<std::size_t>(k + 1) * nx, nx * sizeof(double));
    linalg::gemv_tile_n<nx, nx, true>(Lp, ld, w.t, w.pc);
    std::memcpy(pk, d.q_k(k), nx * sizeof(double));
    linalg::gemv_tile_t<nx, nx, false>(d.A_k(k), nx, w.pc, 1.0, pk);
    std::memcpy(kt, d.r_k(k), nu * sizeof(double));
    linalg::gemv_tile_t<nx, nu, false>(d.B_k(k), nx, w.pc, 1.0, kt);
    linalg::trsv<Uplo::Lower, Trans::No, NU>(g, nu, F, ld, kt);
    linalg::gemv_tile_n<nx, nu, false, true>(F + nu4, ld, kt, pk);
  }
}

// Forward rollout on the square-root factors: u_k = -L^-T (Y' x_k + kt), lambda_k = Lk (Lk' x_k) + p_k.
template <int NX, int NU>
void sqrt_forward(int, int, int N, const LqData& d, const RiccatiWork& w, LqSolution& s, bool costate) {
  using Lay = SqrtLayout<NX, NU>;
  constexpr int nx = NX, nu = NU, nu4 = Lay::nu4, ld = Lay::ld;
  Serial g;
  std::memcpy(s.x_k(0), d.x_init.data(), nx * sizeof(double));
  for (int k = 0; k < N; ++k) {
    const double* x = s.x_k(k);
    double* u = s.u_k(k);
    double* xn = s.x_k(k + 1);
    const double* F = w.F + k * Lay::block;
    std::memcpy(u, w.kt + static_cast<std::size_t>(k) * nu, nu * sizeof(double));
    linalg::gemv_tile_t<nx, nu, false>(F + nu4, ld, x, 1.0, u);
    linalg::trsv<Uplo::Lower, Trans::Yes, NU>(g, nu, F, ld, u);
    for (int i = 0; i < nu; ++i) u[i] = -u[i];
    std::memcpy(xn, d.c_k(k), nx * sizeof(double));
    linalg::gemv_tile_n<nx, nx, false>(d.A_k(k), nx, x, xn);
    linalg::gemv_tile_n<nx, nu, false>(d.B_k(k), nx, u, xn);
  }
  if (!costate) return;
  for (int k = 0; k <= N; ++k) {
    const double* Lp = w.F + k * Lay::block + Lay::lp;
    double* lam = s.lambda_k(k);
    linalg::gemv_tile_t<nx, nx, true>(Lp, ld, s.x_k(k), 0.0, w.t);
    std::memcpy(lam, w.p + static_cast<std::size_t>(k) * nx, nx * sizeof(double));
    linalg::gemv_tile_n<nx, nx, true>(Lp, ld, w.t, lam);
  }
}

// ---- Square-root path at run-time sizes
//
// sqrt_backward's recursion with nx and nu known only at run time (a state size outside RiccatiNx, or
// nu > 8), on a layout that pads the factor's order once: n = round4(nu + nx), where SqrtLayout pads
// nu and nx separately (at (21, 3) an order of 24 instead of 28, about 0.7x the Cholesky's work):
//   F = [L 0 0; Y Lk 0; 0 0 I]   (L nu x nu at (0, 0), Y nx x nu at row nu, Lk at (nu, nu))
// and Xt = [B'; A'; 0]. Lk then starts off chol_update's 4 x 4 grid, and the products that take it as
// a lower triangular operand (gemm_tile's LowerB, lower_t_dynamic and lower_n_dynamic) read the
// strict upper triangle of its own diagonal 4 x 4 blocks, which the Cholesky leaves as it was: those
// entries (at most three a column) are zeroed after each factorization (zero_lk_band).
// The matrix to factor is written whole into F each stage (its lower triangle, the padding's unit
// pivots), except where nu and nx are multiples of 4 (the layout is then SqrtLayout's and Q_k is read
// in place). One instantiation serves every size: compiling the Cholesky for each order 8..48 measured
// no faster. The workspace is shared with the classical recursion, so every entry read is written
// within the same solve (the transposes kept under LqOptions::reuse_dynamics aside).

struct SqrtDims {
  int nx, nu, n, ld, lp;
  std::size_t block;
  SqrtDims(int nx_, int nu_)
      : nx(nx_), nu(nu_), n(round4(nx_ + nu_)), ld(n), lp(nu_ + nu_ * n), block(static_cast<std::size_t>(n) * n) {}
};

// Zeros the strict upper triangle of Lk's diagonal 4 x 4 blocks, counted from Lk's corner (F + lp).
inline void zero_lk_band(const SqrtDims& z, double* F) {
  double* Lk = F + z.lp;
  for (int j = 1; j < z.nx; ++j)
    for (int i = j / 4 * 4; i < j; ++i) Lk[i + j * z.ld] = 0.0;
}

// The lower triangle of [R S'; S Q 0; 0 0 I] into F (n x n), R and S given or (stage N) I and 0; with
// Q null only its first nu columns (chol_update then reads Q in place).
inline void write_stage_matrix(const SqrtDims& z, const double* R, const double* S, const double* Q, double* F) {
  const int nu = z.nu, nx = z.nx, ld = z.ld, nr = nu + nx;
  for (int j = 0; j < nu; ++j) {
    double* col = F + j * ld;
    for (int i = j; i < nu; ++i) col[i] = R ? R[i + j * nu] : (i == j ? 1.0 : 0.0);
    for (int i = nr; i < z.n; ++i) col[i] = 0.0;
  }
  if (S) {
    transpose_dynamic(nu, nx, S, nu, F + nu, ld);
  } else {
    for (int j = 0; j < nu; ++j) std::fill(F + nu + j * ld, F + nr + j * ld, 0.0);
  }
  if (!Q) return;
  for (int j = 0; j < nx; ++j) {
    double* col = F + nu + (nu + j) * ld;
    std::memcpy(col + j, Q + j + j * nx, (nx - j) * sizeof(double));
    for (int i = nx; i < z.n - nu; ++i) col[i] = 0.0;
  }
  for (int j = nr; j < z.n; ++j)
    for (int i = j; i < z.n; ++i) F[i + j * ld] = i == j ? 1.0 : 0.0;
}

// t = L'x for a lower triangular L (n x n) whose strict upper triangle is zero inside its 4 x 4
// diagonal blocks: by 4-column panels from the diagonal block down.
inline void lower_t_dynamic(int n, const double* L, int ld, const double* x, double* t) {
  const int full = n / 4 * 4;
  for (int j0 = 0; j0 < full; j0 += 4) dot_columns<4>(n - j0, 0, L + j0 + j0 * ld, ld, x + j0, 0.0, t + j0);
  linalg::detail::with_fixed<3>(n - full, [&]<int NC>() {
    dot_columns<NC>(n - full, 0, L + full + full * ld, ld, x + full, 0.0, t + full);
  });
}

// y += L t (L as above) by blocks of 4 rows, each summed over the columns up to its diagonal block in
// one vector (the blocks' chains are independent); the rows past the last multiple of 4 likewise,
// loaded short.
inline void lower_n_dynamic(int n, const double* L, int ld, const double* t, double* y) {
  using linalg::detail::Tile4;
  const int full = n / 4 * 4;
  for (int i0 = 0; i0 < full; i0 += 4) {
    Tile4 acc0 = {}, acc1 = {};
    const int pe = i0 + 4;
    int p = 0;
    for (; p + 2 <= pe; p += 2) {
      Tile4 a, b;
      linalg::detail::tile_load<4>(a, L + i0 + p * ld);
      linalg::detail::tile_load<4>(b, L + i0 + (p + 1) * ld);
      acc0 += a * t[p];
      acc1 += b * t[p + 1];
    }
    Tile4 yv;
    linalg::detail::tile_load<4>(yv, y + i0);
    yv += acc0 + acc1;
    linalg::detail::tile_store_all(y + i0, yv);
  }
  linalg::detail::with_fixed<3>(n - full, [&]<int Rows>() {
    Tile4 acc = {};
    for (int p = 0; p < n; ++p) {  // L(i, p) = 0 for i < p inside this last diagonal block
      Tile4 a;
      linalg::detail::tile_load<Rows>(a, L + full + p * ld);
      acc += a * t[p];
    }
    for (int r = 0; r < Rows; ++r) y[full + r] += acc[r];
  });
}

bool sqrt_backward_rt(int nx, int nu, int N, const LqData& d, const RiccatiWork& w) {
  const SqrtDims z(nx, nu);
  const int n = z.n, ld = z.ld, nr = nu + nx;
  Serial g;
  constexpr int D = kDynamic;
  // Xt's rows past nu + nx stay zero for the whole solve (the stages write only the rows above).
  if (!w.xt_reuse)
    for (int b = 0; b < (w.xt_stride ? N : 1); ++b)
      for (int j = 0; j < nx; ++j) std::fill(w.Xt + b * w.xt_stride + nr + j * ld, w.Xt + b * w.xt_stride + n + j * ld, 0.0);
  // With nu and nx multiples of 4 the layout is SqrtLayout's: Lk on the Cholesky's grid (no band to
  // clear) and Q_k read in place, as the fixed sizes do (copying it cost 3-4% at (36, 12)).
  const bool on_grid = nu % 4 == 0, q_in_place = on_grid && nx % 4 == 0;
  double* FN = w.F + N * z.block;
  if (q_in_place) {
    if (chol_update<D, D, D>(nu, FN, ld, d.Q_k(N), nx, nullptr, ld, n, 0, nu) != 0) return false;
  } else {
    write_stage_matrix(z, nullptr, nullptr, d.Q_k(N), FN);
    if (chol_update<D, D, D>(0, FN, ld, nullptr, 0, nullptr, ld, n, 0, n) != 0) return false;
    if (!on_grid) zero_lk_band(z, FN);
  }
  std::memcpy(w.p + static_cast<std::size_t>(N) * nx, d.q_k(N), nx * sizeof(double));
  for (int k = N - 1; k >= 0; --k) {
    const double* Lp = w.F + (k + 1) * z.block + z.lp;
    double* F = w.F + k * z.block;
    double* pk = w.p + static_cast<std::size_t>(k) * nx;
    double* kt = w.kt + static_cast<std::size_t>(k) * nu;

    double* Xt = w.Xt + k * w.xt_stride;
    if (!w.xt_reuse) {
      transpose_dynamic(nx, nu, d.B_k(k), nx, Xt, ld);
      transpose_dynamic(nx, nx, d.A_k(k), nx, Xt + nu, ld);
    }
    linalg::gemm_tile_dynamic<Trans::No, linalg::TileShape::LowerB, 12>(n, nx, nx, 1.0, Xt, ld, Lp, ld, 0.0, w.Nm, ld);
    write_stage_matrix(z, d.R_k(k), d.S_k(k), q_in_place ? nullptr : d.Q_k(k), F);
    if (chol_update<D, D, D>(0, F, ld, d.Q_k(k), nx, w.Nm, ld, n, nx, q_in_place ? nu : n) != 0) return false;
    if (!on_grid) zero_lk_band(z, F);

    lower_t_dynamic(nx, Lp, ld, d.c_k(k), w.t);
    std::memcpy(w.pc, w.p + static_cast<std::size_t>(k + 1) * nx, nx * sizeof(double));
    lower_n_dynamic(nx, Lp, ld, w.t, w.pc);
    std::memcpy(w.h, d.r_k(k), nu * sizeof(double));
    std::memcpy(w.h + nu, d.q_k(k), nx * sizeof(double));
    column_product<Trans::No>(nr, nx, 1.0, Xt, ld, w.pc, 1, 1.0, w.h);
    std::memcpy(kt, w.h, nu * sizeof(double));
    linalg::trsv<Uplo::Lower, Trans::No, kDynamic>(g, nu, F, ld, kt);
    std::memcpy(pk, w.h + nu, nx * sizeof(double));
    column_product<Trans::No>(nx, nu, -1.0, F + nu, ld, kt, 1, 1.0, pk);
  }
  return true;
}

void sqrt_backward_vectors_rt(int nx, int nu, int N, const LqData& d, const RiccatiWork& w) {
  const SqrtDims z(nx, nu);
  Serial g;
  std::memcpy(w.p + static_cast<std::size_t>(N) * nx, d.q_k(N), nx * sizeof(double));
  for (int k = N - 1; k >= 0; --k) {
    const double* Lp = w.F + (k + 1) * z.block + z.lp;
    const double* F = w.F + k * z.block;
    double* pk = w.p + static_cast<std::size_t>(k) * nx;
    double* kt = w.kt + static_cast<std::size_t>(k) * nu;
    lower_t_dynamic(nx, Lp, z.ld, d.c_k(k), w.t);
    std::memcpy(w.pc, w.p + static_cast<std::size_t>(k + 1) * nx, nx * sizeof(double));
    lower_n_dynamic(nx, Lp, z.ld, w.t, w.pc);
    std::memcpy(pk, d.q_k(k), nx * sizeof(double));
    gemv_t_dynamic(nx, nx, d.A_k(k), nx, w.pc, 1.0, pk);
    std::memcpy(kt, d.r_k(k), nu * sizeof(double));
    gemv_t_dynamic(nx, nu, d.B_k(k), nx, w.pc, 1.0, kt);
    linalg::trsv<Uplo::Lower, Trans::No, kDynamic>(g, nu, F, z.ld, kt);
    column_product<Trans::No>(nx, nu, -1.0, F + nu, z.ld, kt, 1, 1.0, pk);
  }
}

void sqrt_forward_rt(int nx, int nu, int N, const LqData& d, const RiccatiWork& w, LqSolution& s, bool costate) {
  const SqrtDims z(nx, nu);
  Serial g;
  std::memcpy(s.x_k(0), d.x_init.data(), nx * sizeof(double));
  for (int k = 0; k < N; ++k) {
    const double* x = s.x_k(k);
    double* u = s.u_k(k);
    double* xn = s.x_k(k + 1);
    const double* F = w.F + k * z.block;
    std::memcpy(u, w.kt + static_cast<std::size_t>(k) * nu, nu * sizeof(double));
    gemv_t_dynamic(nx, nu, F + nu, z.ld, x, 1.0, u);
    linalg::trsv<Uplo::Lower, Trans::Yes, kDynamic>(g, nu, F, z.ld, u);
    for (int i = 0; i < nu; ++i) u[i] = -u[i];
    std::memcpy(xn, d.c_k(k), nx * sizeof(double));
    column_product<Trans::No>(nx, nx, 1.0, d.A_k(k), nx, x, 1, 1.0, xn);
    column_product<Trans::No>(nx, nu, 1.0, d.B_k(k), nx, u, 1, 1.0, xn);
  }
  if (!costate) return;
  for (int k = 0; k <= N; ++k) {
    const double* Lp = w.F + k * z.block + z.lp;
    double* lam = s.lambda_k(k);
    lower_t_dynamic(nx, Lp, z.ld, s.x_k(k), w.t);
    std::memcpy(lam, w.p + static_cast<std::size_t>(k) * nx, nx * sizeof(double));
    lower_n_dynamic(nx, Lp, z.ld, w.t, lam);
  }
}
#endif

class RiccatiBackend final : public LqBackend {
 public:
  RiccatiBackend(int nx, int nu, int N, bool reuse_dynamics) : nx_(nx), nu_(nu), N_(N) {
    auto line = [](std::size_t n) { return (n + 7) / 8 * 8; };  // whole cache lines, as the arena's arrays
    std::size_t sqrt_ld = 0, sqrt_xt = 0, sqrt_q4 = 0;  // the factor's ld, Xt's columns, the Q4 scratch
    dispatch_sizes<RiccatiNx, ControlSizes>(nx, nu, [&](auto NX, auto NU) {
      constexpr int X = decltype(NX)::value, U = decltype(NU)::value;
      backward_ = &riccati_backward<X, U>;
      forward_ = &riccati_forward<X, U>;
      vectors_ = &riccati_backward_vectors<X, U>;
#if KNOT_GEMM_TILE_SIMD
      if constexpr (kSqrt<X, U>) {
        using Lay = SqrtLayout<X, U>;
        sqrt_ld = Lay::ld, sqrt_xt = Lay::nx4, sqrt_q4 = Lay::padded ? sqrt_xt * sqrt_xt : 0;
        sqrt_backward_ = &sqrt_backward<X, U>;
        sqrt_forward_ = &sqrt_forward<X, U>;
        sqrt_vectors_ = &sqrt_backward_vectors<X, U>;
      } else if constexpr (X == kDynamic || U == kDynamic) {
        if (sqrt_runtime(nx, nu)) {
          const SqrtDims z(nx, nu);
          sqrt_ld = z.ld, sqrt_xt = nx;  // no Q4
          sqrt_backward_ = &sqrt_backward_rt;
          sqrt_forward_ = &sqrt_forward_rt;
          sqrt_vectors_ = &sqrt_backward_vectors_rt;
        }
      }
#endif
    });
    const bool sqrt = sqrt_ld > 0;
    // One Xt, or one per stage (LqOptions::reuse_dynamics).
    const std::size_t xt_blocks = sqrt && reuse_dynamics ? static_cast<std::size_t>(N) : 1;
    // One solve uses one recursion's matrices, so the square-root ones share the classical ones'
    // space (p, kt and pc serve both). Every entry either path reads is written earlier in the same
    // solve, but for the kept transposes of reuse_dynamics, which only a completed square root leaves.
    const std::size_t sxx = static_cast<std::size_t>(nx) * nx, sxu = static_cast<std::size_t>(nx) * nu;
    const std::size_t ld = sqrt_ld, xt = sqrt_xt;
    const std::size_t classical = line((N + 1) * sxx) + line(static_cast<std::size_t>(N) * nu * nu) + line(N * sxu) +
                                  2 * line(sxx) + line(sxu),
                      square_root = sqrt ? line((N + 1) * ld * ld) + line(xt_blocks * ld * xt) + line(ld * nx) + line(ld) +
                                               line(nx) + line(sqrt_q4)
                                         : 0;
    const std::size_t oM = arena_.reserve(std::max(classical, square_root)),
                      op = arena_.reserve(static_cast<std::size_t>(N + 1) * nx),
                      okt = arena_.reserve(static_cast<std::size_t>(N) * nu), opc = arena_.reserve(nx);
    arena_.allocate();
    double* m = arena_.at(oM);
    auto take = [&m, &line](std::size_t n) { return std::exchange(m, m + line(n)); };
    w_.p = arena_.at(op);
    w_.kt = arena_.at(okt);
    w_.P = take((N + 1) * sxx);
    w_.L = take(static_cast<std::size_t>(N) * nu * nu);
    w_.Y = take(N * sxu);
    w_.At = take(sxx);
    w_.T = take(sxx);
    w_.W = take(sxu);
    w_.pc = arena_.at(opc);
    if (sqrt) {
      m = arena_.at(oM);
      w_.F = take((N + 1) * ld * ld);
      w_.Xt = take(xt_blocks * ld * xt);
      w_.xt_stride = xt_blocks > 1 ? ld * xt : 0;
      w_.Nm = take(ld * nx);
      w_.h = take(ld);
      w_.t = take(nx);
      w_.Q4 = take(sqrt_q4);
    }
  }

  // The square-root recursion where the sizes have one; at its first failing pivot (a positive
  // semidefinite P_k, or a Huu that is not positive definite) the classical one, which needs only
  // Huu positive definite and reports the failing stage.
  LqStatus solve(const LqData& d, LqSolution& s, LqStats& stats) override { return factor_solve(d, s, stats, true); }
  LqStatus solve_primal(const LqData& d, LqSolution& s, LqStats& stats) override {
    return factor_solve(d, s, stats, false);
  }

  LqStatus resolve(const LqData& d, LqSolution& s, LqStats& stats) override {
    stats.linsys = Linsys::Riccati;
    stats.square_root = sqrt_used_;
    if (sqrt_used_) {
      sqrt_vectors_(nx_, nu_, N_, d, w_);
      sqrt_forward_(nx_, nu_, N_, d, w_, s, true);
    } else {
      vectors_(nx_, nu_, N_, d, w_);
      forward_(nx_, nu_, N_, d, w_, s, true);
    }
    return solution_finite(s) ? LqStatus::Solved : LqStatus::NonFinite;
  }

  std::size_t bytes() const override { return arena_.bytes() + sizeof(*this); }

  void dynamics_unchanged() override { reuse_next_ = true; }

 private:
  // costate false: lambda is neither formed nor checked (solve_primal).
  LqStatus factor_solve(const LqData& d, LqSolution& s, LqStats& stats, bool costate) {
    stats.linsys = Linsys::Riccati;
    const auto finite = [&] {
      return costate ? solution_finite(s) : all_finite(s.x.data(), s.x.size()) && all_finite(s.u.data(), s.u.size());
    };
    // The stage transposes of the last complete square-root recursion are reused when announced;
    // any other solve rewrites them (or, classically, the space they share).
    w_.xt_reuse = reuse_next_ && xt_valid_;
    reuse_next_ = false;
    sqrt_used_ = sqrt_backward_ != nullptr && sqrt_backward_(nx_, nu_, N_, d, w_);
    xt_valid_ = sqrt_used_ && w_.xt_stride != 0;
    stats.square_root = sqrt_used_;
    if (sqrt_used_) {
      sqrt_forward_(nx_, nu_, N_, d, w_, s, costate);
      return finite() ? LqStatus::Solved : LqStatus::NonFinite;
    }
    const int failed = backward_(nx_, nu_, N_, d, w_);
    if (failed >= 0) {
      stats.failed_stage = failed;
      return data_finite(d) ? LqStatus::NotPositiveDefinite : LqStatus::NonFinite;
    }
    forward_(nx_, nu_, N_, d, w_, s, costate);
    return finite() ? LqStatus::Solved : LqStatus::NonFinite;
  }

  int nx_, nu_, N_;
  Arena arena_;
  RiccatiWork w_{};
  int (*backward_)(int, int, int, const LqData&, const RiccatiWork&) = nullptr;
  void (*forward_)(int, int, int, const LqData&, const RiccatiWork&, LqSolution&, bool) = nullptr;
  void (*vectors_)(int, int, int, const LqData&, const RiccatiWork&) = nullptr;
  bool (*sqrt_backward_)(int, int, int, const LqData&, const RiccatiWork&) = nullptr;
  void (*sqrt_forward_)(int, int, int, const LqData&, const RiccatiWork&, LqSolution&, bool) = nullptr;
  void (*sqrt_vectors_)(int, int, int, const LqData&, const RiccatiWork&) = nullptr;
  bool sqrt_used_ = false;  // by the last solve
  bool reuse_next_ = false;  // dynamics_unchanged() since the last solve
  bool xt_valid_ = false;    // every stage's Xt holds the last solve's [B' A'] (reuse_dynamics)
};

}  // namespace

std::unique_ptr<LqBackend> make_riccati(int nx, int nu, int N, const LqOptions& opt) {
  return std::make_unique<RiccatiBackend>(nx, nu, N, opt.reuse_dynamics);
}

}  // namespace knot::solver::detail
