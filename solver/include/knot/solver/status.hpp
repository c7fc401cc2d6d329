// How a solve ended: a scoped enum with a one-line explanation, never a magic number.
#pragma once

namespace knot::solver {

enum class Status {
  NotRun,            // solve() has not been called yet
  Solved,            // stationarity, feasibility, complementarity and the duality gap are within their
                     // tolerances (docs/solver.md, "Convergence and status", gives the scaled rules)
  SolvedAcceptable,  // not Solved, but every measure within the looser `acceptable` level: for
                     // acceptable_iter iterates in a row, or where the solve had to stop (a failed line
                     // search, max_iter); the message says which
  MaxIterations,     // max_iter SQP iterations taken (a real-time iteration ends here after its one step)
  TimeLimit,         // the wall-clock time_limit ran out before convergence; the iterate is the last
                     // accepted one (a step cut short is dropped)
  Infeasible,        // the constraints could not be met: the merit penalty outgrew penalty_max, the line
                     // search stalled while the primal infeasibility stayed above tolerance, or
                     // globalization none stopped (max_iter, time_limit) at an iterate above tol_feasibility
  NumericalError,    // NaN or Inf in a function, a Jacobian or a step, an integrator that failed, or the
                     // Hessian regularization exhausted (reg_max)
  LineSearchFailed,  // no step length down to min_step decreased the merit function
  Interrupted,       // the iteration callback returned false; the iterate is the last accepted one
};
inline constexpr int kStatusCount = 9;  // the values above, for tables indexed by status

// Solved or SolvedAcceptable: the iterate is an optimum to the stated precision.
constexpr bool is_solved(Status status) { return status == Status::Solved || status == Status::SolvedAcceptable; }

// "solved", "max_iterations", ... (the CLI's and the JSON report's spelling).
const char* to_string(Status status);
// One line explaining the status.
const char* describe(Status status);

}  // namespace knot::solver
