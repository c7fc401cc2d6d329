// Feasibility fallback of the line searches: before a stalled search declares the problem
// infeasible, the SQP tries the one step a multiple-shooting method always has at hand. Rolling the
// current controls out from x0 meets the dynamics and the initial state exactly, so the l1
// infeasibility keeps only the constraint rows' share; IPOPT's restoration phase plays this part
// (Waechter and Biegler 2006, section 3.3), and FDDP's rollouts are the same idea.
#include <algorithm>
#include <cmath>

#include "sqp_impl.hpp"

namespace knot::solver {

bool Solver::Impl::restore(IterationStats& it) {
  const double theta = current.infeasibility;
  const double phi = current.cost + current.barrier;
  std::copy(sol.u.begin(), sol.u.end(), u_trial.begin());
  std::copy(problem.x0.begin(), problem.x0.end(), x_trial.begin());
  for (int k = 0; k < N; ++k) {
    const double* xk = x_trial.data() + static_cast<std::size_t>(k) * nx;
    if (work[0].integrator.step(*work[0].data, xk, u_trial.data() + static_cast<std::size_t>(k) * nu, dt,
                        x_trial.data() + static_cast<std::size_t>(k + 1) * nx) != problems::IntegratorStatus::Ok)
      return false;
  }
  // The rows at the rolled-out states (with the old slacks), then slacks that meet them where they
  // can: a row the rollout satisfies gets s = -g (kept off zero no further than it was), a violated
  // one a small positive s. Only the slack terms of theta and the barrier change with them.
  MeritParts trial = evaluate_merit_parts(x_trial.data(), u_trial.data(), s.data());
  if (!trial.finite) return false;
  trial.barrier = 0;
  for (int i = 0; i < ineq.total(); ++i) {
    const double g = ineq.trial[static_cast<std::size_t>(i)];
    const double floor = std::min(s[i], opt.slack_push * std::max(1.0, std::abs(g)));
    s_trial[i] = std::max(-g, floor);
    trial.infeasibility += std::abs(g + s_trial[i]) - std::abs(g + s[i]);
    trial.barrier -= mu * std::log(s_trial[i]);
  }
  // A real reduction, not one within the filter's margin: otherwise the stall stands.
  if (!std::isfinite(trial.barrier) || !(trial.infeasibility <= 0.9 * theta)) return false;
  std::copy(x_trial.begin(), x_trial.end(), sol.x.begin());
  std::copy(s_trial.begin(), s_trial.end(), s.begin());
  // The filter restarts from the point that stalled, as IPOPT's does on leaving restoration.
  filter[0] = {(1 - 1e-5) * theta, phi - 1e-8 * theta};
  filter_size = 1;
  ++stats.restorations;
  it.restoration = true;
  it.step = 1;
  restored = true;
  return true;
}

}  // namespace knot::solver
