// --- The LQ step on an execution group: the Schur complement, solved by bdsv or pcg ---
//
// LqSolver's Schur backends (solver/src/lq_schur.cpp has the derivation: S = C G^-1 C', gamma,
// the stage regularization rho_k, the refinement against the unregularized KKT system, pcg's stop
// on the step's own KKT check, the direct and Riccati fallbacks, the inexact rollout) restated on
// the views of views.hpp and written once against a group. Where the Riccati recursion walks the
// knots one after another, everything here but bdsv's block sweep and the rollout is knot-parallel:
// one member per knot forms G_k^-1 (its own Cholesky and two triangular solves), the blocks of S,
// the right-hand side and the recovery; pcg's products are one member per row. That is the reason
// for this path on a GPU block (GATO and MPCGPU solve the same Schur system by pcg).
//
// Group contract (group.hpp): a knot's serial work is one member's, its order of operations fixed,
// and bdsv, pcg, bdmv and dot are thread-count invariant, so x, u, lambda and every decision are
// bitwise the same for every group size. Decisions (a failed stage, pcg's stop, refinement's
// progress) are taken by every member from shared per-knot values read in knot order. Ends on a
// barrier. Allocates nothing.
//
// Differences from LqSolver's backend, all in what a rounding-level tie decides: the stage median
// is found by insertion sort (the same value nth_element gives), the products are the group
// primitives' own order, and a NaN in the KKT check's ratio stays NaN (the host's running maximum
// can step past one). No deadline (the device path has no time limit).
#pragma once

#include <cmath>
#include <cstddef>

#include "knot/linalg/band.hpp"
#include "knot/linalg/bdmv.hpp"
#include "knot/linalg/bdsv.hpp"
#include "knot/linalg/dense/gemm.hpp"
#include "knot/linalg/dense/gemv.hpp"
#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/dense/trsm.hpp"
#include "knot/linalg/group.hpp"
#include "knot/linalg/pcg.hpp"
#include "knot/linalg/precond.hpp"
#include "knot/linalg/reduce.hpp"
#include "knot/solver/device/riccati.hpp"
#include "knot/solver/device/views.hpp"

namespace knot::solver::device {

// LqOptions' fields of the same names (lq.hpp documents them). Plain data.
struct SchurOptions {
  bool pcg = false;    // false: bdsv
  bool stair = true;   // pcg's preconditioner: symmetric stair (else block-Jacobi)
  double pcg_rel_tol = 1e-20;
  int pcg_max_iters = 1000;
  bool pcg_warm_start = false;
  double schur_reg = 1e-6;
  int max_refinement = 10;
  double refine_tol = 1e-12;
  bool pcg_direct_fallback = true;
  bool riccati_fallback = true;
  bool inexact_rollout = true;
};

// What one schur_solve did (LqStats' fields of the same names). Every member's copy is the same.
struct SchurStats {
  int pcg_iterations = 0;
  int refinement_steps = 0;
  int regularized_stages = 0;
  double regularization = 0;  // the largest rho_k
  double kkt_residual = 0;    // inf-norm of the unregularized KKT residual of the answer
  double kkt_tolerance = 0;   // what it was held to
  bool direct_fallback = false;
  bool riccati_fallback = false;
};

namespace schur_detail {

// The scratch, in this order (scalars; z vectors hold N blocks of m = nx + nu, then nx):
//   Ginv  N blocks m x m, then nx x nx      G_k^-1
//   F     N+1 blocks m x m                  knot k's Cholesky factor, then its block of S
//   M     N blocks nx x m                   [A_k B_k] G_k^-1
//   D     N blocks nx x nx                  M_k [A_k B_k]'
//   v     N blocks m                        C'lambda at stage k (recovery)
//   rho   N+1                               the stage's shift: 0, rho_k, or -1 (not SPD)
//   knot  4 (N+1)                           per-knot values of the reductions
//   strips, and (pcg) pinv and (pcg with its direct fallback) chol: N+1 strips nx x 3nx each
//   pscr  (pcg) max(pcg_scratch_size, precond_scratch_size)
//   a     z, b (N+1) nx, w z                the right-hand side (a = -g, b = (x_init, c)) and G^-1 a
//   gamma, lam, pg: padded (N+3) nx         S lambda = gamma; pg = P^-1 gamma (pcg)
//   dx (N+1) nx, du N nu, dl (N+1) nx       refinement corrections
//   fail  1                                 bdsv_factor's flag (an int in a scalar's slot)
template <class T>
struct Work {
  T *Ginv, *F, *M, *D, *v, *rho, *knot, *strips, *pinv, *chol, *pscr, *a, *b, *w, *gamma, *lam, *pg, *dx, *du, *dl;
  int* fail;

  KNOT_HD static std::size_t pscr_size(int nx, int N) {
    const long p = linalg::pcg_scratch_size(N + 1, nx), q = linalg::precond_scratch_size(nx);
    return std::size_t(p > q ? p : q);
  }
  KNOT_HD static std::size_t size(int nx_, int nu_, int N_, bool pcg, bool chol) {
    const std::size_t N = N_, nx = nx_, m = std::size_t(nx_ + nu_), nb = N + 1;
    const std::size_t z = N * m + nx, strips = std::size_t(linalg::strips_size(N_ + 1, nx_));
    const std::size_t padded = std::size_t(linalg::padded_size(N_ + 1, nx_));
    std::size_t n = N * m * m + nx * nx + nb * m * m + N * nx * m + N * nx * nx + N * m + nb + 4 * nb;
    n += strips * (1 + (pcg ? 1 : 0) + (pcg && chol ? 1 : 0)) + (pcg ? pscr_size(nx_, N_) : 0);
    n += 2 * z + nb * nx + padded * (pcg ? 3 : 2) + 2 * nb * nx + N * std::size_t(nu_) + 1;
    return n;
  }
  KNOT_HD static Work carve(int nx_, int nu_, int N_, bool pcg, bool chol, T* base) {
    const std::size_t N = N_, nx = nx_, m = std::size_t(nx_ + nu_), nb = N + 1;
    const std::size_t z = N * m + nx, strips = std::size_t(linalg::strips_size(N_ + 1, nx_));
    const std::size_t padded = std::size_t(linalg::padded_size(N_ + 1, nx_));
    T* p = base;
    const auto take = [&p](std::size_t n) {
      T* r = p;
      p += n;
      return r;
    };
    Work w;
    w.Ginv = take(N * m * m + nx * nx);
    w.F = take(nb * m * m);
    w.M = take(N * nx * m);
    w.D = take(N * nx * nx);
    w.v = take(N * m);
    w.rho = take(nb);
    w.knot = take(4 * nb);
    w.strips = take(strips);
    w.pinv = pcg ? take(strips) : nullptr;
    w.chol = pcg && chol ? take(strips) : nullptr;
    w.pscr = pcg ? take(pscr_size(nx_, N_)) : nullptr;
    w.a = take(z);
    w.b = take(nb * nx);
    w.w = take(z);
    w.gamma = take(padded);
    w.lam = take(padded);
    w.pg = pcg ? take(padded) : nullptr;
    w.dx = take(nb * nx);
    w.du = take(N * std::size_t(nu_));
    w.dl = take(nb * nx);
    w.fail = reinterpret_cast<int*>(take(1));
    return w;
  }
};

template <class T>
KNOT_HD T abs_(T v) {
  return v < T(0) ? -v : v;
}
// The host's std::max(m, |v|): a NaN v leaves m.
template <class T>
KNOT_HD T max_abs(T m, T v) {
  const T a = abs_(v);
  return m < a ? a : m;
}
template <class T>
KNOT_HD T inf_norm(const T* v, std::size_t n) {
  T m = T(0);
  for (std::size_t i = 0; i < n; ++i) m = max_abs(m, v[i]);
  return m;
}
template <class T>
KNOT_HD constexpr T epsilon() {
  return sizeof(T) == 4 ? T(1.1920928955078125e-7) : T(2.220446049250313e-16);
}

// The KKT check of an answer (lq_schur.cpp's KktCheck).
template <class T>
struct Check {
  T inf = T(0);
  T ratio = T(0);
};

enum class Outcome { Converged, NotConverged };

// One solve's state. Every member holds its own copy and updates it identically.
template <class G, class T>
struct Solve {
  G& g;
  const LqView<T>& d;
  const StepView<T>& s;
  const Work<T>& w;
  const SchurOptions& o;
  SchurStats& st;
  int nx, nu, N, m, nb;
  T tol = T(0);
  bool inexact = false, roll = false, direct = false;
  // pcg's stop on the first solve: the KKT check of its iterate (lq_schur.cpp's pcg_stop)
  bool check = false, accepted = false;
  T first_ratio = T(0), best_ratio = T(0);
  int cap = 0;

  KNOT_HD Solve(G& g_, const LqView<T>& d_, const StepView<T>& s_, const Work<T>& w_, const SchurOptions& o_,
                SchurStats& st_)
      : g(g_), d(d_), s(s_), w(w_), o(o_), st(st_), nx(d_.nx), nu(d_.nu), N(d_.N), m(d_.nx + d_.nu), nb(d_.N + 1) {}

  KNOT_HD std::size_t zk(int k) const { return std::size_t(k) * m; }
  KNOT_HD T* ginv(int k) const { return w.Ginv + std::size_t(k) * m * m; }

  // G_k's entry (i, j), i >= j (the lower triangle; the stage inverse reads no more).
  KNOT_HD T stage_entry(int k, int i, int j) const {
    if (j < nx) return i < nx ? d.Q_k(k)[i + std::size_t(j) * nx] : d.S_k(k)[(i - nx) + std::size_t(j) * nu];
    return d.R_k(k)[(i - nx) + std::size_t(j - nx) * nu];
  }

  // W = G_k^-1, regularized where singular or nearly so (lq_schur.cpp's stage_inverse). Returns the
  // shift used (0 none), or -1 when G_k + rho_k I is not positive definite either. One member.
  KNOT_HD T stage_inverse(int k, T reg) const {
    using linalg::Side, linalg::Trans, linalg::Uplo;
    linalg::SerialGroup one;
    const int n = k < N ? m : nx;
    T* F = w.F + std::size_t(k) * m * m;
    T* W = ginv(k);
    // The median of the diagonal, non-positive (and NaN) entries counted as 0.
    for (int i = 0; i < n; ++i) {
      const T gii = stage_entry(k, i, i);
      F[i] = gii > T(0) ? gii : T(0);
    }
    for (int i = 1; i < n; ++i) {
      const T v = F[i];
      int j = i - 1;
      for (; j >= 0 && v < F[j]; --j) F[j + 1] = F[j];
      F[j + 1] = v;
    }
    T sd = F[n / 2];
    if (sd <= T(0)) sd = F[n - 1];  // more than half the diagonal zero: the largest entry
    if (sd <= T(0)) sd = T(1);
    const T rho = reg * sd;
    const auto factor_invert = [&](T shift) {
      for (int j = 0; j < n; ++j)
        for (int i = j; i < n; ++i) F[i + std::size_t(j) * n] = stage_entry(k, i, j) + (i == j ? shift : T(0));
      if (linalg::potrf(one, n, F, n) != 0) return false;
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) W[i + std::size_t(j) * n] = i == j ? T(1) : T(0);
      linalg::trsm<Side::Left, Uplo::Lower, Trans::No>(one, n, n, T(1), F, n, W, n);
      linalg::trsm<Side::Left, Uplo::Lower, Trans::Yes>(one, n, n, T(1), F, n, W, n);
      return true;
    };
    if (factor_invert(T(0))) {
      T wmax = T(0);
      for (int i = 0; i < n; ++i) wmax = wmax < W[i + std::size_t(i) * n] ? W[i + std::size_t(i) * n] : wmax;
      if (wmax * rho <= T(1)) return T(0);
    }
    return factor_invert(rho) ? rho : T(-1);
  }

  // Stage inverses, M_k, D_k, then the strips of S. Returns the first stage that is not SPD, or -1.
  KNOT_HD_NOINLINE int assemble() {
    using linalg::BandSlot, linalg::Trans;
    linalg::SerialGroup one;
    const std::size_t sxx = std::size_t(nx) * nx;
    for (int k = g.rank(); k <= N; k += g.size()) {
      const T rho = stage_inverse(k, T(o.schur_reg));
      w.rho[k] = rho;
      if (rho < T(0) || k == N) continue;
      const T* W = ginv(k);
      T* M = w.M + std::size_t(k) * nx * m;
      T* D = w.D + std::size_t(k) * sxx;
      linalg::gemm<Trans::No, Trans::No>(one, nx, m, nx, T(1), d.A_k(k), nx, W, m, T(0), M, nx);
      linalg::gemm<Trans::No, Trans::No>(one, nx, m, nu, T(1), d.B_k(k), nx, W + nx, m, T(1), M, nx);
      linalg::gemm<Trans::No, Trans::Yes>(one, nx, nx, nx, T(1), M, nx, d.A_k(k), nx, T(0), D, nx);
      linalg::gemm<Trans::No, Trans::Yes>(one, nx, nx, nu, T(1), M + sxx, nx, d.B_k(k), nx, T(1), D, nx);
    }
    g.sync();
    int failed = -1;
    for (int k = 0; k <= N; ++k) {
      const T rho = w.rho[k];
      if (rho < T(0)) {
        failed = k;
        break;
      }
      if (rho > T(0)) {
        ++st.regularized_stages;
        if (double(rho) > st.regularization) st.regularization = double(rho);
      }
    }
    g.sync();
    if (failed >= 0) return failed;
    // Block-row k: MAIN (W_k)_xx + D_{k-1} (mirrored from its lower triangle), RIGHT -(M_k)_x',
    // and block-row k+1's LEFT -(M_k)_x; the unused corner slots zero.
    for (int k = g.rank(); k <= N; k += g.size()) {
      const int n = k < N ? m : nx;
      const T* W = ginv(k);
      T* main = w.F + std::size_t(k) * m * m;
      for (int j = 0; j < nx; ++j)
        for (int i = j; i < nx; ++i)
          main[i + std::size_t(j) * nx] =
              (k > 0 ? w.D[std::size_t(k - 1) * sxx + i + std::size_t(j) * nx] : T(0)) + W[i + std::size_t(j) * n];
      for (int j = 1; j < nx; ++j)
        for (int i = 0; i < j; ++i) main[i + std::size_t(j) * nx] = main[j + std::size_t(i) * nx];
      T* strip = w.strips + linalg::strip_offset(k, nx);
      linalg::store_block<true>(one, nx, strip, BandSlot::MAIN, main);
      if (k < N) {
        const T* M = w.M + std::size_t(k) * nx * m;
        linalg::store_block<true>(one, nx, strip + 3 * sxx, BandSlot::LEFT, M, T(-1));
        linalg::store_block<false>(one, nx, strip, BandSlot::RIGHT, M, T(-1));
      }
      if (k == 0 || k == N) {
        const int off = k == 0 ? 0 : 2 * nx;
        for (int y = 0; y < nx; ++y)
          for (int x = 0; x < nx; ++x) strip[std::size_t(y) * 3 * nx + off + x] = T(0);
      }
    }
    g.sync();
    return -1;
  }

  // Whether every scalar of the data (sol false) or of the answer (sol true) is finite.
  KNOT_HD bool finite(bool sol) {
    const std::size_t xx = std::size_t(nx) * nx, xu = std::size_t(nx) * nu, uu = std::size_t(nu) * nu;
    using riccati_detail::nonfinite_sum;
    for (int k = g.rank(); k <= N; k += g.size()) {
      T f;
      if (sol) {
        f = nonfinite_sum(s.x_k(k), std::size_t(nx)) + nonfinite_sum(s.lambda_k(k), std::size_t(nx));
        if (k < N) f += nonfinite_sum(s.u_k(k), std::size_t(nu));
      } else {
        f = nonfinite_sum(d.Q_k(k), xx) + nonfinite_sum(d.q_k(k), std::size_t(nx));
        if (k < N)
          f += nonfinite_sum(d.A_k(k), xx) + nonfinite_sum(d.B_k(k), xu) + nonfinite_sum(d.c_k(k), std::size_t(nx)) +
               nonfinite_sum(d.R_k(k), uu) + nonfinite_sum(d.S_k(k), xu) + nonfinite_sum(d.r_k(k), std::size_t(nu));
        else
          f += nonfinite_sum(d.x_init, std::size_t(nx));
      }
      w.knot[k] = f;
    }
    g.sync();
    return riccati_detail::flags_finite(g, N, w.knot);
  }

  // 1 + the inf-norm of q, r, c and x_init: the scale of the rounding-level tolerance.
  KNOT_HD T rhs_scale() {
    for (int k = g.rank(); k <= N; k += g.size()) {
      T v = inf_norm(d.q_k(k), std::size_t(nx));
      if (k < N) {
        v = max_abs(v, inf_norm(d.r_k(k), std::size_t(nu)));
        v = max_abs(v, inf_norm(d.c_k(k), std::size_t(nx)));
      } else {
        v = max_abs(v, inf_norm(d.x_init, std::size_t(nx)));
      }
      w.knot[k] = v;
    }
    g.sync();
    T v = T(0);
    for (int k = 0; k <= N; ++k) v = max_abs(v, w.knot[k]);
    g.sync();
    return T(1) + v;
  }

  // a = -g, b = (x_init, c).
  KNOT_HD void set_rhs() {
    for (int k = g.rank(); k <= N; k += g.size()) {
      T* ak = w.a + zk(k);
      for (int i = 0; i < nx; ++i) ak[i] = -d.q_k(k)[i];
      if (k < N)
        for (int i = 0; i < nu; ++i) ak[nx + i] = -d.r_k(k)[i];
      T* bk = w.b + std::size_t(k) * nx;
      const T* src = k == 0 ? d.x_init : d.c_k(k - 1);
      for (int i = 0; i < nx; ++i) bk[i] = src[i];
    }
    g.sync();
  }

  // w = G^-1 a, gamma = b - C w (padded, its pads zero).
  KNOT_HD void rhs() {
    using linalg::Trans;
    linalg::SerialGroup one;
    for (int k = g.rank(); k <= N; k += g.size()) {
      const int n = k < N ? m : nx;
      linalg::gemv<Trans::No>(one, n, n, T(1), ginv(k), n, w.a + zk(k), T(0), w.w + zk(k));
    }
    g.sync();
    for (int k = g.rank(); k <= N; k += g.size()) {
      T* gk = w.gamma + std::size_t(k + 1) * nx;
      const T* bk = w.b + std::size_t(k) * nx;
      const T* wk = w.w + zk(k);
      for (int i = 0; i < nx; ++i) gk[i] = bk[i] - wk[i];
      if (k > 0) {
        const T* wp = w.w + zk(k - 1);
        linalg::gemv<Trans::No>(one, nx, nx, T(1), d.A_k(k - 1), nx, wp, T(1), gk);
        linalg::gemv<Trans::No>(one, nx, nu, T(1), d.B_k(k - 1), nx, wp + nx, T(1), gk);
      }
      if (k == 0)
        for (int i = 0; i < nx; ++i) w.gamma[i] = T(0);
      if (k == N)
        for (int i = 0; i < nx; ++i) w.gamma[std::size_t(nb + 1) * nx + i] = T(0);
    }
    g.sync();
  }

  // (x, u) = w + G^-1 C'lambda, lambda from lam's interior.
  KNOT_HD void recover(T* x, T* u) {
    using linalg::Trans;
    linalg::SerialGroup one;
    for (int k = g.rank(); k <= N; k += g.size()) {
      const T* W = ginv(k);
      const T* wk = w.w + zk(k);
      const T* lk = w.lam + std::size_t(k + 1) * nx;
      T* xk = x + std::size_t(k) * nx;
      for (int i = 0; i < nx; ++i) xk[i] = wk[i];
      if (k == N) {
        linalg::gemv<Trans::No>(one, nx, nx, T(1), W, nx, lk, T(1), xk);
        continue;
      }
      T* v = w.v + zk(k);
      for (int i = 0; i < nx; ++i) v[i] = lk[i];
      linalg::gemv<Trans::Yes>(one, nx, nx, T(-1), d.A_k(k), nx, lk + nx, T(1), v);
      linalg::gemv<Trans::Yes>(one, nx, nu, T(-1), d.B_k(k), nx, lk + nx, T(0), v + nx);
      T* uk = u + std::size_t(k) * nu;
      for (int i = 0; i < nu; ++i) uk[i] = wk[nx + i];
      linalg::gemv<Trans::No>(one, nx, m, T(1), W, m, v, T(1), xk);
      linalg::gemv<Trans::No>(one, nu, m, T(1), W + nx, m, v, T(1), uk);
    }
    g.sync();
  }

  // lam's interior into `lambda` (strided).
  KNOT_HD void copy_lambda(T* lambda) {
    for (int i = g.rank(); i < nb * nx; i += g.size()) lambda[i] = w.lam[nx + i];
  }
  KNOT_HD void zero_lam() {
    for (int i = g.rank(); i < (nb + 2) * nx; i += g.size()) w.lam[i] = T(0);
    g.sync();
  }

  // The answer reduced to its controls (lq_schur.cpp's schur_rollout): x rolled forward from x_init,
  // the costates backward from x and u. One row per member, a barrier per knot.
  KNOT_HD_NOINLINE void rollout() {
    for (int i = g.rank(); i < nx; i += g.size()) s.x[i] = d.x_init[i];
    g.sync();
    for (int k = 0; k < N; ++k) {
      const T *A = d.A_k(k), *B = d.B_k(k), *xk = s.x_k(k), *uk = s.u_k(k);
      T* xn = s.x_k(k + 1);
      for (int i = g.rank(); i < nx; i += g.size()) {
        T acc = T(0);
        for (int j = 0; j < nx; ++j) acc += A[i + std::size_t(j) * nx] * xk[j];
        for (int j = 0; j < nu; ++j) acc += B[i + std::size_t(j) * nx] * uk[j];
        xn[i] = d.c_k(k)[i] + acc;
      }
      g.sync();
    }
    for (int k = N; k >= 0; --k) {
      const T *Q = d.Q_k(k), *xk = s.x_k(k);
      T* lk = s.lambda_k(k);
      for (int i = g.rank(); i < nx; i += g.size()) {
        T acc = T(0);
        for (int j = 0; j < nx; ++j) acc += Q[i + std::size_t(j) * nx] * xk[j];
        if (k < N) {
          const T *S = d.S_k(k), *A = d.A_k(k), *uk = s.u_k(k), *ln = s.lambda_k(k + 1);
          for (int j = 0; j < nu; ++j) acc += S[j + std::size_t(i) * nu] * uk[j];
          for (int j = 0; j < nx; ++j) acc += A[j + std::size_t(i) * nx] * ln[j];
        }
        lk[i] = d.q_k(k)[i] + acc;
      }
      g.sync();
    }
  }

  // The unregularized KKT residual of (x, u, lambda) = s into a, b, judged against tol row by row
  // (lq_schur.cpp's kkt_residual: |r_i| / max(tol, rounding floor of row i)).
  KNOT_HD_NOINLINE Check<T> residual() {
    using linalg::Trans;
    linalg::SerialGroup one;
    T* kinf = w.knot;
    T* kz = w.knot + nb;
    T* kratio = w.knot + 2 * nb;
    for (int k = g.rank(); k <= N; k += g.size()) {
      const T *x = s.x_k(k), *lam = s.lambda_k(k);
      T* ax = w.a + zk(k);
      for (int i = 0; i < nx; ++i) ax[i] = lam[i] - d.q_k(k)[i];
      linalg::gemv<Trans::No>(one, nx, nx, T(-1), d.Q_k(k), nx, x, T(1), ax);
      T inf = T(0);
      T zm = max_abs(inf_norm(x, std::size_t(nx)), inf_norm(lam, std::size_t(nx)));
      if (k == 0) {
        for (int i = 0; i < nx; ++i) w.b[i] = d.x_init[i] - x[i];
        inf = max_abs(inf, inf_norm(w.b, std::size_t(nx)));
      }
      if (k < N) {
        const T *u = s.u_k(k), *ln = s.lambda_k(k + 1);
        T* au = ax + nx;
        linalg::gemv<Trans::Yes>(one, nu, nx, T(-1), d.S_k(k), nu, u, T(1), ax);
        linalg::gemv<Trans::Yes>(one, nx, nx, T(-1), d.A_k(k), nx, ln, T(1), ax);
        for (int i = 0; i < nu; ++i) au[i] = -d.r_k(k)[i];
        linalg::gemv<Trans::No>(one, nu, nu, T(-1), d.R_k(k), nu, u, T(1), au);
        linalg::gemv<Trans::No>(one, nu, nx, T(-1), d.S_k(k), nu, x, T(1), au);
        linalg::gemv<Trans::Yes>(one, nx, nu, T(-1), d.B_k(k), nx, ln, T(1), au);
        T* bk = w.b + std::size_t(k + 1) * nx;
        for (int i = 0; i < nx; ++i) bk[i] = d.c_k(k)[i] - s.x_k(k + 1)[i];
        linalg::gemv<Trans::No>(one, nx, nx, T(1), d.A_k(k), nx, x, T(1), bk);
        linalg::gemv<Trans::No>(one, nx, nu, T(1), d.B_k(k), nx, u, T(1), bk);
        inf = max_abs(inf, inf_norm(bk, std::size_t(nx)));
        zm = max_abs(zm, inf_norm(u, std::size_t(nu)));
      }
      inf = max_abs(inf, inf_norm(ax, std::size_t(k < N ? m : nx)));
      kinf[k] = inf;
      kz[k] = zm;
    }
    g.sync();
    Check<T> c;
    T zmax = T(0);
    for (int k = 0; k <= N; ++k) {
      c.inf = max_abs(c.inf, kinf[k]);
      zmax = max_abs(zmax, kz[k]);
    }
    const T round = T(2 * (2 * nx + nu + 2)) * epsilon<T>();
    const T tl = tol;
    for (int k = g.rank(); k <= N; k += g.size()) {
      T ratio = T(0);
      // The running maximum; a NaN sticks.
      const auto judge = [&](T r, T magnitude, T coefficients) {
        if (r == T(0)) return;
        const T fl = round * (magnitude + coefficients * zmax);
        const T den = tl < fl ? fl : tl;
        const T q = den > T(0) ? abs_(r) / den : T(INFINITY);
        if (ratio != ratio) return;
        if (!(q <= ratio)) ratio = q;
      };
      const T *x = s.x_k(k), *lam = s.lambda_k(k), *Q = d.Q_k(k), *q = d.q_k(k);
      const T* ax = w.a + zk(k);
      if (k == 0)
        for (int i = 0; i < nx; ++i) judge(w.b[i], abs_(d.x_init[i]) + abs_(x[i]), T(1));
      const T *u = k < N ? s.u_k(k) : nullptr, *ln = k < N ? s.lambda_k(k + 1) : nullptr;
      const T *A = k < N ? d.A_k(k) : nullptr, *B = k < N ? d.B_k(k) : nullptr, *S = k < N ? d.S_k(k) : nullptr;
      for (int i = 0; i < nx; ++i) {
        T mag = abs_(q[i]) + abs_(lam[i]), coef = T(1);
        for (int j = 0; j < nx; ++j) {
          mag += abs_(Q[i + std::size_t(j) * nx] * x[j]);
          coef += abs_(Q[i + std::size_t(j) * nx]);
        }
        if (k < N) {
          for (int j = 0; j < nu; ++j) {
            mag += abs_(S[j + std::size_t(i) * nu] * u[j]);
            coef += abs_(S[j + std::size_t(i) * nu]);
          }
          for (int j = 0; j < nx; ++j) {
            mag += abs_(A[j + std::size_t(i) * nx] * ln[j]);
            coef += abs_(A[j + std::size_t(i) * nx]);
          }
        }
        judge(ax[i], mag, coef);
      }
      if (k < N) {
        const T *R = d.R_k(k), *r = d.r_k(k);
        for (int i = 0; i < nu; ++i) {
          T mag = abs_(r[i]), coef = T(0);
          for (int j = 0; j < nu; ++j) {
            mag += abs_(R[i + std::size_t(j) * nu] * u[j]);
            coef += abs_(R[i + std::size_t(j) * nu]);
          }
          for (int j = 0; j < nx; ++j) {
            mag += abs_(S[i + std::size_t(j) * nu] * x[j]) + abs_(B[j + std::size_t(i) * nx] * ln[j]);
            coef += abs_(S[i + std::size_t(j) * nu]) + abs_(B[j + std::size_t(i) * nx]);
          }
          judge(ax[nx + i], mag, coef);
        }
        const T *cc = d.c_k(k), *xn = s.x_k(k + 1);
        const T* bk = w.b + std::size_t(k + 1) * nx;
        for (int i = 0; i < nx; ++i) {
          T mag = abs_(cc[i]) + abs_(xn[i]), coef = T(1);
          for (int j = 0; j < nx; ++j) {
            mag += abs_(A[i + std::size_t(j) * nx] * x[j]);
            coef += abs_(A[i + std::size_t(j) * nx]);
          }
          for (int j = 0; j < nu; ++j) {
            mag += abs_(B[i + std::size_t(j) * nx] * u[j]);
            coef += abs_(B[i + std::size_t(j) * nx]);
          }
          judge(bk[i], mag, coef);
        }
      }
      kratio[k] = ratio;
    }
    g.sync();
    for (int k = 0; k <= N; ++k) {
      const T r = kratio[k];
      if (c.ratio != c.ratio) break;
      if (!(r <= c.ratio)) c.ratio = r;
    }
    g.sync();  // the per-knot values are read; the next writer may go on
    return c;
  }

  // Pcg's direct fallback: S factored by block Cholesky into chol. False when off, taken, or failing.
  KNOT_HD_NOINLINE bool to_direct() {
    if (!o.pcg || direct || w.chol == nullptr) return false;
    const std::size_t n = std::size_t(linalg::strips_size(nb, nx));
    for (std::size_t i = std::size_t(g.rank()); i < n; i += std::size_t(g.size())) w.chol[i] = w.strips[i];
    if (g.rank() == 0) *w.fail = 0;
    g.sync();
    linalg::bdsv_factor<true>(g, nb, nx, w.chol, nullptr, w.fail);
    const bool ok = *w.fail == 0;
    g.sync();
    if (!ok) return false;
    direct = true;
    return true;
  }

  // pcg's stop predicate on the first solve (lq_schur.cpp's pcg_stop): at iteration 1 and every 8th
  // after, the iterate recovered (and rolled out for an inexact step) and judged by the KKT check.
  KNOT_HD bool pcg_stop(int it) {
    constexpr int kCheckEvery = 8;
    if ((it - 1) % kCheckEvery != 0) return false;
    recover(s.x, s.u);
    copy_lambda(s.lambda);
    g.sync();
    if (roll) rollout();
    const Check<T> c = residual();
    accepted = c.ratio <= T(1);
    if (accepted || !(c.ratio - c.ratio == T(0))) return true;
    if (it == 1) {
      first_ratio = best_ratio = c.ratio;
      return false;
    }
    best_ratio = c.ratio < best_ratio ? c.ratio : best_ratio;
    if (it <= 1 + 2 * kCheckEvery) return false;
    using std::log;
    const T rate = log(best_ratio / first_ratio) / T(it - 1);
    return !(rate < T(0)) || log(best_ratio) / -rate > T(cap - it);
  }

  // (x, u, lambda) <- the solution for the right-hand side in a, b; pcg starts from lam's interior.
  KNOT_HD_NOINLINE Outcome apply(T* x, T* u, T* lambda, bool first) {
    rhs();
    Outcome outcome = Outcome::Converged;
    if (o.pcg && !direct) {
      T rel = T(o.pcg_rel_tol);
      check = first && w.chol != nullptr;
      if (inexact && !check) {
        T gmax = inf_norm(w.gamma + nx, std::size_t(nb) * nx);
        if (gmax > T(0)) {
          const T q = (T(0.1) * tol / gmax) * (T(0.1) * tol / gmax);
          const T loose = q < T(1e-2) ? q : T(1e-2);
          rel = rel < loose ? loose : rel;
        }
      }
      linalg::bdmv(g, nb, nx, w.pg, w.pinv, w.gamma);
      const T eta_rhs = linalg::dot(g, nb * nx, w.gamma + nx, w.pg + nx, w.pscr);
      if (eta_rhs == T(0)) {
        zero_lam();
      } else {
        const int iters = w.chol != nullptr && nb * nx < o.pcg_max_iters ? nb * nx : o.pcg_max_iters;
        cap = iters;
        const linalg::PcgOptions<T> po{iters, T(0), rel * eta_rhs, linalg::PcgStop::Absolute};
        accepted = false;
        const linalg::PcgResult r =
            check ? linalg::pcg(g, nb, nx, w.strips, w.pinv, w.gamma, w.lam, w.pscr, po,
                                [this](int it) { return pcg_stop(it); })
                  : linalg::pcg(g, nb, nx, w.strips, w.pinv, w.gamma, w.lam, w.pscr, po);
        st.pcg_iterations += r.iterations;
        if (!r.converged && !accepted) outcome = Outcome::NotConverged;
      }
      check = false;
    } else {
      for (int i = g.rank(); i < nb * nx; i += g.size()) w.lam[nx + i] = w.gamma[nx + i];
      g.sync();
      linalg::bdsv_solve(g, nb, nx, direct ? w.chol : w.strips, w.lam);
    }
    copy_lambda(lambda);
    recover(x, u);  // ends on a barrier, after copy_lambda's writes too
    if (direct) st.direct_fallback = true;
    return outcome;
  }

  // Iterative refinement against the unregularized KKT system until every row is within tol or its
  // rounding level (lq_schur.cpp's refine).
  KNOT_HD_NOINLINE DeviceLqStatus refine() {
    const int nxs = nb * nx, nus = N * nu;
    Check<T> c = residual();
    int steps = 0;
    const auto add = [&](T sign) {
      for (int i = g.rank(); i < nxs; i += g.size()) {
        s.x[i] += sign * w.dx[i];
        s.lambda[i] += sign * w.dl[i];
      }
      for (int i = g.rank(); i < nus; i += g.size()) s.u[i] += sign * w.du[i];
      g.sync();
    };
    while (!(c.ratio <= T(1)) && steps < o.max_refinement) {
      zero_lam();
      const Outcome out = apply(w.dx, w.du, w.dl, false);
      add(T(1));
      if (roll) rollout();
      ++st.refinement_steps;
      ++steps;
      const Check<T> next = residual();
      if (!(next.ratio < c.ratio || next.inf < c.inf)) {
        add(T(-1));
        if (roll) rollout();
        c = residual();
        if (to_direct()) {
          steps = 0;
          continue;
        }
        break;
      }
      c = next;
      if (out == Outcome::NotConverged && to_direct()) steps = 0;
    }
    st.kkt_residual = double(c.inf);
    return c.ratio <= T(1) ? DeviceLqStatus::Solved : DeviceLqStatus::MaxIterations;
  }

  // The Schur attempt alone (lq_schur.cpp's solve_schur).
  KNOT_HD_NOINLINE DeviceLqResult run(T tolerance) {
    DeviceLqResult r;
    const int failed = assemble();
    const auto not_spd = [&](int stage) {
      r.failed_stage = stage;
      r.status = finite(false) ? DeviceLqStatus::NotPositiveDefinite : DeviceLqStatus::NonFinite;
      return r;
    };
    if (failed >= 0) return not_spd(failed);
    if (o.pcg) {
      const int pf = o.stair ? linalg::precond_stair(g, nb, nx, w.strips, w.pinv, w.pscr)
                             : linalg::precond_block_jacobi(g, nb, nx, w.strips, w.pinv, w.pscr);
      if (pf != 0) return not_spd(pf - 1);
    } else {
      if (g.rank() == 0) *w.fail = 0;
      g.sync();
      linalg::bdsv_factor<true>(g, nb, nx, w.strips, nullptr, w.fail);
      const bool ok = *w.fail == 0;
      g.sync();
      if (!ok) return not_spd(-1);
    }
    const T rounding = T(o.refine_tol) * rhs_scale();
    inexact = tolerance > rounding;
    tol = tolerance < T(0) ? rounding : inexact ? tolerance : T(0);
    st.kkt_tolerance = double(tol);
    set_rhs();
    if (o.pcg && o.pcg_warm_start) {
      for (int i = g.rank(); i < nb * nx; i += g.size()) w.lam[nx + i] = s.lambda[i];
      for (int i = g.rank(); i < nx; i += g.size()) w.lam[i] = w.lam[std::size_t(nb + 1) * nx + i] = T(0);
      g.sync();
    } else {
      zero_lam();
    }
    roll = inexact && o.inexact_rollout;
    const Outcome outcome = apply(s.x, s.u, s.lambda, true);
    if (roll) rollout();
    if (outcome == Outcome::NotConverged) {
      if (!to_direct()) {
        const Check<T> c = residual();
        st.kkt_residual = double(c.inf);
        if (!finite(true) || !finite(false)) {
          r.status = DeviceLqStatus::NonFinite;
          return r;
        }
        r.status = c.ratio <= T(1) ? DeviceLqStatus::Solved : DeviceLqStatus::MaxIterations;
        return r;
      }
      // pcg gave up: the direct solve's answer from the start.
      set_rhs();
      apply(s.x, s.u, s.lambda, false);
      if (roll) rollout();
    }
    r.status = refine();
    if (!finite(true) || (r.status != DeviceLqStatus::Solved && !finite(false))) r.status = DeviceLqStatus::NonFinite;
    return r;
  }
};

}  // namespace schur_detail

// Scalars of schur_solve's scratch: its own work, then the Riccati fallback's.
template <class T>
KNOT_HD std::size_t schur_scratch_size(int nx, int nu, int N, const SchurOptions& o) {
  return schur_detail::Work<T>::size(nx, nu, N, o.pcg, o.pcg_direct_fallback) +
         (o.riccati_fallback ? riccati_scratch_size<T>(nx, nu, N) : 0);
}

// Solves the LQ of `lq` into `out` by the Schur complement (bdsv, or pcg from out.lambda when
// pcg_warm_start), holding the answer to `tolerance` on the unregularized KKT residual (negative:
// the rounding level refine_tol (1 + |q, r, c, x_init|); at or below it, every row to its rounding
// floor). Returns Solved, NotPositiveDefinite (a stage block, S or its preconditioner not SPD:
// failed_stage where known), MaxIterations (the refinement stalled above the tolerance), or
// NonFinite; with riccati_fallback, the two middle ones are the Riccati recursion's answer and
// status instead (stats.riccati_fallback). Every member calls it with the same arguments; ends on a
// barrier.
template <class G, class T>
KNOT_HD_NOINLINE DeviceLqResult schur_solve(G& g, const LqView<T>& lq, const StepView<T>& out, T* scratch,
                                   const SchurOptions& o, T tolerance, SchurStats& stats) {
  stats = SchurStats{};
  const auto w = schur_detail::Work<T>::carve(lq.nx, lq.nu, lq.N, o.pcg, o.pcg_direct_fallback, scratch);
  schur_detail::Solve<G, T> solve(g, lq, out, w, o, stats);
  const DeviceLqResult r = solve.run(tolerance);
  if (!o.riccati_fallback || (r.status != DeviceLqStatus::NotPositiveDefinite && r.status != DeviceLqStatus::MaxIterations))
    return r;
  T* rs = scratch + schur_detail::Work<T>::size(lq.nx, lq.nu, lq.N, o.pcg, o.pcg_direct_fallback);
  const DeviceLqResult f = riccati_solve(g, lq, out, rs);
  stats.riccati_fallback = true;
  stats.kkt_residual = 0;
  return f;
}

}  // namespace knot::solver::device
