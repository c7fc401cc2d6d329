// The box-constrained LQ problem and its primal-dual interior-point solver.
//
//   minimize   the LQ cost of lq.hpp
//   subject to x_0 = x_init,   x_{k+1} = A_k x_k + B_k u_k + c_k       (k = 0 .. N-1)
//              lbu_k <= u_k <= ubu_k   (k = 0 .. N-1),   lbx_k <= x_k <= ubx_k   (k = 1 .. N)
//
// Each bound entry may be -inf / +inf (absent: no row, no slack, no multiplier). With the Lagrangian
//   L = lq.hpp's Lagrangian - sum zl'(v - lb) - sum zu'(ub - v)        (v each bounded x_k, u_k entry)
// the KKT conditions are lq.hpp's stationarity rows with -zl + zu added to the row of each bounded
// variable, the dynamics, lb <= v <= ub, zl, zu >= 0 and zl (v - lb) = zu (ub - v) = 0.
//
// Method (docs/solver-lq.md, "Box constraints: interior point"): Mehrotra predictor-corrector on
// slacks s >= 0 and multipliers z >= 0 of every finite bound. Each Newton system is an LQ problem with
// Z S^-1 added to the diagonals of Q_k, R_k, solved by LqSolver: solve() for the predictor (Riccati
// factorization), resolve() for the corrector (two vector sweeps with the same factors).
//
// LqIpmSolver allocates everything at construction (a copy of the LQ data it modifies, the LqSolver,
// the IPM vectors); solve() allocates nothing, never throws on numerical trouble (a status), and throws
// std::invalid_argument only on malformed input (wrong sizes, a NaN bound, or lb > ub).
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "knot/solver/lq.hpp"

namespace knot::solver {

// Box bounds on the controls and states, every entry +-inf (absent) until set.
struct LqBounds {
  LqBounds() = default;
  LqBounds(int nx, int nu, int N);

  int nx = 0, nu = 0, N = 0;
  std::vector<double> lbu, ubu;  // N vectors nu
  std::vector<double> lbx, ubx;  // N+1 vectors nx; the entries of k = 0 are ignored (x_0 is fixed)

  double* lbu_k(int k) { return lbu.data() + static_cast<std::size_t>(k) * nu; }
  double* ubu_k(int k) { return ubu.data() + static_cast<std::size_t>(k) * nu; }
  double* lbx_k(int k) { return lbx.data() + static_cast<std::size_t>(k) * nx; }
  double* ubx_k(int k) { return ubx.data() + static_cast<std::size_t>(k) * nx; }
  const double* lbu_k(int k) const { return lbu.data() + static_cast<std::size_t>(k) * nu; }
  const double* ubu_k(int k) const { return ubu.data() + static_cast<std::size_t>(k) * nu; }
  const double* lbx_k(int k) const { return lbx.data() + static_cast<std::size_t>(k) * nx; }
  const double* ubx_k(int k) const { return ubx.data() + static_cast<std::size_t>(k) * nx; }
};

enum class LqIpmStatus {
  Solved,               // every KKT measure below its tolerance (LqIpmOptions)
  MaxIterations,        // max_iter iterations without convergence (also what an infeasible set of
                        // state bounds ends in); the solution holds the last iterate
  NotPositiveDefinite,  // a Newton system was not positive definite (a non-convex cost the barrier
                        // terms do not make convex); LqSolver's failed stage is in stats()
  NonFinite,            // NaN or Inf in the data or an iterate
};

const char* to_string(LqIpmStatus status);

struct LqIpmOptions {
  // Backend of the Newton systems. Riccati reuses its factorization in the corrector; the others
  // solve the corrector in full. schur_reg is lowered from LqOptions' 1e-6: the barrier diagonal
  // Z S^-1 reaches 1e10 and more near the solution beside O(1) entries, and only a small shift keeps
  // the refinement short when a stage block does get regularized.
  LqOptions lq = [] {
    LqOptions o;
    o.linsys = Linsys::Riccati;
    o.schur_reg = 1e-12;
    o.reuse_dynamics = true;  // A and B stay the data's through a run
    return o;
  }();

  // Converged when (inf-norms, scales from the data)
  //   stationarity           <= tol_stationarity * max(1, |q|, |r|)
  //   dynamics, x_0          <= tol * max(1, |c|, |x_init|)
  //   bounds (v - lb - s)    <= tol * max(1, |finite bounds|)
  //   mu = s'z / bounds      <= tol     (complementarity_max = true: every s_i z_i <= tol)
  // The average is the test of HPIPM's SPEED_ABS mode (ocp_qp/x_ocp_qp_ipm.c: its absolute-form loop
  // runs while |mu - tau_min| > res_m_max = 1e-8, mu the 1-norm of the products over their count;
  // it checks no residual, the linear ones shrinking with each step as here). The largest product
  // is the test of HPIPM's other modes (the inf-norm of res_m) and of the SQP solver: it lets no
  // single product exceed tol (the average lets them by 10-50x on random problems) and typically
  // costs 1-2 iterations more, the last of which overshoots (mean 1e-14 and below).
  double tol = 1e-8;
  double tol_stationarity = 1e-8;
  bool complementarity_max = false;
  int max_iter = 50;
  // Fraction to the boundary: s, z stay at least (1 - tau) of their value away from zero, with
  // tau = max(tau_min, 1 - mu) (close to 1 as the iterates converge).
  double tau_min = 0.99;
  // Start: x = u = lambda = 0 (the first Newton step makes the dynamics exact), slacks
  // s = max(distance of the start to the bound, init_slack), multipliers z = init_dual
  // (docs/solver-lq.md: how these defaults were chosen).
  double init_slack = 0.1;
  double init_dual = 2.0;

  // Names the first invalid field and its value; empty when valid.
  std::string validate() const;
};

struct LqIpmSolution {
  LqIpmSolution() = default;
  LqIpmSolution(int nx, int nu, int N);

  int nx = 0, nu = 0, N = 0;
  std::vector<double> x;       // N+1 vectors nx
  std::vector<double> u;       // N vectors nu
  std::vector<double> lambda;  // N+1 vectors nx (dynamics multipliers, lq.hpp's convention)
  std::vector<double> zl_u, zu_u;  // N vectors nu: multipliers of lbu, ubu (0 where absent)
  std::vector<double> zl_x, zu_x;  // N+1 vectors nx: multipliers of lbx, ubx (0 where absent, and k = 0)

  double* x_k(int k) { return x.data() + static_cast<std::size_t>(k) * nx; }
  double* u_k(int k) { return u.data() + static_cast<std::size_t>(k) * nu; }
  double* lambda_k(int k) { return lambda.data() + static_cast<std::size_t>(k) * nx; }
  const double* x_k(int k) const { return x.data() + static_cast<std::size_t>(k) * nx; }
  const double* u_k(int k) const { return u.data() + static_cast<std::size_t>(k) * nu; }
  const double* lambda_k(int k) const { return lambda.data() + static_cast<std::size_t>(k) * nx; }
};

// What the last solve() did: iterations (Newton systems factored) and the final KKT measures, as
// in LqIpmOptions (unscaled inf-norms).
struct LqIpmStats {
  int iterations = 0;
  int bounds = 0;             // finite bounds (slack-multiplier pairs)
  double stationarity = 0;
  double dynamics = 0;
  double bound_residual = 0;  // inf-norm of v - lb - s and ub - v - s
  double mu = 0;              // average complementarity s'z / bounds
  double max_complementarity = 0;  // largest s_i z_i
  LqStatus lq_status = LqStatus::Solved;  // of the last Newton system
  int failed_stage = -1;                  // NotPositiveDefinite: LqSolver's failed stage
};

class LqIpmSolver {
 public:
  // Allocates every workspace. Throws std::invalid_argument for nx < 1, nu < 1, N < 1 or invalid
  // options (the message names the bad value).
  LqIpmSolver(int nx, int nu, int N, const LqIpmOptions& options = {});
  ~LqIpmSolver();
  LqIpmSolver(LqIpmSolver&&) noexcept;
  LqIpmSolver& operator=(LqIpmSolver&&) noexcept;

  // Solves the box-constrained LQ problem into `solution`; allocates nothing; `data` and `bounds`
  // are not modified. Throws std::invalid_argument only when sizes differ from the solver's, a bound
  // is NaN or some lower bound exceeds its upper bound.
  LqIpmStatus solve(const LqData& data, const LqBounds& bounds, LqIpmSolution& solution);

  const LqIpmStats& stats() const;
  const LqIpmOptions& options() const;
  int nx() const;
  int nu() const;
  int N() const;
  // Heap bytes the constructor allocated: the IPM workspace (one aligned block), the working copy of
  // the LQ data, the Newton step's LqSolution and the LqSolver (its bytes_allocated()).
  std::size_t bytes_allocated() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace knot::solver
