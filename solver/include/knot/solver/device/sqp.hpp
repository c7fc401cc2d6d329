// The batched SQP's driver: one problem's whole solve, written once against an execution group.
//
// This is Solver's algorithm (sqp_solver.cpp, sqp_step.cpp, sqp_linearize.cpp, sqp_barrier.cpp,
// sqp_restore.cpp; docs/solver.md derives it) restated on raw arrays so that it runs on a
// SerialGroup, on a ThreadedGroup and in a CUDA block: Gauss-Newton steps, the interior point for
// inequality rows (central start with its probe step, monotone barrier update, fraction to the
// boundary), stabilized equality rows, objective scaling, the LQ step (the Riccati recursion, or
// the Schur complement by bdsv or pcg with Solver's inexact-Newton tolerance, schur.hpp) with
// Hessian regularization, the filter, merit or no line search with the rollout fallback, and the
// solved / acceptable tests, and the Hessian: Gauss-Newton, exact (the Lagrangian's curvature per
// knot, hessian.hpp) or auto (Solver's switch from one to the other). What it leaves out (a problem
// or options asking for them do not fit the device path, device_sqp_unsupported says so): the
// kkt_ldlt backend, control-rate costs, the time limit and the iteration callback, warm starts after
// shift(); in CUDA builds, the exact Hessian.
//
// Execution model (docs/batch.md): the arrays of SqpArrays are shared by the group; per-knot and
// per-row work is split by the strided loops of linalg (one writer per element), with g.sync()
// between dependent phases. The scalar state (mu, the penalty, the filter's bounds, the status) is
// held by every member in its own copy and updated by every member identically from the shared
// arrays, which each member reads in the same fixed order: results and decisions are bitwise the
// same for every group size, and no member writes a scalar another one reads. Only rank 0 writes
// the result and the per-iteration rows.
#pragma once

#include <cmath>
#include <cstddef>

#include "knot/linalg/config.hpp"
#include "knot/solver/device/linearize.hpp"
#include "knot/solver/device/problem.hpp"
#include "knot/solver/device/riccati.hpp"
#include "knot/solver/device/schur.hpp"
#include "knot/solver/device/views.hpp"
#include "knot/solver/stats.hpp"
#include "knot/solver/status.hpp"

namespace knot::solver::device {

// The options the device path reads: SolverOptions' fields of the same names (device_options()
// in batch_device.hpp copies them). Plain data, copied to the device as it is.
struct DeviceOptions {
  int max_iter = 100;
  double tol_stationarity = 1e-8, tol_feasibility = 1e-8, tol_complementarity = 1e-8, tol_duality_gap = 1e-10;
  double scale_max = 100;
  double objective_scale_min = 1e-2, objective_scale_max = 1e4, objective_scale_target = 100;
  double acceptable_tol = 1e-6;
  int acceptable_iter = 10;
  double reg_init = 1e-8, reg_growth = 10, reg_max = 1e8;
  double mu_init = 0.1, mu_min = 1e-9, mu_linear = 0.2, mu_superlinear = 1.5, barrier_tol = 10;
  double tau_min = 0.995, slack_push = 1e-2, dual_init = 1;
  bool central_start = true;
  double equality_reg = 1e-8;
  int globalization = 1;  // 0 merit, 1 filter, 2 none (Globalization's order)
  double armijo = 1e-4, backtrack = 0.5, min_step = 1e-10, penalty_margin = 1e-3, penalty_max = 1e12;
  // Trial points of the line search evaluated at once (alpha, alpha b, ..., alpha b^(trials-1)), then
  // judged in that order: the members a group has beyond one per knot evaluate the backtracks the
  // search may need, at no change to the result. 0: the group's spare members (resolve_trials).
  int trials = 0;
  // The LQ step: 0 Riccati, 1 bdsv, 2 pcg (schur.pcg says the same). The Schur backends' steps are
  // held to a KKT residual of E min(lq_forcing, E), E the barrier problem's KKT error (Solver's rule).
  int linsys = 0;
  SchurOptions schur;
  double lq_forcing = 1e-4;
  // On a CUDA block: the Riccati step on one warp with each stage's rows in registers
  // (riccati_warp.cuh) where the stage fits (nx, nu <= 16); false: riccati_solve's block-wide
  // recursion. The CPU groups always run riccati_solve.
  bool warp_riccati = true;
  // The Hessian: 0 Gauss-Newton, 1 exact, 2 auto (Hessian's order), with auto's switch rule.
  int hessian = 0;
  double hessian_switch_ratio = 0.7;
  int hessian_switch_window = 5;
  double hessian_restart = 0.1;
};

// Scalars of the LQ step's scratch: Riccati's, or the Schur step's (which holds Riccati's fallback).
template <class T>
KNOT_HD std::size_t lq_scratch_size(const BatchProblem& P, const DeviceOptions& o) {
  return o.linsys == 0 ? riccati_scratch_size<T>(P.nx, P.nu, P.N) : schur_scratch_size<T>(P.nx, P.nu, P.N, o.schur);
}

inline constexpr int kMaxTrials = 8;

// trials = 0 resolved for a group of group_size members: one trial per N+1 members, 1 to kMaxTrials.
KNOT_HD int resolve_trials(int trials, int group_size, int N) {
  if (trials <= 0) trials = group_size / (N + 1);
  return trials < 1 ? 1 : trials > kMaxTrials ? kMaxTrials : trials;
}

// Why a solve ended, as numbers: the host formats Solver's message from them (batch_device.cpp).
enum class DeviceDetail : int {
  None,
  NonFiniteInitialState,
  NonFiniteLinearization,  // a value, derivative or step of the linearization at iteration `iteration`
  RegularizationExhausted,  // value[0] = the delta that would exceed reg_max
  NonFiniteStep,
  AcceptableRun,         // acceptable for acceptable_iter iterates without progress
  MaxIterations,         // value[0] = the steps taken with the Gauss-Newton Hessian
  AcceptableAt,          // value[0..2]: stationarity, feasibility, complementarity; `cause` the failure
  PenaltyExceeded,       // value[0] = penalty
  MeritStalledInfeasible,   // value[0] = feasibility
  MeritNoDecrease,          // value[0] = directional derivative
  FilterStalledInfeasible,  // value[0] = feasibility
  FilterRejected,           // value[0] = alpha_min
  GlobalizationNoneInfeasible,  // value[0] = feasibility
  LqStalled,  // value[0..2]: the Schur step's KKT residual, the iterate's KKT error, the tolerance asked
};

struct DeviceResult {
  Status status = Status::NotRun;
  int iterations = 0;  // steps taken
  int rows = 0;        // IterationStats rows written (iterations + 1 when the last iterate was measured)
  double cost = 0;     // objective at the final iterate, unscaled
  double mu = 0;       // barrier parameter at the end, unscaled
  double obj_scale = 1;
  int regularized = 0, restorations = 0, lq_solves = 0;
  int linsys = 0;  // DeviceOptions::linsys of the solve
  int lq_iterations = 0, riccati_fallbacks = 0;  // Schur steps: pcg iterations; Riccati fallbacks
  double max_regularization = 0;
  DeviceDetail detail = DeviceDetail::None;
  Status cause = Status::NotRun;  // AcceptableAt: the status it replaced
  int iteration = 0;              // the iteration the detail refers to
  int knot = -1;
  double value[3] = {0, 0, 0};
  // Builds with KNOT_DEVICE_PROFILE, on a GPU: rank 0's clock cycles in each DevicePhase over the
  // whole solve (how a block's time splits; knot_bench_gpu_sqp prints them), then (problem 0 only)
  // those of the Riccati step's parts. Zero otherwise.
  long long phase_cycles[24] = {};
};

// The phases of an SQP iteration that DeviceResult::phase_cycles splits the time into.
enum class DevicePhase : int {
  Linearize = 0,     // the model, costs and rows at the iterate, with their derivatives
  Residuals = 1,     // objective scale, first-iteration start, KKT residuals, barrier update
  BarrierTerms = 2,  // the rows' barrier terms into the LQ blocks
  LqStep = 3,        // the LQ solve with its regularization retries
  RecoverStep = 4,   // row steps and the fraction to the boundary
  LineSearch = 5,    // trial points, the filter or merit, the accepted step, the row written
  Count = 6
};

// Scratch of one group member: linearize's layout, a state (a trial point's next state) followed
// by the evaluations' own scratch.
template <class T>
KNOT_HD std::size_t member_work_size(const BatchProblem& P) {
  return linearize_work_size<T>(P, false);
}

// The members' scratch block: member r's part at r member_work_size, except in a linearization with
// the exact Hessian, where members 0..N (one knot each at least) take the larger parts at
// r linearize_work_size(P, true). The Hessian's part holds a dual robot workspace (190 KB for an
// arm's Dual<8>), so members beyond the knots get none.
template <class T>
KNOT_HD std::size_t work_block_size(const BatchProblem& P, const DeviceOptions& o, int group_size) {
  const std::size_t all = std::size_t(group_size) * member_work_size<T>(P);
  if (o.hessian == 0) return all;
  const std::size_t knots = group_size < P.N + 1 ? group_size : P.N + 1;
  const std::size_t exact = knots * linearize_work_size<T>(P, true);
  return exact > all ? exact : all;
}

// One problem's arrays, carved from one block of scalars (size / carve below).
template <class T>
struct SqpArrays {
  int nx = 0, nu = 0, N = 0, max_iter = 0;
  int m_ineq = 0, m_eq = 0;  // rows the arrays hold (P.n_ineq, P.n_eq); a problem uses its layout's
  int trials = 1;  // resolved (1..kMaxTrials): the trial arrays hold that many points
  // Iterate (Solution's layout)
  T *x, *u, *lambda, *z, *s, *y;
  // Linearization at the iterate
  LqView<T> lq;
  T *grad_x, *grad_u;
  T *ineq_value, *ineq_jac, *eq_value, *eq_jac;
  T* knot_cost;  // N+1: linearize's per-knot costs
  // Step
  StepView<T> step;
  T *ds, *dz, *dy, *ineq_jdw, *eq_jdw;
  // Line search: `trials` points, point j's arrays at j times their size
  T *x_trial, *u_trial, *s_trial, *ineq_trial, *eq_trial;
  T* partial;     // trials (N+1) per-knot partials (infeasibility, stationarity)
  T* trial_cost;  // trials (N+1) per-knot costs of the trial points
  T* probe_save;  // Q, R, S, q, r during the central start's probe
  T* filter;       // 2 (max_iter + 1)
  T* contraction;  // max_iter + 1: hessian auto's per-step contractions of the KKT error
  T *start_x, *start_u;  // hessian auto's restart: the starting point
  T* lq_scratch;  // lq_scratch_size
  T* work;        // work_block_size: member r's part at r * member_work_size

  // trials: resolved (resolve_trials).
  KNOT_HD static std::size_t size(const BatchProblem& P, const DeviceOptions& o, int group_size, int trials) {
    const int max_iter = o.max_iter;
    const std::size_t nx = P.nx, nu = P.nu, N = P.N, mi = P.n_ineq, me = P.n_eq, nw = nx + nu, W = trials;
    std::size_t n = 0;
    n += (N + 1) * nx * 2 + N * nu + mi * 2 + me;                    // x, u, lambda, z, s, y
    n += LqView<T>::size(P.nx, P.nu, P.N) + (N + 1) * nx + N * nu;   // lq, grad
    n += mi * (1 + nw) + me * (1 + nw) + (N + 1);                    // rows, knot_cost
    n += StepView<T>::size(P.nx, P.nu, P.N) + mi * 2 + me + mi + me;  // step, ds dz dy, jdw
    n += W * ((N + 1) * nx + N * nu + mi + mi + me + 2 * (N + 1));   // trials, partial, trial_cost
    n += (N + 1) * nx * nx + N * nu * nu + N * nu * nx + (N + 1) * nx + N * nu;  // probe_save
    n += 3 * (std::size_t(max_iter) + 1);  // filter, contraction
    n += (N + 1) * nx + N * nu;            // start_x, start_u
    n += lq_scratch_size<T>(P, o);
    n += work_block_size<T>(P, o, group_size);
    return n;
  }

  KNOT_HD static SqpArrays carve(const BatchProblem& P, const DeviceOptions& o, int trials, T* base) {
    const int max_iter = o.max_iter;
    SqpArrays a;
    a.trials = trials;
    a.nx = P.nx;
    a.nu = P.nu;
    a.N = P.N;
    a.m_ineq = P.n_ineq;
    a.m_eq = P.n_eq;
    a.max_iter = max_iter;
    const std::size_t nx = P.nx, nu = P.nu, N = P.N, mi = a.m_ineq, me = a.m_eq, nw = nx + nu, W = trials;
    T* p = base;
    const auto take = [&p](std::size_t n) {
      T* r = p;
      p += n;
      return r;
    };
    a.x = take((N + 1) * nx);
    a.u = take(N * nu);
    a.lambda = take((N + 1) * nx);
    a.z = take(mi);
    a.s = take(mi);
    a.y = take(me);
    a.lq = LqView<T>::carve(P.nx, P.nu, P.N, take(LqView<T>::size(P.nx, P.nu, P.N)));
    a.grad_x = take((N + 1) * nx);
    a.grad_u = take(N * nu);
    a.ineq_value = take(mi);
    a.ineq_jac = take(mi * nw);
    a.eq_value = take(me);
    a.eq_jac = take(me * nw);
    a.knot_cost = take(N + 1);
    a.step = StepView<T>::carve(P.nx, P.nu, P.N, take(StepView<T>::size(P.nx, P.nu, P.N)));
    a.ds = take(mi);
    a.dz = take(mi);
    a.dy = take(me);
    a.ineq_jdw = take(mi);
    a.eq_jdw = take(me);
    a.x_trial = take(W * (N + 1) * nx);
    a.u_trial = take(W * N * nu);
    a.s_trial = take(W * mi);
    a.ineq_trial = take(W * mi);
    a.eq_trial = take(W * me);
    a.partial = take(W * (N + 1));
    a.trial_cost = take(W * (N + 1));
    a.probe_save = take((N + 1) * nx * nx + N * nu * nu + N * nu * nx + (N + 1) * nx + N * nu);
    a.filter = take(2 * (std::size_t(max_iter) + 1));
    a.contraction = take(std::size_t(max_iter) + 1);
    a.start_x = take((N + 1) * nx);
    a.start_u = take(N * nu);
    a.lq_scratch = take(lq_scratch_size<T>(P, o));
    a.work = p;
    return a;
  }
};

namespace detail {

// Clock cycles by DevicePhase: read with clock64() in KNOT_DEVICE_PROFILE builds on a GPU (each
// member its own copy; rank 0's is reported), and compiled to nothing everywhere else.
struct PhaseClock {
  long long cycles[int(DevicePhase::Count)] = {};
  long long last = 0;
  KNOT_HD void start() {
#if defined(KNOT_DEVICE_PROFILE) && defined(__CUDA_ARCH__)
    last = clock64();
#endif
  }
  KNOT_HD void lap([[maybe_unused]] DevicePhase p) {
#if defined(KNOT_DEVICE_PROFILE) && defined(__CUDA_ARCH__)
    const long long now = clock64();
    cycles[int(p)] += now - last;
    last = now;
#endif
  }
};

template <class T>
KNOT_HD T abs_(T v) {
  return v < T(0) ? -v : v;
}
template <class T>
KNOT_HD T max_(T a, T b) {
  return a < b ? b : a;
}
template <class T>
KNOT_HD T min_(T a, T b) {
  return b < a ? b : a;
}
// The same sequential sum and maximum on every member (the arrays are shared and already synced).
template <class T>
KNOT_HD T seq_sum(int n, const T* v) {
  T acc = T(0);
  for (int i = 0; i < n; ++i) acc += v[i];
  return acc;
}

template <class T>
KNOT_HD T l1(int n, const T* v) {
  T acc = T(0);
  for (int i = 0; i < n; ++i) acc += abs_(v[i]);
  return acc;
}

}  // namespace detail

// The solve. Every member calls it with the same arguments. The iterate (a.x, a.u) holds the
// starting point on entry (a cold start: the multipliers, slacks and duals are initialized at the
// first linearization); on return it holds the final iterate, with lambda, z, s, y unscaled. Rank 0
// writes *result and rows[0 .. result->rows) (capacity max_iter + 1). Ends on a barrier.
template <bool kExact = kExactHessianByDefault, class G, class T>
KNOT_HD void sqp_solve(G& g, const BatchProblem& P, const unsigned char* arena, const double* slice,
                       const DeviceOptions& o, const SqpArrays<T>& a, DeviceResult* result, IterationStats* rows) {
  using detail::abs_;
  using detail::max_;
  using detail::min_;
  const RowOffsets ioff = row_offsets(P, slice, ConstraintSet::Inequality);
  const RowOffsets eoff = row_offsets(P, slice, ConstraintSet::Equality);
  // This problem's rows (its slice's layout), at most the arrays' a.m_ineq and a.m_eq.
  const int nx = a.nx, nu = a.nu, N = a.N, nw = nx + nu, mi = ioff[N + 1], me = eoff[N + 1];
  const int nxs = (N + 1) * nx, nus = N * nu;
  const int rank = g.rank(), gs = g.size();
  const T eps = T(2.220446049250313e-16);
  T* my_work = a.work + std::size_t(rank) * member_work_size<T>(P);
  const double* x0 = slice + P.x0;

  DeviceResult res;  // every member's copy; rank 0's is written out
  res.status = Status::NotRun;
  res.linsys = o.linsys;
  T mu = T(o.mu_init), penalty = T(0), reg_last = T(0), obj_scale = T(1), cost = T(0);
  T cur_cost = T(0), cur_barrier = T(0), cur_infeas = T(0);
  T filter_theta_max = T(0), filter_theta_min = T(0), merit_decrease = T(0);
  int filter_size = 0, acceptable_run = 0;
  T acceptable_error = T(0);
  IterationStats row{};  // the current row, every member's copy
  detail::PhaseClock clock;
  // Residuals of the last measured iterate
  T r_st = 0, r_fe = 0, r_co = 0, r_gap = 0, r_sd = 1, r_sc = 1, r_be = 0;
  // The Hessian of this iterate's linearization (Solver::Impl::exact_now) and hessian auto's state:
  // full Gauss-Newton steps in a row and those of length >= 1/2 at one mu, the KKT error the last
  // step started from, the last row's Hessian, restoration, step length and mu, and the mu before it.
  bool exact_now = o.hessian == 1;
  int full_steps = 0, local_steps = 0, gauss_newton_steps = 0;
  T step_error = T(0);
  bool last_exact = false, last_restoration = false;
  // The restart (Solver::Impl::restart_exact): the iterate the solve (re)started at, its KKT error,
  // the least error since, and whether the exact Hessian now runs to the end.
  int first_iter = 0;
  T first_error = T(0), least_error = T(0);
  bool exact_for_good = false;
  double last_step = 0, last_mu = 0, mu_before_last = 0;

  const auto finish = [&]() {
    if (rank == 0) {
      for (int i = 0; i < int(DevicePhase::Count); ++i) res.phase_cycles[i] = clock.cycles[i];
      res.mu = double(mu / obj_scale);
      res.obj_scale = double(obj_scale);
      *result = res;
    }
    g.sync();
  };
  const auto set_status = [&](Status st, DeviceDetail d) {
    res.status = st;
    res.detail = d;
  };

  for (int i = 0; i < nx; ++i)
    if (!(x0[i] - x0[i] == 0.0)) {
      set_status(Status::NumericalError, DeviceDetail::NonFiniteInitialState);
      finish();
      return;
    }

  // ---- Phases (lambdas over the shared arrays; each ends on a barrier)

  // The sum over knots of linearize's per-knot costs (every member, knot order).
  // Under the exact Hessian the curvature is weighed with the multipliers in the caller's units (the
  // scaled ones times 1 / obj_scale, a power of two: exact), so that the objective scaling after it
  // applies to the cost's share alone, as in Solver.
  const auto linearize_iterate = [&]() -> bool {
    const HessianInputs<T> hin{a.lambda, a.z, a.y, T(1) / obj_scale};
    const bool ok = linearize<kExact>(g, P, arena, slice, a.x, a.u, a.lq, a.ineq_value, a.ineq_jac, a.eq_value, a.eq_jac,
                              a.knot_cost, a.work, exact_now ? &hin : nullptr);
    if (!ok) {
      res.iteration = res.rows;
      set_status(Status::NumericalError, DeviceDetail::NonFiniteLinearization);
      return false;
    }
    cost = detail::seq_sum(N + 1, a.knot_cost);
    for (int i = rank; i < nxs; i += gs) a.grad_x[i] = a.lq.q[i];
    for (int i = rank; i < nus; i += gs) a.grad_u[i] = a.lq.r[i];
    g.sync();
    return true;
  };

  const auto objective_scale = [&]() -> T {
    T m = T(0);
    for (int i = 0; i < nxs; ++i) m = max_(m, abs_(a.grad_x[i]));
    for (int i = 0; i < nus; ++i) m = max_(m, abs_(a.grad_u[i]));
    for (int k = 0; k <= N; ++k) {
      for (int i = 0; i < nx; ++i) m = max_(m, abs_(a.lq.Q_k(k)[i + std::size_t(i) * nx]));
      if (k < N)
        for (int i = 0; i < nu; ++i) m = max_(m, abs_(a.lq.R_k(k)[i + std::size_t(i) * nu]));
    }
    if (!(m > T(0)) || !(m - m == T(0))) return T(1);
    T target = m;
    if (m > T(o.objective_scale_max)) target = T(o.objective_scale_target);
    else if (m < T(o.objective_scale_min)) target = T(o.objective_scale_min);
    else return T(1);
    using std::exp2;
    using std::floor;
    using std::log2;
    T e = floor(log2(target / m));
    e = max_(T(-60), min_(T(60), e));
    return exp2(e);
  };

  const auto scale_objective = [&](T f) {
    const std::size_t lqn = std::size_t(N) * nx * nx + std::size_t(N) * nx * nu + std::size_t(N) * nx;
    // Q, R, S, q, r are contiguous after A, B, c in the carved view (views.hpp order).
    T* first = a.lq.Q;
    const std::size_t count = LqView<T>::size(nx, nu, N) - lqn - nx;  // up to x_init
    for (std::size_t i = rank; i < count; i += gs) first[i] *= f;
    for (int i = rank; i < nxs; i += gs) a.grad_x[i] *= f;
    for (int i = rank; i < nus; i += gs) a.grad_u[i] *= f;
    g.sync();
  };

  // Not below mu_min on the Schur backends (Solver::Impl::mu_floor says why).
  const auto mu_floor = [&]() -> T {
    if (mi == 0 || o.linsys != 0) return T(o.mu_min);
    return min_(T(o.mu_min), T(0.5) * T(o.tol_duality_gap) * max_(T(1), abs_(obj_scale * cost)) / T(mi));
  };

  // add_barrier_terms: knot k's rows into knot k's blocks, one member per knot.
  const auto add_row = [&](int k, const T* J, T weight, T coefficient) {
    T* Q = a.lq.Q_k(k);
    T* q = a.lq.q_k(k);
    T* R = k < N ? a.lq.R_k(k) : nullptr;
    T* S = k < N ? a.lq.S_k(k) : nullptr;
    T* r = k < N ? a.lq.r_k(k) : nullptr;
    const int width = k < N ? nw : nx;
    for (int ia = 0; ia < width; ++ia) {
      const T ja = J[ia];
      if (ja == T(0)) continue;
      if (ia < nx) q[ia] += coefficient * ja;
      else r[ia - nx] += coefficient * ja;
      for (int ib = 0; ib < width; ++ib) {
        const T jb = J[ib];
        if (jb == T(0)) continue;
        const T h = weight * ja * jb;
        if (ia < nx && ib < nx) Q[ia + std::size_t(ib) * nx] += h;
        else if (ia >= nx && ib < nx) S[(ia - nx) + std::size_t(ib) * nu] += h;
        else if (ia >= nx && ib >= nx) R[(ia - nx) + std::size_t(ib - nx) * nu] += h;
      }
    }
  };
  const auto add_barrier_terms = [&]() {
    for (int k = rank; k <= N; k += gs) {
      for (int i = ioff[k]; i < ioff[k + 1]; ++i) {
        const T d = a.z[i] / a.s[i];
        add_row(k, a.ineq_jac + std::size_t(i) * nw, d, mu / a.s[i] + d * (a.ineq_value[i] + a.s[i]));
      }
      for (int e = eoff[k]; e < eoff[k + 1]; ++e)
        add_row(k, a.eq_jac + std::size_t(e) * nw, T(1) / T(o.equality_reg), a.y[e] + a.eq_value[e] / T(o.equality_reg));
    }
    g.sync();
  };

  // solve_lq with regularization retries; false with the status set. The Schur step's tolerance is
  // E min(lq_forcing, E), E the barrier problem's KKT error at this step's mu (Solver::Impl::solve_lq).
  const auto solve_lq = [&](IterationStats& it) -> bool {
    T error = max_(T(it.stationarity), T(it.feasibility));
    for (int i = 0; i < mi; ++i) error = max_(error, abs_(a.s[i] * a.z[i] - mu));
    const T lq_tol = error * min_(T(o.lq_forcing), error);
    T reg = T(0);
    bool stalled_below_error = false;
    for (;;) {
      SchurStats ss;
      const DeviceLqResult lr = o.linsys == 0 ? riccati_step(g, a.lq, a.step, a.lq_scratch, o.warp_riccati)
                                              : schur_solve(g, a.lq, a.step, a.lq_scratch, o.schur, lq_tol, ss);
      ++res.lq_solves;
      if (o.linsys != 0) {
        it.lq_iterations += ss.pcg_iterations;
        it.lq_residual = ss.kkt_residual;
        it.lq_tolerance = ss.kkt_tolerance;
        it.lq_riccati_fallback = ss.riccati_fallback;
      }
      if (lr.status == DeviceLqStatus::Solved) break;
      if (lr.status == DeviceLqStatus::MaxIterations && T(ss.kkt_residual) < error) {
        stalled_below_error = true;  // good enough for this iterate
        break;
      }
      if (lr.status == DeviceLqStatus::MaxIterations) {
        it.lq_status = LqStatus::MaxIterations;
        res.iteration = res.rows - 1;
        res.value[0] = ss.kkt_residual;
        res.value[1] = double(error);
        res.value[2] = double(lq_tol);
        set_status(Status::NumericalError, DeviceDetail::LqStalled);
        return false;
      }
      if (lr.status == DeviceLqStatus::NonFinite) {
        it.lq_status = LqStatus::NonFinite;
        res.iteration = res.rows - 1;
        set_status(Status::NumericalError, DeviceDetail::NonFiniteStep);
        return false;
      }
      it.lq_status = LqStatus::NotPositiveDefinite;
      const T next = reg == T(0) ? max_(T(o.reg_init), reg_last / T(o.reg_growth)) : reg * T(o.reg_growth);
      if (next > T(o.reg_max)) {
        res.iteration = res.rows - 1;
        res.value[0] = double(next);
        set_status(Status::NumericalError, DeviceDetail::RegularizationExhausted);
        return false;
      }
      const T add = next - reg;
      for (int k = rank; k <= N; k += gs) {
        for (int i = 0; i < nx; ++i) a.lq.Q_k(k)[i + std::size_t(i) * nx] += add;
        if (k < N)
          for (int i = 0; i < nu; ++i) a.lq.R_k(k)[i + std::size_t(i) * nu] += add;
      }
      g.sync();
      reg = next;
    }
    it.lq_status = stalled_below_error ? LqStatus::MaxIterations : LqStatus::Solved;
    res.lq_iterations += it.lq_iterations;
    res.riccati_fallbacks += it.lq_riccati_fallback ? 1 : 0;
    reg_last = reg;
    it.regularization = double(reg);
    if (reg > T(0)) {
      ++res.regularized;
      res.max_regularization = max_(res.max_regularization, double(reg));
    }
    return true;
  };

  // recover_step: J dw per row, ds, dz, dy, then the fraction-to-boundary steps (every member).
  const auto recover_step = [&](T& alpha_primal, T& alpha_dual) {
    for (int k = rank; k <= N; k += gs) {
      const T* dx = a.step.x_k(k);
      const T* du = k < N ? a.step.u_k(k) : nullptr;
      for (int pass = 0; pass < 2; ++pass) {
        const RowOffsets off = pass == 0 ? ioff : eoff;
        const T* jac = pass == 0 ? a.ineq_jac : a.eq_jac;
        T* out = pass == 0 ? a.ineq_jdw : a.eq_jdw;
        for (int i = off[k]; i < off[k + 1]; ++i) {
          const T* J = jac + std::size_t(i) * nw;
          T acc = T(0);
          for (int j = 0; j < nx; ++j) acc += J[j] * dx[j];
          if (du)
            for (int j = 0; j < nu; ++j) acc += J[nx + j] * du[j];
          out[i] = acc;
        }
      }
    }
    g.sync();
    for (int i = rank; i < mi; i += gs) {
      const T r = a.ineq_value[i] + a.s[i];
      a.ds[i] = -r - a.ineq_jdw[i];
      a.dz[i] = mu / a.s[i] + a.z[i] / a.s[i] * (r + a.ineq_jdw[i]) - a.z[i];
    }
    for (int e = rank; e < me; e += gs) a.dy[e] = (a.eq_value[e] + a.eq_jdw[e]) / T(o.equality_reg);
    g.sync();
    const T tau = max_(T(o.tau_min), T(1) - mu);
    alpha_primal = T(1);
    alpha_dual = T(1);
    for (int i = 0; i < mi; ++i) {
      if (a.ds[i] < T(0)) alpha_primal = min_(alpha_primal, -tau * a.s[i] / a.ds[i]);
      if (a.dz[i] < T(0)) alpha_dual = min_(alpha_dual, -tau * a.z[i] / a.dz[i]);
    }
    g.sync();  // every member has read z, s, ds, dz before any writes them
  };

  // Merit pieces of `count` points (point j's arrays at xt + j nxs, ut + j nus, st + j mi): per-knot
  // partials, one member per (point, knot), then every member sums each point in knot order, as for
  // one point alone. fin[j] false when a step failed or a value is not finite.
  const auto merit_points = [&](int count, const T* xt, const T* ut, const T* st, T* m_cost, T* m_barrier,
                                T* m_infeas, bool* fin) {
    for (int t = rank; t < count * (N + 1); t += gs) {
      const int j = t / (N + 1), k = t - j * (N + 1);
      const T* xk = xt + std::size_t(j) * nxs + std::size_t(k) * nx;
      const T* uk = k < N ? ut + std::size_t(j) * nus + std::size_t(k) * nu : nullptr;
      T part = T(0);
      if (k < N) {
        T* xn = my_work;  // nx scalars at the front of the member's work, then the model's scratch
        if (!step(P, arena, xk, uk, xn, my_work + nx)) part = T(NAN);
        else
          for (int i = 0; i < nx; ++i) part += abs_(xn[i] - xk[nx + i]);
      }
      a.trial_cost[t] = knot_cost(P, arena, slice, k, xk, uk, (T*)nullptr, (T*)nullptr, (T*)nullptr, (T*)nullptr,
                                  (T*)nullptr, my_work + nx);
      knot_rows(P, arena, slice, ConstraintSet::Inequality, k, xk, uk, a.ineq_trial + std::size_t(j) * mi + ioff[k],
                (T*)nullptr, my_work + nx);
      knot_rows(P, arena, slice, ConstraintSet::Equality, k, xk, uk, a.eq_trial + std::size_t(j) * me + eoff[k],
                (T*)nullptr, my_work + nx);
      a.partial[t] = part;
    }
    g.sync();
    using std::log;
    for (int j = 0; j < count; ++j) {
      const T* xj = xt + std::size_t(j) * nxs;
      const T* sj = st + std::size_t(j) * mi;
      const T* gj = a.ineq_trial + std::size_t(j) * mi;
      m_cost[j] = obj_scale * detail::seq_sum(N + 1, a.trial_cost + std::size_t(j) * (N + 1));
      T inf = T(0);
      for (int i = 0; i < nx; ++i) inf += abs_(T(x0[i]) - xj[i]);
      inf += detail::seq_sum(N + 1, a.partial + std::size_t(j) * (N + 1));
      inf += detail::l1(me, a.eq_trial + std::size_t(j) * me);
      T bar = T(0);
      for (int i = 0; i < mi; ++i) {
        inf += abs_(gj[i] + sj[i]);
        bar -= mu * log(sj[i]);
      }
      m_infeas[j] = inf;
      m_barrier[j] = bar;
      fin[j] = m_cost[j] - m_cost[j] == T(0) && inf - inf == T(0) && bar - bar == T(0);
    }
    g.sync();  // the trial arrays are read above; the next writer must wait
  };

  // The backtracking shared by both searches: the points alpha, alpha b, alpha b^2, ... while alpha >=
  // alpha_floor, a.trials of them evaluated at once, judged one by one in that order by
  // judge(alpha, cost, barrier, infeasibility, finite) (true accepts; it sets it.step). Each rejected
  // point counts a backtrack, as one point at a time would; the accepted point is the same.
  const auto backtrack = [&](T alpha, T alpha_floor, IterationStats& it, auto&& judge) -> bool {
    T al[kMaxTrials], tc[kMaxTrials], tb[kMaxTrials], ti[kMaxTrials];
    bool fin[kMaxTrials];
    while (alpha >= alpha_floor) {
      int count = 0;
      while (count < a.trials && alpha >= alpha_floor) {
        al[count++] = alpha;
        alpha *= T(o.backtrack);
      }
      for (int t = rank; t < count * nxs; t += gs) {
        const int j = t / nxs, i = t - j * nxs;
        a.x_trial[t] = a.x[i] + al[j] * a.step.x[i];
      }
      for (int t = rank; t < count * nus; t += gs) {
        const int j = t / nus, i = t - j * nus;
        a.u_trial[t] = a.u[i] + al[j] * a.step.u[i];
      }
      for (int t = rank; t < count * mi; t += gs) {
        const int j = t / mi, i = t - j * mi;
        a.s_trial[t] = a.s[i] + al[j] * a.ds[i];
      }
      g.sync();
      merit_points(count, a.x_trial, a.u_trial, a.s_trial, tc, tb, ti, fin);
      for (int j = 0; j < count; ++j) {
        if (judge(al[j], tc[j], tb[j], ti[j], fin[j])) return true;
        ++it.backtracks;
      }
    }
    return false;
  };

  // The iterate's infeasibility from the linearization (x_init, defects, rows, g + s).
  const auto iterate_infeasibility = [&]() -> T {
    T v = detail::l1(nx, a.lq.x_init) + detail::l1(N * nx, a.lq.c) + detail::l1(me, a.eq_value);
    for (int i = 0; i < mi; ++i) v += abs_(a.ineq_value[i] + a.s[i]);
    return v;
  };

  // restore: roll the controls out from x0 (rank 0: a sequential sweep), refit the slacks.
  const auto restore = [&](IterationStats& it) -> bool {
    const T theta = cur_infeas, phi = cur_cost + cur_barrier;
    for (int i = rank; i < nus; i += gs) a.u_trial[i] = a.u[i];
    if (rank == 0) {
      bool ok = true;
      for (int i = 0; i < nx; ++i) a.x_trial[i] = T(x0[i]);
      for (int k = 0; k < N && ok; ++k)
        ok = step(P, arena, a.x_trial + std::size_t(k) * nx, a.u + std::size_t(k) * nu,
                  a.x_trial + std::size_t(k + 1) * nx, my_work + nx);
      a.partial[0] = ok ? T(0) : T(1);
    }
    g.sync();
    const bool rolled = a.partial[0] == T(0);
    g.sync();
    if (!rolled) return false;
    T t_cost, t_barrier, t_infeas;
    bool t_fin;
    merit_points(1, a.x_trial, a.u_trial, a.s, &t_cost, &t_barrier, &t_infeas, &t_fin);
    if (!t_fin) return false;
    t_barrier = T(0);
    using std::log;
    for (int i = 0; i < mi; ++i) {
      const T gi = a.ineq_trial[i];
      const T floor_ = min_(a.s[i], T(o.slack_push) * max_(T(1), abs_(gi)));
      const T st = max_(-gi, floor_);
      t_infeas += abs_(gi + st) - abs_(gi + a.s[i]);
      t_barrier -= mu * log(st);
    }
    if (!(t_barrier - t_barrier == T(0)) || !(t_infeas <= T(0.9) * theta)) return false;
    for (int i = rank; i < mi; i += gs) {
      const T gi = a.ineq_trial[i];
      const T floor_ = min_(a.s[i], T(o.slack_push) * max_(T(1), abs_(gi)));
      a.s_trial[i] = max_(-gi, floor_);
    }
    g.sync();
    for (int i = rank; i < nxs; i += gs) a.x[i] = a.x_trial[i];
    for (int i = rank; i < mi; i += gs) a.s[i] = a.s_trial[i];
    if (rank == 0) {
      a.filter[0] = (T(1) - T(1e-5)) * theta;
      a.filter[1] = phi - T(1e-8) * theta;
    }
    g.sync();
    filter_size = 1;
    ++res.restorations;
    it.restoration = true;
    it.step = 1;
    return true;
  };

  // A line search that found no step: the rollout fallback where the iterate is infeasible (true
  // when it was taken), else the search's failure with `value` for its message.
  const auto stalled = [&](IterationStats& it, DeviceDetail infeasible, DeviceDetail failed, double value) -> bool {
    it.step = 0;
    res.iteration = res.rows - 1;
    if (T(it.feasibility) > T(o.tol_feasibility)) {
      if (restore(it)) return true;
      res.value[0] = it.feasibility;
      set_status(Status::Infeasible, infeasible);
    } else {
      res.value[0] = value;
      set_status(Status::LineSearchFailed, failed);
    }
    return false;
  };

  // ---- Cold start: multipliers zero, slacks and duals after the first linearization (the first
  // exact Hessian weighs the rows with z = dual_init, as a cold Solver's does).
  const auto cold_start = [&] {
    for (int i = rank; i < nxs; i += gs) a.lambda[i] = T(0);
    for (int e = rank; e < me; e += gs) a.y[e] = T(0);
    for (int i = rank; i < mi; i += gs) a.z[i] = T(o.dual_init);
    g.sync();
  };
  if (o.hessian == 2) {
    for (int i = rank; i < nxs; i += gs) a.start_x[i] = a.x[i];
    for (int i = rank; i < nus; i += gs) a.start_u[i] = a.u[i];
  }
  cold_start();

  bool restored = false;
  const T kDualBound = T(1e10), kPenaltyRho = T(0.1);
  clock.start();
  for (int iter = 0;; ++iter) {
    IterationStats& it = row;
    last_exact = it.exact_hessian;
    last_restoration = it.restoration;
    last_step = it.step;
    mu_before_last = last_mu;
    last_mu = it.mu;
    it = IterationStats{};

    if (!linearize_iterate()) break;
    clock.lap(DevicePhase::Linearize);
    if (iter == first_iter) {
      obj_scale = objective_scale();
      g.sync();
    }
    if (obj_scale != T(1)) scale_objective(obj_scale);
    cur_cost = obj_scale * cost;

    if (iter == first_iter) {
      // initialize_slacks and start_duals
      for (int i = rank; i < mi; i += gs) {
        const T gi = a.ineq_value[i];
        a.s[i] = max_(-gi, T(o.slack_push) * max_(T(1), abs_(gi)));
        a.z[i] = T(o.dual_init);
      }
      g.sync();
      if (o.central_start && mi > 0) {
        for (int i = rank; i < mi; i += gs)
          if (a.s[i] == -a.ineq_value[i]) a.z[i] = mu / a.s[i];
        // Save Q, R, S, q, r (contiguous from Q in the view).
        const std::size_t count = std::size_t(N + 1) * nx * nx + std::size_t(N) * nu * nu + std::size_t(N) * nu * nx +
                                  std::size_t(N + 1) * nx + std::size_t(N) * nu;
        for (std::size_t i = rank; i < count; i += gs) a.probe_save[i] = a.lq.Q[i];
        g.sync();
        add_barrier_terms();
        IterationStats probe{};
        const DeviceResult before = res;
        bool central = solve_lq(probe);
        if (central) {
          T ap, ad;
          recover_step(ap, ad);
          central = ap == T(1);
        } else {
          res = before;
        }
        if (!central)
          for (int i = rank; i < mi; i += gs) a.z[i] = T(o.dual_init);
        for (std::size_t i = rank; i < count; i += gs) a.lq.Q[i] = a.probe_save[i];
        g.sync();
      }
    }
    cur_infeas = iterate_infeasibility();
    res.cost = double(cost);

    // measure_residuals: per-knot stationarity into partial[], then every member.
    for (int k = rank; k <= N; k += gs) {
      T st = T(0);
      const T* lam = a.lambda + std::size_t(k) * nx;
      const T* gx = a.grad_x + std::size_t(k) * nx;
      for (int i = 0; i < nx; ++i) {
        T acc = gx[i] - lam[i];
        if (k < N) {
          const T* A = a.lq.A_k(k);
          const T* ln = lam + nx;
          for (int j = 0; j < nx; ++j) acc += A[j + std::size_t(i) * nx] * ln[j];
        }
        for (int rr = ioff[k]; rr < ioff[k + 1]; ++rr) acc += a.ineq_jac[std::size_t(rr) * nw + i] * a.z[rr];
        for (int rr = eoff[k]; rr < eoff[k + 1]; ++rr) acc += a.eq_jac[std::size_t(rr) * nw + i] * a.y[rr];
        st = max_(st, abs_(acc));
      }
      if (k < N) {
        const T* B = a.lq.B_k(k);
        const T* ln = lam + nx;
        const T* gu = a.grad_u + std::size_t(k) * nu;
        for (int i = 0; i < nu; ++i) {
          T acc = gu[i];
          for (int j = 0; j < nx; ++j) acc += B[j + std::size_t(i) * nx] * ln[j];
          for (int rr = ioff[k]; rr < ioff[k + 1]; ++rr) acc += a.ineq_jac[std::size_t(rr) * nw + nx + i] * a.z[rr];
          for (int rr = eoff[k]; rr < eoff[k + 1]; ++rr) acc += a.eq_jac[std::size_t(rr) * nw + nx + i] * a.y[rr];
          st = max_(st, abs_(acc));
        }
      }
      a.partial[k] = st;
    }
    g.sync();
    {
      r_st = T(0);
      for (int k = 0; k <= N; ++k) r_st = max_(r_st, a.partial[k]);
      r_fe = T(0);
      for (int i = 0; i < nx; ++i) r_fe = max_(r_fe, abs_(a.lq.x_init[i]));
      for (int i = 0; i < N * nx; ++i) r_fe = max_(r_fe, abs_(a.lq.c[i]));
      for (int e = 0; e < me; ++e) r_fe = max_(r_fe, abs_(a.eq_value[e]));
      r_co = T(0);
      r_gap = T(0);
      T comp_mu = T(0), z_sum = T(0);
      for (int i = 0; i < mi; ++i) {
        const T gi = a.ineq_value[i];
        r_fe = max_(r_fe, abs_(max_(gi, T(0))));
        r_fe = max_(r_fe, abs_(gi + a.s[i]));
        r_co = max_(r_co, a.s[i] * a.z[i]);
        r_gap += a.s[i] * a.z[i];
        z_sum += abs_(a.z[i]);
        comp_mu = max_(comp_mu, abs_(a.s[i] * a.z[i] - mu));
      }
      T msum = z_sum + detail::l1(nxs, a.lambda) + detail::l1(me, a.y);
      const T count = T(nxs + mi + me);
      r_sd = max_(T(o.scale_max), msum / count) / T(o.scale_max);
      r_sc = T(1);
      if (mi > 0) r_sc = max_(T(o.scale_max), z_sum / T(mi)) / T(o.scale_max);
      r_be = max_(max_(r_st / r_sd, r_fe), comp_mu / r_sc);
    }
    it.cost = double(cost);
    it.stationarity = double(r_st);
    it.feasibility = double(r_fe);
    it.complementarity = double(r_co);
    it.duality_gap = double(r_gap);
    it.dual_scale = double(r_sd);
    res.rows = iter + 1;
    if (iter == first_iter) {
      first_error = r_be;
      least_error = r_be;
      filter_size = 0;
      filter_theta_max = T(1e4) * max_(T(1), cur_infeas);
      filter_theta_min = T(1e-4) * max_(T(1), cur_infeas);
    }
    const auto error_ratio = [&](T ts, T tf, T tc, T tg) -> T {
      const T gap_ref = max_(tg * max_(T(1), abs_(obj_scale * cost)), T(2) * T(mi) * mu_floor());
      return max_(max_(r_st / (ts * r_sd), r_fe / tf), max_(r_co / (tc * r_sc), r_gap / gap_ref));
    };
    const T err_solved = error_ratio(T(o.tol_stationarity), T(o.tol_feasibility), T(o.tol_complementarity),
                                     T(o.tol_duality_gap));
    const T at = T(o.acceptable_tol);
    const bool acceptable = error_ratio(max_(at, T(o.tol_stationarity)), max_(at, T(o.tol_feasibility)),
                                        max_(at, T(o.tol_complementarity)), max_(at, T(o.tol_duality_gap))) <= T(1);
    const auto end_acceptable = [&](Status cause) -> bool {
      if (res.rows == 0 || !acceptable) return false;
      res.cause = cause;
      res.iteration = res.rows - 1;
      res.value[0] = double(r_st);
      res.value[1] = double(r_fe);
      res.value[2] = double(r_co);
      set_status(Status::SolvedAcceptable, DeviceDetail::AcceptableAt);
      return true;
    };
    const auto write_row = [&]() {
      if (rank == 0 && rows) rows[iter] = it;
    };
    if (err_solved <= T(1)) {
      set_status(Status::Solved, DeviceDetail::None);
      write_row();
      break;
    }
    if (acceptable) {
      if (acceptable_run == 0) acceptable_error = err_solved;
      if (++acceptable_run > o.acceptable_iter) {
        if (err_solved > T(0.1) * acceptable_error) {
          res.iteration = iter;
          set_status(Status::SolvedAcceptable, DeviceDetail::AcceptableRun);
          write_row();
          break;
        }
        acceptable_run = 1;
        acceptable_error = err_solved;
      }
    } else {
      acceptable_run = 0;
    }
    if (iter == o.max_iter) {
      if (!end_acceptable(Status::MaxIterations)) {
        res.iteration = iter;
        res.value[0] = double(gauss_newton_steps);
        set_status(Status::MaxIterations, DeviceDetail::MaxIterations);
      }
      write_row();
      break;
    }

    // hessian auto's restart (Solver::solve): no iterate of the first 4 windows with a KKT error of
    // at most hessian_restart times the start's; the solve starts over from its starting point with
    // the exact Hessian to the end.
    least_error = min_(least_error, r_be);
    if (o.hessian == 2 && o.hessian_restart > 0 && !exact_for_good && iter == 4 * o.hessian_switch_window &&
        !(least_error <= T(o.hessian_restart) * first_error)) {
      g.sync();  // every member has read lambda (the dual scale above) before cold_start clears it
      for (int i = rank; i < nxs; i += gs) a.x[i] = a.start_x[i];
      for (int i = rank; i < nus; i += gs) a.u[i] = a.start_u[i];
      cold_start();
      mu = T(o.mu_init);
      first_iter = iter;
      exact_for_good = true;
      exact_now = true;
      full_steps = 0;
      local_steps = 0;
      acceptable_run = 0;
      --iter;  // this row measures the restart point instead
      continue;
    }
    // hessian auto (Solver::Impl::choose_hessian): after hessian_switch_window Gauss-Newton steps in
    // a row, full or of length >= 1/2 within one barrier problem, whose contractions of the KKT error
    // multiply to more than ratio^window and less than 1, this iterate is linearized again with the
    // exact Hessian.
    if (o.hessian == 2 && iter > 0 && !exact_for_good) {
      const bool gauss_newton = !last_exact && !last_restoration;
      if (rank == 0) a.contraction[iter - 1] = step_error > T(0) ? r_be / step_error : T(0);
      g.sync();
      full_steps = gauss_newton && last_step == 1.0 ? full_steps + 1 : 0;
      if (!gauss_newton || last_step < 0.5)
        local_steps = 0;
      else if (iter >= 2 && mu_before_last != last_mu)
        local_steps = 1;
      else
        ++local_steps;
      const int window = o.hessian_switch_window;
      if (!exact_now && (full_steps >= window || local_steps >= window)) {
        T product = T(1);
        for (int j = iter - window; j < iter; ++j) product *= a.contraction[j];
        using std::pow;
        if (product > T(pow(o.hessian_switch_ratio, double(window))) && product < T(1)) {
          exact_now = true;
          if (!linearize_iterate()) {
            write_row();
            break;
          }
          if (obj_scale != T(1)) scale_objective(obj_scale);
        }
      }
    }
    it.exact_hessian = exact_now;
    gauss_newton_steps += !exact_now;

    // update_barrier
    const T mu_before = mu;
    if (mi > 0) {
      const T fl = mu_floor();
      using std::pow;
      while (mu > fl && r_be <= T(o.barrier_tol) * mu) {
        mu = max_(fl, min_(T(o.mu_linear) * mu, T(pow(mu, T(o.mu_superlinear)))));
        T comp_mu = T(0);
        for (int i = 0; i < mi; ++i) comp_mu = max_(comp_mu, abs_(a.s[i] * a.z[i] - mu));
        r_be = max_(max_(r_st / r_sd, r_fe), comp_mu / r_sc);
      }
    }
    step_error = r_be;
    if (mu != mu_before) filter_size = 0;
    clock.lap(DevicePhase::Residuals);
    add_barrier_terms();
    it.mu = double(mu);
    clock.lap(DevicePhase::BarrierTerms);

    if (!solve_lq(it)) {
      write_row();
      break;
    }
    clock.lap(DevicePhase::LqStep);
    T alpha_max = T(1), alpha_dual = T(1);
    recover_step(alpha_max, alpha_dual);
    clock.lap(DevicePhase::RecoverStep);

    // line_search (shared part)
    restored = false;
    bool accepted = false;
    {
      T df = T(0), step_norm = T(0);
      for (int i = 0; i < nxs; ++i) {
        df += a.grad_x[i] * a.step.x[i];
        step_norm = max_(step_norm, abs_(a.step.x[i]));
      }
      for (int i = 0; i < nus; ++i) {
        df += a.grad_u[i] * a.step.u[i];
        step_norm = max_(step_norm, abs_(a.step.u[i]));
      }
      cur_barrier = T(0);
      using std::log;
      for (int i = 0; i < mi; ++i) {
        df -= mu * a.ds[i] / a.s[i];
        cur_barrier -= mu * log(a.s[i]);
      }
      it.step_norm = double(step_norm);
      it.step = double(alpha_max);
      bool failed = false;
      if (o.globalization == 0) {  // update_penalty
        T model_inf = T(0);
        for (int e = 0; e < me; ++e) model_inf += abs_(a.eq_value[e] + a.eq_jdw[e]);
        merit_decrease = cur_infeas - model_inf;
        T mult = T(0);
        for (int i = 0; i < nxs; ++i) mult = max_(mult, abs_(a.step.lambda[i]));
        for (int i = 0; i < mi; ++i) mult = max_(mult, abs_(a.z[i] + a.dz[i]));
        for (int e = 0; e < me; ++e) mult = max_(mult, abs_(a.y[e] + a.dy[e]));
        T need = mult + T(o.penalty_margin);
        if (merit_decrease > T(0)) need = max_(need, df / ((T(1) - kPenaltyRho) * merit_decrease));
        penalty = need;
        it.penalty = double(penalty);
        if (!(penalty <= T(o.penalty_max))) {
          res.iteration = res.rows - 1;
          res.value[0] = double(penalty);
          set_status(Status::Infeasible, DeviceDetail::PenaltyExceeded);
          failed = true;
        }
      }
      if (!failed) {
        it.merit = double(o.globalization == 0 ? cur_cost + cur_barrier + penalty * cur_infeas : cur_cost + cur_barrier);
        if (o.globalization == 2) {
          accepted = true;
        } else {
          T rel = T(0);
          for (int i = 0; i < nxs; ++i) rel = max_(rel, abs_(a.step.x[i]) / (T(1) + abs_(a.x[i])));
          for (int i = 0; i < nus; ++i) rel = max_(rel, abs_(a.step.u[i]) / (T(1) + abs_(a.u[i])));
          if (rel <= T(10) * eps) {
            accepted = true;
          } else if (o.globalization == 0) {  // merit_search
            const T phi0 = cur_cost + cur_barrier + penalty * cur_infeas;
            const T D = df - penalty * merit_decrease;
            if (abs_(D) <= T(10) * eps * (T(1) + abs_(phi0))) {
              accepted = true;
            } else {
              accepted = backtrack(alpha_max, T(o.min_step), it, [&](T alpha, T tc, T tb, T ti, bool fin) {
                if (!(fin && (tc + tb + penalty * ti) - phi0 <= T(o.armijo) * alpha * D + T(10) * eps * abs_(phi0)))
                  return false;
                it.step = double(alpha);
                return true;
              });
              if (!accepted)
                accepted = restored =
                    stalled(it, DeviceDetail::MeritStalledInfeasible, DeviceDetail::MeritNoDecrease, double(D));
            }
          } else {  // filter_search
            const T gamma_theta = T(1e-5), gamma_phi = T(1e-8), delta = T(1), s_theta = T(1.1), s_phi = T(2.3),
                    gamma_alpha = T(0.05);
            const T theta = cur_infeas, phi = cur_cost + cur_barrier;
            const T rounding = T(10) * eps * abs_(phi);
            using std::pow;
            T alpha_min = gamma_theta;
            if (df < T(0))
              alpha_min = min_(min_(gamma_theta, gamma_phi * theta / -df),
                               T(delta * pow(theta, s_theta) / pow(-df, s_phi)));
            alpha_min = max_(gamma_alpha * alpha_min, T(o.min_step));
            if (theta <= T(o.tol_feasibility) && abs_(df) * alpha_max <= rounding + T(10) * eps) {
              accepted = true;
            } else {
              const bool small_theta = theta <= filter_theta_min;
              accepted = backtrack(alpha_max, alpha_min, it, [&](T alpha, T tc, T tb, T ti, bool fin) {
                const T phi_t = tc + tb;
                bool accept = fin && ti <= filter_theta_max;
                for (int j = 0; accept && j < filter_size; ++j)
                  if (ti >= a.filter[2 * j] && phi_t > a.filter[2 * j + 1] + rounding) accept = false;
                if (!accept) return false;
                const bool switching = df < T(0) && alpha * T(pow(-df, s_phi)) > delta * T(pow(theta, s_theta));
                if (small_theta && switching) {
                  if (!(phi_t - phi <= T(o.armijo) * alpha * df + rounding)) return false;
                } else if (ti <= (T(1) - gamma_theta) * theta || phi_t - phi <= -gamma_phi * theta + rounding) {
                  if (filter_size < o.max_iter + 1) {
                    if (rank == 0) {
                      a.filter[2 * filter_size] = (T(1) - gamma_theta) * theta;
                      a.filter[2 * filter_size + 1] = phi - gamma_phi * theta;
                    }
                    ++filter_size;
                  }
                  g.sync();
                } else {
                  return false;
                }
                it.step = double(alpha);
                return true;
              });
              if (!accepted)
                accepted = restored = stalled(it, DeviceDetail::FilterStalledInfeasible, DeviceDetail::FilterRejected,
                                              double(alpha_min));
            }
          }
        }
      }
    }
    if (!accepted) {
      if (res.status == Status::LineSearchFailed || res.status == Status::Infeasible) end_acceptable(res.status);
      write_row();
      break;
    }
    // An exact Hessian that needed regularization is indefinite: back to Gauss-Newton (Solver's rule).
    if (o.hessian == 2 && exact_now && !exact_for_good && (it.regularization > 0 || restored)) {
      exact_now = false;
      full_steps = 0;
      local_steps = 0;
    }
    if (restored) {
      alpha_dual = T(0);
    } else {  // accept_step, once every member has read the iterate for the line search
      g.sync();
      const T alpha = T(it.step);
      for (int i = rank; i < nxs; i += gs) {
        a.x[i] += alpha * a.step.x[i];
        a.lambda[i] += alpha * (a.step.lambda[i] - a.lambda[i]);
      }
      for (int i = rank; i < nus; i += gs) a.u[i] += alpha * a.step.u[i];
      for (int e = rank; e < me; e += gs) a.y[e] += alpha * a.dy[e];
      for (int i = rank; i < mi; i += gs) {
        a.s[i] += alpha * a.ds[i];
        const T zi = a.z[i] + alpha_dual * a.dz[i];
        a.z[i] = max_(mu / (kDualBound * a.s[i]), min_(kDualBound * mu / a.s[i], zi));
      }
      g.sync();
    }
    it.dual_step = double(alpha_dual);
    res.iterations = iter + 1;
    write_row();
    clock.lap(DevicePhase::LineSearch);
  }
  // Full steps carry no guarantee of progress toward feasibility (Solver's rule; no time limit here).
  if (o.globalization == 2 && res.rows > 0 && res.status == Status::MaxIterations) {
    if (!(T(row.feasibility) <= T(o.tol_feasibility))) {
      res.value[0] = row.feasibility;
      set_status(Status::Infeasible, DeviceDetail::GlobalizationNoneInfeasible);
    }
  }
  // Multipliers back in the caller's units (obj_scale is a power of two: exact).
  if (obj_scale != T(1)) {
    const T f = T(1) / obj_scale;
    for (int i = rank; i < nxs; i += gs) a.lambda[i] *= f;
    for (int i = rank; i < mi; i += gs) a.z[i] *= f;
    for (int e = rank; e < me; e += gs) a.y[e] *= f;
  }
  g.sync();
  finish();
}

}  // namespace knot::solver::device
