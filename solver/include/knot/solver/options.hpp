// Options of the SQP solver: a plain struct with documented defaults and one validation function.
//
// A problem file's `solver:` section (problems::SolverSettings) maps onto these by from_settings();
// the fields below that have no key in the file keep their defaults. docs/solver.md explains the
// method each group of fields controls. The default line search is the filter; a problem file's
// `globalization` (filter, merit or none) sets it through from_settings().
#pragma once

#include <string>

#include "knot/problems/settings.hpp"
#include "knot/solver/lq.hpp"

namespace knot::solver {

enum class Globalization {
  Merit,   // l1 merit function, penalty update, Armijo backtracking
  Filter,  // filter line search on (infeasibility, barrier objective), Waechter and Biegler
  None,    // full steps (shortened only by the fraction-to-boundary rule)
};
const char* to_string(Globalization globalization);

enum class Hessian {
  GaussNewton,  // the cost terms' J'WJ; the curvature of dynamics and constraints is left out
  Exact,        // the Lagrangian's Hessian per knot: closed form where the model has second derivatives,
                // else central differences of its analytic gradient
  Auto,         // Gauss-Newton while its steps contract the KKT error fast, the exact Hessian once they
                // stall (hessian_switch_ratio, hessian_switch_window)
};
const char* to_string(Hessian hessian);

struct SolverOptions {
  // ---- Termination
  int max_iter = 100;                 // SQP iterations per solve()
  double time_limit = 0;              // wall-clock seconds per solve(); 0 = none. Checked at each iterate and
                                      // in the inner loops (pcg iterations, Schur refinement, regularization
                                      // retries, line-search trials); docs/solver.md gives the granularity
  // Solved when all four hold (docs/solver.md, "Convergence and status"). The dual measures are
  // scaled as IPOPT scales them, so large multipliers do not demand digits the problem lacks:
  // s_d = max(1, mean |multiplier| / scale_max), s_c = max(1, mean z / scale_max).
  double tol_stationarity = 1e-8;     // inf-norm of the Lagrangian gradient / s_d
  double tol_feasibility = 1e-8;      // inf-norm of dynamics defects, x_0 - x0, equality rows, inequality
                                      // violation max(g, 0) and slack residual g + s (unscaled)
  double tol_complementarity = 1e-8;  // max_i s_i z_i / s_c
  double tol_duality_gap = 1e-10;     // sum_i s_i z_i <= tol_duality_gap max(1, |f|): the barrier's excess
                                      // over the optimal cost, so the optimum is accurate relative to f
  double scale_max = 100;             // IPOPT's s_max
  // Objective scaling: where the largest gradient or Hessian-diagonal entry of the cost at the first
  // iterate of a cold start lies above objective_scale_max, the objective is multiplied by the power
  // of two that brings it to within a factor 2 of objective_scale_target (IPOPT's
  // nlp_scaling_max_gradient, 100); below objective_scale_min, to within a factor 2 of that minimum.
  // In between (where the shipped configs lie) nothing changes. The tolerances apply to the scaled
  // problem; the cost and multipliers reported are unscaled.
  double objective_scale_min = 1e-2;
  double objective_scale_max = 1e4;
  double objective_scale_target = 100;
  // The acceptable level: every measure above within acceptable_tol (the gap relative to max(1, |f|))
  // at acceptable_iter iterates in a row over which the error did not fall tenfold (the iterates
  // stopped moving), or at the iterate where a failed line search or max_iter stops the solve, ends
  // it SolvedAcceptable.
  double acceptable_tol = 1e-6;
  int acceptable_iter = 10;
  // One SQP iteration per solve() (real-time iteration for MPC): the barrier parameter, slacks and
  // multipliers carry over from call to call.
  bool real_time_iteration = false;

  // ---- The LQ subproblem (backend, PCG tolerance, Schur regularization) and its Hessian
  LqOptions lq;
  Hessian hessian = Hessian::Auto;
  // hessian auto: an iterate switches to the exact Hessian after hessian_switch_window Gauss-Newton
  // steps in a row, either all full (step length 1) or all of length >= 1/2 within one barrier
  // problem (one mu: a tail in which the filter halves every other step), whose contractions of the
  // barrier problem's KKT error (error after / error before, at the step's mu) multiply to more than
  // hessian_switch_ratio^hessian_switch_window and less than 1: Gauss-Newton's linear tail, at a rate
  // the left-out curvature sets (steps whose error grew are no tail). It returns to Gauss-Newton after
  // an exact step that needed regularization or the feasibility fallback (the exact Hessian is
  // indefinite away from a minimizer). Each solve() starts with Gauss-Newton; a real-time iteration
  // (one step per call) never switches. On the Schur backends (bdsv, pcg) the indefinite exact steps
  // take their Riccati fallback (docs/solver-lq.md).
  double hessian_switch_ratio = 0.7;
  int hessian_switch_window = 5;
  // hessian auto's restart: unless some iterate of the first 4 hessian_switch_window has a barrier
  // KKT error of at most hessian_restart times the starting iterate's (Gauss-Newton has left the
  // region its model holds in: the arm over long horizons), the solve starts over from its starting
  // point with the exact Hessian to the end (docs/solver.md, "Long horizons"). 0: never.
  double hessian_restart = 0.1;
  // The accuracy of each step's LQ on the Schur backends (bdsv, pcg; riccati and kkt_ldlt are exact
  // to rounding and ignore it): inexact Newton (Dembo, Eisenstat and Steihaug), a KKT residual of at
  // most E min(lq_forcing, E) with E the barrier problem's KKT error at the iterate (quadratic
  // forcing), the answer reduced to its controls (LqOptions::inexact_rollout: states and costates
  // recomputed from u). Where that is below rounding level (near the optimum) and at 0, every row
  // is solved to its rounding floor. At 1e-4 both backends reach riccati's verdict and point on the
  // 100 random cart-pole starts, every config and the warm-started closed loop; pcg's looser steps
  // reach other local minima (16 of those starts differ at 0.01, 70 at 0.1), bdsv's do not at any
  // forcing up to 0.5 (docs/solver-lq.md). A step whose residual stalled above E ends the solve
  // NumericalError, naming both.
  double lq_forcing = 1e-4;

  // ---- Hessian regularization, used when the LQ backend reports the Hessian not positive definite:
  // delta I is added to every Q_k and R_k, starting at max(reg_init, last successful delta / reg_growth),
  // and multiplied by reg_growth on each further failure; past reg_max the solve ends NumericalError.
  double reg_init = 1e-8;
  double reg_growth = 10;
  double reg_max = 1e8;

  // ---- Interior point for inequality rows g(x, u) <= 0 (slacks s > 0, duals z > 0)
  double mu_init = 0.1;          // first barrier parameter
  double mu_min = 1e-9;          // floor of the barrier parameter (from_settings: tol_complementarity / 10)
  double mu_linear = 0.2;        // monotone update mu <- max(mu_min, min(mu_linear mu, mu^mu_superlinear)) ...
  double mu_superlinear = 1.5;
  double barrier_tol = 10;       // ... once the barrier problem's KKT error is <= barrier_tol * mu
  double tau_min = 0.995;        // fraction to the boundary: tau = max(tau_min, 1 - mu)
  double slack_push = 1e-2;      // initial slack s = max(-g, slack_push max(1, |g|))
  double dual_init = 1;          // initial inequality dual z (rows the central start leaves out)
  // Cold start on the central path: z = mu_init / s for the rows the guess satisfies (s = -g), kept
  // when one probe LQ step with those duals stays inside every bound (the fraction to the boundary
  // does not cut it); otherwise every z = dual_init. Far, inactive bounds then cost few iterations.
  bool central_start = true;
  // After shift() the next solve starts from mu = mean(s z) of the shifted slacks and duals (no
  // barrier restart); the first step of that solve a bound cuts restarts it at warm_start_mu, once.
  double warm_start_mu = 1e-3;

  // ---- Equality rows h(x, u) = 0: stabilized (proximal multiplier) Newton steps
  // y+ = y + (h + J dw) / equality_reg; fixed points are exact KKT points (docs/solver.md).
  double equality_reg = 1e-8;

  // ---- Globalization (docs/solver.md compares the two line searches on every config)
  Globalization globalization = Globalization::Filter;
  double armijo = 1e-4;          // sufficient decrease: phi(a) <= phi(0) + armijo a D phi
  double backtrack = 0.5;        // step-length factor per rejected trial
  double min_step = 1e-10;       // smallest step length tried before LineSearchFailed
  double penalty_margin = 1e-3;  // merit: penalty nu >= ||multipliers||_inf + penalty_margin
  double penalty_max = 1e12;     // merit: a larger penalty means the constraints cannot be met: Infeasible

  // ---- Memory: GiB the constructor may allocate, by its estimate made before allocating (LQ data
  // and backend workspace, about 2 N (nx + nu)^2 doubles, and the integrator's); a larger problem
  // throws problems::ProblemError naming its size and this limit (key solver.memory_limit).
  double memory_limit = 8;

  // ---- Threads that evaluate the knots (linearization, exact Hessians, trial points): the calling
  // thread and threads - 1 workers made by the constructor; 0 = every core the process may run on
  // (its CPU affinity); at most N + 1. The LQ
  // step stays on the calling thread. Every thread count gives the same result bit for bit.
  int threads = 1;

  bool verbose = false;  // for callers (the CLI prints the per-iteration table); solve() never logs

  // Names the first invalid field and its value ("max_iter must be >= 1, found 0"); empty if valid.
  std::string validate() const;
};

// The options a problem file's `solver:` section asks for. Throws problems::ProblemError (key
// solver.<field>) for a value the SQP solver does not offer: hessian: exact, an unknown linsys.
SolverOptions from_settings(const problems::SolverSettings& settings);

}  // namespace knot::solver
