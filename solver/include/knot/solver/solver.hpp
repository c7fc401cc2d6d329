// The SQP solver and its embedding API.
//
//   min  sum_k l_k(x_k, u_k)
//   s.t. x_0 = x0,  x_{k+1} = F(x_k, u_k)  (the problem's integrator),
//        g_k(x_k, u_k) <= 0  (inequality rows),  h_k(x_k, u_k) = 0  (equality rows).
//
// Each iteration: linearize (A_k, B_k, defects, Gauss-Newton cost blocks, constraint rows) ->
// add_barrier_terms (interior point: G'(Z/S)G and the matching gradient; stabilized equality rows)
// -> solve_lq (one stage-wise LQ subproblem, regularized when not positive definite) -> recover_step
// (slacks, duals, multipliers, fraction to the boundary) -> line_search (l1 merit, Armijo) ->
// check_convergence. docs/solver.md derives every step.
//
// Solver allocates everything at construction; solve(), set_initial_state(), set_reference() with
// an unchanged shape, set_initial_guess(), set_warm_start() with matching sizes, shift() and the
// iteration callback allocate nothing. Instances share nothing
// mutable, so separate instances may run on separate threads. Errors in the problem throw
// problems::ProblemError at construction; numerical trouble inside solve() is a Status.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "knot/problems/problem.hpp"
#include "knot/solver/options.hpp"
#include "knot/solver/stats.hpp"
#include "knot/solver/status.hpp"

namespace knot::solver {

struct Solution {
  int nx = 0, nu = 0, N = 0;
  std::vector<double> x;       // N+1 states, nx each
  std::vector<double> u;       // N controls, nu each
  std::vector<double> lambda;  // N+1 dynamics multipliers (costates), the LQ convention of lq.hpp
  std::vector<double> z;       // inequality duals, rows of knot k at Solver::inequality_offset(k)
  std::vector<double> s;       // inequality slacks (g + s = 0, s > 0), the layout of z
  std::vector<double> y;       // equality multipliers, rows of knot k at Solver::equality_offset(k)
  double cost = 0;             // objective at x, u
  double mu = 0;               // barrier parameter at the end of the last solve()
  Status status = Status::NotRun;
  int iterations = 0;

  // The status's explanation, with detail where there is one ("... at knot 12").
  std::string_view message() const { return message_.data(); }

  const double* x_k(int k) const { return x.data() + static_cast<std::size_t>(k) * nx; }
  const double* u_k(int k) const { return u.data() + static_cast<std::size_t>(k) * nu; }
  const double* lambda_k(int k) const { return lambda.data() + static_cast<std::size_t>(k) * nx; }

  std::array<char, 192> message_{};  // written by the solver without allocating
};

// Called by solve() once per row of Stats as soon as the row is final (row 0 = the initial iterate;
// `iteration` is the row's index), from the solving thread, inside the solve's time. Returning false
// stops the solve: the new iterate is still measured (its row reported too), then solve() returns
// Interrupted, or Solved when that iterate has converged. The callback must not call back into the
// Solver; it may allocate, but the solve's own zero-allocation guarantee then covers only the solver.
using IterationCallback = bool (*)(const IterationStats& row, int iteration, void* user);

class Solver {
 public:
  // Options from problem.solver (from_settings). Throws problems::ProblemError when the problem is
  // invalid (Problem::validate: NaN in x0, sizes), a setting is not offered, or a term cannot be
  // treated (control_rate costs, nu = 0); the message names the key. A non-empty
  // problem.initial_guess is the starting point (set_warm_start); its sizes are checked here
  // (ProblemError, key initial_guess, naming the expected and the found sizes).
  explicit Solver(problems::Problem problem);
  // Throws std::invalid_argument when options.validate() fails, else as above. Both throw
  // problems::ProblemError (key solver.memory_limit) when estimate_workspace_bytes exceeds
  // options.memory_limit, and when an allocation fails (std::bad_alloc never escapes).
  Solver(problems::Problem problem, const SolverOptions& options);
  ~Solver();
  Solver(Solver&&) noexcept;
  Solver& operator=(Solver&&) noexcept;
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  // Runs SQP from the current iterate (the default guess, a given one, or the previous solution)
  // and returns solution().status: up to max_iter iterations, or one real-time iteration when
  // options().real_time_iteration is set.
  Status solve();
  // Real-time iterations for an MPC loop: at most `iterations` SQP steps (clamped to [1, max_iter])
  // from the current iterate, returning right after the last step without linearizing the new
  // iterate. Status MaxIterations after the steps, Solved when the iterate already met the
  // tolerances (then no step is taken).
  Status step(int iterations = 1);

  // ---- MPC
  // The initial state of the next solve (nx values; throws std::invalid_argument on another size). A
  // non-finite entry makes the next solve() end NumericalError.
  void set_initial_state(std::span<const double> x0);
  // Replaces the reference of the cost named `cost_name`. When `ref` has the current reference's
  // shape (dim and rows) the values are copied into place and nothing is allocated; otherwise the
  // term takes the new reference (allocating). Throws std::invalid_argument for an unknown name, a
  // cost without a reference, or a wrong dim. The solver's state, control and end_effector costs are
  // its own copies (made at construction), so the Problem it was built from and other solvers built
  // from that keep their references; a reference-carrying cost type of another kind (a user's own
  // CostTerm) stays shared with the Problem, which then sees the change.
  void set_reference(std::string_view cost_name, const problems::Reference& ref);
  // New bounds for the constraint term `constraint_name`: a control_box or state_box (one lower and
  // one upper value per entry, in its order), an end_effector_box (three each: the point's x, y, z)
  // or an end_effector_height (lower = {z_min}, finite; upper = {inf}); lower <= upper, no NaN, each
  // bound finite or the matching infinity. A bound may become finite or infinite: its row is added
  // or removed, and the next solve starts cold from the current iterate (the multipliers and slacks
  // belonged to the old rows); otherwise a warm start stays. Allocates nothing (storage for every
  // bound's row is reserved at construction). Throws std::invalid_argument, nothing changed, for an
  // unknown name, another term type, or bounds the term refuses. The bounded terms are the solver's
  // own copies: the Problem it was built from keeps its bounds.
  void set_bounds(std::string_view constraint_name, std::span<const double> lower, std::span<const double> upper);
  // Moves the circle_obstacle term `constraint_name` (a finite center, a finite radius > 0; the row
  // stays). Allocates nothing; throws std::invalid_argument, nothing changed, otherwise.
  void set_obstacle(std::string_view constraint_name, std::array<double, 2> center, double radius);
  // Another model for the next solves, of the same type and shape (problems::with_parameters makes
  // one with other parameters); the iterate and the terms stay. Throws std::invalid_argument with
  // problems::model_swap_refusal's reason (another shape, end-effector terms, expression terms on an
  // expression model) or for a null model. Allocates the model's evaluation data.
  void set_model(std::shared_ptr<const problems::Model> model);
  // A cold start from the given trajectory ((N+1) nx and N nu values): multipliers reset, slacks and
  // duals re-initialized at the first linearization. Throws std::invalid_argument on other sizes.
  void set_initial_guess(std::span<const double> x, std::span<const double> u);
  // Starts the next solve from `guess`: x and u always; lambda, z, s, y and mu too when all of them
  // are given (z, s and y may be empty only where the problem has no such rows; mu > 0), a warm start
  // that keeps them (no slack re-initialization, the barrier at guess.mu); otherwise a cold start from
  // x, u as set_initial_guess. Throws std::invalid_argument when x or u has another size, a given
  // multiplier vector has another size than the problem's, or a warm start's slack or dual is not
  // positive. Allocates nothing.
  void set_warm_start(const problems::InitialGuess& guess);
  // The per-row callback of the next solves (nullptr: none). `user` is passed through.
  void set_iteration_callback(IterationCallback callback, void* user = nullptr);
  // Warm start for the next control step: every knot takes its successor's primal and dual values
  // (x_N and u_{N-1} stay), and the next solve starts from the barrier parameter warm_start_mu.
  void shift();

  const Solution& solution() const;
  // Threads that evaluate the knots: SolverOptions::threads resolved (0: every core) and capped at N + 1.
  int threads() const;
  const Stats& stats() const;
  const SolverOptions& options() const;
  const problems::Problem& problem() const;
  int nx() const;
  int nu() const;
  int N() const;
  // Rows of knot k in Solution::z (inequality) and Solution::y (equality): [offset(k), offset(k+1)).
  int inequality_offset(int k) const;
  int equality_offset(int k) const;
  // Heap bytes allocated at construction for iterates, LQ data, workspaces and statistics (the LQ
  // backend's included; the model's own data not).
  std::size_t bytes_allocated() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Heap bytes a Solver for this problem and these options would allocate at construction, estimated
// from the sizes alone (nothing is allocated): the LQ data, the LQ backend's workspace (taken as the
// Riccati recursion's, which the other backends match in order), the integrator's and the exact
// Hessian's scratch, and the constraint rows. The constructor refuses a problem over
// options.memory_limit with this figure. A double: a hostile size must not overflow it.
double estimate_workspace_bytes(const problems::Problem& problem, const SolverOptions& options);

// The default initial guess: x_k = x0 for every knot, u_k = 0. (N+1) nx and N nu values.
void default_initial_guess(const problems::Problem& problem, std::vector<double>& x, std::vector<double>& u);

}  // namespace knot::solver
