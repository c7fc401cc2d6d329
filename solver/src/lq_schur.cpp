// Schur-complement backends (Bdsv, Pcg): the method of GATO / MPCGPU with the Schur complement
// stored positive definite.
//
// Stack z_k = [x_k; u_k] (k < N), z_N = x_N, and write the problem as
//   minimize 1/2 z'G z + g'z  subject to  C z = b,
//   G = blkdiag(G_0, ..., G_{N-1}, Q_N),  G_k = [Q_k S_k'; S_k R_k],  g_k = [q_k; r_k],
//   C: row 0 is x_0 = x_init, row k+1 is x_{k+1} - A_k x_k - B_k u_k = c_k.
// With the Lagrangian of lq.hpp the KKT system is  G z - C'lambda = a,  C z = b  (a = -g). Then
//   z = G^-1 (a + C'lambda),   S lambda = gamma,   S = C G^-1 C',   gamma = b - C G^-1 a.
// S is symmetric positive definite and block-tridiagonal with nx x nx blocks; with W_k = G_k^-1,
// AB_k = [A_k B_k] and M_k = AB_k W_k:
//   S_kk = (W_k)_xx + M_{k-1} AB_{k-1}'   (no second term at k = 0),   S_{k+1,k} = -(M_k)_{:, x}
// and, with w_k = W_k a_k,
//   gamma_0 = b_0 - (w_0)_x,   gamma_{k+1} = b_{k+1} - (w_{k+1})_x + AB_k w_k
//   z_k = w_k + W_k [lambda_k - A_k' lambda_{k+1}; -B_k' lambda_{k+1}],   z_N = w_N + W_N lambda_N.
// S goes into GLASS [L|D|R] strips (store_block); bdsv factors and solves it, or pcg iterates on it
// with a block-Jacobi or symmetric-stair preconditioner.
//
// Singular stage blocks: G_k is only positive semidefinite whenever a state carries no weight. A
// stage whose Cholesky fails, or whose inverse has a diagonal entry above 1/rho_k (an eigenvalue
// below about rho_k), uses G_k + rho_k I, rho_k = schur_reg * the median of G_k's diagonal (the
// median, not the largest entry: an interior point's barrier terms put 1e10 and more on a few
// diagonal entries, and a shift relative to those would swamp every other direction). That solves a
// proximal-regularized KKT system; iterative refinement against the unregularized one
//   (z, lambda) += solve_rho(residual),   residual = (a - G z + C'lambda, b - C z)
// converges to its solution (a proximal-point iteration, contraction about rho / (rho + mu) with mu
// the smallest curvature of the cost on the constraints' null space), and each step reuses the
// factorization. The same refinement runs after every solve, regularized or not: an interior point's
// barrier terms make S ill-conditioned enough that a plain bdsv or pcg answer misses the tolerance
// (LqSolver::set_tolerance) the caller needs. docs/solver-lq.md records the accuracy.
//
// The Riccati fallback (LqOptions::riccati_fallback): this method needs every G_k positive definite
// (then the whole Hessian is, so its reduced Hessian is, and Riccati succeeds too), Riccati only the
// reduced Hessian. A solve that fails here (a G_k + rho_k I that is not positive definite, S or its
// preconditioner not factoring) or whose refinement stalls (the proximal iteration diverges exactly
// when the reduced Hessian has a negative eigenvalue) is handed to a Riccati backend on the same data:
// the status is then Riccati's at every regularization the SQP tries, and the answer its too.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "knot/linalg/band.hpp"
#include "knot/linalg/bdmv.hpp"
#include "knot/linalg/bdsv.hpp"
#include "knot/linalg/dense/gemm.hpp"
#include "knot/linalg/dense/gemv.hpp"
#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/dense/trsm.hpp"
#include "knot/linalg/pcg.hpp"
#include "knot/linalg/precond.hpp"
#include "lq_internal.hpp"

namespace knot::solver::detail {
namespace {

using linalg::BandSlot;
using linalg::Trans;

struct SchurWork {
  double* Ginv;     // N blocks m x m, then Q_N^-1 (nx x nx)
  double* strips;   // N+1 strips nx x 3nx (S; bdsv factors it in place)
  double* pinv;     // N+1 strips (pcg preconditioner) or null
  double* pcg_scratch;
  double* a;        // stationarity right-hand side, z layout (N blocks m, then nx)
  double* b;        // feasibility right-hand side, (N+1) nx
  double* w;        // G^-1 a, z layout
  double* gamma;    // padded (N+3) nx
  double* lam;      // padded (N+3) nx
  double* dx;       // refinement corrections
  double* du;
  double* dl;
  double* G;        // m x m scratch
  double* F;        // m x m (Cholesky factor of G_k)
  double* AB;       // nx x m
  double* M;        // nx x m
  double* D;        // nx x nx (the next diagonal block's M AB' term)
  double* v;        // m
  double* pg;       // padded (N+3) nx: P^-1 gamma (pcg)
  double* chol;     // N+1 strips: S factored by block Cholesky (pcg's direct fallback) or null
  double (*inverse)(int, double, const double*, double*, double*);  // stage_inverse at m = nx + nu
};

struct Dims {
  int nx, nu, N;
  int m() const { return nx + nu; }
  std::size_t z_size() const { return static_cast<std::size_t>(N) * m() + nx; }
};

template <int NX, int NU>
constexpr int kM = (NX == kDynamic || NU == kDynamic) ? kDynamic : NX + NU;

// W = G^-1 for an SPD block, regularized when singular or nearly so: F = chol(G) (potrf), then
// W = I and two triangular solves W <- L^-T (L^-1 W), which at fixed sizes keep their columns in
// registers (spd_inverse solves with run-time heights: bdsv ran 1.4x slower at (12, 4, 50)). G: lower
// triangle read, ld n; F: n x n scratch. Returns rho used (0 when none), or -1 when G + rho I is not
// positive definite either.
template <int NN>
double stage_inverse(int n_rt, double reg, const double* G, double* F, double* W) {
  using linalg::Side;
  using linalg::Uplo;
  const int n = linalg::extent<NN>(n_rt);
  Serial g;
  // F: scratch until factor_invert. NaN counts as 0 (nth_element needs an ordering; the Cholesky
  // then fails and the caller reports NonFinite).
  for (int i = 0; i < n; ++i) F[i] = G[i + i * n] > 0.0 ? G[i + i * n] : 0.0;
  std::nth_element(F, F + n / 2, F + n);
  double s = F[n / 2];
  if (s <= 0.0) {  // more than half the diagonal zero: the largest entry
    for (int i = 0; i < n; ++i) s = std::max(s, F[i]);
  }
  if (s <= 0.0) s = 1.0;
  const double rho = reg * s;
  const auto factor_invert = [&](double shift) {
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) F[i + j * n] = G[i + j * n] + (i == j ? shift : 0.0);
    if (linalg::potrf<NN>(g, n, F, n) != 0) return false;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) W[i + j * n] = i == j ? 1.0 : 0.0;
    linalg::trsm<Side::Left, Uplo::Lower, Trans::No, NN, NN>(g, n, n, 1.0, F, n, W, n);
    linalg::trsm<Side::Left, Uplo::Lower, Trans::Yes, NN, NN>(g, n, n, 1.0, F, n, W, n);
    return true;
  };
  if (factor_invert(0.0)) {
    double wmax = 0.0;
    for (int i = 0; i < n; ++i) wmax = std::max(wmax, W[i + i * n]);
    if (wmax * rho <= 1.0) return 0.0;
  }
  return factor_invert(rho) ? rho : -1.0;
}

// Stage inverses and the strips of S. Returns -1 on success, else the failing stage; counts the
// regularized stages.
template <int NX, int NU>
int schur_assemble(const Dims& dm, const LqData& d, const SchurWork& w, double reg, LqStats& st) {
  constexpr int MM = kM<NX, NU>;
  const int nx = linalg::extent<NX>(dm.nx), nu = linalg::extent<NU>(dm.nu), N = dm.N;
  const int m = nx + nu;
  Serial g;
  const std::size_t sxx = static_cast<std::size_t>(nx) * nx, smm = static_cast<std::size_t>(m) * m;
  for (int k = 0; k <= N; ++k) {
    double* strip = w.strips + linalg::strip_offset(k, nx);
    double* W = w.Ginv + k * smm;
    const int n = k < N ? m : nx;
    // G_k's lower triangle (the inverse reads no more).
    const double* Q = d.Q_k(k);
    for (int j = 0; j < nx; ++j)
      for (int i = j; i < nx; ++i) w.G[i + j * n] = Q[i + j * nx];
    if (k < N) {
      const double *R = d.R_k(k), *S = d.S_k(k);
      for (int j = 0; j < nx; ++j)
        for (int i = 0; i < nu; ++i) w.G[nx + i + j * m] = S[i + j * nu];
      for (int j = 0; j < nu; ++j)
        for (int i = j; i < nu; ++i) w.G[nx + i + (nx + j) * m] = R[i + j * nu];
    }
    const double rho = k < N ? (MM != kDynamic ? stage_inverse<MM>(m, reg, w.G, w.F, W) : w.inverse(m, reg, w.G, w.F, W))
                             : stage_inverse<NX>(nx, reg, w.G, w.F, W);
    if (rho < 0.0) return k;
    if (rho > 0.0) {
      ++st.regularized_stages;
      st.regularization = std::max(st.regularization, rho);
    }
    // Diagonal block: (W_k)_xx plus the previous stage's M AB' (held in w.D).
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nx; ++i) w.D[i + j * nx] = (k > 0 ? w.D[i + j * nx] : 0.0) + W[i + j * n];
    mirror_lower<NX>(nx, w.D, nx);
    linalg::store_block<true, NX>(g, nx, strip, BandSlot::MAIN, w.D);
    if (k == N) break;
    std::memcpy(w.AB, d.A_k(k), sxx * sizeof(double));
    std::memcpy(w.AB + sxx, d.B_k(k), static_cast<std::size_t>(nx) * nu * sizeof(double));
    linalg::gemm<Trans::No, Trans::No, NX, MM, MM>(g, nx, m, m, 1.0, w.AB, nx, W, m, 0.0, w.M, nx);
    linalg::gemm<Trans::No, Trans::Yes, NX, NX, MM>(g, nx, nx, m, 1.0, w.M, nx, w.AB, nx, 0.0, w.D, nx);
    // S_{k+1,k} = -(M_k)_{:,x}: LEFT of block-row k+1 as laid out, RIGHT of block-row k transposed.
    linalg::store_block<true, NX>(g, nx, strip + 3 * sxx, BandSlot::LEFT, w.M, -1.0);
    linalg::store_block<false, NX>(g, nx, strip, BandSlot::RIGHT, w.M, -1.0);
  }
  return -1;
}

// gamma = b - C G^-1 a (padded), keeping w = G^-1 a.
template <int NX, int NU>
void schur_rhs(const Dims& dm, const LqData& d, const SchurWork& w) {
  constexpr int MM = kM<NX, NU>;
  const int nx = linalg::extent<NX>(dm.nx), nu = linalg::extent<NU>(dm.nu), N = dm.N;
  const int m = nx + nu;
  Serial g;
  const std::size_t smm = static_cast<std::size_t>(m) * m;
  for (int k = 0; k <= N; ++k) {
    const double* W = w.Ginv + k * smm;
    double* wk = w.w + static_cast<std::size_t>(k) * m;
    const double* ak = w.a + static_cast<std::size_t>(k) * m;
    if (k < N) {
      linalg::gemv<Trans::No, MM, MM>(g, m, m, 1.0, W, m, ak, 0.0, wk);
    } else {
      linalg::gemv<Trans::No, NX, NX>(g, nx, nx, 1.0, W, nx, ak, 0.0, wk);
    }
    double* gk = w.gamma + static_cast<std::size_t>(k + 1) * nx;
    const double* bk = w.b + static_cast<std::size_t>(k) * nx;
    for (int i = 0; i < nx; ++i) gk[i] = bk[i] - wk[i];
    if (k > 0) {
      const double* wp = w.w + static_cast<std::size_t>(k - 1) * m;
      linalg::gemv<Trans::No, NX, NX>(g, nx, nx, 1.0, d.A_k(k - 1), nx, wp, 1.0, gk);
      linalg::gemv<Trans::No, NX, NU>(g, nx, nu, 1.0, d.B_k(k - 1), nx, wp + nx, 1.0, gk);
    }
  }
}

// z = w + G^-1 C'lambda into x, u (lambda padded).
template <int NX, int NU>
void schur_recover(const Dims& dm, const LqData& d, const SchurWork& w, double* x, double* u) {
  constexpr int MM = kM<NX, NU>;
  const int nx = linalg::extent<NX>(dm.nx), nu = linalg::extent<NU>(dm.nu), N = dm.N;
  const int m = nx + nu;
  Serial g;
  const std::size_t smm = static_cast<std::size_t>(m) * m;
  for (int k = 0; k <= N; ++k) {
    const double* W = w.Ginv + k * smm;
    const double* wk = w.w + static_cast<std::size_t>(k) * m;
    const double* lk = w.lam + static_cast<std::size_t>(k + 1) * nx;
    double* xk = x + static_cast<std::size_t>(k) * nx;
    std::memcpy(xk, wk, nx * sizeof(double));
    if (k == N) {
      linalg::gemv<Trans::No, NX, NX>(g, nx, nx, 1.0, W, nx, lk, 1.0, xk);
      break;
    }
    // v = C'lambda at stage k.
    std::memcpy(w.v, lk, nx * sizeof(double));
    linalg::gemv<Trans::Yes, NX, NX>(g, nx, nx, -1.0, d.A_k(k), nx, lk + nx, 1.0, w.v);
    linalg::gemv<Trans::Yes, NX, NU>(g, nx, nu, -1.0, d.B_k(k), nx, lk + nx, 0.0, w.v + nx);
    double* uk = u + static_cast<std::size_t>(k) * nu;
    std::memcpy(uk, wk + nx, nu * sizeof(double));
    linalg::gemv<Trans::No, NX, MM>(g, nx, m, 1.0, W, m, w.v, 1.0, xk);
    linalg::gemv<Trans::No, NU, MM>(g, nu, m, 1.0, W + nx, m, w.v, 1.0, uk);
  }
}

// An inexact answer reduced to its controls (single shooting): x_0 = x_init,
// x_{k+1} = A_k x_k + B_k u_k + c_k, then the costates backward, lambda_N = Q_N x_N + q_N,
// lambda_k = Q_k x_k + S_k'u_k + q_k + A_k'lambda_{k+1}. The dynamics rows and the state rows of
// stationarity then hold to rounding, and what remains is the u rows' residual, the gradient of the
// condensed problem, which a full step carries one to one into the outer stationarity. Rolling x
// alone moved the rounding of the dynamics into the state rows instead, multiplied by their
// diagonal: an interior point's barrier terms of 1e9 there turned a dynamics residual of 1e-14 into
// a stationarity residual of 1e-5 that a floor scaled by the same diagonal admitted (bryson_denham
// then stalled at stationarity 2e-6 and ended line_search_failed on bdsv and pcg).
template <int NX, int NU>
void schur_rollout(const Dims& dm, const LqData& d, LqSolution& s) {
  const int nx = linalg::extent<NX>(dm.nx), nu = linalg::extent<NU>(dm.nu), N = dm.N;
  Serial g;
  std::memcpy(s.x_k(0), d.x_init.data(), static_cast<std::size_t>(nx) * sizeof(double));
  for (int k = 0; k < N; ++k) {
    double* xn = s.x_k(k + 1);
    std::memcpy(xn, d.c_k(k), static_cast<std::size_t>(nx) * sizeof(double));
    linalg::gemv<Trans::No, NX, NX>(g, nx, nx, 1.0, d.A_k(k), nx, s.x_k(k), 1.0, xn);
    linalg::gemv<Trans::No, NX, NU>(g, nx, nu, 1.0, d.B_k(k), nx, s.u_k(k), 1.0, xn);
  }
  for (int k = N; k >= 0; --k) {
    double* lk = s.lambda_k(k);
    std::memcpy(lk, d.q_k(k), static_cast<std::size_t>(nx) * sizeof(double));
    linalg::gemv<Trans::No, NX, NX>(g, nx, nx, 1.0, d.Q_k(k), nx, s.x_k(k), 1.0, lk);
    if (k == N) continue;
    linalg::gemv<Trans::Yes, NU, NX>(g, nu, nx, 1.0, d.S_k(k), nu, s.u_k(k), 1.0, lk);
    linalg::gemv<Trans::Yes, NX, NX>(g, nx, nx, 1.0, d.A_k(k), nx, s.lambda_k(k + 1), 1.0, lk);
  }
}

// The residual's inf-norm and how far it is from acceptable: the largest |r_i| / max(tol, floor_i),
// floor_i the rounding level of row i (per row: an interior point's barrier terms of 1e10 make some
// rows large and leave others small). NaN: ratio NaN.
struct KktCheck {
  double inf = 0;
  double ratio = 0;
};

// Residual of the unregularized KKT system at (x, u, lambda) into a (z layout) and b, judged against
// tol. a - (G z - C'lambda) and b - C z, with a = -g and b = (x_init, c).
template <int NX, int NU>
KktCheck kkt_residual(const Dims& dm, const LqData& d, const LqSolution& s, const SchurWork& w, double tol) {
  const int nx = linalg::extent<NX>(dm.nx), nu = linalg::extent<NU>(dm.nu), N = dm.N;
  const int m = nx + nu;
  Serial g;
  for (int i = 0; i < nx; ++i) w.b[i] = d.x_init[i] - s.x_k(0)[i];
  for (int k = 0; k <= N; ++k) {
    double* ax = w.a + static_cast<std::size_t>(k) * m;
    const double *x = s.x_k(k), *lam = s.lambda_k(k);
    for (int i = 0; i < nx; ++i) ax[i] = lam[i] - d.q_k(k)[i];
    linalg::gemv<Trans::No, NX, NX>(g, nx, nx, -1.0, d.Q_k(k), nx, x, 1.0, ax);
    if (k == N) break;
    const double *u = s.u_k(k), *ln = s.lambda_k(k + 1);
    double* au = ax + nx;
    linalg::gemv<Trans::Yes, NU, NX>(g, nu, nx, -1.0, d.S_k(k), nu, u, 1.0, ax);
    linalg::gemv<Trans::Yes, NX, NX>(g, nx, nx, -1.0, d.A_k(k), nx, ln, 1.0, ax);
    for (int i = 0; i < nu; ++i) au[i] = -d.r_k(k)[i];
    linalg::gemv<Trans::No, NU, NU>(g, nu, nu, -1.0, d.R_k(k), nu, u, 1.0, au);
    linalg::gemv<Trans::No, NU, NX>(g, nu, nx, -1.0, d.S_k(k), nu, x, 1.0, au);
    linalg::gemv<Trans::Yes, NX, NU>(g, nx, nu, -1.0, d.B_k(k), nx, ln, 1.0, au);
    double* bk = w.b + static_cast<std::size_t>(k + 1) * nx;
    for (int i = 0; i < nx; ++i) bk[i] = d.c_k(k)[i] - s.x_k(k + 1)[i];
    linalg::gemv<Trans::No, NX, NX>(g, nx, nx, 1.0, d.A_k(k), nx, x, 1.0, bk);
    linalg::gemv<Trans::No, NX, NU>(g, nx, nu, 1.0, d.B_k(k), nx, u, 1.0, bk);
  }
  KktCheck c;
  c.inf = std::max(inf_norm(w.a, dm.z_size()), inf_norm(w.b, static_cast<std::size_t>(N + 1) * nx));
  // Row i's rounding level: a few eps times the magnitudes of its products, |K||z| + |rhs| (the
  // componentwise backward error), plus its coefficients' sum times max|z| (Arioli, Demmel and Duff's
  // term for rows whose own products are tiny: a refinement correction carries rounding of the
  // size of the whole solution into every row). Twice the longest row's count of products.
  const double round = (2.0 * (2 * nx + nu + 2)) * std::numeric_limits<double>::epsilon();
  const double zmax = std::max({inf_norm(s.x.data(), s.x.size()), inf_norm(s.u.data(), s.u.size()),
                                inf_norm(s.lambda.data(), s.lambda.size())});
  const auto judge = [&](double r, double magnitude, double coefficients) {
    if (r == 0.0) return;
    const double den = std::max(tol, round * (magnitude + coefficients * zmax));
    const double q = den > 0.0 ? std::abs(r) / den : std::numeric_limits<double>::infinity();
    if (!(q <= c.ratio)) c.ratio = q;  // NaN propagates
  };
  for (int i = 0; i < nx; ++i) judge(w.b[i], std::abs(d.x_init[i]) + std::abs(s.x_k(0)[i]), 1.0);
  for (int k = 0; k <= N; ++k) {
    const double *x = s.x_k(k), *lam = s.lambda_k(k), *Q = d.Q_k(k), *q = d.q_k(k);
    const double* ax = w.a + static_cast<std::size_t>(k) * m;
    const double *u = k < N ? s.u_k(k) : nullptr, *ln = k < N ? s.lambda_k(k + 1) : nullptr;
    const double *A = k < N ? d.A_k(k) : nullptr, *B = k < N ? d.B_k(k) : nullptr, *S = k < N ? d.S_k(k) : nullptr;
    for (int i = 0; i < nx; ++i) {
      double mag = std::abs(q[i]) + std::abs(lam[i]), coef = 1.0;
      for (int j = 0; j < nx; ++j) {
        mag += std::abs(Q[i + j * nx] * x[j]);
        coef += std::abs(Q[i + j * nx]);
      }
      if (k < N) {
        for (int j = 0; j < nu; ++j) {
          mag += std::abs(S[j + i * nu] * u[j]);
          coef += std::abs(S[j + i * nu]);
        }
        for (int j = 0; j < nx; ++j) {
          mag += std::abs(A[j + i * nx] * ln[j]);
          coef += std::abs(A[j + i * nx]);
        }
      }
      judge(ax[i], mag, coef);
    }
    if (k == N) break;
    const double *R = d.R_k(k), *r = d.r_k(k);
    for (int i = 0; i < nu; ++i) {
      double mag = std::abs(r[i]), coef = 0.0;
      for (int j = 0; j < nu; ++j) {
        mag += std::abs(R[i + j * nu] * u[j]);
        coef += std::abs(R[i + j * nu]);
      }
      for (int j = 0; j < nx; ++j) {
        mag += std::abs(S[i + j * nu] * x[j]) + std::abs(B[j + i * nx] * ln[j]);
        coef += std::abs(S[i + j * nu]) + std::abs(B[j + i * nx]);
      }
      judge(ax[nx + i], mag, coef);
    }
    const double *cc = d.c_k(k), *xn = s.x_k(k + 1);
    const double* bk = w.b + static_cast<std::size_t>(k + 1) * nx;
    for (int i = 0; i < nx; ++i) {
      double mag = std::abs(cc[i]) + std::abs(xn[i]), coef = 1.0;
      for (int j = 0; j < nx; ++j) {
        mag += std::abs(A[i + j * nx] * x[j]);
        coef += std::abs(A[i + j * nx]);
      }
      for (int j = 0; j < nu; ++j) {
        mag += std::abs(B[i + j * nx] * u[j]);
        coef += std::abs(B[i + j * nx]);
      }
      judge(bk[i], mag, coef);
    }
  }
  return c;
}

class SchurBackend final : public LqBackend {
 public:
  SchurBackend(int nx, int nu, int N, const LqOptions& opt) : dm_{nx, nu, N}, opt_(opt), pcg_(opt.linsys == Linsys::Pcg) {
    const int m = nx + nu, nb = N + 1;
    const std::size_t smm = static_cast<std::size_t>(m) * m, zs = dm_.z_size();
    const std::size_t ns = static_cast<std::size_t>(linalg::strips_size(nb, nx));
    const std::size_t np = static_cast<std::size_t>(linalg::padded_size(nb, nx));
    const bool fallback = pcg_ && opt.pcg_direct_fallback;
    std::size_t o[20];
    o[0] = arena_.reserve(N * smm + static_cast<std::size_t>(nx) * nx);
    o[1] = arena_.reserve(ns);
    o[2] = pcg_ ? arena_.reserve(ns) : 0;
    o[3] = pcg_ ? arena_.reserve(static_cast<std::size_t>(
                      std::max(linalg::pcg_scratch_size(nb, nx), linalg::precond_scratch_size(nx))))
                : 0;
    o[4] = arena_.reserve(zs);
    o[5] = arena_.reserve(static_cast<std::size_t>(nb) * nx);
    o[6] = arena_.reserve(zs);
    o[7] = arena_.reserve(np);
    o[8] = arena_.reserve(np);
    o[9] = arena_.reserve(static_cast<std::size_t>(nb) * nx);
    o[10] = arena_.reserve(static_cast<std::size_t>(N) * nu);
    o[11] = arena_.reserve(static_cast<std::size_t>(nb) * nx);
    o[12] = arena_.reserve(smm);
    o[13] = arena_.reserve(smm);
    o[14] = arena_.reserve(static_cast<std::size_t>(nx) * m);
    o[15] = arena_.reserve(static_cast<std::size_t>(nx) * m);
    o[16] = arena_.reserve(static_cast<std::size_t>(nx) * nx);
    o[17] = arena_.reserve(m);
    o[18] = pcg_ ? arena_.reserve(np) : 0;
    o[19] = fallback ? arena_.reserve(ns) : 0;
    arena_.allocate();  // zeroed: the strips' unused corner slots and the vectors' pads stay zero
    w_ = {arena_.at(o[0]),  arena_.at(o[1]),  pcg_ ? arena_.at(o[2]) : nullptr, pcg_ ? arena_.at(o[3]) : nullptr,
          arena_.at(o[4]),  arena_.at(o[5]),  arena_.at(o[6]),  arena_.at(o[7]),  arena_.at(o[8]),
          arena_.at(o[9]),  arena_.at(o[10]), arena_.at(o[11]), arena_.at(o[12]), arena_.at(o[13]),
          arena_.at(o[14]), arena_.at(o[15]), arena_.at(o[16]), arena_.at(o[17]),
          pcg_ ? arena_.at(o[18]) : nullptr, fallback ? arena_.at(o[19]) : nullptr, nullptr};
    if (opt.riccati_fallback) {
      // Nobody announces unchanged dynamics to the fallback: no kept transposes.
      LqOptions fallback_options = opt;
      fallback_options.reuse_dynamics = false;
      riccati_ = make_riccati(nx, nu, N, fallback_options);
    }
    // The stage blocks' order m = nx + nu is fixed at compile time even where nu is not.
    dispatch_one(StageSizes{}, m, [&](auto MM) { w_.inverse = &stage_inverse<decltype(MM)::value>; });
    dispatch_sizes<SmallSizes, NoSizes>(nx, nu, [&](auto NX, auto NU) {
      constexpr int X = decltype(NX)::value, U = decltype(NU)::value;
      assemble_ = &schur_assemble<X, U>;
      rhs_ = &schur_rhs<X, U>;
      recover_ = &schur_recover<X, U>;
      residual_ = &kkt_residual<X, U>;
      rollout_ = &schur_rollout<X, U>;
      factor_ = [](int nb, int bs, double* strips, int* fail) {
        Serial g;
        linalg::bdsv_factor<true, X>(g, nb, bs, strips, nullptr, fail);
      };
      solve_ = [](int nb, int bs, const double* strips, double* v) {
        Serial g;
        linalg::bdsv_solve<X>(g, nb, bs, strips, v);
      };
      precond_ = opt.preconditioner == Preconditioner::Stair
                     ? +[](int nb, int bs, const double* S, double* P, double* s) {
                         Serial g;
                         return linalg::precond_stair<X>(g, nb, bs, S, P, s);
                       }
                     : +[](int nb, int bs, const double* S, double* P, double* s) {
                         Serial g;
                         return linalg::precond_block_jacobi<X>(g, nb, bs, S, P, s);
                       };
      pnorm_ = [](int nb, int bs, const double* P, const double* v, double* pv, double* red) {
        Serial g;
        linalg::bdmv<X>(g, nb, bs, pv, P, v);
        return linalg::dot(g, nb * bs, v + bs, pv + bs, red);
      };
      pcg_run_ = [](int nb, int bs, const double* S, const double* P, const double* gm, double* x, double* s,
                    const linalg::PcgOptions<double>& o) {
        Serial g;
        return linalg::pcg<X>(g, nb, bs, S, P, gm, x, s, o);
      };
      pcg_until_ = [](int nb, int bs, const double* S, const double* P, const double* gm, double* x, double* s,
                      const linalg::PcgOptions<double>& o, SchurBackend* self) {
        Serial g;
        return linalg::pcg<X>(g, nb, bs, S, P, gm, x, s, o, [self](int it) { return self->pcg_stop(it); });
      };
    });
  }

  LqStatus solve(const LqData& d, LqSolution& s, LqStats& st) override {
    const LqStatus status = solve_schur(d, s, st);
    if (riccati_ == nullptr || (status != LqStatus::NotPositiveDefinite && status != LqStatus::MaxIterations))
      return status;
    // Riccati's status and answer; what the Schur attempt counted (regularized stages, refinement
    // steps, pcg iterations) stays in the stats.
    const Linsys own = st.linsys;
    st.failed_stage = -1;
    const LqStatus fallback = riccati_->solve(d, s, st);
    st.linsys = own;
    st.riccati_fallback = true;
    st.kkt_residual = 0;  // exact to rounding, as for Riccati itself
    return fallback;
  }

  std::size_t bytes() const override {
    return arena_.bytes() + sizeof(*this) + (riccati_ != nullptr ? riccati_->bytes() : 0);
  }

 private:
  enum class Outcome { Converged, NotConverged, Stopped };

  LqStatus solve_schur(const LqData& d, LqSolution& s, LqStats& st) {
    const int nx = dm_.nx, N = dm_.N, nb = N + 1;
    st.linsys = pcg_ ? Linsys::Pcg : Linsys::Bdsv;
    direct_ = false;
    const int failed = assemble_(dm_, d, w_, opt_.schur_reg, st);
    if (failed >= 0) {
      st.failed_stage = failed;
      return data_finite(d) ? LqStatus::NotPositiveDefinite : LqStatus::NonFinite;
    }
    if (pcg_) {
      const int pf = precond_(nb, nx, w_.strips, w_.pinv, w_.pcg_scratch);
      if (pf != 0) {
        st.failed_stage = pf - 1;
        return data_finite(d) ? LqStatus::NotPositiveDefinite : LqStatus::NonFinite;
      }
    } else {
      int fail = 0;
      factor_(nb, nx, w_.strips, &fail);
      if (fail != 0) return data_finite(d) ? LqStatus::NotPositiveDefinite : LqStatus::NonFinite;
    }
    // The tolerance every answer is held to (LqSolver::set_tolerance, else the options' default,
    // rounding level). A caller's positive tolerance at or below rounding level is solved as 0 (every
    // row at its rounding floor): an inexact-Newton step asks for that only near the optimum, where
    // the rollout would only amplify rounding.
    const double scale =
        1.0 + std::max({inf_norm(d.q.data(), d.q.size()), inf_norm(d.r.data(), d.r.size()),
                        inf_norm(d.c.data(), d.c.size()), inf_norm(d.x_init.data(), d.x_init.size())});
    const double rounding = opt_.refine_tol * scale;
    inexact_ = tolerance > rounding;
    tol_ = tolerance < 0 ? rounding : inexact_ ? tolerance : 0.0;
    st.kkt_tolerance = tol_;
    set_rhs(d);
    if (pcg_ && opt_.pcg_warm_start) {
      std::memcpy(w_.lam + nx, s.lambda.data(), static_cast<std::size_t>(nb) * nx * sizeof(double));
    } else {
      std::fill(w_.lam + nx, w_.lam + static_cast<std::size_t>(nb + 1) * nx, 0.0);
    }
    // An inexact solve (the caller's tolerance above rounding level, SolverOptions::lq_forcing): the SQP
    // turns a residual left in a dynamics row into outer infeasibility (amplified by an equality
    // row's 1/delta), one left in a stationarity row only into a less exact Newton direction.
    roll_ = inexact_ && opt_.inexact_rollout;
    // pcg's first solve of a step stops on what the step will be judged by (pcg_stop), when a direct
    // solve can take over what pcg gives up (else pcg runs its own rule, to its count).
    check_ = pcg_ && w_.chol != nullptr ? &s : nullptr;
    check_data_ = &d;
    const Outcome outcome = apply(d, s.x.data(), s.u.data(), s.lambda.data(), st);
    check_ = nullptr;
    st.pcg_iterations = st.pcg_iterations_total;
    if (outcome == Outcome::Stopped) return LqStatus::Interrupted;
    if (roll_) rollout_(dm_, d, s);
    // pcg out of iterations: the iterate is judged by its residual like any other, but further pcg
    // corrections would run out the same way.
    if (outcome == Outcome::NotConverged) {
      if (!to_direct()) {
        const KktCheck c = residual_(dm_, d, s, w_, tol_);
        st.kkt_residual = c.inf;
        if (!solution_finite(s) || !data_finite(d)) return LqStatus::NonFinite;
        return c.ratio <= 1.0 ? LqStatus::Solved : LqStatus::MaxIterations;
      }
      // pcg gave up: the step is the direct solve's from the start, bdsv's arithmetic on the same S,
      // not a refinement of pcg's partial iterate (whose rounding differed from bdsv's answer enough
      // to change the filter's verdict on one warm-started cartpole_mpc step).
      set_rhs(d);
      apply(d, s.x.data(), s.u.data(), s.lambda.data(), st);
      if (roll_) rollout_(dm_, d, s);
    }
    const LqStatus status = refine(d, s, st);
    // NaN in the data may also just stop pcg (a non-finite residual), leaving a finite iterate.
    if (!solution_finite(s) || (status != LqStatus::Solved && !data_finite(d))) return LqStatus::NonFinite;
    return status;
  }

  // The problem's right-hand side: a = -g, b = (x_init, c).
  void set_rhs(const LqData& d) {
    const int nx = dm_.nx, nu = dm_.nu, N = dm_.N, m = nx + nu;
    for (int k = 0; k <= N; ++k) {
      double* ak = w_.a + static_cast<std::size_t>(k) * m;
      for (int i = 0; i < nx; ++i) ak[i] = -d.q_k(k)[i];
      if (k < N)
        for (int i = 0; i < nu; ++i) ak[nx + i] = -d.r_k(k)[i];
    }
    std::memcpy(w_.b, d.x_init.data(), nx * sizeof(double));
    std::memcpy(w_.b + nx, d.c.data(), static_cast<std::size_t>(N) * nx * sizeof(double));
  }

  // (x, u, lambda) <- the solution for the right-hand side in w_.a, w_.b; the lambda iteration starts
  // from w_.lam's interior (pcg). NotConverged: pcg ran out of iterations; Stopped: it passed the
  // deadline, and x, u, lambda are left as they were.
  Outcome apply(const LqData& d, double* x, double* u, double* lambda, LqStats& st) {
    const int nx = dm_.nx, nb = dm_.N + 1;
    rhs_(dm_, d, w_);
    Outcome outcome = Outcome::Converged;
    if (pcg_ && !direct_) {
      // Stop on r'P^-1 r < rel * gamma'P^-1 gamma: relative to the right-hand side, not to the start's
      // residual, so that a warm start close to the answer stops early. With a tolerance set by the
      // caller, rel is loosened toward (tol / |gamma|)^2 (r'P^-1 r estimates |r|^2 only roughly: the
      // KKT check after the solve decides, and refines what falls short).
      double rel = opt_.pcg_rel_tol;
      if (inexact_ && check_ == nullptr) {
        const double gmax = inf_norm(w_.gamma + nx, static_cast<std::size_t>(nb) * nx);
        if (gmax > 0) rel = std::max(rel, std::min(1e-2, (0.1 * tol_ / gmax) * (0.1 * tol_ / gmax)));
      }
      const double eta_rhs = pnorm_(nb, nx, w_.pinv, w_.gamma, w_.pg, w_.pcg_scratch);
      if (eta_rhs == 0.0) {
        std::fill(w_.lam + nx, w_.lam + static_cast<std::size_t>(nb + 1) * nx, 0.0);  // gamma = 0: lambda = 0
      } else {
        // With the direct fallback, at most n = (N+1) nx iterations: conjugate gradients ends in n
        // steps in exact arithmetic, and past that it only fights rounding, which the fallback does not.
        const int iters = w_.chol != nullptr ? std::min(opt_.pcg_max_iters, nb * nx) : opt_.pcg_max_iters;
        pcg_cap_ = iters;
        const linalg::PcgOptions<double> po{iters, 0.0, rel * eta_rhs, linalg::PcgStop::Absolute};
        accepted_ = false;
        const linalg::PcgResult r =
            has_deadline() || check_ != nullptr
                ? pcg_until_(nb, nx, w_.strips, w_.pinv, w_.gamma, w_.lam, w_.pcg_scratch, po, this)
                : pcg_run_(nb, nx, w_.strips, w_.pinv, w_.gamma, w_.lam, w_.pcg_scratch, po);
        st.pcg_iterations_total += r.iterations;
        if (r.stopped && !accepted_ && past_deadline()) return Outcome::Stopped;
        if (!r.converged && !accepted_) outcome = Outcome::NotConverged;  // out of iterations or of progress
      }
    } else {
      std::memcpy(w_.lam + nx, w_.gamma + nx, static_cast<std::size_t>(nb) * nx * sizeof(double));
      solve_(nb, nx, direct_ ? w_.chol : w_.strips, w_.lam);
    }
    std::memcpy(lambda, w_.lam + nx, static_cast<std::size_t>(nb) * nx * sizeof(double));
    recover_(dm_, d, w_, x, u);
    if (direct_) st.direct_fallback = true;
    return outcome;
  }

  // pcg's stop predicate, called before iteration it with the iterate lambda in w_.lam: the deadline,
  // and on the first solve of a step (pcg_direct_fallback on) the step itself. pcg's own rule (r'P^-1 r
  // against gamma'P^-1 gamma) says little about it: an interior point's barrier terms make S so
  // ill-conditioned that the rounding-level target is out of reach in any count (cartpole_mpc: 241
  // of 244 iterations on average, then the direct fallback). So at the first iteration (the warm
  // start) and every kCheckEvery after, the iterate is recovered and judged by the KKT check the
  // solve applies afterwards: accepted_ stops pcg with an iterate the solve then reproduces bitwise.
  // A best ratio that has not fallen fast enough to reach 1 within the cap at its mean rate since the
  // first check ends pcg too (not accepted: the direct solve answers). An inexact step's iterate is
  // rolled out before the check, as its answer will be. Each check costs about three products with S.
  static constexpr int kCheckEvery = 8;
  bool pcg_stop(int it) {
    if (past_deadline()) return true;
    if (check_ == nullptr || (it - 1) % kCheckEvery != 0) return false;
    LqSolution& s = *check_;
    const int nx = dm_.nx, nb = dm_.N + 1;
    recover_(dm_, *check_data_, w_, s.x.data(), s.u.data());
    std::memcpy(s.lambda.data(), w_.lam + nx, static_cast<std::size_t>(nb) * nx * sizeof(double));
    if (roll_) rollout_(dm_, *check_data_, s);
    const KktCheck c = residual_(dm_, *check_data_, s, w_, tol_);
    accepted_ = c.ratio <= 1.0;
    if (accepted_ || !std::isfinite(c.ratio)) return true;
    if (it == 1) {
      first_ratio_ = best_ratio_ = c.ratio;
      return false;
    }
    best_ratio_ = std::min(best_ratio_, c.ratio);
    if (it <= 1 + 2 * kCheckEvery) return false;  // CG's residual is not monotone: two checks first
    // Mean contraction per iteration since the first check, and the iterations it needs for ratio 1.
    const double rate = std::log(best_ratio_ / first_ratio_) / (it - 1);
    return !(rate < 0.0) || std::log(best_ratio_) / -rate > pcg_cap_ - it;
  }

  // Pcg's fallback: S (the strips pcg iterates on) factored by block Cholesky into w_.chol, so the
  // remaining corrections are direct. False when it is off, already taken, or the factorization fails.
  bool to_direct() {
    if (!pcg_ || direct_ || w_.chol == nullptr) return false;
    const int nx = dm_.nx, nb = dm_.N + 1;
    std::memcpy(w_.chol, w_.strips, static_cast<std::size_t>(linalg::strips_size(nb, nx)) * sizeof(double));
    int fail = 0;
    factor_(nb, nx, w_.chol, &fail);
    if (fail != 0) return false;
    direct_ = true;
    return true;
  }

  // Iterative refinement against the unregularized KKT system (see the top of the file) until every
  // row is within tol_ or its rounding level. Pcg corrections that stop reducing the residual hand
  // over to the direct fallback, which gets a refinement budget of its own.
  LqStatus refine(const LqData& d, LqSolution& s, LqStats& st) {
    const int nx = dm_.nx, nu = dm_.nu, N = dm_.N;
    const std::size_t nxs = static_cast<std::size_t>(N + 1) * nx, nus = static_cast<std::size_t>(N) * nu;
    KktCheck c = residual_(dm_, d, s, w_, tol_);
    int steps = 0;
    while (!(c.ratio <= 1.0) && steps < opt_.max_refinement) {
      if (past_deadline()) return LqStatus::Interrupted;
      std::fill(w_.lam + nx, w_.lam + nx + nxs, 0.0);
      const Outcome o = apply(d, w_.dx, w_.du, w_.dl, st);
      if (o == Outcome::Stopped) return LqStatus::Interrupted;
      for (std::size_t i = 0; i < nxs; ++i) s.x[i] += w_.dx[i];
      for (std::size_t i = 0; i < nus; ++i) s.u[i] += w_.du[i];
      for (std::size_t i = 0; i < nxs; ++i) s.lambda[i] += w_.dl[i];
      if (roll_) rollout_(dm_, d, s);
      ++st.refinement_steps;
      ++steps;
      const KktCheck next = residual_(dm_, d, s, w_, tol_);
      // Progress on either measure: a tiny tolerance lets the worst ratio sit on a row at rounding
      // level while the others still shrink. Neither: stalled or diverging; keep the better iterate.
      if (!(next.ratio < c.ratio || next.inf < c.inf)) {
        for (std::size_t i = 0; i < nxs; ++i) s.x[i] -= w_.dx[i];
        for (std::size_t i = 0; i < nus; ++i) s.u[i] -= w_.du[i];
        for (std::size_t i = 0; i < nxs; ++i) s.lambda[i] -= w_.dl[i];
        if (roll_) rollout_(dm_, d, s);
        c = residual_(dm_, d, s, w_, tol_);  // the right-hand side of the next correction
        if (to_direct()) {
          steps = 0;
          continue;
        }
        break;
      }
      c = next;
      // A pcg correction that ran out of iterations: the next would too.
      if (o == Outcome::NotConverged && to_direct()) steps = 0;
    }
    st.kkt_residual = c.inf;
    return c.ratio <= 1.0 ? LqStatus::Solved : LqStatus::MaxIterations;
  }

  Dims dm_;
  LqOptions opt_;
  bool pcg_;
  Arena arena_;
  SchurWork w_{};
  std::unique_ptr<LqBackend> riccati_;  // LqOptions::riccati_fallback, else null
  int (*assemble_)(const Dims&, const LqData&, const SchurWork&, double, LqStats&) = nullptr;
  void (*rhs_)(const Dims&, const LqData&, const SchurWork&) = nullptr;
  void (*recover_)(const Dims&, const LqData&, const SchurWork&, double*, double*) = nullptr;
  KktCheck (*residual_)(const Dims&, const LqData&, const LqSolution&, const SchurWork&, double) = nullptr;
  void (*rollout_)(const Dims&, const LqData&, LqSolution&) = nullptr;
  bool inexact_ = false;  // the caller's tolerance is above rounding level
  bool roll_ = false;     // inexact_ and LqOptions::inexact_rollout
  LqSolution* check_ = nullptr;          // pcg_stop judges the first solve's iterates into it
  const LqData* check_data_ = nullptr;
  bool accepted_ = false;                // pcg_stop accepted the iterate
  double first_ratio_ = 0, best_ratio_ = 0;  // pcg_stop's KKT check at the first iteration, and the best
  int pcg_cap_ = 0;                      // pcg's iteration limit in the solve in progress
  double tol_ = 0;        // the tolerance of the solve in progress
  bool direct_ = false;   // pcg switched to the block Cholesky fallback during this solve
  void (*factor_)(int, int, double*, int*) = nullptr;
  void (*solve_)(int, int, const double*, double*) = nullptr;
  int (*precond_)(int, int, const double*, double*, double*) = nullptr;
  double (*pnorm_)(int, int, const double*, const double*, double*, double*) = nullptr;  // v'P v
  linalg::PcgResult (*pcg_run_)(int, int, const double*, const double*, const double*, double*, double*,
                                const linalg::PcgOptions<double>&) = nullptr;
  // pcg_run_ with pcg_stop as its stop predicate (the deadline, the inexact step's own check).
  linalg::PcgResult (*pcg_until_)(int, int, const double*, const double*, const double*, double*, double*,
                                  const linalg::PcgOptions<double>&, SchurBackend*) = nullptr;
};

}  // namespace

std::unique_ptr<LqBackend> make_schur(int nx, int nu, int N, const LqOptions& opt) {
  return std::make_unique<SchurBackend>(nx, nu, N, opt);
}

}  // namespace knot::solver::detail
