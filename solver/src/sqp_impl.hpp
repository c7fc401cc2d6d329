// The SQP solver's state and phases (private). Solver::Impl owns every array the solve touches, sized
// in the constructor; the phase functions (sqp_linearize.cpp, sqp_step.cpp) only index into them.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "knot/problems/constraint.hpp"
#include "knot/problems/cost.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/problems/problem.hpp"
#include "knot/solver/lq.hpp"
#include "knot/solver/solver.hpp"
#include "work_pool.hpp"

namespace knot::solver {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Constraint rows of one kind (inequality or equality) over the knots: the rows of knot k are
// [offset[k], offset[k+1]); each row's Jacobian [dg/dx, dg/du] is stored row-major with width nx + nu
// (the u part stays zero at knot N).
struct Rows {
  std::vector<const problems::ConstraintTerm*> terms;  // of this kind, in problem order
  std::vector<int> offset;                             // N + 2 entries
  std::vector<double> value;                           // g or h at the iterate
  std::vector<double> jac;                             // total x (nx + nu)
  std::vector<double> trial;                           // g or h at the line search's trial point
  std::vector<double> jdw;                             // J dw for the step
  int most = 0;                                        // rows the storage holds (every bound finite)
  int total() const { return offset.back(); }
};

// What one thread needs to evaluate knots: the model's scratch, an integrator (it has work arrays of
// its own) and the term and Hessian scratch. Solver::Impl holds one per thread of
// SolverOptions::threads; work[0] is the calling thread's, which the serial phases use as well. A
// knot's results depend on nothing here but its own inputs, so they are the same on every thread.
struct KnotWork {
  KnotWork(const problems::Model& model, problems::IntegratorType scheme)
      : data(model.make_data()), integrator(model, scheme) {}
  std::unique_ptr<problems::ModelData> data;
  problems::Integrator integrator;
  std::vector<double> x_next;                    // nx: an integrator step's end
  std::vector<double> term_g, term_gx, term_gu;  // the largest constraint term's rows
  // Exact Hessian scratch (empty for Gauss-Newton): the perturbed point, two gradients, the Hessian
  // and the integrator's sensitivities there.
  std::vector<double> fd_w, fd_plus, fd_minus, fd_H, fd_A, fd_B;
};

// Why a knot's evaluation failed (the parallel phases record it per knot; the lowest knot's is
// reported, as the serial loop would have).
enum class KnotFailure : unsigned char { None, Integrator, NonFiniteHessian, DifferencedHessian };
struct KnotOutcome {
  KnotFailure failure = KnotFailure::None;
  problems::IntegratorStatus integrator = problems::IntegratorStatus::Ok;
};

// KKT residuals of the iterate (inf-norms).
struct Residuals {
  double stationarity = 0;
  double feasibility = 0;
  double complementarity = 0;  // max s_i z_i
  double gap = 0;              // sum s_i z_i
  double scale_dual = 1;       // s_d: stationarity is judged as stationarity / s_d
  double scale_comp = 1;       // s_c: complementarity is judged as complementarity / s_c
  double barrier_error = 0;    // the barrier problem's KKT error at the current mu
};

// Merit function pieces at a point: phi = cost + barrier + penalty * infeasibility.
struct MeritParts {
  double cost = 0;
  double barrier = 0;        // -mu sum log s
  double infeasibility = 0;  // ||x_0 - x0||_1 + sum ||defects||_1 + ||h||_1 + ||g + s||_1
  bool finite = true;
};

struct Solver::Impl {
  Impl(problems::Problem problem, const SolverOptions& options);

  Status solve(int max_steps, bool real_time);

  // ---- Phases, in the order solve() runs them
  bool linearize();                     // at (x, u): LQ blocks, raw gradients, rows; false on NaN/failure
  void linearize_knot(int k, KnotWork& w);  // linearize's part for knot k; failures in knot_outcome[k]
  bool exact_hessian(int k, KnotWork& w);   // replaces knot k's Gauss-Newton blocks by the Lagrangian's
  // exact_hessian's exact path; nullopt: not available
  std::optional<bool> closed_form_hessian(int k, KnotWork& w);
  bool differenced_hessian(int k, KnotWork& w);  // exact_hessian's fallback
  bool lagrangian_gradient(int k, const double* x, const double* u, double* out, KnotWork& w);
  void initialize_slacks();             // cold start: s from g, z by start_duals
  void start_duals();                   // z on the central path mu / s where the first step allows it
  Residuals measure_residuals() const;  // check_convergence's input
  void update_barrier(Residuals& res);  // monotone mu decrease once the barrier problem is solved
  double mu_floor() const;              // the smallest mu: mu_min, lower where the gap test needs it
  void add_barrier_terms();             // condense inequality and equality rows into the LQ
  bool solve_lq(IterationStats& it);    // with regularization retries; false on failure
  void recover_step(double& alpha_primal, double& alpha_dual);  // ds, dz, dy, fraction to the boundary
  bool resolve_barrier(double mu_new);  // the LQ step again at barrier parameter mu_new (same factorization)
  bool line_search(double alpha_max, IterationStats& it);  // true: a step was accepted
  bool update_penalty(double df, IterationStats& it);
  bool merit_search(double alpha_max, double df, IterationStats& it);
  bool filter_search(double alpha_max, double df, IterationStats& it);
  MeritParts trial_point(double alpha);
  // The feasibility fallback (sqp_restore.cpp): x <- the rollout of u from x0, slacks re-fitted;
  // taken (true, `restored` set) when it lowers the infeasibility by a tenth.
  bool restore(IterationStats& it);
  bool restored = false;  // this iteration's step was restore()'s
  void accept_step(double alpha, double alpha_dual);
  // Every measure of `res` within `tol` (stationarity, complementarity) and the feasibility and gap
  // tolerances: converged() at the tolerances, acceptable() at acceptable_tol.
  bool within(const Residuals& res, double tol_st, double tol_fe, double tol_co, double tol_gap) const;
  // The largest measure over its tolerance (<= 1: within them).
  double error_ratio(const Residuals& res, double tol_st, double tol_fe, double tol_co, double tol_gap) const;
  bool converged(const Residuals& res) const;
  bool acceptable(const Residuals& res) const;
  // The iterate of the last row is acceptable: the failure `status` becomes SolvedAcceptable, the
  // message naming it. Returns whether it did.
  bool end_acceptable(Status status);
  Residuals last_res;     // residuals of the last measured iterate
  // The Hessian of this iterate's linearization: exact (true) or Gauss-Newton. Fixed by
  // SolverOptions::hessian, or chosen by choose_hessian under hessian auto.
  bool exact_now = false;
  int full_steps = 0;      // hessian auto: full Gauss-Newton steps in a row, up to this iterate
  int local_steps = 0;     // hessian auto: Gauss-Newton steps in a row of length >= 1/2 at one mu
  double step_error = 0;   // the barrier problem's KKT error at the last step's iterate and mu
  std::vector<double> contraction;  // per step: that error at the next iterate over step_error (max_iter + 1)
  // hessian auto, at a measured iterate: records the last step's contraction and switches this
  // iterate to the exact Hessian (linearizing it again) where Gauss-Newton stalled. False when that
  // linearization failed.
  bool choose_hessian(const Residuals& res, int iter);
  // hessian auto's restart: the solve's starting point (saved before its first iterate) and, once
  // Gauss-Newton made no progress from it, the iterate from which the exact Hessian starts over.
  std::vector<double> start_x, start_u, start_lambda, start_z, start_s, start_y;
  double start_mu = 0;
  bool saved_cold = false, saved_scale_known = false, start_restart_armed = false;
  int first_iter = 0;        // the iterate this (re)start began at
  double first_error = 0;    // its barrier KKT error
  double least_error = 0;    // the least error of an iterate since
  bool exact_for_good = false;  // restarted: the exact Hessian to the end of the solve
  void save_start();
  void restart_exact(int iter);
  int acceptable_run = 0;       // acceptable iterates in a row (since the window began)
  double acceptable_error = 0;  // error_ratio at the start of the window

  // ---- Helpers
  MeritParts evaluate_merit_parts(const double* x, const double* u, const double* s);
  void trial_knot(int k, KnotWork& w);  // evaluate_merit_parts' part for knot k
  double evaluate_cost(const double* x, const double* u);
  double merit(const MeritParts& m) const { return m.cost + m.barrier + penalty * m.infeasibility; }
  problems::StagePoint point(int k, const double* x, const double* u, problems::ModelData* data) const;
  // Runs phase(k, work[thread]) for every knot k = 0..N on the pool (in knot order on the calling
  // thread when it has no workers).
  void for_each_knot(void (Impl::*phase)(int, KnotWork&));
  // The term_cost entries of the active terms, added knot by knot, term by term (the serial order).
  double summed_term_cost() const;
  // Sets the status and its message (describe(status), then ": " and the formatted detail).
  void set_status(Status status, const char* format, ...);
  // The inner loops' time check: true (and the status TimeLimit, naming the phase) once the clock
  // has passed the solve's deadline. Reads no clock when there is no time_limit.
  bool out_of_time(const char* phase);
  void record_allocation_sizes();
  // Objective scaling: the SQP works on obj_scale * f, obj_scale a power of two chosen at each cold
  // start (objective_scale()); multipliers and mu are held scaled during solve() and handed out
  // unscaled.
  double objective_scale() const;
  void scale_objective();
  void scale_multipliers(double f);
  double obj_scale = 1;
  bool scale_known = false;  // obj_scale was chosen (at the first linearization)
  // Copies an initial guess whose sizes were checked (guess_mismatch): warm with every multiplier,
  // else cold from its x and u.
  void start_cold(std::span<const double> x, std::span<const double> u);  // multipliers reset; slacks at the first linearization
  void reset_multipliers();        // start_cold's part after the iterate: the next solve starts cold
  void size_inequality_iterate();  // z, s and their steps sized for ineq's rows (within ineq.most)
  void apply_guess(const problems::InitialGuess& guess);

  // ---- Problem and options
  problems::Problem problem;
  SolverOptions opt;
  int nx = 0, nu = 0, N = 0, nw = 0;  // nw = nx + nu
  double dt = 0;
  std::vector<const problems::CostTerm*> costs;
  std::vector<KnotWork> work;        // one per thread (SolverOptions::threads)
  std::unique_ptr<WorkPool> pool;    // threads - 1 workers (none with one thread)
  std::vector<KnotOutcome> knot_outcome;  // N + 1: the last parallel phase's failures
  // (N + 1) x costs.size(): each active term's value at each knot, summed afterwards in the serial
  // loop's order (knot, then term), so the total has the same bits for every thread count.
  std::vector<double> term_cost;
  std::vector<double> rate_prev;     // (N + 1) x nu: knot k's rate-cost gradient in u_{k-1}
  std::vector<double> trial_next;    // N x nx: the trial point's integrator steps
  const double* trial_x = nullptr;   // evaluate_merit_parts' point (trial_knot's inputs)
  const double* trial_u = nullptr;

  // ---- Iterate: primal x, u, dual lambda, z, y and the slacks live in `sol`
  Solution sol;
  std::vector<double>& s = sol.s;
  Rows ineq, eq;
  double mu = 0;
  double penalty = 0;
  double reg_last = 0;
  bool cold = true;         // next solve() starts cold: slacks and duals re-initialized
  bool warm_shift = false;  // next solve() follows shift(): mu from the shifted complementarity
  bool restart_armed = false;  // this solve follows shift(): a step cut by a bound raises mu once

  // ---- Linearization at the iterate
  double cost = 0;
  std::vector<double> grad_x, grad_u;  // raw cost gradient (N+1) nx and N nu, before condensing
  LqData lq;                           // the subproblem in the step (dx, du)
  LqSolution step;                     // its solution: dx, du and the new costates
  LqSolver lq_solver;                  // sized for lq, or for lq_aug when rate
  // Costs on u_k - u_{k-1} (ControlRateCost) couple consecutive controls. Their gradient in u_{k-1}
  // joins r_{k-1}; their Hessian blocks d2/du_{k-1}^2 and d2/du_k du_{k-1} of knot k (k >= 1) are
  // kept here, and solve_lq runs the LQ on the state augmented by the previous control,
  // [dx_k; du_{k-1}] (lq_aug, step_aug). All empty without such costs.
  bool rate = false;
  std::vector<double> rate_Hpp, rate_Hup;  // N+1 blocks nu x nu
  LqData lq_aug;
  LqSolution step_aug;
  void expand_rate();    // lq (+ rate blocks) -> lq_aug
  void contract_rate();  // step_aug -> step

  // ---- Step and line search
  std::vector<double> ds, dz, dy;
  std::vector<double> probe_save;  // Q, R, S, q, r of a cold start's linearization during its probe step
  std::vector<double> x_trial, u_trial, s_trial;
  MeritParts current;  // merit pieces at the iterate
  double merit_decrease = 0;  // theta - theta_model of the step (merit)
  // Filter entries (theta, phi_mu), reset at each barrier parameter; capacity max_iter + 1.
  std::vector<std::array<double, 2>> filter;
  int filter_size = 0;
  double filter_theta_max = 0, filter_theta_min = 0;

  std::vector<int> nonzero;  // nonzero entries of one Jacobian row (nw)

  Stats stats;
  IterationCallback callback = nullptr;
  void* callback_user = nullptr;
  int rows_reported = 0;  // rows of this solve already handed to the callback
  bool interrupt = false;  // the callback asked to stop: end after measuring the next iterate
  // Reports rows [rows_reported, stats.rows) (time-stamped) to the callback; false when it asked to stop.
  bool report_rows();
  std::size_t bytes = 0;
  // time_limit after the start of the current solve(); time_point::max() when there is none.
  Clock::time_point t_start{}, deadline = Clock::time_point::max();
};

}  // namespace knot::solver
