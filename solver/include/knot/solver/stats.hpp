// What the last solve() did: per-iteration residuals and steps, and the time spent in each phase.
// Sized at construction (max_iter + 1 rows), filled by solve() without allocating.
#pragma once

#include <span>
#include <vector>

#include "knot/solver/lq.hpp"

namespace knot::solver {

// Row i describes iterate i (its residuals) and the step taken from it. The last row of a solve is
// the final iterate: its step fields stay zero.
struct IterationStats {
  double cost = 0;             // objective at the iterate (no barrier term)
  double merit = 0;            // the line search's measure at the iterate: the l1 merit with the step's
                               // penalty (merit) or the barrier objective f - mu sum log s (filter)
  double stationarity = 0;     // inf-norm of the Lagrangian gradient
  double feasibility = 0;      // inf-norm of the primal residuals
  double complementarity = 0;  // max_i s_i z_i
  double duality_gap = 0;      // sum_i s_i z_i
  double dual_scale = 1;       // s_d: the convergence test reads stationarity / s_d (docs/solver.md)
  double mu = 0;               // barrier parameter of the step
  double penalty = 0;          // merit penalty nu of the step
  double regularization = 0;   // delta added to the Hessian diagonal (0 when none was needed)
  double step = 0;             // primal step length alpha
  double dual_step = 0;        // inequality-dual step length
  double step_norm = 0;        // inf-norm of the full primal step (dx, du)
  double seconds = 0;          // wall clock since solve() began, when the row became final
  int backtracks = 0;          // rejected line-search trials
  bool restoration = false;    // the step was the feasibility fallback (a rollout of the controls)
  bool exact_hessian = false;  // the step's Hessian was the exact one (hessian exact, or auto once switched)
  int lq_iterations = 0;       // pcg iterations of the LQ solve (all tries); 0 for direct backends
  LqStatus lq_status = LqStatus::Solved;
  // What the step solved: the inf-norm of its LQ's KKT residual and the tolerance it was held to
  // (SolverOptions::lq_forcing); both 0 for riccati and kkt_ldlt, exact to rounding and not measured.
  double lq_residual = 0;
  double lq_tolerance = 0;
  bool lq_riccati_fallback = false;  // bdsv, pcg: the step is the Riccati recursion's (LqOptions::riccati_fallback)
};

// Seconds of wall clock per phase, summed over the iterations of the last solve().
struct PhaseTimes {
  double linearize = 0;    // dynamics, sensitivities, cost and constraint derivatives
  double barrier = 0;      // barrier-parameter update and condensing the constraint rows into the LQ
  double lq = 0;           // the LQ solve (assembly and linear system), regularized retries included
  double step = 0;         // slack, dual and multiplier steps and the fraction-to-boundary rule
  double line_search = 0;  // merit evaluations at trial points
  double convergence = 0;  // KKT residuals
  double total = 0;        // the whole solve()
};

struct Stats {
  int iterations = 0;              // SQP steps taken by the last solve()
  Linsys linsys = Linsys::Riccati;  // the LQ backend in use
  int lq_solves = 0;               // LQ solves, regularized retries included
  int lq_iterations = 0;           // pcg iterations, summed
  int regularized = 0;             // iterations that needed Hessian regularization
  int restorations = 0;            // steps taken by the feasibility fallback
  int riccati_fallbacks = 0;       // bdsv, pcg: steps whose LQ solve fell back to the Riccati recursion
  double max_regularization = 0;
  PhaseTimes time;
  std::vector<IterationStats> per_iteration;  // capacity max_iter + 1; rows [0, iterations] are valid

  // The rows of the last solve(): iterations + 1 of them (none before the first solve()).
  std::span<const IterationStats> history() const {
    return {per_iteration.data(), per_iteration.empty() || rows == 0 ? 0 : static_cast<std::size_t>(rows)};
  }
  int rows = 0;  // valid rows in per_iteration
};

}  // namespace knot::solver
