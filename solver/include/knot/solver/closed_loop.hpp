// The closed loop: a Solver driving a simulated plant, as a problem file's `mpc:` section describes.
//
// Control period T = 1/control_rate (1/dt when 0), K steps, t_i = i T. At each step i:
//   y_i    = x(t_i) + sigma_m .* n_i                          measurement (n_i ~ N(0, I), seeded)
//   solver: set_initial_state(y_i); shift() (warm_start shift; hold keeps the iterate); moving
//           references: knot k reads the table at t_i + k dt (linear between rows, last row held);
//           rti: step(iterations_per_step) | sqp: solve() within time_limit (0: T)
//   u_i    = u_0 of the plan when the status is Solved, MaxIterations or TimeLimit and u_0 is finite;
//            otherwise (a failed step, counted) u_j of the last good plan, j = steps since it
//            (clamped to N-1; zero before any good plan), and the solver restarts from that plan
//   x(t_{i+1}) = plant(x(t_i), u_i) + sigma_p .* n'_i + kicks of the disturbances with time in
//            [t_i, t_{i+1}), where plant() is `substeps` steps of the plant integrator over T with
//            u_i held (zero-order hold) on the plant model (the model with plant.params).
// The random numbers are std::mt19937_64(seed) through a Box-Muller transform written here, so one
// seed gives bitwise the same run on every standard library.
//
// Summary (summary()): tracking error e = x - x_ref per state over rows 0..K (RMS sqrt(mean e^2),
// max |e|), for the states the tracked state cost weighs (W_ii > 0) against its reference at t_i,
// and for manipulators ||p_frame(x) - p_ref|| of the end-effector cost's frame origin; constraint
// violation max over steps of the box constraints' excess on the applied x_i (i = 0..K) and u_i;
// solve time percentiles (nearest rank); deadline misses (solve time > T); statuses; failed steps;
// closed-loop cost sum_i sum_{running terms} l(x_i, u_i) with the term's dt scaling taken as T
// (each applied control lasts T; terminal-only terms are not part of it).
//
// Everything is allocated at construction; step() and run() allocate nothing. The references a
// ClosedLoop moves are its solver's own (Solver::set_reference), so several ClosedLoops may run from
// one Problem at once; a reference-carrying cost of a user's own type stays shared with the Problem,
// and for it the original reference is put back when the ClosedLoop is destroyed.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "knot/problems/problem.hpp"
#include "knot/solver/options.hpp"
#include "knot/solver/solver.hpp"

namespace knot::solver {

// Per step, flat row-major arrays: rows 0..K for states (the last is the final state), 0..K-1 for
// the rest. Empty members when the problem has no such data (no tracked state, no kinematics).
struct ClosedLoopRecord {
  int steps = 0, nx = 0, nu = 0;
  std::vector<double> time;        // K+1
  std::vector<double> x;           // (K+1) nx, the true plant state at t_i, before u_i
  std::vector<double> u;           // K nu, the control applied over [t_i, t_{i+1})
  std::vector<double> x_ref;       // (K+1) nx, the tracked state cost's reference at t_i
  std::vector<double> ee, ee_ref;  // (K+1) 3 each: frame origin of the plant and its reference
  std::vector<double> solve_time;  // K, seconds of wall clock
  std::vector<Status> status;      // K
  std::vector<int> iterations;     // K
  std::vector<char> deadline_miss; // K, solve_time > T
  std::vector<char> failed;        // K, the fallback control was applied
};

struct TrackingError {
  std::string name;  // a state name, or the end-effector frame's name
  double rms = 0, max = 0;
};

struct ClosedLoopSummary {
  int steps = 0;
  double duration = 0, control_period = 0;
  std::vector<TrackingError> tracking;
  double constraint_violation = 0;
  double solve_p50 = 0, solve_p99 = 0, solve_max = 0, solve_mean = 0;
  int deadline_misses = 0;
  std::array<int, kStatusCount> statuses{};  // count per Status, indexed by its value
  int failed_steps = 0;
  double closed_loop_cost = 0;
  std::uint64_t seed = 0;
};

class ClosedLoop {
 public:
  // Solver options from problem.solver; sqp mode sets time_limit to mpc.time_limit (or T). Throws
  // problems::ProblemError as Solver does, and for an mpc section the problem cannot run (a
  // reference for a cost the solver does not know).
  explicit ClosedLoop(problems::Problem problem);
  ClosedLoop(problems::Problem problem, const SolverOptions& options);
  ~ClosedLoop();
  ClosedLoop(const ClosedLoop&) = delete;
  ClosedLoop& operator=(const ClosedLoop&) = delete;

  // One control step; false (and nothing done) once all steps are done.
  bool step();
  // The remaining steps.
  void run();
  // An optional hook between steps, for progress: called after each step with the steps done.
  using StepCallback = void (*)(int steps_done, int steps, void* user);
  void set_step_callback(StepCallback callback, void* user);

  int steps() const { return steps_; }
  int steps_done() const { return done_; }
  double period() const { return period_; }
  const ClosedLoopRecord& record() const { return record_; }
  const problems::Problem& problem() const { return solver_.problem(); }
  const Solver& solver() const { return solver_; }
  // The names of the states x_ref covers (empty when no state cost has a reference).
  bool has_state_reference() const { return tracked_state_ >= 0; }
  // The end-effector frame recorded in ee (-1 when the model has no kinematics).
  int ee_frame() const { return ee_frame_; }
  // Computed from the record of the steps done so far (allocates).
  ClosedLoopSummary summary() const;

 private:
  struct Moving {
    int cost = -1;                  // index in problem().costs
    problems::Reference original;   // put back at destruction
    problems::Reference window;     // the rows set each step (shape of the cost's reference)
    int dim = 0;
    std::vector<double> times;      // empty: row r at r dt
    std::vector<double> table;
  };
  void reference_at(const Moving& m, double t, double* row) const;
  void update_references(double t);
  void record_row(int i);
  void integrate_plant(const double* u);
  double normal();
  void apply_fallback(int i);

  Solver solver_;
  std::shared_ptr<const problems::Model> plant_model_;
  std::unique_ptr<problems::ModelData> plant_data_, cost_data_;
  std::unique_ptr<problems::Integrator> plant_;
  int nx_ = 0, nu_ = 0, N_ = 0, steps_ = 0, done_ = 0;
  double dt_ = 0, period_ = 0;
  bool rti_ = true, shift_ = true;
  int iterations_per_step_ = 1;
  std::vector<Moving> moving_;
  int tracked_state_ = -1, ee_cost_ = -1, ee_frame_ = -1, ee_moving_ = -1, state_moving_ = -1;
  std::vector<double> x_, x_next_, y_, u_apply_;
  std::vector<double> good_x_, good_u_, guess_x_, guess_u_;
  bool have_good_ = false;
  int since_good_ = 0;
  std::mt19937_64 rng_;
  bool have_spare_ = false;
  double spare_ = 0;
  double closed_loop_cost_ = 0;
  ClosedLoopRecord record_;
  StepCallback callback_ = nullptr;
  void* callback_user_ = nullptr;
};

}  // namespace knot::solver
