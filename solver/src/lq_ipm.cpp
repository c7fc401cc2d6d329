// Primal-dual interior point for the box-constrained LQ problem (lq_ipm.hpp): Mehrotra
// predictor-corrector, each Newton system an LQ problem solved by LqSolver.
//
// Every finite bound is a row  s = sg (v - b) >= 0  (sg = +1 for a lower bound, -1 for an upper one;
// v the bounded entry of x_k or u_k) with multiplier z >= 0 entering v's stationarity row as -sg z.
// Per bound: primal residual rp = sg (v - b) - s; complementarity target s z = sigma mu.
// Linearized: ds = sg dv + rp, dz = (-rc - z ds) / s with rc = s z (predictor) or
// s z - sigma mu + ds_a dz_a (corrector, ds_a dz_a from the predictor). Eliminating ds, dz leaves on
// v's row Sigma = z / s on the diagonal and sg (rc + z rp) / s on the right-hand side, so the Newton
// step (dx, du, dlambda) solves the LQ problem with
//   Q_k, R_k diagonal  += Sigma
//   q_k, r_k            = stationarity residual of the iterate + sg (rc + z rp) / s
//   c_k, x_init         = dynamics and initial-state residuals of the iterate
// The step is formed rather than the next point: near the solution Sigma reaches 1e10 and more, and
// the full next point's rounding error (relative to |x|) times Sigma would swamp stationarity; the
// step's error is relative to the (small) step.
//
// Stationarity and dynamics are linear in (x, u, lambda, z), so the step x += alpha dx (the same for
// u, lambda, s, z) scales their residuals by (1 - alpha) up to the rounding of the Newton solve. They
// are computed from the data at the start and whenever the scaled values pass the tolerance (the
// status is only ever Solved on residuals computed from the data); in between they are scaled, which
// saves a pass of matrix-vector products per iteration (10-15% of the time).
#include "knot/solver/lq_ipm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "lq_internal.hpp"

namespace knot::solver {

const char* to_string(LqIpmStatus status) {
  switch (status) {
    case LqIpmStatus::Solved: return "solved";
    case LqIpmStatus::MaxIterations: return "iteration limit: the KKT measures stayed above the tolerance";
    case LqIpmStatus::NotPositiveDefinite:
      return "not positive definite: a Newton system (the LQ problem with the barrier terms) is not convex";
    case LqIpmStatus::NonFinite: return "non-finite: NaN or Inf in the data or an iterate";
  }
  return "?";
}

std::string LqIpmOptions::validate() const {
  auto bad = [](const char* what, const std::string& found) { return std::string(what) + ", found " + found; };
  if (const std::string why = lq.validate(); !why.empty()) return "lq: " + why;
  if (!(tol > 0.0 && tol < 1.0)) return bad("tol must be in (0, 1)", std::to_string(tol));
  if (!(tol_stationarity > 0.0 && tol_stationarity < 1.0))
    return bad("tol_stationarity must be in (0, 1)", std::to_string(tol_stationarity));
  if (max_iter < 1) return bad("max_iter must be >= 1", std::to_string(max_iter));
  if (!(tau_min > 0.0 && tau_min < 1.0)) return bad("tau_min must be in (0, 1)", std::to_string(tau_min));
  if (!(init_slack > 0.0 && std::isfinite(init_slack)))
    return bad("init_slack must be positive and finite", std::to_string(init_slack));
  if (!(init_dual > 0.0 && std::isfinite(init_dual)))
    return bad("init_dual must be positive and finite", std::to_string(init_dual));
  return {};
}

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

LqBounds::LqBounds(int nx_, int nu_, int N_)
    : nx(nx_), nu(nu_), N(N_), lbu(static_cast<std::size_t>(N_) * nu_, -kInf),
      ubu(static_cast<std::size_t>(N_) * nu_, kInf), lbx(static_cast<std::size_t>(N_ + 1) * nx_, -kInf),
      ubx(static_cast<std::size_t>(N_ + 1) * nx_, kInf) {}

LqIpmSolution::LqIpmSolution(int nx_, int nu_, int N_)
    : nx(nx_), nu(nu_), N(N_), x(static_cast<std::size_t>(N_ + 1) * nx_), u(static_cast<std::size_t>(N_) * nu_),
      lambda(static_cast<std::size_t>(N_ + 1) * nx_), zl_u(u.size()), zu_u(u.size()), zl_x(x.size()),
      zu_x(x.size()) {}

namespace {

// The finite bounds of one kind (lower or upper, on x or on u), structure of arrays.
struct BoundSet {
  double sg = 1.0;    // +1 lower (s = v - b), -1 upper (s = b - v)
  int n = 0;
  int* idx = nullptr;   // entry of the x or u vector
  int* diag = nullptr;  // its diagonal entry in Q or R (all stages)
  double* b = nullptr;
  double* s = nullptr;
  double* z = nullptr;
  double* ds = nullptr;
  double* dz = nullptr;
  double* rp = nullptr;  // sg (v - b) - s
  double* is = nullptr;  // 1 / s
  double* w = nullptr;   // per-bound terms of the reductions

  // One pass over the set each. v, dv: the iterate's and the step's vector (x or u); entries
  // v[idx[i]] are gathered into a contiguous array first so that the arithmetic vectorizes, and the
  // members are read into restrict-qualified locals (a store through a double* could alias them, and
  // the compiler would then reload them in every iteration and not vectorize).
  // rp = sg (v - b) - s; the largest |rp|, the sum and the largest of s z into res, sum_sz, max_sz.
  void primal_residual(const double* v, double& res, double& sum_sz, double& max_sz) const;
  // is = 1 / s; Sigma = z / s onto the diagonal entries of M, sg (z + Sigma rp) onto h.
  void barrier_terms(double* M, double* h) const;
  // Affine step ds = sg dv + rp, dz = -z (s + ds) / s; returns the largest of 1, -ds/s, -dz/z.
  double affine_step(const double* dv) const;
  // Sum of (s + a ds)(z + a dz).
  double complementarity_after(double a) const;
  // dz <- (sigma_mu - ds dz) / s (ds, dz: the affine step), and -sg of it onto h.
  void corrector_terms(double sigma_mu, double* h) const;
  // Combined step ds = sg dv + rp, dz += -z (s + ds) / s; returns the largest of 0, -ds/s, -dz/z.
  double combined_step(const double* dv) const;
  void take_step(double alpha) const;
  // into[i] = v[idx[i]]: the bounded entries of v, contiguous.
  void gather(const double* KNOT_RESTRICT v, double* KNOT_RESTRICT into) const {
    for (int i = 0; i < n; ++i) into[i] = v[idx[i]];
  }
};

// Reductions over per-bound terms in four independent chains: in one chain every max or add waits
// for the one before, and these loops ran at a third of their arithmetic's speed.
double max_of(const double* v, int n, double init) {
  double m[4] = {init, init, init, init};
  int i = 0;
  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; ++l) m[l] = std::max(m[l], v[i + l]);
  for (; i < n; ++i) m[0] = std::max(m[0], v[i]);
  return std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
}

double sum_of(const double* v, int n) {
  double a[4] = {0.0, 0.0, 0.0, 0.0};
  int i = 0;
  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; ++l) a[l] += v[i + l];
  for (; i < n; ++i) a[0] += v[i];
  return (a[0] + a[1]) + (a[2] + a[3]);
}

void BoundSet::primal_residual(const double* KNOT_RESTRICT v, double& res, double& sum_sz, double& max_sz) const {
  const int n = this->n;
  const double sg = this->sg;
  double *KNOT_RESTRICT r = rp, *KNOT_RESTRICT a = ds, *KNOT_RESTRICT t = w;  // ds: scratch here
  const double *KNOT_RESTRICT bb = b, *KNOT_RESTRICT ss = s, *KNOT_RESTRICT zz = z;
  gather(v, a);
  for (int i = 0; i < n; ++i) {
    r[i] = sg * (a[i] - bb[i]) - ss[i];
    a[i] = std::abs(r[i]);
    t[i] = ss[i] * zz[i];
  }
  res = std::max(res, max_of(a, n, 0.0));
  sum_sz += sum_of(t, n);
  max_sz = std::max(max_sz, max_of(t, n, 0.0));
}

void BoundSet::barrier_terms(double* KNOT_RESTRICT M, double* KNOT_RESTRICT h) const {
  const int n = this->n;
  const double sg = this->sg;
  const int *KNOT_RESTRICT idx = this->idx;
  double* KNOT_RESTRICT iv = is;
  const double *KNOT_RESTRICT ss = s, *KNOT_RESTRICT zz = z, *KNOT_RESTRICT r = rp;
  for (int i = 0; i < n; ++i) iv[i] = 1.0 / ss[i];
  for (int i = 0; i < n; ++i) {
    const double zs = zz[i] * iv[i];
    M[diag[i]] += zs;
    h[idx[i]] += sg * (zz[i] + zs * r[i]);
  }
}

// The affine step is the combined one with no fixed part in dz (then -dz/z = (s + ds)/s).
double BoundSet::affine_step(const double* dv) const {
  std::fill(dz, dz + n, 0.0);
  return std::max(1.0, combined_step(dv));
}

double BoundSet::complementarity_after(double a) const {
  const int n = this->n;
  double* KNOT_RESTRICT t = w;
  const double *KNOT_RESTRICT ss = s, *KNOT_RESTRICT zz = z, *KNOT_RESTRICT d = ds, *KNOT_RESTRICT e = dz;
  for (int i = 0; i < n; ++i) t[i] = (ss[i] + a * d[i]) * (zz[i] + a * e[i]);
  return sum_of(t, n);
}

void BoundSet::corrector_terms(double sigma_mu, double* KNOT_RESTRICT h) const {
  const int n = this->n;
  const double sg = this->sg;
  const int *KNOT_RESTRICT idx = this->idx;
  double* KNOT_RESTRICT e = dz;
  const double *KNOT_RESTRICT d = ds, *KNOT_RESTRICT iv = is;
  for (int i = 0; i < n; ++i) e[i] = (sigma_mu - d[i] * e[i]) * iv[i];
  for (int i = 0; i < n; ++i) h[idx[i]] -= sg * e[i];
}

double BoundSet::combined_step(const double* KNOT_RESTRICT dv) const {
  const int n = this->n;
  const double sg = this->sg;
  double *KNOT_RESTRICT d = ds, *KNOT_RESTRICT e = dz, *KNOT_RESTRICT t = w;
  const double *KNOT_RESTRICT ss = s, *KNOT_RESTRICT zz = z, *KNOT_RESTRICT r = rp, *KNOT_RESTRICT iv = is;
  gather(dv, d);
  for (int i = 0; i < n; ++i) {
    const double di = sg * d[i] + r[i], ei = e[i] - zz[i] * (ss[i] + di) * iv[i], a = -di * iv[i], c = -ei / zz[i];
    d[i] = di;
    e[i] = ei;
    t[i] = a > c ? a : c;
  }
  return max_of(t, n, 0.0);
}

void BoundSet::take_step(double alpha) const {
  const int n = this->n;
  double *KNOT_RESTRICT ss = s, *KNOT_RESTRICT zz = z;
  const double *KNOT_RESTRICT d = ds, *KNOT_RESTRICT e = dz;
  for (int i = 0; i < n; ++i) {
    ss[i] += alpha * d[i];
    zz[i] += alpha * e[i];
  }
}

// The residuals of (x, u, lambda) without the bound multipliers, into w's vectors (the right-hand
// side of the Newton system):
//   w.q_k = Q_k x_k + S_k' u_k + q_k - lambda_k + A_k' lambda_{k+1}   (k < N; k = N: Q_N x_N + q_N - lambda_N)
//   w.r_k = R_k u_k + S_k x_k + r_k + B_k' lambda_{k+1}
//   w.c_k = A_k x_k + B_k u_k + c_k - x_{k+1},   w.x_init = x_init - x_0
template <int NX, int NU>
void newton_residuals(int nx_rt, int nu_rt, int N, const LqData& d, const LqIpmSolution& s, LqData& w) {
  const int nx = linalg::extent<NX>(nx_rt), nu = linalg::extent<NU>(nu_rt);
  for (int i = 0; i < nx; ++i) w.x_init[i] = d.x_init[i] - s.x[i];
  for (int k = 0; k <= N; ++k) {
    const double* x = s.x_k(k);
    double* rq = w.q_k(k);
    for (int i = 0; i < nx; ++i) rq[i] = d.q_k(k)[i] - s.lambda_k(k)[i];
    detail::mv_n<NX, NX>(nx, nx, d.Q_k(k), nx, x, rq);
    if (k == N) break;
    const double *u = s.u_k(k), *ln = s.lambda_k(k + 1), *A = d.A_k(k), *B = d.B_k(k), *S = d.S_k(k);
    detail::mv_t<NU, NX>(nu, nx, S, nu, u, 1.0, rq);
    detail::mv_t<NX, NX>(nx, nx, A, nx, ln, 1.0, rq);
    double* rr = w.r_k(k);
    std::memcpy(rr, d.r_k(k), static_cast<std::size_t>(nu) * sizeof(double));
    detail::mv_n<NU, NU>(nu, nu, d.R_k(k), nu, u, rr);
    detail::mv_n<NU, NX>(nu, nx, S, nu, x, rr);
    detail::mv_t<NX, NU>(nx, nu, B, nx, ln, 1.0, rr);
    double* rc = w.c_k(k);
    const double* xn = s.x_k(k + 1);
    for (int i = 0; i < nx; ++i) rc[i] = d.c_k(k)[i] - xn[i];
    detail::mv_n<NX, NX>(nx, nx, A, nx, x, rc);
    detail::mv_n<NX, NU>(nx, nu, B, nx, u, rc);
  }
}

}  // namespace

struct LqIpmSolver::Impl {
  int nx, nu, N;
  LqIpmOptions options;
  LqIpmStats stats;
  LqSolver lq;
  LqData work;       // the Newton system: the caller's matrices plus the barrier terms, residuals
  LqSolution step;   // the Newton step (dx, du, dlambda)
  detail::Arena arena;
  BoundSet set[4];   // lbx, ubx, lbu, ubu
  double* rq = nullptr;  // stationarity residual, x rows ((N+1) nx) and u rows (N nu), with -sg z
  double* rr = nullptr;

  Impl(int nx_, int nu_, int N_, const LqIpmOptions& o)
      : nx(nx_), nu(nu_), N(N_), options(o), lq(nx_, nu_, N_, o.lq), work(nx_, nu_, N_), step(nx_, nu_, N_) {
    const std::size_t cap[4] = {static_cast<std::size_t>(N) * nx, static_cast<std::size_t>(N) * nx,
                                static_cast<std::size_t>(N) * nu, static_cast<std::size_t>(N) * nu};
    std::size_t off[4][10];
    for (int t = 0; t < 4; ++t) {
      off[t][0] = arena.reserve_ints(cap[t]);
      off[t][1] = arena.reserve_ints(cap[t]);
      for (int a = 2; a < 10; ++a) off[t][a] = arena.reserve(cap[t]);
    }
    const std::size_t orq = arena.reserve(static_cast<std::size_t>(N + 1) * nx),
                      orr = arena.reserve(static_cast<std::size_t>(N) * nu);
    arena.allocate();
    rq = arena.at(orq);
    rr = arena.at(orr);
    for (int t = 0; t < 4; ++t) {
      BoundSet& bs = set[t];
      bs.sg = (t % 2 == 0) ? 1.0 : -1.0;
      bs.idx = arena.ints_at(off[t][0]);
      bs.diag = arena.ints_at(off[t][1]);
      bs.b = arena.at(off[t][2]);
      bs.s = arena.at(off[t][3]);
      bs.z = arena.at(off[t][4]);
      bs.ds = arena.at(off[t][5]);
      bs.dz = arena.at(off[t][6]);
      bs.rp = arena.at(off[t][7]);
      bs.is = arena.at(off[t][8]);
      bs.w = arena.at(off[t][9]);
    }
    detail::dispatch_sizes<detail::RiccatiNx, detail::ControlSizes>(nx, nu, [&](auto NX, auto NU) {
      residuals_ = &newton_residuals<decltype(NX)::value, decltype(NU)::value>;
    });
  }

  void (*residuals_)(int, int, int, const LqData&, const LqIpmSolution&, LqData&) = nullptr;

  LqIpmStatus run(const LqData& data, const LqBounds& bounds, LqIpmSolution& sol);
  void collect_bounds(const LqBounds& bounds);
  void copy_matrices(const LqData& data);
  void residuals(const LqData& data, const LqIpmSolution& sol, bool at_zero);
  void scatter_multipliers(LqIpmSolution& sol) const;
};

// Stationarity (into rq, rr; the bound multipliers included), dynamics and initial state (into
// work.c, work.x_init) of the iterate, from the data.
void LqIpmSolver::Impl::residuals(const LqData& data, const LqIpmSolution& sol, bool at_zero) {
  if (at_zero) {  // x = u = lambda = 0: the products vanish
    const auto copy = [](const std::vector<double>& from, std::vector<double>& to) {
      std::memcpy(to.data(), from.data(), from.size() * sizeof(double));
    };
    copy(data.q, work.q);
    copy(data.r, work.r);
    copy(data.c, work.c);
    copy(data.x_init, work.x_init);
  } else {
    residuals_(nx, nu, N, data, sol, work);
  }
  double* r[4] = {work.q.data(), work.q.data(), work.r.data(), work.r.data()};
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < set[t].n; ++i) r[t][set[t].idx[i]] -= set[t].sg * set[t].z[i];
  std::memcpy(rq, work.q.data(), work.q.size() * sizeof(double));
  std::memcpy(rr, work.r.data(), work.r.size() * sizeof(double));
}

void LqIpmSolver::Impl::collect_bounds(const LqBounds& bd) {
  for (BoundSet& bs : set) bs.n = 0;
  auto add = [](BoundSet& bs, int idx, int diag, double b) {
    bs.idx[bs.n] = idx;
    bs.diag[bs.n] = diag;
    bs.b[bs.n] = b;
    ++bs.n;
  };
  for (int k = 1; k <= N; ++k)
    for (int i = 0; i < nx; ++i) {
      const int idx = k * nx + i, diag = k * nx * nx + i * (nx + 1);
      if (bd.lbx[idx] > -kInf) add(set[0], idx, diag, bd.lbx[idx]);
      if (bd.ubx[idx] < kInf) add(set[1], idx, diag, bd.ubx[idx]);
    }
  for (int k = 0; k < N; ++k)
    for (int i = 0; i < nu; ++i) {
      const int idx = k * nu + i, diag = k * nu * nu + i * (nu + 1);
      if (bd.lbu[idx] > -kInf) add(set[2], idx, diag, bd.lbu[idx]);
      if (bd.ubu[idx] < kInf) add(set[3], idx, diag, bd.ubu[idx]);
    }
}

void LqIpmSolver::Impl::copy_matrices(const LqData& d) {
  const auto copy = [](const std::vector<double>& from, std::vector<double>& to) {
    std::memcpy(to.data(), from.data(), from.size() * sizeof(double));
  };
  copy(d.A, work.A);
  copy(d.B, work.B);
  copy(d.Q, work.Q);
  copy(d.R, work.R);
  copy(d.S, work.S);
}

void LqIpmSolver::Impl::scatter_multipliers(LqIpmSolution& sol) const {
  std::vector<double>* out[4] = {&sol.zl_x, &sol.zu_x, &sol.zl_u, &sol.zu_u};
  for (int t = 0; t < 4; ++t) {
    std::fill(out[t]->begin(), out[t]->end(), 0.0);
    for (int i = 0; i < set[t].n; ++i) (*out[t])[set[t].idx[i]] = set[t].z[i];
  }
}

LqIpmStatus LqIpmSolver::Impl::run(const LqData& data, const LqBounds& bounds, LqIpmSolution& sol) {
  const LqIpmOptions& o = options;
  stats = LqIpmStats{};
  collect_bounds(bounds);
  copy_matrices(data);
  const int m = set[0].n + set[1].n + set[2].n + set[3].n;
  stats.bounds = m;

  // Per bound set: the iterate's and the step's vector (x for lbx, ubx; u for lbu, ubu), the Newton
  // system's matrix and right-hand side, and the data's matrix (to reset the diagonals).
  const double* vec[4] = {sol.x.data(), sol.x.data(), sol.u.data(), sol.u.data()};
  const double* dvec[4] = {step.x.data(), step.x.data(), step.u.data(), step.u.data()};
  double* mat[4] = {work.Q.data(), work.Q.data(), work.R.data(), work.R.data()};
  double* rhs[4] = {work.q.data(), work.q.data(), work.r.data(), work.r.data()};
  const double* mat0[4] = {data.Q.data(), data.Q.data(), data.R.data(), data.R.data()};

  // Start: x = u = lambda = 0; s = max(distance of 0 to the bound, init_slack), z = init_dual.
  std::fill(sol.x.begin(), sol.x.end(), 0.0);
  std::fill(sol.u.begin(), sol.u.end(), 0.0);
  std::fill(sol.lambda.begin(), sol.lambda.end(), 0.0);
  double bscale = 1.0;
  for (BoundSet& bs : set)
    for (int i = 0; i < bs.n; ++i) {
      bs.s[i] = std::max(-bs.sg * bs.b[i], o.init_slack);
      bs.z[i] = o.init_dual;
      bscale = std::max(bscale, std::abs(bs.b[i]));
    }
  const double sscale = std::max({1.0, detail::inf_norm(data.q.data(), data.q.size()),
                                  detail::inf_norm(data.r.data(), data.r.size())});
  const double dscale = std::max({1.0, detail::inf_norm(data.c.data(), data.c.size()),
                                  detail::inf_norm(data.x_init.data(), data.x_init.size())});

  auto finish = [&](LqIpmStatus st) {
    scatter_multipliers(sol);
    return st;
  };
  auto lq_failed = [&](LqStatus st) {
    stats.lq_status = st;
    stats.failed_stage = lq.stats().failed_stage;
    return finish(st == LqStatus::NotPositiveDefinite ? LqIpmStatus::NotPositiveDefinite : LqIpmStatus::NonFinite);
  };

  // An inexact Newton step (pcg, or the Schur backends' refinement stopping above its tolerance) is
  // still a step: the residuals are then off their scaled values, which the confirmation catches.
  const auto usable = [&](LqStatus st) {
    stats.lq_status = st;
    return st == LqStatus::Solved || st == LqStatus::MaxIterations;
  };
  const auto measure = [&](bool at_zero) {  // from the data
    residuals(data, sol, at_zero);
    stats.stationarity = std::max(detail::inf_norm(rq, work.q.size()), detail::inf_norm(rr, work.r.size()));
    stats.dynamics = std::max(detail::inf_norm(work.c.data(), work.c.size()),
                              detail::inf_norm(work.x_init.data(), work.x_init.size()));
    return stats.stationarity <= o.tol_stationarity * sscale && stats.dynamics <= o.tol * dscale;
  };
  measure(true);
  double alpha = 0.0;  // of the last step
  for (int it = 0;; ++it) {
    if (it > 0) {  // the linear residuals shrink with the step, their norms with them
      const double f = 1.0 - alpha;
      double *wq = work.q.data(), *wr = work.r.data();
      for (std::size_t i = 0, n = work.q.size(); i < n; ++i) wq[i] = rq[i] *= f;
      for (std::size_t i = 0, n = work.r.size(); i < n; ++i) wr[i] = rr[i] *= f;
      for (double& v : work.c) v *= f;
      for (double& v : work.x_init) v *= f;
      stats.stationarity *= f;
      stats.dynamics *= f;
    }
    double sz = 0.0, res_bound = 0.0, szmax = 0.0;
    for (int t = 0; t < 4; ++t) set[t].primal_residual(vec[t], res_bound, sz, szmax);
    const double mu = m > 0 ? sz / m : 0.0;
    stats.bound_residual = res_bound;
    stats.mu = mu;
    stats.max_complementarity = szmax;
    if (!std::isfinite(mu + stats.stationarity + stats.dynamics + res_bound)) return finish(LqIpmStatus::NonFinite);
    if (stats.stationarity <= o.tol_stationarity * sscale && stats.dynamics <= o.tol * dscale && res_bound <= o.tol * bscale &&
        (o.complementarity_max ? szmax : mu) <= o.tol && measure(false))  // confirmed from the data; else go on from those residuals
      return finish(LqIpmStatus::Solved);
    if (it == o.max_iter) return finish(LqIpmStatus::MaxIterations);
    stats.iterations = it + 1;
    // work.q, work.r now equal rq, rr (written by residuals() or by the scaling above).

    // Predictor: Sigma on the diagonals (reset to the data's first: a variable may carry two
    // bounds) and sg (s z + z rp) / s = sg z (1 + rp / s) on the right-hand side; factor and solve.
    for (int t = 0; t < 4; ++t)
      for (int i = 0; i < set[t].n; ++i) mat[t][set[t].diag[i]] = mat0[t][set[t].diag[i]];
    for (int t = 0; t < 4; ++t) set[t].barrier_terms(mat[t], rhs[t]);
    // The affine step needs dx, du only (the costate sweep is skipped where the backend can).
    // A and B are the data's for the whole run (copy_matrices): from the second factorization on,
    // Riccati reuses its stage transposes (LqOptions::reuse_dynamics).
    if (it > 0) lq.dynamics_unchanged();
    if (const LqStatus st = m > 0 ? lq.solve_primal(work, step) : lq.solve(work, step); !usable(st))
      return lq_failed(st);
    if (m == 0) {  // no bounds: the LQ solution, one Newton step from any point
      const auto add = [](std::vector<double>& v, const std::vector<double>& dv) {
        for (std::size_t i = 0; i < v.size(); ++i) v[i] += dv[i];
      };
      add(sol.x, step.x);
      add(sol.u, step.u);
      add(sol.lambda, step.lambda);
      alpha = 1.0;
      continue;
    }

    // Affine step: ds = sg dv + rp, dz = -z (s + ds) / s. Its largest step is 1 / steep, steep the
    // largest of -ds/s and -dz/z = (s + ds)/s (and 1: the step is at most 1).
    double steep = 1.0;
    for (int t = 0; t < 4; ++t) steep = std::max(steep, set[t].affine_step(dvec[t]));
    const double amax = 1.0 / steep;
    double sz_aff = 0.0;
    for (const BoundSet& bs : set) sz_aff += bs.complementarity_after(amax);
    const double ratio = mu > 0.0 ? sz_aff / m / mu : 0.0;
    const double sigma_mu = ratio * ratio * ratio * mu;

    // Corrector: rc = s z - sigma mu + ds_a dz_a adds sg (ds_a dz_a - sigma mu) / s to the right-hand
    // side; the same matrices (resolve). dz keeps (sigma mu - ds_a dz_a) / s for the step below.
    for (int t = 0; t < 4; ++t) set[t].corrector_terms(sigma_mu, rhs[t]);
    // Riccati reuses its factorization; the other backends solve in full anyway, and solve() also
    // follows an inexact predictor (resolve() would return its status).
    const LqStatus st = lq.linsys() == Linsys::Riccati ? lq.resolve(work, step) : lq.solve(work, step);
    if (!usable(st)) return lq_failed(st);

    // Combined step: ds = sg dv + rp, dz = (sigma mu - ds_a dz_a) / s - z (s + ds) / s; fraction to
    // the boundary.
    steep = 0.0;
    for (int t = 0; t < 4; ++t) steep = std::max(steep, set[t].combined_step(dvec[t]));
    const double tau = std::max(o.tau_min, 1.0 - mu);
    alpha = steep > tau ? tau / steep : 1.0;
    if (!std::isfinite(alpha)) return finish(LqIpmStatus::NonFinite);

    const auto axpy = [alpha](std::vector<double>& v, const std::vector<double>& dv) {
      double* p = v.data();
      const double* d = dv.data();
      for (std::size_t i = 0, n = v.size(); i < n; ++i) p[i] += alpha * d[i];
    };
    axpy(sol.x, step.x);
    axpy(sol.u, step.u);
    axpy(sol.lambda, step.lambda);
    for (const BoundSet& bs : set) bs.take_step(alpha);
  }
}

namespace {
void check_sizes(const LqIpmSolver& s, const LqData& d, const LqBounds& b, const LqIpmSolution& sol) {
  const auto sized = [](const std::vector<double>& v, long n) { return static_cast<long>(v.size()) == n; };
  const long nx = s.nx(), nu = s.nu(), N = s.N();
  if (d.nx != nx || d.nu != nu || d.N != N || !sized(d.A, N * nx * nx) || !sized(d.B, N * nx * nu) ||
      !sized(d.c, N * nx) || !sized(d.Q, (N + 1) * nx * nx) || !sized(d.R, N * nu * nu) ||
      !sized(d.S, N * nu * nx) || !sized(d.q, (N + 1) * nx) || !sized(d.r, N * nu) || !sized(d.x_init, nx))
    throw std::invalid_argument("LqIpmSolver::solve: data does not have the solver's sizes (nx, nu, N)");
  if (b.nx != nx || b.nu != nu || b.N != N || !sized(b.lbu, N * nu) || !sized(b.ubu, N * nu) ||
      !sized(b.lbx, (N + 1) * nx) || !sized(b.ubx, (N + 1) * nx))
    throw std::invalid_argument("LqIpmSolver::solve: bounds do not have the solver's sizes (nx, nu, N)");
  if (sol.nx != nx || sol.nu != nu || sol.N != N || !sized(sol.x, (N + 1) * nx) || !sized(sol.u, N * nu) ||
      !sized(sol.lambda, (N + 1) * nx) || !sized(sol.zl_u, N * nu) || !sized(sol.zu_u, N * nu) ||
      !sized(sol.zl_x, (N + 1) * nx) || !sized(sol.zu_x, (N + 1) * nx))
    throw std::invalid_argument("LqIpmSolver::solve: solution does not have the solver's sizes (nx, nu, N)");
  const auto check = [](const std::vector<double>& lb, const std::vector<double>& ub, const char* name, long from) {
    for (std::size_t i = static_cast<std::size_t>(from); i < lb.size(); ++i)
      if (std::isnan(lb[i]) || std::isnan(ub[i]) || lb[i] > ub[i] || lb[i] == kInf || ub[i] == -kInf)
        throw std::invalid_argument(std::string("LqIpmSolver::solve: ") + name + " entry " + std::to_string(i) +
                                    ": need lower <= upper, not NaN, lower < +inf, upper > -inf; found [" +
                                    std::to_string(lb[i]) + ", " + std::to_string(ub[i]) + "]");
  };
  check(b.lbu, b.ubu, "lbu/ubu", 0);
  check(b.lbx, b.ubx, "lbx/ubx", nx);  // x_0 is fixed: its bounds are ignored
}
}  // namespace

LqIpmSolver::LqIpmSolver(int nx, int nu, int N, const LqIpmOptions& options) {
  if (nx < 1 || nu < 1 || N < 1)
    throw std::invalid_argument("LqIpmSolver: needs nx >= 1, nu >= 1, N >= 1, found nx = " + std::to_string(nx) +
                                ", nu = " + std::to_string(nu) + ", N = " + std::to_string(N));
  if (const std::string why = options.validate(); !why.empty()) throw std::invalid_argument("LqIpmOptions: " + why);
  impl_ = std::make_unique<Impl>(nx, nu, N, options);
}

LqIpmSolver::~LqIpmSolver() = default;
LqIpmSolver::LqIpmSolver(LqIpmSolver&&) noexcept = default;
LqIpmSolver& LqIpmSolver::operator=(LqIpmSolver&&) noexcept = default;

LqIpmStatus LqIpmSolver::solve(const LqData& data, const LqBounds& bounds, LqIpmSolution& solution) {
  check_sizes(*this, data, bounds, solution);
  return impl_->run(data, bounds, solution);
}

const LqIpmStats& LqIpmSolver::stats() const { return impl_->stats; }
const LqIpmOptions& LqIpmSolver::options() const { return impl_->options; }
int LqIpmSolver::nx() const { return impl_->nx; }
int LqIpmSolver::nu() const { return impl_->nu; }
int LqIpmSolver::N() const { return impl_->N; }

std::size_t LqIpmSolver::bytes_allocated() const {
  const Impl& m = *impl_;
  std::size_t vec = 0;
  for (const auto* v : {&m.work.A, &m.work.B, &m.work.c, &m.work.Q, &m.work.R, &m.work.S, &m.work.q, &m.work.r,
                        &m.work.x_init, &m.step.x, &m.step.u, &m.step.lambda})
    vec += v->capacity() * sizeof(double);
  return sizeof(Impl) + m.arena.bytes() + vec + m.lq.bytes_allocated();
}

}  // namespace knot::solver
