// The interior point's starting duals (a cold start on the central path) and its barrier parameter
// between two LQ solves (the step of the same condensed KKT matrix at another mu). docs/solver.md,
// "Inequality rows", gives the rules and the measurements behind them.
#include <algorithm>

#include "sqp_impl.hpp"

namespace knot::solver {

// Cold-start duals. z = dual_init = 1 weighs a bound at distance s by z/s in the condensed Hessian
// whether it matters or not: a torque limit of 300 N m adds 1/300 to an effort weight of 1e-5 and
// holds the first steps back. On the central path, z = mu / s, a far bound weighs mu / s^2 instead.
// Where a bound will be active that weight is too light to stop the first step at it, so one probe
// step decides: the LQ at the central duals (the first linearization's blocks are saved and restored
// around it), and if the fraction to the boundary cuts that step anywhere, every dual falls back to
// dual_init. Rows the guess violates or touches (their slack was pushed off zero) keep dual_init.
void Solver::Impl::start_duals() {
  std::fill(sol.z.begin(), sol.z.end(), opt.dual_init);
  if (!opt.central_start || ineq.total() == 0) return;
  for (int i = 0; i < ineq.total(); ++i)
    if (s[i] == -ineq.value[i]) sol.z[i] = mu / s[i];
  double* saved = probe_save.data();
  for (const std::vector<double>* v : {&lq.Q, &lq.R, &lq.S, &lq.q, &lq.r}) saved = std::copy(v->begin(), v->end(), saved);
  add_barrier_terms();
  IterationStats probe;
  const Status before = sol.status;
  bool central = solve_lq(probe);
  if (central) {
    double alpha_primal = 1, alpha_dual = 1;
    recover_step(alpha_primal, alpha_dual);
    central = alpha_primal == 1;
  } else {
    // A probe that fails (or runs out of time) decides nothing: the real step meets the same matrix
    // with dual_init and reports its own trouble.
    set_status(before, nullptr);
  }
  if (!central) std::fill(sol.z.begin(), sol.z.end(), opt.dual_init);
  const double* from = probe_save.data();
  for (std::vector<double>* v : {&lq.Q, &lq.R, &lq.S, &lq.q, &lq.r}) {
    std::copy(from, from + v->size(), v->begin());
    from += v->size();
  }
}

// Only the gradient's part sum_i (mu / s_i) J_i of the condensed LQ depends on mu (the matrix holds
// z_i / s_i), so the step at mu_new is the old factorization applied to the gradient shifted by
// sum_i ((mu_new - mu) / s_i) J_i (LqSolver::resolve: two vector sweeps with Riccati). On success
// mu becomes mu_new; otherwise the shift is undone, mu is kept and the step is the old one when the
// backend did not run (false).
bool Solver::Impl::resolve_barrier(double mu_new) {
  if (ineq.total() == 0) return false;
  const auto shift_gradient = [&](double d) {
    for (int k = 0; k <= N; ++k) {
      double* q = lq.q_k(k);
      double* r = k < N ? lq.r_k(k) : nullptr;
      const int width = k < N ? nw : nx;
      for (int i = ineq.offset[k]; i < ineq.offset[k + 1]; ++i) {
        const double* J = ineq.jac.data() + static_cast<std::size_t>(i) * nw;
        const double c = d / s[i];
        for (int a = 0; a < width; ++a) {
          if (J[a] == 0.0) continue;
          if (a < nx) q[a] += c * J[a];
          else r[a - nx] += c * J[a];
        }
      }
    }
  };
  shift_gradient(mu_new - mu);
  LqStatus st;
  if (rate) {
    expand_rate();
    st = lq_solver.resolve(lq_aug, step_aug);
    if (st == LqStatus::Solved) contract_rate();
  } else {
    st = lq_solver.resolve(lq, step);
  }
  ++stats.lq_solves;
  if (st != LqStatus::Solved) {
    shift_gradient(mu - mu_new);
    return false;
  }
  mu = mu_new;
  return true;
}

}  // namespace knot::solver
