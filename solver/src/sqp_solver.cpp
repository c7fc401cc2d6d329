// Solver: construction (every allocation), the embedding API, and the SQP loop.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "knot/problems/constraint.hpp"
#include "knot/problems/error.hpp"
#include "max_iterations_message.hpp"
#include "size_text.hpp"
#include "sqp_impl.hpp"

namespace knot::solver {
namespace {

problems::ProblemError problem_error(const problems::Problem& p, const std::string& key, const std::string& expected,
                                     const std::string& found, const std::string& hint = {}) {
  return problems::ProblemError(problems::SourceLocation{p.source, 0, 0}, key, expected, found, hint);
}

void lay_out(Rows& rows, int N, int nw);

// Rows of one constraint kind: their terms, storage for the most rows the terms can have
// (ConstraintTerm::max_dim: set_bounds may add rows without allocating), then the current layout.
void layout_rows(Rows& rows, const problems::Problem& p, problems::ConstraintKind kind, int nw) {
  const int N = p.horizon.N;
  for (const auto& c : p.constraints)
    if (c->kind() == kind) rows.terms.push_back(c.get());
  rows.most = 0;
  for (int k = 0; k <= N; ++k)
    for (const auto* t : rows.terms)
      if (t->active(k, N)) rows.most += t->max_dim();
  const std::size_t most = static_cast<std::size_t>(rows.most);
  rows.value.reserve(most);
  rows.trial.reserve(most);
  rows.jdw.reserve(most);
  rows.jac.reserve(most * static_cast<std::size_t>(nw));
  rows.offset.assign(static_cast<std::size_t>(N) + 2, 0);
  lay_out(rows, N, nw);
}

// The layout of the terms' current rows (their dim()), within the storage layout_rows reserved.
void lay_out(Rows& rows, int N, int nw) {
  for (int k = 0; k <= N; ++k) {
    int m = 0;
    for (const auto* t : rows.terms)
      if (t->active(k, N)) m += t->dim();
    rows.offset[static_cast<std::size_t>(k) + 1] = rows.offset[static_cast<std::size_t>(k)] + m;
  }
  const std::size_t total = static_cast<std::size_t>(rows.total());
  rows.value.assign(total, 0.0);
  rows.trial.assign(total, 0.0);
  rows.jdw.assign(total, 0.0);
  rows.jac.assign(total * static_cast<std::size_t>(nw), 0.0);
}

// The solver's own copy of a term whose bounds or geometry set_bounds or set_obstacle move (the
// Problem it was built from, and other solvers built from that, keep theirs); other terms stay shared.
std::shared_ptr<problems::ConstraintTerm> own_copy(const std::shared_ptr<problems::ConstraintTerm>& c) {
  if (const auto* t = dynamic_cast<const problems::ControlBox*>(c.get()))
    return std::make_shared<problems::ControlBox>(*t);
  if (const auto* t = dynamic_cast<const problems::StateBox*>(c.get())) return std::make_shared<problems::StateBox>(*t);
  if (const auto* t = dynamic_cast<const problems::CircleObstacle*>(c.get()))
    return std::make_shared<problems::CircleObstacle>(*t);
  if (const auto* t = dynamic_cast<const problems::EndEffectorBox*>(c.get()))
    return std::make_shared<problems::EndEffectorBox>(*t);
  if (const auto* t = dynamic_cast<const problems::EndEffectorHeight*>(c.get()))
    return std::make_shared<problems::EndEffectorHeight>(*t);
  return c;
}

// Allocation-free bounds check shared by the setters.
void require_size(std::size_t found, std::size_t expected, const char* what) {
  if (found != expected)
    throw std::invalid_argument(std::string("Solver::") + what + ": expected " + std::to_string(expected) +
                                " values, found " + std::to_string(found));
}

template <class T>
std::size_t vector_bytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

const SolverOptions& validated(const SolverOptions& o) {
  if (const std::string why = o.validate(); !why.empty()) throw std::invalid_argument("SolverOptions: " + why);
  return o;
}

using detail::bytes_text;
using detail::kGiB;
using detail::sizes_text;

// The options, once the problem is known to fit in options.memory_limit; checked before the first
// workspace is allocated.
const SolverOptions& within_memory_limit(const problems::Problem& p, const SolverOptions& o) {
  const double need = estimate_workspace_bytes(p, o);
  if (need > o.memory_limit * kGiB)
    throw problem_error(p, "solver.memory_limit",
                        "a problem within the limit of " + bytes_text(o.memory_limit * kGiB) + " of solver workspace",
                        "one that needs about " + bytes_text(need) + " (" + sizes_text(p) + ")",
                        "raise solver.memory_limit, or shorten the horizon or the state");
  return o;
}

int solver_threads(const SolverOptions& o, int N) {
  return std::min(o.threads > 0 ? o.threads : WorkPool::available_cores(), N + 1);
}

bool has_rate_cost(const problems::Problem& p) {
  for (const auto& c : p.costs)
    if (c->couples_previous_control()) return true;
  return false;
}

// The LQ layer needs a control at every running knot. With rate costs its state carries the
// previous control as well.
LqSolver make_lq_solver(const problems::Problem& p, const SolverOptions& o) {
  if (p.nu() < 1)
    throw problem_error(p, "model", "a model with at least one control (the LQ subproblem needs nu >= 1)",
                        "nu = 0");
  return LqSolver(p.nx() + (has_rate_cost(p) ? p.nu() : 0), p.nu(), p.horizon.N, o.lq);
}

// An initial guess's vector whose size does not fit the solver: which one, and the two sizes.
struct GuessMismatch {
  const char* field = nullptr;  // nullptr: every size fits
  const char* shape = "";       // how the expected size is made up
  std::size_t expected = 0, found = 0;
};

// x and u must match; lambda, z, s and y may also be empty (not given). Allocation-free.
GuessMismatch guess_mismatch(const Solution& sol, const problems::InitialGuess& g) {
  const auto check = [](GuessMismatch& m, const char* field, const char* shape, std::size_t found,
                        std::size_t expected, bool optional) {
    if (m.field == nullptr && found != expected && !(optional && found == 0)) m = {field, shape, expected, found};
  };
  GuessMismatch m;
  check(m, "x", "(N+1) nx", g.x.size(), sol.x.size(), false);
  check(m, "u", "N nu", g.u.size(), sol.u.size(), false);
  check(m, "lambda", "(N+1) nx", g.lambda.size(), sol.lambda.size(), true);
  check(m, "z", "one per inequality row", g.z.size(), sol.z.size(), true);
  check(m, "s", "one per inequality row", g.s.size(), sol.z.size(), true);
  check(m, "y", "one per equality row", g.y.size(), sol.y.size(), true);
  return m;
}

// Every multiplier given (with the problem's sizes, as guess_mismatch checked) and a barrier parameter.
bool is_warm(const Solution& sol, const problems::InitialGuess& g) {
  return g.lambda.size() == sol.lambda.size() && g.z.size() == sol.z.size() && g.s.size() == sol.z.size() &&
         g.y.size() == sol.y.size() && g.mu > 0;
}

// The first slack or dual of a warm start that is not positive (an interior point needs s, z > 0); -1
// when all are.
long nonpositive_entry(const problems::InitialGuess& g) {
  for (std::size_t i = 0; i < g.s.size(); ++i)
    if (!(g.s[i] > 0) || !(g.z[i] > 0)) return static_cast<long>(i);
  return -1;
}

}  // namespace

void default_initial_guess(const problems::Problem& problem, std::vector<double>& x, std::vector<double>& u) {
  const int nx = problem.nx(), nu = problem.nu(), N = problem.horizon.N;
  x.resize(static_cast<std::size_t>(N + 1) * nx);
  u.assign(static_cast<std::size_t>(N) * nu, 0.0);
  for (int k = 0; k <= N; ++k) std::copy(problem.x0.begin(), problem.x0.end(), x.begin() + static_cast<std::ptrdiff_t>(k) * nx);
}

Solver::Impl::Impl(problems::Problem p, const SolverOptions& options)
    : problem((p.validate(), std::move(p))),
      opt(within_memory_limit(problem, validated(options))),
      lq_solver(make_lq_solver(problem, opt)) {
  for (auto& c : problem.constraints) c = own_copy(c);
  for (auto& c : problem.costs) c = problems::own_reference_copy(c);
  nx = problem.nx();
  nu = problem.nu();
  N = problem.horizon.N;
  nw = nx + nu;
  dt = problem.horizon.dt;
  for (const auto& c : problem.costs) costs.push_back(c.get());
  rate = has_rate_cost(problem);
  // One KnotWork per thread, and the pool's workers (threads - 1) started here.
  const int threads = solver_threads(opt, N);
  work.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) work.emplace_back(*problem.model, problem.horizon.integrator);

  // Iterate and its default initial guess.
  sol.nx = nx;
  sol.nu = nu;
  sol.N = N;
  default_initial_guess(problem, sol.x, sol.u);
  sol.lambda.assign(static_cast<std::size_t>(N + 1) * nx, 0.0);
  layout_rows(ineq, problem, problems::ConstraintKind::Inequality, nw);
  layout_rows(eq, problem, problems::ConstraintKind::Equality, nw);
  for (std::vector<double>* v : {&sol.z, &s, &ds, &dz, &s_trial}) v->reserve(static_cast<std::size_t>(ineq.most));
  size_inequality_iterate();
  sol.y.assign(static_cast<std::size_t>(eq.total()), 0.0);
  dy.assign(sol.y.size(), 0.0);

  grad_x.assign(static_cast<std::size_t>(N + 1) * nx, 0.0);
  grad_u.assign(static_cast<std::size_t>(N) * nu, 0.0);
  lq = LqData(nx, nu, N);
  if (opt.central_start && ineq.most > 0)
    probe_save.assign(lq.Q.size() + lq.R.size() + lq.S.size() + lq.q.size() + lq.r.size(), 0.0);
  step = LqSolution(nx, nu, N);
  if (rate) {
    rate_Hpp.assign(static_cast<std::size_t>(N + 1) * nu * nu, 0.0);
    rate_Hup.assign(rate_Hpp.size(), 0.0);
    lq_aug = LqData(nx + nu, nu, N);
    step_aug = LqSolution(nx + nu, nu, N);
  }
  x_trial.assign(sol.x.size(), 0.0);
  u_trial.assign(sol.u.size(), 0.0);
  int max_dim = 1;
  for (const auto& c : problem.constraints) max_dim = std::max(max_dim, c->max_dim());
  for (KnotWork& w : work) {
    w.x_next.assign(static_cast<std::size_t>(nx), 0.0);
    w.term_g.assign(static_cast<std::size_t>(max_dim), 0.0);
    w.term_gx.assign(static_cast<std::size_t>(max_dim) * nx, 0.0);
    w.term_gu.assign(static_cast<std::size_t>(max_dim) * nu, 0.0);
    if (opt.hessian != Hessian::GaussNewton) {
      w.fd_w.assign(static_cast<std::size_t>(nw), 0.0);
      w.fd_plus.assign(static_cast<std::size_t>(nw), 0.0);
      w.fd_minus.assign(static_cast<std::size_t>(nw), 0.0);
      w.fd_H.assign(static_cast<std::size_t>(nw) * nw, 0.0);
      w.fd_A.assign(static_cast<std::size_t>(nx) * nx, 0.0);
      w.fd_B.assign(static_cast<std::size_t>(nx) * nu, 0.0);
    }
  }
  nonzero.assign(static_cast<std::size_t>(nw), 0);
  knot_outcome.assign(static_cast<std::size_t>(N) + 1, KnotOutcome{});
  term_cost.assign((static_cast<std::size_t>(N) + 1) * costs.size(), 0.0);
  if (rate) rate_prev.assign((static_cast<std::size_t>(N) + 1) * nu, 0.0);
  trial_next.assign(static_cast<std::size_t>(N) * nx, 0.0);
  pool = std::make_unique<WorkPool>(threads);

  filter.assign(static_cast<std::size_t>(opt.max_iter) + 1, {0.0, 0.0});
  if (opt.hessian == Hessian::Auto) {
    contraction.assign(static_cast<std::size_t>(opt.max_iter) + 1, 0.0);
    start_x.assign(sol.x.size(), 0.0);
    start_u.assign(sol.u.size(), 0.0);
    start_lambda.assign(sol.lambda.size(), 0.0);
    start_z.assign(static_cast<std::size_t>(ineq.most), 0.0);
    start_s.assign(static_cast<std::size_t>(ineq.most), 0.0);
    start_y.assign(sol.y.size(), 0.0);
  }
  stats.per_iteration.assign(static_cast<std::size_t>(opt.max_iter) + 1, IterationStats{});
  stats.linsys = lq_solver.linsys();
  std::snprintf(sol.message_.data(), sol.message_.size(), "%s", describe(Status::NotRun));
  record_allocation_sizes();

  const problems::InitialGuess& guess = problem.initial_guess;
  if (!guess.empty()) {
    const std::string from = guess.source.empty() ? std::string() : " in " + guess.source;
    if (const GuessMismatch m = guess_mismatch(sol, guess); m.field != nullptr)
      throw problem_error(problem, "initial_guess",
                          std::string(m.field) + " of " + m.shape + " = " + std::to_string(m.expected) +
                              " values (N = " + std::to_string(N) + ", nx = " + std::to_string(nx) +
                              ", nu = " + std::to_string(nu) + ")",
                          std::to_string(m.found) + " values" + from);
    if (is_warm(sol, guess))
      if (const long i = nonpositive_entry(guess); i >= 0)
        throw problem_error(problem, "initial_guess", "positive slacks s and duals z",
                            "s[" + std::to_string(i) + "] = " + std::to_string(guess.s[static_cast<std::size_t>(i)]) +
                                ", z[" + std::to_string(i) + "] = " +
                                std::to_string(guess.z[static_cast<std::size_t>(i)]) + from);
    apply_guess(guess);
  }
}

void Solver::Impl::size_inequality_iterate() {
  const std::size_t m = static_cast<std::size_t>(ineq.total());
  sol.z.assign(m, opt.dual_init);
  s.assign(m, 1.0);
  ds.assign(m, 0.0);
  dz.assign(m, 0.0);
  s_trial.assign(m, 0.0);
}

void Solver::Impl::start_cold(std::span<const double> x, std::span<const double> u) {
  std::copy(x.begin(), x.end(), sol.x.begin());
  std::copy(u.begin(), u.end(), sol.u.begin());
  reset_multipliers();
}

void Solver::Impl::reset_multipliers() {
  std::fill(sol.lambda.begin(), sol.lambda.end(), 0.0);
  std::fill(sol.y.begin(), sol.y.end(), 0.0);
  // The duals too: the exact Hessian of a cold start's first linearization weighs the rows' curvature
  // with z, which must not be what an earlier solve left (the device path's first iterate has the same).
  std::fill(sol.z.begin(), sol.z.end(), opt.dual_init);
  cold = true;
  warm_shift = false;
}

void Solver::Impl::apply_guess(const problems::InitialGuess& g) {
  if (!is_warm(sol, g)) return start_cold(g.x, g.u);
  std::copy(g.x.begin(), g.x.end(), sol.x.begin());
  std::copy(g.u.begin(), g.u.end(), sol.u.begin());
  std::copy(g.lambda.begin(), g.lambda.end(), sol.lambda.begin());
  std::copy(g.z.begin(), g.z.end(), sol.z.begin());
  std::copy(g.s.begin(), g.s.end(), s.begin());
  std::copy(g.y.begin(), g.y.end(), sol.y.begin());
  mu = g.mu;
  sol.mu = mu;
  cold = false;
  warm_shift = false;
}

bool Solver::Impl::report_rows() {
  bool go_on = true;
  for (; rows_reported < stats.rows; ++rows_reported) {
    IterationStats& row = stats.per_iteration[static_cast<std::size_t>(rows_reported)];
    row.seconds = seconds_since(t_start);
    if (callback != nullptr && !callback(row, rows_reported, callback_user)) go_on = false;
  }
  return go_on;
}

void Solver::Impl::record_allocation_sizes() {
  bytes = vector_bytes(sol.x) + vector_bytes(sol.u) + vector_bytes(sol.lambda) + vector_bytes(sol.z) +
          vector_bytes(sol.y) + vector_bytes(s) + vector_bytes(ds) + vector_bytes(dz) + vector_bytes(dy) +
          vector_bytes(s_trial) + vector_bytes(grad_x) + vector_bytes(grad_u) + vector_bytes(x_trial) +
          vector_bytes(u_trial) + vector_bytes(nonzero) + vector_bytes(filter) + vector_bytes(contraction) +
          vector_bytes(probe_save) + vector_bytes(stats.per_iteration) + vector_bytes(costs) +
          vector_bytes(knot_outcome) + vector_bytes(term_cost) + vector_bytes(rate_prev) + vector_bytes(trial_next) +
          vector_bytes(start_x) + vector_bytes(start_u) + vector_bytes(start_lambda) + vector_bytes(start_z) +
          vector_bytes(start_s) + vector_bytes(start_y);
  for (const KnotWork& w : work)
    for (const auto* v : {&w.x_next, &w.term_g, &w.term_gx, &w.term_gu, &w.fd_w, &w.fd_plus, &w.fd_minus, &w.fd_H,
                          &w.fd_A, &w.fd_B})
      bytes += vector_bytes(*v);
  for (const Rows* r : {&ineq, &eq})
    bytes += vector_bytes(r->terms) + vector_bytes(r->offset) + vector_bytes(r->value) + vector_bytes(r->jac) +
             vector_bytes(r->trial) + vector_bytes(r->jdw);
  for (const LqData* d : {&lq, &lq_aug})
    for (const auto* v : {&d->A, &d->B, &d->c, &d->Q, &d->R, &d->S, &d->q, &d->r, &d->x_init}) bytes += vector_bytes(*v);
  for (const LqSolution* t : {&step, &step_aug})
    for (const auto* v : {&t->x, &t->u, &t->lambda}) bytes += vector_bytes(*v);
  bytes += vector_bytes(rate_Hpp) + vector_bytes(rate_Hup);
  bytes += lq_solver.bytes_allocated();
}

void Solver::Impl::set_status(Status status, const char* format, ...) {
  sol.status = status;
  int used = std::snprintf(sol.message_.data(), sol.message_.size(), "%s", describe(status));
  if (format != nullptr && used >= 0 && static_cast<std::size_t>(used) + 2 < sol.message_.size()) {
    sol.message_[static_cast<std::size_t>(used)] = ':';
    sol.message_[static_cast<std::size_t>(used) + 1] = ' ';
    std::va_list args;
    va_start(args, format);
    std::vsnprintf(sol.message_.data() + used + 2, sol.message_.size() - static_cast<std::size_t>(used) - 2, format,
                   args);
    va_end(args);
  }
}

bool Solver::Impl::out_of_time(const char* phase) {
  if (deadline == Clock::time_point::max() || Clock::now() < deadline) return false;
  set_status(Status::TimeLimit, "%.3g s after %d iterations (in the %s)", seconds_since(t_start), stats.rows - 1, phase);
  return true;
}

double Solver::Impl::error_ratio(const Residuals& r, double tol_st, double tol_fe, double tol_co, double tol_gap) const {
  return std::max({r.stationarity / (tol_st * r.scale_dual), r.feasibility / tol_fe,
                   r.complementarity / (tol_co * r.scale_comp),
                   r.gap / std::max(tol_gap * std::max(1.0, obj_scale * std::abs(cost)), 2 * ineq.total() * mu_floor())});
}

bool Solver::Impl::within(const Residuals& r, double tol_st, double tol_fe, double tol_co, double tol_gap) const {
  return error_ratio(r, tol_st, tol_fe, tol_co, tol_gap) <= 1;
}

bool Solver::Impl::converged(const Residuals& r) const {
  return within(r, opt.tol_stationarity, opt.tol_feasibility, opt.tol_complementarity, opt.tol_duality_gap);
}

bool Solver::Impl::acceptable(const Residuals& r) const {
  const double a = opt.acceptable_tol;
  return within(r, std::max(a, opt.tol_stationarity), std::max(a, opt.tol_feasibility),
                std::max(a, opt.tol_complementarity), std::max(a, opt.tol_duality_gap));
}

bool Solver::Impl::end_acceptable(Status status) {
  if (stats.rows == 0 || !acceptable(last_res)) return false;
  const IterationStats& row = stats.per_iteration[static_cast<std::size_t>(stats.rows - 1)];
  set_status(Status::SolvedAcceptable,
             "%s at iteration %d, at an acceptable iterate (stationarity %.3g, feasibility %.3g, complementarity %.3g)",
             to_string(status), stats.rows - 1, row.stationarity, row.feasibility, row.complementarity);
  return true;
}

// hessian auto's restart (solve()): the starting point is saved before the first iterate and
// restored, with the exact Hessian to the end, where Gauss-Newton made no progress from it.
void Solver::Impl::save_start() {
  std::copy(sol.x.begin(), sol.x.end(), start_x.begin());
  std::copy(sol.u.begin(), sol.u.end(), start_u.begin());
  std::copy(sol.lambda.begin(), sol.lambda.end(), start_lambda.begin());
  std::copy(sol.z.begin(), sol.z.end(), start_z.begin());
  std::copy(s.begin(), s.end(), start_s.begin());
  std::copy(sol.y.begin(), sol.y.end(), start_y.begin());
  start_mu = mu;
  saved_cold = cold;
  saved_scale_known = scale_known;
  start_restart_armed = restart_armed;
}

void Solver::Impl::restart_exact(int iter) {
  scale_known = saved_scale_known;
  std::copy(start_x.begin(), start_x.end(), sol.x.begin());
  std::copy(start_u.begin(), start_u.end(), sol.u.begin());
  std::copy(start_lambda.begin(), start_lambda.end(), sol.lambda.begin());
  std::copy(start_z.begin(), start_z.begin() + static_cast<std::ptrdiff_t>(sol.z.size()), sol.z.begin());
  std::copy(start_s.begin(), start_s.begin() + static_cast<std::ptrdiff_t>(s.size()), s.begin());
  std::copy(start_y.begin(), start_y.end(), sol.y.begin());
  mu = start_mu;
  cold = saved_cold;
  restart_armed = start_restart_armed;
  first_iter = iter;
  exact_for_good = true;
  exact_now = true;
  full_steps = 0;
  local_steps = 0;
  acceptable_run = 0;
}

// hessian auto. Gauss-Newton converges linearly, at a rate set by the curvature it leaves out
// (lambda' d2F + z' d2g): where that is small it is as fast as Newton and cheaper per iteration, where
// it is large the tail crawls (iiwa14_reach: 72 Gauss-Newton iterations, 13 under auto). A step's
// contraction is the barrier problem's KKT error at the new iterate over the error it started from,
// both at the step's mu. After hessian_switch_window Gauss-Newton steps in a row, all full (step
// length 1: the local regime, not the line search's) or all of length >= 1/2 within one barrier
// problem (the arm's tail, where the filter halves every other step; one mu, since a window across a
// barrier update measures the schedule), whose contractions multiply to more than
// hessian_switch_ratio^window but less than 1, this iterate is linearized again with the exact
// Hessian, whose steps converge quadratically from there. Steps whose error grew (a product of
// 1 or more) are no tail: far from a solution the exact Hessian is indefinite and its regularized
// steps led iiwa14_reach at N = 128 (semi-implicit Euler) to max_iterations, where Gauss-Newton
// alone solves it (scripts/compare_iiwa.py). False when that linearization failed (its status is set).
// On every backend alike: the exact Hessian's stage blocks [Q S'; S R] are indefinite in general even
// at a minimizer, which the Schur backends answer by their Riccati fallback (LqOptions::riccati_fallback).
bool Solver::Impl::choose_hessian(const Residuals& res, int iter) {
  if (iter == 0) return true;
  const IterationStats& last = stats.per_iteration[static_cast<std::size_t>(iter - 1)];
  const bool gauss_newton = !last.exact_hessian && !last.restoration;
  contraction[static_cast<std::size_t>(iter - 1)] = step_error > 0 ? res.barrier_error / step_error : 0.0;
  full_steps = gauss_newton && last.step == 1.0 ? full_steps + 1 : 0;
  if (!gauss_newton || last.step < 0.5)
    local_steps = 0;
  else if (iter >= 2 && stats.per_iteration[static_cast<std::size_t>(iter - 2)].mu != last.mu)
    local_steps = 1;  // the step opened a new barrier problem
  else
    ++local_steps;
  const int window = opt.hessian_switch_window;
  if (exact_now || (full_steps < window && local_steps < window)) return true;
  double product = 1;
  for (int j = iter - window; j < iter; ++j) product *= contraction[static_cast<std::size_t>(j)];
  if (!(product > std::pow(opt.hessian_switch_ratio, window) && product < 1.0)) return true;
  exact_now = true;
  const Clock::time_point t = Clock::now();
  const bool ok = linearize();
  stats.time.linearize += seconds_since(t);
  return ok;
}

// The SQP loop. Iterate i is linearized once (twice where hessian auto switches at it); its
// residuals decide convergence, and otherwise one step (LQ subproblem, slack and dual recovery, line
// search) leads to iterate i + 1. At most max_steps steps; a real-time call returns after its last
// step without linearizing the new iterate.
// The time limit is checked at each iterate and inside the long inner loops (pcg iterations, the
// Schur refinement, regularization retries, line-search trials); a step cut short is dropped whole,
// so the solve ends at the last accepted iterate.
Status Solver::Impl::solve(int max_steps, bool real_time) {
  t_start = Clock::now();
  deadline = opt.time_limit > 0
                 ? t_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.time_limit))
                 : Clock::time_point::max();
  lq_solver.set_deadline(deadline);
  stats.iterations = 0;
  stats.rows = 0;
  stats.lq_solves = 0;
  stats.lq_iterations = 0;
  stats.regularized = 0;
  stats.restorations = 0;
  stats.riccati_fallbacks = 0;
  stats.max_regularization = 0;
  stats.time = PhaseTimes{};
  sol.iterations = 0;
  set_status(Status::NotRun, nullptr);
  rows_reported = 0;
  interrupt = false;
  acceptable_run = 0;
  exact_now = opt.hessian == Hessian::Exact;
  full_steps = 0;
  local_steps = 0;
  first_iter = 0;
  exact_for_good = false;
  penalty = 0;
  for (double v : problem.x0)
    if (!std::isfinite(v)) {
      set_status(Status::NumericalError, "the initial state has a non-finite entry");
      stats.time.total = seconds_since(t_start);
      sol.mu = mu;
      return sol.status;
    }
  // Between solves the multipliers and mu are in the caller's units; inside, in the scaled problem's.
  restart_armed = warm_shift && !cold;
  if (cold) {
    mu = opt.mu_init;
  } else {
    if (scale_known) {
      scale_multipliers(obj_scale);
      mu *= obj_scale;
    }
    if (warm_shift) {
      // No barrier restart: the shifted slacks and duals keep their products, so mu starts at their
      // mean (recover_step restarts it at warm_start_mu if a bound then cuts a step).
      double sum = 0;
      for (int i = 0; i < ineq.total(); ++i) sum += s[i] * sol.z[i];
      if (ineq.total() > 0) mu = std::clamp(sum / ineq.total(), mu_floor(), opt.mu_init);
    }
  }
  warm_shift = false;
  if (opt.hessian == Hessian::Auto && !real_time) save_start();

  bool final_measured = true;  // the last row of stats holds the final iterate's residuals
  for (int iter = 0;; ++iter) {
    IterationStats& it = stats.per_iteration[static_cast<std::size_t>(iter)];
    it = IterationStats{};

    if (real_time && iter == max_steps) {
      sol.cost = evaluate_cost(sol.x.data(), sol.u.data());
      set_status(Status::MaxIterations, "real-time iteration: %d step(s) per call", max_steps);
      final_measured = false;
      break;
    }

    Clock::time_point t = Clock::now();
    const bool ok = linearize();
    stats.time.linearize += seconds_since(t);
    if (!ok) break;  // linearize() set the status
    if (cold) {
      initialize_slacks();
      cold = false;
    }
    sol.cost = cost;

    t = Clock::now();
    Residuals res = measure_residuals();
    stats.time.convergence += seconds_since(t);
    it.cost = cost;
    it.stationarity = res.stationarity;
    it.feasibility = res.feasibility;
    it.complementarity = res.complementarity;
    it.duality_gap = res.gap;
    it.dual_scale = res.scale_dual;
    last_res = res;
    stats.rows = iter + 1;
    if (iter == first_iter) {
      // The filter's envelope scales with the first iterate's infeasibility.
      first_error = res.barrier_error;
      least_error = res.barrier_error;
      filter_size = 0;
      filter_theta_max = 1e4 * std::max(1.0, current.infeasibility);
      filter_theta_min = 1e-4 * std::max(1.0, current.infeasibility);
    }
    if (converged(res)) {
      set_status(Status::Solved, nullptr);
      break;
    }
    // Acceptable for acceptable_iter iterates in a row, over which the error (against the solved
    // tolerances) fell by less than a factor 10: the residuals have stopped moving.
    if (acceptable(res)) {
      const double error = error_ratio(res, opt.tol_stationarity, opt.tol_feasibility, opt.tol_complementarity,
                                       opt.tol_duality_gap);
      if (acceptable_run == 0) acceptable_error = error;
      if (++acceptable_run > opt.acceptable_iter) {
        if (error > 0.1 * acceptable_error) {
          set_status(Status::SolvedAcceptable, "acceptable for %d iterates in a row without progress (iteration %d)",
                     opt.acceptable_iter, iter);
          break;
        }
        acceptable_run = 1;
        acceptable_error = error;
      }
    } else {
      acceptable_run = 0;
    }
    if (interrupt) {
      set_status(Status::Interrupted, "after %d steps", iter);
      break;
    }
    if (iter == max_steps) {
      if (!end_acceptable(Status::MaxIterations)) {
        int gauss_newton = 0;
        for (int j = 0; j < iter; ++j) gauss_newton += !stats.per_iteration[static_cast<std::size_t>(j)].exact_hessian;
        char detail[160];
        format_max_iterations(detail, sizeof detail, iter, gauss_newton);
        set_status(Status::MaxIterations, "%s", detail);
      }
      break;
    }
    if (opt.time_limit > 0 && seconds_since(t_start) > opt.time_limit) {
      set_status(Status::TimeLimit, "%.3g s after %d iterations", seconds_since(t_start), iter);
      break;
    }

    least_error = std::min(least_error, res.barrier_error);
    // hessian auto: Gauss-Newton steps that in 4 windows brought no iterate's KKT error to
    // hessian_restart times the start's have left the region where their model holds (iiwa14_reach
    // over long horizons); the solve starts over from its first iterate with the exact Hessian, whose
    // regularized steps keep near the dynamics, and keeps it.
    if (opt.hessian == Hessian::Auto && opt.hessian_restart > 0 && !real_time && !exact_for_good &&
        iter == 4 * opt.hessian_switch_window && !(least_error <= opt.hessian_restart * first_error)) {
      restart_exact(iter);
      --iter;  // this row measures the restart point instead
      continue;
    }
    if (opt.hessian == Hessian::Auto && !exact_for_good && !choose_hessian(res, iter)) break;  // linearize() set the status
    it.exact_hessian = exact_now;

    t = Clock::now();
    const double mu_before = mu;
    update_barrier(res);
    step_error = res.barrier_error;
    if (mu != mu_before) filter_size = 0;  // a new barrier problem starts a new filter
    add_barrier_terms();
    it.mu = mu;
    stats.time.barrier += seconds_since(t);

    // A step cut short by the time limit is dropped: the iterate stays the last accepted one, its row
    // keeps the residuals with the step fields zero, and mu returns to the value it was solved with.
    const auto drop_step = [&] {
      mu = mu_before;
      IterationStats kept;
      kept.cost = it.cost;
      kept.merit = it.merit;
      kept.stationarity = it.stationarity;
      kept.feasibility = it.feasibility;
      kept.complementarity = it.complementarity;
      it = kept;
    };

    t = Clock::now();
    const bool lq_ok = solve_lq(it) && !out_of_time("LQ solve");
    stats.time.lq += seconds_since(t);
    if (!lq_ok) {
      if (sol.status == Status::TimeLimit) drop_step();
      break;
    }

    t = Clock::now();
    double alpha_max = 1, alpha_dual = 1;
    recover_step(alpha_max, alpha_dual);
    stats.time.step += seconds_since(t);

    t = Clock::now();
    restored = false;
    const bool accepted = line_search(alpha_max, it);
    stats.time.line_search += seconds_since(t);
    if (!accepted) {  // line_search() set the status
      if (sol.status == Status::TimeLimit) drop_step();
      // A stall at an iterate already within the acceptable level is convergence to the precision
      // the step can resolve, not a failure.
      if (sol.status == Status::LineSearchFailed || sol.status == Status::Infeasible) end_acceptable(sol.status);
      break;
    }
    // An exact Hessian that needed regularization is indefinite: away from a minimizer, where
    // Gauss-Newton's positive semidefinite model is the safer one until it stalls again.
    if (opt.hessian == Hessian::Auto && exact_now && !exact_for_good && (it.regularization > 0 || restored)) {
      exact_now = false;
      full_steps = 0;
      local_steps = 0;
    }
    if (restored) {
      alpha_dual = 0;  // restore() moved x and s; the multipliers wait for the next step
    } else {
      accept_step(it.step, alpha_dual);
    }
    it.dual_step = alpha_dual;
    stats.iterations = iter + 1;
    sol.iterations = iter + 1;
    if (!report_rows()) interrupt = true;
  }
  // Full steps (globalization none) carry no guarantee of progress toward feasibility: an iterate
  // stopped by max_iter or the time limit that still violates the constraints is no usable plan.
  if (opt.globalization == Globalization::None && final_measured && stats.rows > 0 &&
      (sol.status == Status::MaxIterations || sol.status == Status::TimeLimit)) {
    const double feasibility = stats.per_iteration[static_cast<std::size_t>(stats.rows - 1)].feasibility;
    if (!(feasibility <= opt.tol_feasibility))
      set_status(Status::Infeasible,
                 "globalization none stopped by %s after %d iterations with infeasibility %.3g > tol_feasibility %.3g",
                 to_string(sol.status), sol.iterations, feasibility, opt.tol_feasibility);
  }
  report_rows();  // the final iterate's row (its return no longer matters)
  if (scale_known) {
    scale_multipliers(1 / obj_scale);
    mu /= obj_scale;
  }
  sol.mu = mu;
  stats.time.total = seconds_since(t_start);
  return sol.status;
}

// ---- Solver: the public face

double estimate_workspace_bytes(const problems::Problem& p, const SolverOptions& o) {
  if (!p.model || p.horizon.N < 1) return 0;  // Problem::validate rejects it before anything is allocated
  const double nx = p.nx(), nu = p.nu(), N = p.horizon.N;
  const bool rate = has_rate_cost(p);
  const auto lq_data = [&](double n) {  // LqData and LqSolution of state size n
    return N * n * n + N * n * nu + (N + 1) * n * n + N * nu * nu + N * nu * n + 4 * (N + 1) * (n + nu);
  };
  const double nl = nx + (rate ? nu : 0);  // the LQ layer's state size
  double doubles = lq_data(nx) + (rate ? lq_data(nl) + 2 * (N + 1) * nu * nu : 0);
  doubles += (N + 1) * nl * nl + N * nu * nu + N * nl * nu + 2 * nl * nl + nl * nu + 2 * (N + 1) * (nl + nu);
  // Per thread: the integrator's sensitivities and LU, and the Hessian's scratch.
  const double threads = solver_threads(o, p.horizon.N);
  doubles += threads * (6 * nx * nx + 5 * nx * nu);
  if (o.hessian != Hessian::GaussNewton) doubles += threads * ((nx + nu) * (nx + nu) + nx * nx + nx * nu);
  doubles += (N + 1) * (static_cast<double>(p.costs.size()) + (rate ? nu : 0)) + N * nx;  // per-knot sums
  double rows = 0;
  for (const auto& c : p.constraints)
    for (int k = 0; k <= p.horizon.N; ++k)
      if (c->active(k, p.horizon.N)) rows += c->max_dim();
  // hessian auto: the steps' contractions and the restart's copy of the starting point
  if (o.hessian == Hessian::Auto) doubles += o.max_iter + 1 + 2 * (N + 1) * nx + N * nu + 3 * rows;
  doubles += rows * (nx + nu + 8) + 10 * (N + 1) * (nx + nu);  // constraint rows; iterates and trial points
  if (o.central_start && rows > 0) doubles += (N + 1) * nx * nx + N * nu * nu + N * nu * nx + (N + 1) * nx + N * nu;  // probe_save
  return doubles * sizeof(double) + (o.max_iter + 1.0) * sizeof(IterationStats);
}

namespace {

// Every allocation of construction happens under this boundary: an allocation the estimate did not
// foresee (or memory the machine does not have) becomes an error that names the problem's size.
// The sizes are read before `make` moves the problem.
template <class Make>
auto allocation_boundary(const problems::Problem& p, const SolverOptions& o, Make&& make) {
  // Nothing that allocates before the try: its failure would escape as a bare std::bad_alloc.
  const int N = p.horizon.N, nx = p.nx(), nu = p.nu();
  const double estimate = estimate_workspace_bytes(p, o);
  std::string source;
  try {
    source = p.source;
    return make();
  } catch (const std::bad_alloc&) {
    throw problems::ProblemError(problems::SourceLocation{source, 0, 0}, "solver.memory_limit",
                                 "memory for the solver workspace (about " + bytes_text(estimate) +
                                     ", N = " + std::to_string(N) + ", nx = " + std::to_string(nx) +
                                     ", nu = " + std::to_string(nu) + ")",
                                 "an allocation that failed (std::bad_alloc)");
  }
}

}  // namespace

// The options' estimate uses the defaults (the problem's settings are read inside the boundary).
Solver::Solver(problems::Problem problem) {
  impl_ = allocation_boundary(problem, SolverOptions{}, [&] {
    problem.validate();
    const SolverOptions options = from_settings(problem.solver);
    return std::make_unique<Impl>(std::move(problem), options);
  });
}

Solver::Solver(problems::Problem problem, const SolverOptions& options)
    : impl_(
          allocation_boundary(problem, options, [&] { return std::make_unique<Impl>(std::move(problem), options); })) {}

Solver::~Solver() = default;
Solver::Solver(Solver&&) noexcept = default;
Solver& Solver::operator=(Solver&&) noexcept = default;

Status Solver::solve() {
  const SolverOptions& o = impl_->opt;
  return o.real_time_iteration ? impl_->solve(1, true) : impl_->solve(o.max_iter, false);
}

int Solver::threads() const { return static_cast<int>(impl_->work.size()); }

Status Solver::step(int iterations) { return impl_->solve(std::clamp(iterations, 1, impl_->opt.max_iter), true); }

void Solver::set_initial_state(std::span<const double> x0) {
  require_size(x0.size(), static_cast<std::size_t>(impl_->nx), "set_initial_state");
  std::copy(x0.begin(), x0.end(), impl_->problem.x0.begin());
}

void Solver::set_model(std::shared_ptr<const problems::Model> model) {
  if (!model) throw std::invalid_argument("Solver::set_model: expected a model, found none");
  if (std::string why = problems::model_swap_refusal(impl_->problem, *model); !why.empty())
    throw std::invalid_argument("Solver::set_model: " + why);
  Impl& m = *impl_;
  // Everything that can throw first, so that a refusal leaves the solver as it was.
  std::vector<std::unique_ptr<problems::ModelData>> data;
  std::vector<problems::Integrator> integrators;
  for (std::size_t t = 0; t < m.work.size(); ++t) {
    data.push_back(model->make_data());
    integrators.emplace_back(*model, m.problem.horizon.integrator);
  }
  for (std::size_t t = 0; t < m.work.size(); ++t) {
    m.work[t].data = std::move(data[t]);
    m.work[t].integrator = std::move(integrators[t]);
  }
  m.problem.model = std::move(model);
}

void Solver::set_reference(std::string_view cost_name, const problems::Reference& ref) {
  for (const auto& c : impl_->problem.costs) {
    if (c->info().name != cost_name) continue;
    const problems::Reference* current = c->reference();
    if (current == nullptr)
      throw std::invalid_argument("Solver::set_reference: cost '" + std::string(cost_name) + "' has no reference");
    if (ref.dim != current->dim)
      throw std::invalid_argument("Solver::set_reference: cost '" + std::string(cost_name) + "' expects rows of " +
                                  std::to_string(current->dim) + " values, found " + std::to_string(ref.dim));
    if (ref.values.size() == current->values.size()) {
      // Same shape: overwrite the term's own storage, so an MPC loop neither allocates nor frees.
      // The term object is not const (the Problem holds it by shared_ptr<CostTerm>); reference()
      // only hands out a const view.
      auto* target = const_cast<problems::Reference*>(current);
      std::copy(ref.values.begin(), ref.values.end(), target->values.begin());
    } else {
      c->set_reference(ref);
    }
    return;
  }
  throw std::invalid_argument("Solver::set_reference: no cost named '" + std::string(cost_name) + "'");
}

void Solver::set_bounds(std::string_view constraint_name, std::span<const double> lower,
                        std::span<const double> upper) {
  Impl& m = *impl_;
  for (const auto& c : m.problem.constraints) {
    if (c->info().name != constraint_name) continue;
    const int before = c->dim();
    try {
      auto* e = dynamic_cast<problems::EndEffectorBox*>(c.get());
      auto* h = dynamic_cast<problems::EndEffectorHeight*>(c.get());
      if (auto* b = dynamic_cast<problems::ControlBox*>(c.get())) {
        b->set_bounds(lower, upper);
      } else if (auto* b = dynamic_cast<problems::StateBox*>(c.get())) {
        b->set_bounds(lower, upper);
      } else if (e != nullptr || h != nullptr) {
        std::array<double, 3> lo3, hi3;
        if (std::string why = problems::end_effector_axis_bounds(*c, lower, upper, lo3, hi3); !why.empty())
          throw std::invalid_argument("constraint '" + c->info().name + "' (" + std::string(c->type()) + "): " + why);
        if (e != nullptr) e->set_bounds(lo3, hi3);
        else h->set_z_min(lo3[2]);
      } else {
        throw std::invalid_argument("constraint '" + c->info().name + "' (" + std::string(c->type()) +
                                    ") has no bounds to set; expected a control_box, state_box, end_effector_box or "
                                    "end_effector_height");
      }
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("Solver::set_bounds: ") + e.what());
    }
    // A row added or removed: the rows laid out again in the storage reserved for them, and the
    // next solve cold (the multipliers and slacks belonged to the old rows).
    if (c->dim() != before) {
      lay_out(m.ineq, m.N, m.nw);
      m.size_inequality_iterate();
      m.reset_multipliers();
    }
    return;
  }
  throw std::invalid_argument("Solver::set_bounds: no constraint named '" + std::string(constraint_name) + "'");
}

void Solver::set_obstacle(std::string_view constraint_name, std::array<double, 2> center, double radius) {
  for (const auto& c : impl_->problem.constraints) {
    if (c->info().name != constraint_name) continue;
    auto* o = dynamic_cast<problems::CircleObstacle*>(c.get());
    if (o == nullptr)
      throw std::invalid_argument("Solver::set_obstacle: constraint '" + c->info().name + "' (" +
                                  std::string(c->type()) + ") is not a circle_obstacle");
    try {
      o->set_geometry(center, radius);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("Solver::set_obstacle: ") + e.what());
    }
    return;
  }
  throw std::invalid_argument("Solver::set_obstacle: no constraint named '" + std::string(constraint_name) + "'");
}

void Solver::set_initial_guess(std::span<const double> x, std::span<const double> u) {
  Impl& m = *impl_;
  require_size(x.size(), m.sol.x.size(), "set_initial_guess (x)");
  require_size(u.size(), m.sol.u.size(), "set_initial_guess (u)");
  m.start_cold(x, u);
}

void Solver::set_warm_start(const problems::InitialGuess& guess) {
  Impl& m = *impl_;
  if (const GuessMismatch bad = guess_mismatch(m.sol, guess); bad.field != nullptr)
    throw std::invalid_argument(std::string("Solver::set_warm_start (") + bad.field + "): expected " +
                                std::to_string(bad.expected) + " values (" + bad.shape + "), found " +
                                std::to_string(bad.found));
  if (is_warm(m.sol, guess))
    if (const long i = nonpositive_entry(guess); i >= 0)
      throw std::invalid_argument("Solver::set_warm_start: slacks and duals must be positive, found s[" +
                                  std::to_string(i) + "] = " + std::to_string(guess.s[static_cast<std::size_t>(i)]) +
                                  ", z[" + std::to_string(i) + "] = " +
                                  std::to_string(guess.z[static_cast<std::size_t>(i)]));
  m.apply_guess(guess);
}

void Solver::set_iteration_callback(IterationCallback callback, void* user) {
  impl_->callback = callback;
  impl_->callback_user = user;
}

void Solver::shift() {
  Impl& m = *impl_;
  const int nx = m.nx, nu = m.nu, N = m.N;
  const auto move_blocks = [](std::vector<double>& v, int width, int count) {
    // Block k <- block k + 1 for k < count - 1; the last block stays.
    std::copy(v.begin() + width, v.begin() + static_cast<std::ptrdiff_t>(count) * width, v.begin());
  };
  move_blocks(m.sol.x, nx, N + 1);
  move_blocks(m.sol.u, nu, N);
  move_blocks(m.sol.lambda, nx, N + 1);
  // Constraint rows move only between knots with the same row count (running knots); a knot whose
  // successor has other rows (the terminal knot) keeps its own.
  const auto move_rows = [N](const Rows& rows, std::vector<double>& a, std::vector<double>* b) {
    for (int k = 0; k < N; ++k) {
      const int at = rows.offset[k], next = rows.offset[k + 1], end = rows.offset[k + 2];
      if (next - at != end - next) continue;
      std::copy(a.begin() + next, a.begin() + end, a.begin() + at);
      if (b) std::copy(b->begin() + next, b->begin() + end, b->begin() + at);
    }
  };
  move_rows(m.ineq, m.sol.z, &m.s);
  move_rows(m.eq, m.sol.y, nullptr);
  m.warm_shift = true;
}

const Solution& Solver::solution() const { return impl_->sol; }
const Stats& Solver::stats() const { return impl_->stats; }
const SolverOptions& Solver::options() const { return impl_->opt; }
const problems::Problem& Solver::problem() const { return impl_->problem; }
int Solver::nx() const { return impl_->nx; }
int Solver::nu() const { return impl_->nu; }
int Solver::N() const { return impl_->N; }
int Solver::inequality_offset(int k) const { return impl_->ineq.offset.at(static_cast<std::size_t>(k)); }
int Solver::equality_offset(int k) const { return impl_->eq.offset.at(static_cast<std::size_t>(k)); }
std::size_t Solver::bytes_allocated() const { return impl_->bytes; }

}  // namespace knot::solver
