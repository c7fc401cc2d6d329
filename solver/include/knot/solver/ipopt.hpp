// IPOPT cross-check: the discretized NLP Knot's SQP solves, handed to IPOPT (COIN-OR, Debian's
// coinor-libipopt-dev). solve_with_ipopt and ipopt_available live in knot::ipopt (the rest of this
// header in knot::solver). Optional at build time: without IPOPT, ipopt_available() is false and
// solve_with_ipopt() returns IpoptStatus::NotAvailable (in this build tree; nothing is installed).
//
// The NLP (OcpNlp), over z = [x_0; u_0; x_1; u_1; ...; u_{N-1}; x_N] (knot by knot, so the KKT
// matrix is banded):
//   min  sum_{k=0}^{N} sum_{terms active at k} CostTerm::value(k, x_k, u_k, u_{k-1})
//        (each term's own stages and dt scaling; ControlRateCost with u_prev = u_{k-1}, none at k = 0)
//   s.t. x_0 - x0 = 0
//        x_{k+1} - F(x_k, u_k; dt) = 0                  k = 0..N-1, F the problem's Integrator
//        g(x_k, u_k) <= 0 (inequality terms)  or  = 0 (equality terms), every row at its active knots
// Constraint rows are ordered knot by knot: at k, [x_0 - x0 (k = 0)], the constraint terms active
// at k in the problem's order, then the dynamics defect of interval k (k < N). Gradients come from
// CostTerm::accumulate, Jacobians from Integrator::step_jacobian and ConstraintTerm::jacobian. No
// variable has bounds: box terms are ordinary inequality rows, as the SQP sees them.
//
// Second derivatives: the problems layer supplies first derivatives only, so IPOPT's Hessian of
// the Lagrangian is one of
//   FiniteDifference  (default) central differences of the analytic Lagrangian gradient, knot by
//                     knot: cost gradient, constraint-term Jacobians and Integrator::step_jacobian
//                     times the multipliers, differentiated in (x_k, u_k); the rate cost's
//                     (u_k, u_{k-1}) blocks are its exact constant ones. Accurate to about 1e-8
//                     relative, so IPOPT takes Newton steps on the true NLP.
//   GaussNewton       the Gauss-Newton Hessian of the objective (sum of J' W J over the cost terms)
//                     with zero constraint curvature, as in Knot's SQP: exact for linear dynamics
//                     and constraints; otherwise IPOPT converges linearly near the solution (slowly
//                     when a curved constraint such as an obstacle is active).
//   LimitedMemory     IPOPT's L-BFGS approximation; slow to tight tolerances, and it does not
//                     converge on the cart-pole and acrobot swing-ups within 3000 iterations.
//
// Default initial guess: x_k = x0 for every k and u = 0, the same as Knot's SQP, so both start
// from one point. The swing-up and obstacle problems are nonconvex, and the local minimum reached
// from there depends on the path (the Hessian choice changes it); to cross-check another solver's
// answer, start IPOPT at it (x_guess, u_guess, and mu_init about 1e-6): at a KKT point of this
// NLP it stops within a few iterations at the same cost.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "knot/problems/integrator.hpp"
#include "knot/problems/problem.hpp"

namespace knot::solver {

enum class IpoptHessian { FiniteDifference, GaussNewton, LimitedMemory };

struct IpoptOptions {
  double tol = 1e-10;             // IPOPT `tol`: the scaled overall NLP error at which it stops
  double constr_viol_tol = 1e-8;  // IPOPT `constr_viol_tol`: unscaled constraint violation also required
  int max_iter = 3000;
  double mu_init = 0.1;  // IPOPT's initial barrier parameter; about 1e-6 when starting from a solution
  // IPOPT relaxes every inequality bound by this factor (its own default 1e-8, which lets a
  // box-limited optimum gain ~1e-9 of relative cost); 0 keeps the constraints exact, as the SQP has them.
  double bound_relax_factor = 0;
  int print_level = 0;    // IPOPT's 0..12; 0 prints nothing (the banner is always suppressed)
  double time_limit = 0;  // wall-clock seconds for the solve; 0 = none
  IpoptHessian hessian = IpoptHessian::FiniteDifference;
  int limited_memory_history = 6;  // L-BFGS pairs kept (IPOPT `limited_memory_max_history`)
  // GiB. A problem whose NLP (Jacobian and Hessian nonzeros, before MUMPS' fill) would need more,
  // or more nonzeros than IPOPT's int indices count, is refused with its size (problems::ProblemError,
  // key solver.memory_limit), as Solver refuses one over SolverOptions::memory_limit.
  double memory_limit = 8;

  // Names the first invalid field and its value; empty when valid.
  std::string validate() const;
};

enum class IpoptStatus {
  Solved,                   // IPOPT converged to `tol`
  SolvedToAcceptableLevel,  // IPOPT stopped at its `acceptable_tol` level
  MaxIterations,
  TimeLimit,
  Infeasible,  // IPOPT converged to a point of locally minimal infeasibility
  SearchDirectionTooSmall,
  Diverging,
  RestorationFailed,
  StepComputationFailed,
  EvaluationError,  // the dynamics could not be evaluated (integrator failure, NaN/Inf)
  InvalidProblem,   // IPOPT rejected the problem or an option (too few degrees of freedom, ...)
  NotAvailable,     // Knot was built without IPOPT
  InternalError,    // any other IPOPT failure (exception, memory)
};

// A one-line explanation of the status.
const char* to_string(IpoptStatus status);

struct IpoptResult {
  IpoptStatus status = IpoptStatus::NotAvailable;
  std::string message;                                     // to_string(status), plus IPOPT's own return code
  int ipopt_return_code = 0;                               // IPOPT's ApplicationReturnStatus, for diagnostics
  double cost = std::numeric_limits<double>::quiet_NaN();  // objective at the returned x, u
  std::vector<double> x;                                   // (N+1) * nx, knot by knot
  std::vector<double> u;                                   // N * nu
  // IPOPT's constraint multipliers in OcpNlp's row order, for its Lagrangian f + lambda' g (so
  // lambda >= 0 on active inequality rows); empty when IPOPT did not run.
  std::vector<double> lambda;
  int iterations = 0;
  double seconds = 0;  // wall clock of IPOPT's solve (not counting the NLP's construction)
  // Of `seconds`, the wall time inside the NLP's evaluation callbacks (f, its gradient, g, its
  // Jacobian, the Lagrangian Hessian) and inside the Hessian callback alone; the rest is IPOPT's
  // own work (its linear solver, line search, scaling).
  double callback_seconds = 0, hessian_seconds = 0;
  // IPOPT's final unscaled statistics: dual infeasibility (inf-norm of the Lagrangian gradient),
  // constraint violation (inf-norm) and complementarity.
  double kkt_stationarity = std::numeric_limits<double>::quiet_NaN();
  double constraint_violation = std::numeric_limits<double>::quiet_NaN();
  double complementarity = std::numeric_limits<double>::quiet_NaN();
};

bool ipopt_available();

// Solves the problem's NLP (above) with IPOPT from x_guess ((N+1) nx) and u_guess (N nu), or the
// default guess where null. Throws ProblemError when the problem is invalid, std::invalid_argument
// on bad options or guesses of the wrong size; IPOPT's failures are a status.
IpoptResult solve_with_ipopt(const problems::Problem& problem, const IpoptOptions& options = {},
                             const std::vector<double>* x_guess = nullptr,
                             const std::vector<double>* u_guess = nullptr);

// The NLP above, evaluated at z (num_variables() entries). Built without IPOPT, so it is tested
// and usable on every build; the IPOPT adapter forwards its callbacks here. Sparse matrices are
// triplets in a fixed order: *_structure gives the (row, column) of each entry once, the value
// functions fill the entries in that order. The evaluation functions return false when the
// dynamics cannot be evaluated or a value is not finite. The problem must outlive the NLP; the
// NLP holds scratch (integrator and model data), so one instance serves one thread.
class OcpNlp {
 public:
  explicit OcpNlp(const problems::Problem& problem);  // validates; throws ProblemError
  ~OcpNlp();
  OcpNlp(const OcpNlp&) = delete;
  OcpNlp& operator=(const OcpNlp&) = delete;

  int N() const { return N_; }
  int nx() const { return nx_; }
  int nu() const { return nu_; }
  int num_variables() const { return n_; }
  int num_constraints() const { return m_; }
  int jacobian_nonzeros() const { return static_cast<int>(jac_row_.size()); }
  int hessian_nonzeros() const { return static_cast<int>(hess_row_.size()); }
  int state_offset(int k) const { return k * (nx_ + nu_); }          // x_k in z, k = 0..N
  int control_offset(int k) const { return k * (nx_ + nu_) + nx_; }  // u_k in z, k = 0..N-1

  // z from x ((N+1) nx) and u (N nu), and back.
  void pack(const double* x, const double* u, double* z) const;
  void unpack(const double* z, double* x, double* u) const;
  // The default initial guess: x_k = x0, u_k = 0.
  std::vector<double> default_guess() const;

  // Row bounds: equality rows [0, 0], inequality rows [-inf, 0].
  void constraint_bounds(double* lower, double* upper) const;
  bool constraint_is_equality(int row) const { return row_is_equality_[row] != 0; }
  void jacobian_structure(int* rows, int* cols) const;
  // Lower triangle of the Hessians below: per knot the dense (x_k, u_k) block, and the
  // (u_k, u_{k-1}) block when a cost couples them.
  void hessian_structure(int* rows, int* cols) const;

  bool objective(const double* z, double& f);
  bool gradient(const double* z, double* grad);
  bool constraints(const double* z, double* g);
  bool jacobian(const double* z, double* values);
  // scale times the Gauss-Newton Hessian of the objective, in hessian_structure's order.
  bool gauss_newton_hessian(const double* z, double scale, double* values);
  // The Hessian of obj_factor f(z) + lambda' g(z) (lambda: num_constraints() multipliers) by
  // central differences of its analytic gradient, knot by knot, in hessian_structure's order.
  bool lagrangian_hessian(const double* z, double obj_factor, const double* lambda, double* values);

 private:
  problems::StagePoint point(const double* z, int k) const;

  const problems::Problem& problem_;
  int N_ = 0, nx_ = 0, nu_ = 0, n_ = 0, m_ = 0;
  double dt_ = 0;
  std::unique_ptr<problems::ModelData> data_;
  std::unique_ptr<problems::Integrator> integrator_;

  // Per knot k: the constraint terms active at k (term index, first row); per interval k: the first
  // row of x_{k+1} - F(x_k, u_k). Rows 0..nx-1 are x_0 - x0.
  struct ActiveConstraint {
    int term;
    int row;
  };
  std::vector<std::vector<ActiveConstraint>> active_;  // N+1 entries
  std::vector<int> dyn_row_;                           // N entries
  std::vector<char> row_is_equality_;

  // Nonzeros of one constraint term's Jacobian, as entries of its gx (dim x nx) or gu (dim x nu)
  // block: dense blocks for general terms, the constant +-1 pattern for box terms.
  struct TermEntry {
    int row, col;
    bool on_control;
  };
  std::vector<std::vector<TermEntry>> pattern_;  // per constraint term
  std::vector<int> jac_row_, jac_col_;
  std::vector<int> hess_row_, hess_col_;
  bool rate_costs_ = false;  // a cost couples u_k and u_{k-1}: the Hessian has (u_k, u_{k-1}) blocks

  template <class Emit>
  bool walk_jacobian(const double* z, Emit&& emit);
  template <class Emit>
  void walk_hessian(Emit&& emit) const;
  void clear_hessian_blocks();
  bool emit_hessian(double scale, double* values);
  // Gradient in v = (x_k, u_k) of the knot-k part of obj_factor f + lambda' g, at x_k, u_k = v.
  bool knot_lagrangian_gradient(const double* z, int k, double obj_factor, const double* lambda, const double* v,
                                double* out);

  // Scratch, sized at construction.
  std::vector<double> xn_, A_, B_, gx_, gu_;
  std::vector<double> Hxx_, Huu_, Hux_, Hup_;  // Hessian blocks of every knot
  std::vector<double> v_, gp_, gm_, Hk_;       // finite-difference scratch
};

}  // namespace knot::solver
