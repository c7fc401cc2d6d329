// Many problems of one structure solved at once: BatchSolver (docs/batch.md).
//
// Built from one Problem and a batch size B. Problem i is the Problem with its own initial state,
// references and iterate, set through the per-problem setters; every problem is solved by the same
// SQP as Solver, so problem i's solution is bitwise the one a separate Solver would return from the
// same data, whatever the thread count. Per problem: the initial state, references, the bounds of
// box constraints, the iterate, the model's parameters (set_model).
//
// Two paths (BatchOptions::path). The solvers path: B Solver instances, every option and term Solver
// has. The device path: the per-knot phases of device/sqp.hpp on the problem compiled to plain data
// (device/problem.hpp), for the problems and options it fits (device_sqp_unsupported), the same
// algorithm restated once for the CPU and the GPU; it agrees with Solver per problem (status, cost to
// 1e-9; tests/solver/test_device_sqp.cpp). Backend cpu solves either path on a pool of threads
// created with the BatchSolver: solve() hands the problems out to the threads and waits for all of
// them. Backend cuda runs the device path on a GPU, one problem per thread block, through the engine
// of knot::solver_cuda (BatchOptions::cuda_engine); never a CPU solve reported as cuda.
//
// Construction allocates everything (the pool's threads included); solve(), set_initial_state(),
// set_reference() with an unchanged shape, set_bounds(), set_obstacle(), set_initial_guess(),
// set_warm_start() and shift() allocate nothing. One BatchSolver is driven from one thread at a time; separate BatchSolvers are independent.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "knot/problems/initial_guess.hpp"
#include "knot/problems/problem.hpp"
#include "knot/solver/device/problem.hpp"
#include "knot/solver/device/sqp.hpp"
#include "knot/solver/options.hpp"
#include "knot/solver/solver.hpp"
#include "knot/solver/stats.hpp"
#include "knot/solver/status.hpp"

namespace knot::solver {

enum class BatchBackend { Cpu, Cuda };
const char* to_string(BatchBackend backend);  // "cpu", "cuda"

enum class BatchPath {
  Auto,     // backend cpu: the solvers path (Solver is the faster CPU code, with warm starts and
            // shift()); backend cuda: the device path
  Solvers,  // B Solvers (backend cpu only)
  Device,   // the device path; a problem or options it does not fit throw at construction
};
const char* to_string(BatchPath path);  // "auto", "solvers", "device"

// The GPU's side of backend cuda: B problems of one compiled structure solved on the device.
// knot::solver_cuda implements it (cuda::make_cuda_engine in knot/solver/cuda/batch_cuda.hpp), so
// knot::solver itself never links CUDA; a program passes that factory in BatchOptions::cuda_engine.
class BatchEngine {
 public:
  virtual ~BatchEngine() = default;
  virtual double* slice(int i) = 0;          // problem i's per-problem values (the compiled slice layout)
  virtual double* iterate(int i) = 0;        // x, u, lambda, z, s, y back to back, in double
  virtual std::string solve() = 0;           // empty on success, else the failed call
  virtual const device::DeviceResult& result(int i) const = 0;
  virtual const IterationStats* rows(int i) const = 0;
  virtual int threads() const = 0;           // threads per problem (the block size)
  virtual std::size_t device_bytes() const = 0;
  // Problem i's compiled model (an arena of the batch's layout); empty on success, else the failed call.
  virtual std::string set_arena(int i, std::span<const unsigned char> arena) = 0;
};
// Builds the engine for B problems or returns null with the reason in *error.
using BatchEngineFactory = std::unique_ptr<BatchEngine> (*)(const device::BatchProblemData& data,
                                                            const device::DeviceOptions& options, int batch,
                                                            int threads, bool single, std::string* error);

// Empty when this build can run `backend` (cuda: with the given engine factory), else why not (one
// sentence, naming the backend).
std::string batch_backend_unavailable(BatchBackend backend, BatchEngineFactory cuda_engine = nullptr);

struct BatchOptions {
  BatchBackend backend = BatchBackend::Cpu;
  BatchPath path = BatchPath::Auto;
  int threads = 0;  // cpu: worker threads (the calling thread among them); 0 = every core; capped at B.
                    // On the solvers path, threads beyond B go to the problems: each Solver then
                    // evaluates its knots on threads / B of them (SolverOptions::threads), unless the
                    // solver options ask for another count than 1 themselves.
                    // cuda: threads per block (0 = the engine's default)
  bool single = false;  // cuda: solve in float
  BatchEngineFactory cuda_engine = nullptr;  // cuda: knot::solver_cuda's cuda::make_cuda_engine
  // The options of every problem's SQP; unset: from the problem file's solver section (from_settings).
  std::optional<SolverOptions> solver;

  // Names the first invalid field and its value ("threads must be >= 0, found -1"); empty if valid.
  // The solver options are checked too. Availability of the backend is not an option error: see
  // batch_backend_unavailable().
  std::string validate() const;
};

class BatchSolver {
 public:
  // Throws std::invalid_argument when batch_size < 1, options.validate() fails, or the backend is not
  // available in this build (the message of batch_backend_unavailable); problems::ProblemError as
  // Solver does for the problem itself, and (key solver.memory_limit) when B times
  // estimate_workspace_bytes exceeds the solver options' memory_limit: the limit bounds the batch.
  BatchSolver(problems::Problem problem, int batch_size);
  BatchSolver(problems::Problem problem, int batch_size, const BatchOptions& options);
  ~BatchSolver();
  BatchSolver(BatchSolver&&) noexcept;
  BatchSolver& operator=(BatchSolver&&) noexcept;
  BatchSolver(const BatchSolver&) = delete;
  BatchSolver& operator=(const BatchSolver&) = delete;

  // Solves every problem of the batch from its current iterate (as Solver::solve) and returns how
  // many ended solved (is_solved). Each problem's status, solution and stats are its own; one problem
  // failing (NaN in its initial state, say) changes nothing in the others.
  int solve();

  // ---- Per problem, i in [0, size()); another i throws std::out_of_range.
  // As Solver::set_initial_state: a non-finite entry makes problem i's next solve NumericalError.
  void set_initial_state(int i, std::span<const double> x0);
  // As Solver::set_reference, on problem i's own copy of the cost (the others keep theirs). A cost
  // type this class does not know how to copy stays shared by the batch, and then this throws
  // std::invalid_argument naming it.
  void set_reference(int i, std::string_view cost_name, const problems::Reference& ref);
  // New bounds for problem i's control_box or state_box term `constraint_name` (one lower and one
  // upper value per entry of the term, in its order), end_effector_box term (three each: the
  // point's x, y, z) or end_effector_height term (lower = {z_min}, finite; upper = {inf}). lower <=
  // upper, no NaN, an infinite lower is -inf and an infinite upper +inf; std::invalid_argument
  // otherwise or for an unknown name. Takes effect at the next solve; allocates nothing. A bound may
  // become finite or infinite (a constraint row added or removed): problem i's rows are laid out
  // again (Solver::set_bounds on the solvers path, whose next solve then starts cold from the current
  // iterate; the device path starts every solve so).
  void set_bounds(int i, std::string_view constraint_name, std::span<const double> lower,
                  std::span<const double> upper);
  // Moves problem i's circle_obstacle term `constraint_name`: a finite center, a finite radius > 0.
  // Throws std::invalid_argument otherwise or for an unknown name. Allocates nothing; takes effect
  // at the next solve.
  void set_obstacle(int i, std::string_view constraint_name, std::array<double, 2> center, double radius);
  void set_initial_guess(int i, std::span<const double> x, std::span<const double> u);
  // Problem i's model replaced by `model` for its next solves (the others keep theirs): a model of
  // the same type and shape (problems::model_swap_refusal), typically problems::with_parameters of
  // model(i). Throws std::invalid_argument with the reason (on the device path also when the model
  // compiles to another layout); on backend cuda the compiled model is copied to the GPU now
  // (std::runtime_error when that fails). Allocates problem i's model data.
  void set_model(int i, std::shared_ptr<const problems::Model> model);
  // set_model(i, problems::with_parameters(model(i), changes)); a bad name or value throws
  // problems::ProblemError (key model.params.<name>).
  void set_model_parameters(int i, const std::vector<problems::ModelParameter>& changes);
  const problems::Model& model(int i) const;
  // The solvers path only (the device path starts every solve cold from the current x, u): on the
  // device path these throw std::logic_error.
  void set_warm_start(int i, const problems::InitialGuess& guess);
  void shift(int i);

  const Solution& solution(int i) const;
  Status status(int i) const;
  const Stats& stats(int i) const;
  // Problem i's solver (its problem, offsets and options); its solve() may be called directly.
  // The solvers path only: on the device path this throws std::logic_error.
  const Solver& solver(int i) const;

  int size() const;     // B
  // Threads that solve (cpu: the pool's workers plus the calling thread, and on the solvers path
  // each Solver's own knot threads beyond its first).
  int threads() const;
  BatchBackend backend() const;
  bool single() const;  // whether the batch solves in float (backend cuda; BatchOptions::single)
  BatchPath path() const;  // Solvers or Device, Auto resolved
  // On the solvers path: why the device path could not run this problem and options (empty when it
  // could); empty on the device path.
  const std::string& device_path_refusal() const;
  // Heap bytes of the B solvers' workspaces (Solver::bytes_allocated, summed), or of the device
  // path's arrays (host; the GPU's device memory besides).
  std::size_t bytes_allocated() const;
  // Bytes of GPU memory the cuda backend allocated at creation (BatchEngine::device_bytes); 0 on cpu.
  std::size_t device_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace knot::solver
