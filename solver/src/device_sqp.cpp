// DeviceSqp: the device path's host handle (device/device_sqp.hpp), its fit test and its messages.
#include "knot/solver/device/device_sqp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "knot/linalg/group.hpp"
#include "knot/solver/device/hessian.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/expression_terms.hpp"
#include "max_iterations_message.hpp"

namespace knot::solver::device {

namespace {

// Where Solver's exact Hessian has no closed form (Solver differences its gradient there; the device
// path has no differencing): empty when every piece has one.
std::string exact_hessian_unsupported(const problems::Problem& problem) {
  const int nw = problem.nx() + problem.nu();
  if (problem.model->type() != "manipulator" && nw > problems::kMaxSecondOrderWidth)
    return "solver.hessian: the device path's exact Hessian takes models with nx + nu <= " +
           std::to_string(problems::kMaxSecondOrderWidth) + " (their second derivatives on HyperDual), found nx + nu = " +
           std::to_string(nw) + "; set hessian: gauss_newton";
  const auto too_wide = [](const char* kind, const problems::TermInfo& info, const problems::TermExpressions& e) {
    if (int(e.inputs().size()) <= detail::kMaxTermCurvatureInputs) return std::string();
    return std::string("solver.hessian: ") + kind + " '" + info.name + "' reads more than " +
           std::to_string(detail::kMaxTermCurvatureInputs) +
           " states and controls, where the exact Hessian has no closed form; set hessian: gauss_newton";
  };
  for (const auto& c : problem.costs)
    if (const auto* r = dynamic_cast<const problems::ResidualCost*>(c.get()))
      if (std::string why = too_wide("cost", r->info(), r->expressions()); !why.empty()) return why;
  for (const auto& c : problem.constraints)
    if (const auto* e = dynamic_cast<const problems::ExpressionConstraint*>(c.get()))
      if (std::string why = too_wide("constraint", e->info(), e->expressions()); !why.empty()) return why;
  return {};
}

}  // namespace

std::string device_sqp_unsupported(const problems::Problem& problem, const SolverOptions& o) {
  if (std::string why = device_path_unsupported(problem); !why.empty()) return why;
  if (o.hessian != Hessian::GaussNewton)
    if (std::string why = exact_hessian_unsupported(problem); !why.empty()) return why;
  const Linsys linsys =
      o.lq.linsys == Linsys::Auto ? lq_auto_linsys(problem.nx(), problem.nu(), problem.horizon.N) : o.lq.linsys;
  if (linsys == Linsys::KktLdlt)
    return std::string("solver.linsys: the device path's LQ step is riccati, bdsv or pcg, found ") + to_string(linsys);
  if (o.time_limit > 0) return "solver.time_limit: the device path has no wall-clock limit";
  if (o.real_time_iteration) return "solver.real_time_iteration: not on the device path";
  return {};
}

SolverOptions device_path_options(SolverOptions options) {
  options.hessian = Hessian::GaussNewton;
  if (options.lq.linsys != Linsys::Bdsv && options.lq.linsys != Linsys::Pcg) options.lq.linsys = Linsys::Riccati;
  return options;
}

DeviceOptions device_options(const SolverOptions& s) {
  DeviceOptions o;
  o.max_iter = s.max_iter;
  o.tol_stationarity = s.tol_stationarity;
  o.tol_feasibility = s.tol_feasibility;
  o.tol_complementarity = s.tol_complementarity;
  o.tol_duality_gap = s.tol_duality_gap;
  o.scale_max = s.scale_max;
  o.objective_scale_min = s.objective_scale_min;
  o.objective_scale_max = s.objective_scale_max;
  o.objective_scale_target = s.objective_scale_target;
  o.acceptable_tol = s.acceptable_tol;
  o.acceptable_iter = s.acceptable_iter;
  o.reg_init = s.reg_init;
  o.reg_growth = s.reg_growth;
  o.reg_max = s.reg_max;
  o.mu_init = s.mu_init;
  o.mu_min = s.mu_min;
  o.mu_linear = s.mu_linear;
  o.mu_superlinear = s.mu_superlinear;
  o.barrier_tol = s.barrier_tol;
  o.tau_min = s.tau_min;
  o.slack_push = s.slack_push;
  o.dual_init = s.dual_init;
  o.central_start = s.central_start;
  o.equality_reg = s.equality_reg;
  o.globalization = s.globalization == Globalization::Merit ? 0 : s.globalization == Globalization::Filter ? 1 : 2;
  o.armijo = s.armijo;
  o.backtrack = s.backtrack;
  o.min_step = s.min_step;
  o.penalty_margin = s.penalty_margin;
  o.penalty_max = s.penalty_max;
  const LqOptions& lq = s.lq;
  o.linsys = lq.linsys == Linsys::Bdsv ? 1 : lq.linsys == Linsys::Pcg ? 2 : 0;
  o.schur.pcg = lq.linsys == Linsys::Pcg;
  o.schur.stair = lq.preconditioner == Preconditioner::Stair;
  o.schur.pcg_rel_tol = lq.pcg_rel_tol;
  o.schur.pcg_max_iters = lq.pcg_max_iters;
  o.schur.pcg_warm_start = lq.pcg_warm_start;
  o.schur.schur_reg = lq.schur_reg;
  o.schur.max_refinement = lq.max_refinement;
  o.schur.refine_tol = lq.refine_tol;
  o.schur.pcg_direct_fallback = lq.pcg_direct_fallback;
  o.schur.riccati_fallback = lq.riccati_fallback;
  o.schur.inexact_rollout = lq.inexact_rollout;
  o.lq_forcing = s.lq_forcing;
  o.hessian = s.hessian == Hessian::GaussNewton ? 0 : s.hessian == Hessian::Exact ? 1 : 2;
  o.hessian_switch_ratio = s.hessian_switch_ratio;
  o.hessian_switch_window = s.hessian_switch_window;
  o.hessian_restart = s.hessian_restart;
  return o;
}

void format_device_message(const DeviceResult& r, char* out, std::size_t size) {
  if (size == 0) return;
  int used = std::snprintf(out, size, "%s", describe(r.status));
  if (r.detail == DeviceDetail::None || used < 0 || static_cast<std::size_t>(used) + 2 >= size) return;
  char* p = out + used;
  std::size_t left = size - static_cast<std::size_t>(used);
  p[0] = ':';
  p[1] = ' ';
  p += 2;
  left -= 2;
  const double* v = r.value;
  switch (r.detail) {
    case DeviceDetail::None:
      break;
    case DeviceDetail::NonFiniteInitialState:
      std::snprintf(p, left, "the initial state has a non-finite entry");
      break;
    case DeviceDetail::NonFiniteLinearization:
      std::snprintf(p, left, "non-finite values or derivatives at the iterate of iteration %d", r.iteration);
      break;
    case DeviceDetail::RegularizationExhausted:
      std::snprintf(p, left, "Hessian regularization exhausted (delta %.3g > reg_max) at iteration %d", v[0],
                    r.iteration);
      break;
    case DeviceDetail::NonFiniteStep:
      std::snprintf(p, left, "non-finite LQ step at iteration %d", r.iteration);
      break;
    case DeviceDetail::AcceptableRun:
      std::snprintf(p, left, "acceptable for several iterates in a row without progress (iteration %d)", r.iteration);
      break;
    case DeviceDetail::MaxIterations:
      format_max_iterations(p, left, r.iteration, int(v[0]));
      break;
    case DeviceDetail::AcceptableAt:
      std::snprintf(p, left,
                    "%s at iteration %d, at an acceptable iterate (stationarity %.3g, feasibility %.3g, "
                    "complementarity %.3g)",
                    to_string(r.cause), r.iteration, v[0], v[1], v[2]);
      break;
    case DeviceDetail::PenaltyExceeded:
      std::snprintf(p, left, "merit penalty %.3g exceeds penalty_max at iteration %d", v[0], r.iteration);
      break;
    case DeviceDetail::MeritStalledInfeasible:
      std::snprintf(p, left, "the merit line search stalled at infeasibility %.3g (iteration %d)", v[0], r.iteration);
      break;
    case DeviceDetail::MeritNoDecrease:
      std::snprintf(p, left, "no decrease down to the smallest step at iteration %d (directional derivative %.3g)",
                    r.iteration, v[0]);
      break;
    case DeviceDetail::FilterStalledInfeasible:
      std::snprintf(p, left, "the filter line search stalled at infeasibility %.3g (iteration %d)", v[0], r.iteration);
      break;
    case DeviceDetail::FilterRejected:
      std::snprintf(p, left, "the filter rejected every step down to %.3g at iteration %d", v[0], r.iteration);
      break;
    case DeviceDetail::LqStalled:
      std::snprintf(p, left,
                    "the %s LQ step stalled at KKT residual %.3g, above the iterate's KKT error %.3g (asked %.3g), at "
                    "iteration %d",
                    r.linsys == 2 ? "pcg" : "bdsv", v[0], v[1], v[2], r.iteration);
      break;
    case DeviceDetail::GlobalizationNoneInfeasible:
      std::snprintf(p, left, "globalization none stopped with infeasibility %.3g > tol_feasibility", v[0]);
      break;
  }
}

namespace {

const problems::Problem& fits(const problems::Problem& p, const SolverOptions& o) {
  if (const std::string why = o.validate(); !why.empty()) throw std::invalid_argument("SolverOptions: " + why);
  p.validate();
  if (const std::string why = device_sqp_unsupported(p, o); !why.empty())
    throw problems::ProblemError(problems::SourceLocation{p.source, 0, 0}, "solver",
                                 "a problem and options the device path runs", why);
  return p;
}

}  // namespace

DeviceSqp::DeviceSqp(const problems::Problem& problem, const SolverOptions& options, int max_group, int trials)
    : data_(compile_batch_problem(fits(problem, options))), options_(device_options(options)),
      max_group_(std::max(1, max_group)) {
  const BatchProblem& P = data_.problem;
  trials_ = resolve_trials(trials, max_group_, P.N);
  options_.trials = trials_;
  slice_ = data_.slice;
  arrays_.assign(SqpArrays<double>::size(P, options_, max_group_, trials_), 0.0);
  rows_.assign(static_cast<std::size_t>(options_.max_iter) + 1, IterationStats{});
  solution_.nx = P.nx;
  solution_.nu = P.nu;
  solution_.N = P.N;
  solution_.x.assign(static_cast<std::size_t>(P.N + 1) * P.nx, 0.0);
  solution_.u.assign(static_cast<std::size_t>(P.N) * P.nu, 0.0);
  solution_.lambda.assign(static_cast<std::size_t>(P.N + 1) * P.nx, 0.0);
  // z and s hold the problem's rows; set_slice_bounds may lay out up to P.n_ineq (no allocation then).
  solution_.z.reserve(static_cast<std::size_t>(P.n_ineq));
  solution_.s.reserve(static_cast<std::size_t>(P.n_ineq));
  solution_.z.assign(static_cast<std::size_t>(row_offsets(P, slice_.data(), ConstraintSet::Inequality)[P.N + 1]), 0.0);
  solution_.s.assign(solution_.z.size(), 0.0);
  solution_.y.assign(static_cast<std::size_t>(P.n_eq), 0.0);
  std::snprintf(solution_.message_.data(), solution_.message_.size(), "%s", describe(Status::NotRun));
  std::vector<double> x, u;
  default_initial_guess(problem, x, u);
  set_initial_guess(x, u);
}

void DeviceSqp::set_initial_state(std::span<const double> x0) {
  if (x0.size() != static_cast<std::size_t>(data_.problem.nx))
    throw std::invalid_argument("DeviceSqp::set_initial_state: expected " + std::to_string(data_.problem.nx) +
                                " values, found " + std::to_string(x0.size()));
  std::copy(x0.begin(), x0.end(), slice_.begin() + static_cast<std::ptrdiff_t>(data_.problem.x0));
}

void DeviceSqp::set_model(const problems::Problem& problem) {
  try {
    data_.arena = recompiled_arena(problem, data_.problem);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("DeviceSqp::set_model: ") + e.what());
  }
}

void DeviceSqp::set_initial_guess(std::span<const double> x, std::span<const double> u) {
  const BatchProblem& P = data_.problem;
  const std::size_t nxs = static_cast<std::size_t>(P.N + 1) * P.nx, nus = static_cast<std::size_t>(P.N) * P.nu;
  if (x.size() != nxs || u.size() != nus)
    throw std::invalid_argument("DeviceSqp::set_initial_guess: expected " + std::to_string(nxs) + " and " +
                                std::to_string(nus) + " values, found " + std::to_string(x.size()) + " and " +
                                std::to_string(u.size()));
  const SqpArrays<double> a = SqpArrays<double>::carve(P, options_, trials_, arrays_.data());
  std::copy(x.begin(), x.end(), a.x);
  std::copy(u.begin(), u.end(), a.u);
}

Status DeviceSqp::solve() {
  linalg::SerialGroup g;
  solve_on(g);
  return solution_.status;
}

void DeviceSqp::publish() {
  const BatchProblem& P = data_.problem;
  const SqpArrays<double> a = SqpArrays<double>::carve(P, options_, trials_, arrays_.data());
  std::copy(a.x, a.x + solution_.x.size(), solution_.x.begin());
  std::copy(a.u, a.u + solution_.u.size(), solution_.u.begin());
  std::copy(a.lambda, a.lambda + solution_.lambda.size(), solution_.lambda.begin());
  const auto rows = static_cast<std::size_t>(row_offsets(P, slice_.data(), ConstraintSet::Inequality)[P.N + 1]);
  solution_.z.resize(rows);
  solution_.s.resize(rows);
  std::copy(a.z, a.z + solution_.z.size(), solution_.z.begin());
  std::copy(a.s, a.s + solution_.s.size(), solution_.s.begin());
  std::copy(a.y, a.y + solution_.y.size(), solution_.y.begin());
  solution_.cost = result_.cost;
  solution_.mu = result_.mu;
  solution_.status = result_.status;
  solution_.iterations = result_.iterations;
  format_device_message(result_, solution_.message_.data(), solution_.message_.size());
}

std::size_t DeviceSqp::bytes_allocated() const {
  return arrays_.capacity() * sizeof(double) + slice_.capacity() * sizeof(double) +
         rows_.capacity() * sizeof(IterationStats) + data_.arena.capacity() + data_.slice.capacity() * sizeof(double);
}

}  // namespace knot::solver::device
