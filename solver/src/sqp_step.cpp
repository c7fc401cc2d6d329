// The SQP phases that make and take a step: the barrier update, condensing the constraint rows into
// the LQ subproblem, the LQ solve with regularization, slack/dual recovery with the fraction-to-
// boundary rule, and the line searches (filter, l1 merit). docs/solver.md derives each formula.
#include <algorithm>
#include <cmath>
#include <limits>

#include "sqp_impl.hpp"

namespace knot::solver {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

// Duals stay within a factor kDualBound of the barrier's own estimate mu / s (IPOPT's kappa_Sigma),
// so the condensed Hessian term z/s cannot drift arbitrarily far from mu / s^2.
constexpr double kDualBound = 1e10;

// Merit: the share of the predicted infeasibility decrease the penalty must turn into merit decrease
// (Nocedal and Wright 18.36).
constexpr double kPenaltyRho = 0.1;

// Largest a in (0, 1] with v + a dv >= (1 - tau) v.
double fraction_to_boundary(const std::vector<double>& v, const std::vector<double>& dv, double tau) {
  double a = 1;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (dv[i] < 0) a = std::min(a, -tau * v[i] / dv[i]);
  return a;
}

}  // namespace

// On the central path every s_i z_i is mu, so the gap is about m mu: the floor lets mu fall far
// enough for the duality-gap test as well as for mu_min. Not on the Schur backends: their
// complement of stage blocks holding z/s ~ z^2/mu loses its accuracy first (bryson_denham at
// mu = 2e-12: pcg's step stalls at a KKT residual of 50), so they stop at mu_min and the gap test
// asks them for what that floor gives (within()).
double Solver::Impl::mu_floor() const {
  if (ineq.total() == 0 || lq_solver.linsys() == Linsys::Bdsv || lq_solver.linsys() == Linsys::Pcg) return opt.mu_min;
  return std::min(opt.mu_min, 0.5 * opt.tol_duality_gap * std::max(1.0, obj_scale * std::abs(cost)) / ineq.total());
}

// Monotone (Fiacco-McCormick) update: once the barrier problem's KKT error is within barrier_tol * mu,
// mu <- max(mu_min, min(mu_linear mu, mu^mu_superlinear)), repeated while the current iterate already
// solves the smaller barrier problem to that accuracy.
void Solver::Impl::update_barrier(Residuals& res) {
  if (ineq.total() == 0) return;
  const double floor = mu_floor();
  while (mu > floor && res.barrier_error <= opt.barrier_tol * mu) {
    mu = std::max(floor, std::min(opt.mu_linear * mu, std::pow(mu, opt.mu_superlinear)));
    double comp_mu = 0;
    for (int i = 0; i < ineq.total(); ++i) comp_mu = std::max(comp_mu, std::abs(s[i] * sol.z[i] - mu));
    res.barrier_error = std::max({res.stationarity / res.scale_dual, res.feasibility, comp_mu / res.scale_comp});
  }
}

// Condenses the constraint rows into the stage blocks, so the LQ keeps its stage-wise structure:
//   inequality row i (g + s = 0, s > 0):  H += (z_i/s_i) J_i J_i',  grad += (mu/s_i + (z_i/s_i)(g_i + s_i)) J_i
//   equality row e (stabilized):          H += J_e J_e' / delta,    grad += (y_e + h_e / delta) J_e
// where J is the row's gradient in w = (x_k, u_k), H the stage Hessian [Q S'; S R] and grad (q; r).
void Solver::Impl::add_barrier_terms() {
  const auto add_row = [&](int k, const double* J, double weight, double coefficient) {
    int count = 0;
    const int width = k < N ? nw : nx;
    for (int a = 0; a < width; ++a)
      if (J[a] != 0.0) nonzero[static_cast<std::size_t>(count++)] = a;
    double* Q = lq.Q_k(k);
    double* q = lq.q_k(k);
    double* R = k < N ? lq.R_k(k) : nullptr;
    double* S = k < N ? lq.S_k(k) : nullptr;
    double* r = k < N ? lq.r_k(k) : nullptr;
    for (int ia = 0; ia < count; ++ia) {
      const int a = nonzero[static_cast<std::size_t>(ia)];
      const double ja = J[a];
      if (a < nx) q[a] += coefficient * ja;
      else r[a - nx] += coefficient * ja;
      for (int ib = 0; ib < count; ++ib) {
        const int b = nonzero[static_cast<std::size_t>(ib)];
        const double h = weight * ja * J[b];
        if (a < nx && b < nx) Q[a + static_cast<std::size_t>(b) * nx] += h;
        else if (a >= nx && b < nx) S[(a - nx) + static_cast<std::size_t>(b) * nu] += h;
        else if (a >= nx && b >= nx) R[(a - nx) + static_cast<std::size_t>(b - nx) * nu] += h;
      }
    }
  };
  for (int k = 0; k <= N; ++k) {
    for (int i = ineq.offset[k]; i < ineq.offset[k + 1]; ++i) {
      const double d = sol.z[i] / s[i];
      add_row(k, ineq.jac.data() + static_cast<std::size_t>(i) * nw, d, mu / s[i] + d * (ineq.value[i] + s[i]));
    }
    for (int e = eq.offset[k]; e < eq.offset[k + 1]; ++e)
      add_row(k, eq.jac.data() + static_cast<std::size_t>(e) * nw, 1.0 / opt.equality_reg,
              sol.y[e] + eq.value[e] / opt.equality_reg);
  }
}

// solve_lq: the LQ subproblem; when the backend finds the Hessian not positive definite, delta I is
// added to every Q_k and R_k and the solve repeated with delta growing by reg_growth up to reg_max.
// The time limit is checked before every retry, and pcg checks it itself (Interrupted).
// Step accuracy (SolverOptions::lq_forcing): the Schur backends are held to a KKT residual of
// E min(lq_forcing, E), E the barrier problem's KKT error (Dembo, Eisenstat and Steihaug's quadratic
// forcing), the residual kept in the control rows (LqOptions::inexact_rollout); a target below
// rounding level (and lq_forcing 0) is the rounding-level solve. A step the Schur path cannot solve is the Riccati recursion's
// (LqOptions::riccati_fallback), counted in Stats::riccati_fallbacks. A step whose residual stalled
// above E is no Newton step at all: the solve ends there, saying so, rather than in a line search that
// cannot succeed.
bool Solver::Impl::solve_lq(IterationStats& it) {
  // The barrier problem's KKT error at the mu of this step (update_barrier may just have lowered it).
  double error = std::max(it.stationarity, it.feasibility);
  for (int i = 0; i < ineq.total(); ++i) error = std::max(error, std::abs(s[i] * sol.z[i] - mu));
  const double lq_tol = error * std::min(opt.lq_forcing, error);
  lq_solver.set_tolerance(lq_tol);
  double reg = 0;
  for (;;) {
    if (reg > 0 && out_of_time("regularization retries")) return false;
    if (rate) expand_rate();
    const LqStatus st = rate ? lq_solver.solve(lq_aug, step_aug) : lq_solver.solve(lq, step);
    ++stats.lq_solves;
    const LqStats& ls = lq_solver.stats();
    it.lq_iterations += ls.pcg_iterations_total;
    it.lq_status = st;
    it.lq_residual = ls.kkt_residual;
    it.lq_tolerance = ls.kkt_tolerance;
    if (st == LqStatus::Solved || (st == LqStatus::MaxIterations && ls.kkt_residual < error)) {
      if (rate) contract_rate();
      break;
    }
    if (st == LqStatus::MaxIterations) {
      set_status(Status::NumericalError,
                 "the %s LQ step stalled at KKT residual %.3g, above the iterate's KKT error %.3g (asked %.3g), at "
                 "iteration %d",
                 to_string(ls.linsys), ls.kkt_residual, error, lq_tol, stats.rows - 1);
      return false;
    }
    if (st == LqStatus::Interrupted) {
      out_of_time("LQ solve");  // sets TimeLimit: the deadline has passed
      return false;
    }
    if (st == LqStatus::NonFinite) {
      set_status(Status::NumericalError, "non-finite LQ step at iteration %d", stats.rows - 1);
      return false;
    }
    const double next = reg == 0 ? std::max(opt.reg_init, reg_last / opt.reg_growth) : reg * opt.reg_growth;
    if (next > opt.reg_max) {
      set_status(Status::NumericalError, "Hessian regularization exhausted (delta %.3g > reg_max) at iteration %d", next,
           stats.rows - 1);
      return false;
    }
    const double add = next - reg;
    for (int k = 0; k <= N; ++k) {
      for (int i = 0; i < nx; ++i) lq.Q_k(k)[i + static_cast<std::size_t>(i) * nx] += add;
      if (k < N)
        for (int i = 0; i < nu; ++i) lq.R_k(k)[i + static_cast<std::size_t>(i) * nu] += add;
    }
    reg = next;
  }
  reg_last = reg;
  it.regularization = reg;
  it.lq_riccati_fallback = lq_solver.stats().riccati_fallback;
  stats.riccati_fallbacks += it.lq_riccati_fallback;
  if (reg > 0) {
    ++stats.regularized;
    stats.max_regularization = std::max(stats.max_regularization, reg);
  }
  stats.lq_iterations += it.lq_iterations;
  return true;
}

// The LQ on the augmented state [dx_k; p_k], p_k = du_{k-1} (p_0 = 0: no rate term at knot 0):
//   A~ = [A 0; 0 0], B~ = [B; I], c~ = [c; 0], Q~ = [Q 0; 0 Hpp], S~ = [S Hup], q~ = [q; 0],
// R and r as they are (r_{k-1} already holds the rate gradient in u_{k-1}).
void Solver::Impl::expand_rate() {
  const int na = nx + nu;
  const auto block = [](double* dst, int ldd, const double* src, int m, int n, int lds) {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) dst[i + static_cast<std::size_t>(j) * ldd] = src[i + static_cast<std::size_t>(j) * lds];
  };
  std::fill(lq_aug.A.begin(), lq_aug.A.end(), 0.0);
  std::fill(lq_aug.B.begin(), lq_aug.B.end(), 0.0);
  std::fill(lq_aug.c.begin(), lq_aug.c.end(), 0.0);
  std::fill(lq_aug.Q.begin(), lq_aug.Q.end(), 0.0);
  std::fill(lq_aug.q.begin(), lq_aug.q.end(), 0.0);
  for (int k = 0; k <= N; ++k) {
    block(lq_aug.Q_k(k), na, lq.Q_k(k), nx, nx, nx);
    block(lq_aug.Q_k(k) + nx + static_cast<std::size_t>(nx) * na, na,
          rate_Hpp.data() + static_cast<std::size_t>(k) * nu * nu, nu, nu, nu);
    std::copy(lq.q_k(k), lq.q_k(k) + nx, lq_aug.q_k(k));
    if (k == N) break;
    block(lq_aug.A_k(k), na, lq.A_k(k), nx, nx, nx);
    block(lq_aug.B_k(k), na, lq.B_k(k), nx, nu, nx);
    for (int i = 0; i < nu; ++i) lq_aug.B_k(k)[nx + i + static_cast<std::size_t>(i) * na] = 1.0;
    std::copy(lq.c_k(k), lq.c_k(k) + nx, lq_aug.c_k(k));
    block(lq_aug.S_k(k), nu, lq.S_k(k), nu, nx, nu);
    block(lq_aug.S_k(k) + static_cast<std::size_t>(nx) * nu, nu, rate_Hup.data() + static_cast<std::size_t>(k) * nu * nu,
          nu, nu, nu);
  }
  std::copy(lq.R.begin(), lq.R.end(), lq_aug.R.begin());
  std::copy(lq.r.begin(), lq.r.end(), lq_aug.r.begin());
  std::copy(lq.x_init.begin(), lq.x_init.end(), lq_aug.x_init.begin());
  std::fill(lq_aug.x_init.begin() + nx, lq_aug.x_init.end(), 0.0);
}

void Solver::Impl::contract_rate() {
  const int na = nx + nu;
  for (int k = 0; k <= N; ++k) {
    std::copy(step_aug.x.begin() + static_cast<std::ptrdiff_t>(k) * na,
              step_aug.x.begin() + static_cast<std::ptrdiff_t>(k) * na + nx, step.x_k(k));
    std::copy(step_aug.lambda.begin() + static_cast<std::ptrdiff_t>(k) * na,
              step_aug.lambda.begin() + static_cast<std::ptrdiff_t>(k) * na + nx, step.lambda_k(k));
  }
  std::copy(step_aug.u.begin(), step_aug.u.end(), step.u.begin());
}

// recover_step: from the LQ step dw = (dx, du) per row J dw, then
//   ds = -(g + s) - J dw,   z+ = mu/s + (z/s)(g + s + J dw),   y+ = y + (h + J dw) / delta,
// and the largest steps that keep s and z a fraction tau = max(tau_min, 1 - mu) off zero. A warm
// solve after shift() raises mu to warm_start_mu the first time a bound cuts its step.
void Solver::Impl::recover_step(double& alpha_primal, double& alpha_dual) {
  const auto row_times_step = [&](const Rows& rows, std::vector<double>& out) {
    for (int k = 0; k <= N; ++k) {
      const double* dx = step.x_k(k);
      const double* du = k < N ? step.u_k(k) : nullptr;
      for (int i = rows.offset[k]; i < rows.offset[k + 1]; ++i) {
        const double* J = rows.jac.data() + static_cast<std::size_t>(i) * nw;
        double acc = 0;
        for (int j = 0; j < nx; ++j) acc += J[j] * dx[j];
        if (du)
          for (int j = 0; j < nu; ++j) acc += J[nx + j] * du[j];
        out[static_cast<std::size_t>(i)] = acc;
      }
    }
  };
  const auto recover = [&] {
    row_times_step(ineq, ineq.jdw);
    row_times_step(eq, eq.jdw);
    for (int i = 0; i < ineq.total(); ++i) {
      const double r = ineq.value[i] + s[i];
      ds[i] = -r - ineq.jdw[i];
      dz[i] = mu / s[i] + sol.z[i] / s[i] * (r + ineq.jdw[i]) - sol.z[i];
    }
    for (int e = 0; e < eq.total(); ++e) dy[e] = (eq.value[e] + eq.jdw[e]) / opt.equality_reg;
    const double tau = std::max(opt.tau_min, 1 - mu);
    alpha_primal = fraction_to_boundary(s, ds, tau);
    alpha_dual = fraction_to_boundary(sol.z, dz, tau);
  };
  recover();
  // A warm solve whose step runs into a bound restarts the barrier, once: with mu near zero the
  // fraction to the boundary (tau = 1 - mu) would let the slack land next to zero, where every later
  // step is cut to nothing. The matrix does not depend on mu, so the new step costs a resolve.
  if (restart_armed && alpha_primal < 1 && mu < opt.warm_start_mu && resolve_barrier(opt.warm_start_mu)) {
    restart_armed = false;
    filter_size = 0;  // a new barrier problem starts a new filter
    stats.per_iteration[static_cast<std::size_t>(stats.rows - 1)].mu = mu;
    recover();
  }
}

// line_search: shared part. The directional derivative of the barrier objective
// phi_mu = f - mu sum log s along (dw, ds), then the globalization's own test (merit or filter).
// Returns true when a step was accepted (it.step holds its length); false after setting the status.
bool Solver::Impl::line_search(double alpha_max, IterationStats& it) {
  double df = 0, step_norm = 0;
  for (int k = 0; k <= N; ++k) {
    const double* dx = step.x_k(k);
    for (int i = 0; i < nx; ++i) {
      df += grad_x[static_cast<std::size_t>(k) * nx + i] * dx[i];
      step_norm = std::max(step_norm, std::abs(dx[i]));
    }
    if (k == N) break;
    const double* du = step.u_k(k);
    for (int i = 0; i < nu; ++i) {
      df += grad_u[static_cast<std::size_t>(k) * nu + i] * du[i];
      step_norm = std::max(step_norm, std::abs(du[i]));
    }
  }
  current.barrier = 0;
  for (int i = 0; i < ineq.total(); ++i) {
    df -= mu * ds[i] / s[i];
    current.barrier -= mu * std::log(s[i]);
  }
  it.step_norm = step_norm;
  it.step = alpha_max;
  if (opt.globalization == Globalization::Merit) {
    if (!update_penalty(df, it)) return false;
  }
  it.merit = opt.globalization == Globalization::Merit ? merit(current) : current.cost + current.barrier;
  if (opt.globalization == Globalization::None) return true;

  // A step that moves no variable by more than rounding is taken whole: there is nothing left to measure.
  double relative_step = 0;
  for (std::size_t i = 0; i < sol.x.size(); ++i)
    relative_step = std::max(relative_step, std::abs(step.x[i]) / (1 + std::abs(sol.x[i])));
  for (std::size_t i = 0; i < sol.u.size(); ++i)
    relative_step = std::max(relative_step, std::abs(step.u[i]) / (1 + std::abs(sol.u[i])));
  if (relative_step <= 10 * kEps) return true;

  return opt.globalization == Globalization::Merit ? merit_search(alpha_max, df, it) : filter_search(alpha_max, df, it);
}

// The trial point w + alpha dw, s + alpha ds and its merit pieces.
MeritParts Solver::Impl::trial_point(double alpha) {
  for (std::size_t i = 0; i < sol.x.size(); ++i) x_trial[i] = sol.x[i] + alpha * step.x[i];
  for (std::size_t i = 0; i < sol.u.size(); ++i) u_trial[i] = sol.u[i] + alpha * step.u[i];
  for (std::size_t i = 0; i < s.size(); ++i) s_trial[i] = s[i] + alpha * ds[i];
  return evaluate_merit_parts(x_trial.data(), u_trial.data(), s_trial.data());
}

// Merit penalty, recomputed each iteration (not monotone: a penalty kept at its early peak blocks
// progress for the rest of the solve): nu = max(||(lambda+, z+, y+)||_inf + penalty_margin,
// D phi_mu / ((1 - kPenaltyRho) (theta - theta_model))), so the merit's directional derivative
// D = D phi_mu - nu (theta - theta_model) is negative (Nocedal and Wright 18.36 without the curvature
// term, which the barrier's z/s inflates far beyond the step's real curvature). theta_model is the l1
// infeasibility the linearization predicts after the full step: dynamics, x_0 and g + s are met
// exactly; the stabilized equality rows leave h + J dw = delta (y+ - y).
bool Solver::Impl::update_penalty(double df, IterationStats& it) {
  double model_infeasibility = 0;
  for (int e = 0; e < eq.total(); ++e) model_infeasibility += std::abs(eq.value[e] + eq.jdw[e]);
  merit_decrease = current.infeasibility - model_infeasibility;
  double multipliers = 0;
  for (double v : step.lambda) multipliers = std::max(multipliers, std::abs(v));
  for (int i = 0; i < ineq.total(); ++i) multipliers = std::max(multipliers, std::abs(sol.z[i] + dz[i]));
  for (int e = 0; e < eq.total(); ++e) multipliers = std::max(multipliers, std::abs(sol.y[e] + dy[e]));
  double nu_needed = multipliers + opt.penalty_margin;
  if (merit_decrease > 0) nu_needed = std::max(nu_needed, df / ((1 - kPenaltyRho) * merit_decrease));
  penalty = nu_needed;
  it.penalty = penalty;
  if (!(penalty <= opt.penalty_max)) {
    set_status(Status::Infeasible, "merit penalty %.3g exceeds penalty_max at iteration %d", penalty, stats.rows - 1);
    return false;
  }
  return true;
}

// Armijo backtracking on the l1 merit from the fraction-to-boundary step.
bool Solver::Impl::merit_search(double alpha_max, double df, IterationStats& it) {
  const double phi0 = merit(current);
  const double D = df - penalty * merit_decrease;
  // A predicted change at rounding level leaves Armijo nothing to measure.
  if (std::abs(D) <= 10 * kEps * (1 + std::abs(phi0))) return true;
  double alpha = alpha_max;
  while (alpha >= opt.min_step) {
    if (out_of_time("line search")) return false;
    const MeritParts trial = trial_point(alpha);
    // Armijo, relaxed by the rounding error of evaluating phi.
    if (trial.finite && merit(trial) - phi0 <= opt.armijo * alpha * D + 10 * kEps * std::abs(phi0)) {
      it.step = alpha;
      return true;
    }
    alpha *= opt.backtrack;
    ++it.backtracks;
  }
  it.step = 0;
  if (stats.per_iteration[static_cast<std::size_t>(stats.rows - 1)].feasibility > opt.tol_feasibility) {
    if (restore(it)) return true;
    set_status(Status::Infeasible, "the merit line search stalled at infeasibility %.3g (iteration %d)",
         stats.per_iteration[static_cast<std::size_t>(stats.rows - 1)].feasibility, stats.rows - 1);
  } else {
    set_status(Status::LineSearchFailed, "no decrease down to step %.3g at iteration %d (directional derivative %.3g)",
         opt.min_step, stats.rows - 1, D);
  }
  return false;
}

// Filter line search (Waechter and Biegler 2006, without feasibility restoration) on the pair
// (theta, phi_mu): theta the l1 infeasibility, phi_mu the barrier objective. A trial is acceptable
// when theta <= theta_max, it is not dominated by a filter entry, and either
//   - (switching condition: theta <= theta_min and alpha (-D phi)^s_phi > delta theta^s_theta)
//     Armijo holds on phi_mu (an f-type step; the filter is unchanged), or
//   - theta or phi_mu decreases by a margin of theta (an h-type step; the filter grows by
//     ((1 - gamma_theta) theta, phi_mu - gamma_phi theta)).
bool Solver::Impl::filter_search(double alpha_max, double df, IterationStats& it) {
  constexpr double gamma_theta = 1e-5, gamma_phi = 1e-8, delta = 1, s_theta = 1.1, s_phi = 2.3, gamma_alpha = 0.05;
  const double theta = current.infeasibility;
  const double phi = current.cost + current.barrier;
  const double rounding = 10 * kEps * std::abs(phi);
  double alpha_min = gamma_theta;
  if (df < 0)
    alpha_min = std::min({gamma_theta, gamma_phi * theta / -df, delta * std::pow(theta, s_theta) / std::pow(-df, s_phi)});
  alpha_min = std::max(gamma_alpha * alpha_min, opt.min_step);
  // A feasible iterate whose predicted change of phi_mu is below rounding leaves nothing to measure:
  // the filter would only compare noise, so the step is taken whole.
  if (theta <= opt.tol_feasibility && std::abs(df) * alpha_max <= rounding + 10 * kEps) return true;
  const bool small_theta = theta <= filter_theta_min;
  double alpha = alpha_max;
  while (alpha >= alpha_min) {
    if (out_of_time("line search")) return false;
    const MeritParts trial = trial_point(alpha);
    const double theta_t = trial.infeasibility, phi_t = trial.cost + trial.barrier;
    bool accept = trial.finite && theta_t <= filter_theta_max;
    // Dominated: no better in theta and worse in phi_mu by more than rounding (an entry made at a
    // feasible-to-rounding iterate would otherwise reject every trial whose phi_mu moved by noise).
    for (int j = 0; accept && j < filter_size; ++j) {
      const std::array<double, 2>& entry = filter[static_cast<std::size_t>(j)];
      if (theta_t >= entry[0] && phi_t > entry[1] + rounding) accept = false;
    }
    if (accept) {
      const bool switching = df < 0 && alpha * std::pow(-df, s_phi) > delta * std::pow(theta, s_theta);
      if (small_theta && switching) {
        if (phi_t - phi <= opt.armijo * alpha * df + rounding) {
          it.step = alpha;
          return true;
        }
      } else if (theta_t <= (1 - gamma_theta) * theta || phi_t - phi <= -gamma_phi * theta + rounding) {
        if (filter_size < static_cast<int>(filter.size()))
          filter[static_cast<std::size_t>(filter_size++)] = {(1 - gamma_theta) * theta, phi - gamma_phi * theta};
        it.step = alpha;
        return true;
      }
    }
    alpha *= opt.backtrack;
    ++it.backtracks;
  }
  it.step = 0;
  const double feasibility = stats.per_iteration[static_cast<std::size_t>(stats.rows - 1)].feasibility;
  if (feasibility > opt.tol_feasibility && restore(it)) return true;
  if (feasibility > opt.tol_feasibility)
    set_status(Status::Infeasible, "the filter line search stalled at infeasibility %.3g (iteration %d)", feasibility,
         stats.rows - 1);
  else
    set_status(Status::LineSearchFailed, "the filter rejected every step down to %.3g at iteration %d", alpha_min,
         stats.rows - 1);
  return false;
}

// Takes the step: primal and slack by alpha, costates and equality multipliers toward the LQ's by
// alpha, inequality duals by their own fraction-to-boundary step, then kept within kDualBound of mu/s.
void Solver::Impl::accept_step(double alpha, double alpha_dual) {
  for (std::size_t i = 0; i < sol.x.size(); ++i) sol.x[i] += alpha * step.x[i];
  for (std::size_t i = 0; i < sol.u.size(); ++i) sol.u[i] += alpha * step.u[i];
  for (std::size_t i = 0; i < sol.lambda.size(); ++i) sol.lambda[i] += alpha * (step.lambda[i] - sol.lambda[i]);
  for (std::size_t e = 0; e < sol.y.size(); ++e) sol.y[e] += alpha * dy[e];
  for (std::size_t i = 0; i < s.size(); ++i) {
    s[i] += alpha * ds[i];
    const double z = sol.z[i] + alpha_dual * dz[i];
    sol.z[i] = std::clamp(z, mu / (kDualBound * s[i]), kDualBound * mu / s[i]);
  }
}

}  // namespace knot::solver
