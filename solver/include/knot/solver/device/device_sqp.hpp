// The host's handle on the device path for one problem: the compiled problem, one block of arrays,
// the per-iteration rows, and the Solution they become (docs/batch.md).
//
// DeviceSqp is what the CPU batch pool runs per problem and what the tests compare with Solver.
// Construction allocates everything; solve() runs device::sqp_solve on a SerialGroup and allocates
// nothing; solve_on(g) lets every member of another group (a ThreadedGroup in the tests) run it.
// Each solve starts cold from the current primal iterate: the default guess, a set_initial_guess,
// or the previous solve's x and u (multipliers, slacks and duals re-initialized).
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "knot/problems/problem.hpp"
#include "knot/solver/device/sqp.hpp"
#include "knot/solver/options.hpp"
#include "knot/solver/solver.hpp"

namespace knot::solver::device {

// Why `problem` with `options` cannot run on the device path (a message naming the term, model or
// option), or empty when it can. The options: an LQ step by riccati, bdsv or pcg (linsys auto picks
// riccati), no time limit, no real-time iteration; the Hessian gauss_newton, or exact and auto where
// every piece of the Lagrangian has a closed-form second derivative (a ModelAdapter model with
// nx + nu <= 24, expression terms reading at most 16 inputs; the manipulator always). The CUDA
// backend takes gauss_newton only (BatchSolver and CudaBatch refuse the others).
std::string device_sqp_unsupported(const problems::Problem& problem, const SolverOptions& options);

DeviceOptions device_options(const SolverOptions& options);

// `options` with what every device backend (the CUDA one too) runs: the Gauss-Newton Hessian, and
// the Riccati LQ step unless bdsv or pcg is asked for; every other field as given.
SolverOptions device_path_options(SolverOptions options);

// Solver's message for a device result ("filter line search stalled at ...").
void format_device_message(const DeviceResult& result, char* out, std::size_t size);

class DeviceSqp {
 public:
  // Throws problems::ProblemError when device_sqp_unsupported says why not (key solver or the
  // term's), std::invalid_argument for invalid options.
  // max_group: the largest group solve_on will be called with (each member has its own scratch).
  // trials: line-search trial points evaluated at once (DeviceOptions::trials; 0 resolves for
  // max_group); any value gives the same solve.
  DeviceSqp(const problems::Problem& problem, const SolverOptions& options, int max_group = 1, int trials = 0);

  // Initial state of the next solves (nx values); a non-finite entry makes them NumericalError.
  void set_initial_state(std::span<const double> x0);
  // The compiled model replaced by that of `problem`: the problem this was built from with another
  // model (problems::model_swap_refusal empty); the slice, the iterate and the options stay. Throws
  // std::invalid_argument when the compiled layout differs (an expression model whose parameters
  // fold its tape to another length). Allocates the new arena.
  void set_model(const problems::Problem& problem);
  // The arena recompiled_arena returns for this problem with another model.
  void set_arena(std::vector<unsigned char> arena) { data_.arena = std::move(arena); }
  // The primal starting point ((N+1) nx and N nu values).
  void set_initial_guess(std::span<const double> x, std::span<const double> u);
  // The problem's per-problem values (x0, references, bounds): compile_batch_problem's slice layout.
  std::span<double> slice() { return slice_; }
  std::span<const double> slice() const { return slice_; }

  Status solve();
  // Every member of g calls it; rank 0 writes the solution. Allocates nothing. The group's size must
  // not exceed the constructor's max_group (the members' scratch is sized there).
  template <class G>
  void solve_on(G& g) {
    if (g.size() > max_group_) throw std::invalid_argument("DeviceSqp::solve_on: group larger than max_group");
    const SqpArrays<double> a = SqpArrays<double>::carve(data_.problem, options_, trials_, arrays_.data());
    sqp_solve(g, data_.problem, data_.arena.data(), slice_.data(), options_, a, &result_, rows_.data());
    if (g.rank() == 0) publish();
    g.sync();
  }
  int max_group() const { return max_group_; }
  int trials() const { return trials_; }  // resolved

  const Solution& solution() const { return solution_; }
  const DeviceResult& result() const { return result_; }
  std::span<const IterationStats> rows() const { return {rows_.data(), static_cast<std::size_t>(result_.rows)}; }
  const BatchProblemData& data() const { return data_; }
  const DeviceOptions& options() const { return options_; }
  std::size_t bytes_allocated() const;

 private:
  void publish();  // arrays -> solution_

  BatchProblemData data_;
  DeviceOptions options_;
  int max_group_ = 1;
  int trials_ = 1;
  std::vector<double> slice_;
  std::vector<double> arrays_;
  std::vector<IterationStats> rows_;
  DeviceResult result_;
  Solution solution_;
};

}  // namespace knot::solver::device
