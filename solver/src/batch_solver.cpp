// BatchSolver, backend cpu: B Solvers on a pool of threads made at construction (docs/batch.md).
//
// The pool (work_pool.hpp): solve() opens a round of B items; the workers and the calling thread
// take problem indices from one atomic counter until none is left. Dynamic hand-out keeps threads
// busy when problems need different iteration counts; which thread solves a problem cannot change
// its result, because the problems share nothing mutable. Nothing here allocates after construction.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "knot/problems/constraint.hpp"
#include "knot/problems/cost.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/registry.hpp"
#include "knot/solver/batch.hpp"
#include "knot/solver/device/device_sqp.hpp"
#include "size_text.hpp"
#include "work_pool.hpp"

namespace knot::solver {
namespace {

// The cpu backend's threads: BatchOptions::threads, 0 meaning every core.
int batch_threads(const BatchOptions& o) {
  return o.threads > 0 ? o.threads : WorkPool::available_cores();
}

}  // namespace

const char* to_string(BatchBackend backend) {
  switch (backend) {
    case BatchBackend::Cpu:
      return "cpu";
    case BatchBackend::Cuda:
      return "cuda";
  }
  return "unknown";
}

const char* to_string(BatchPath path) {
  switch (path) {
    case BatchPath::Auto:
      return "auto";
    case BatchPath::Solvers:
      return "solvers";
    case BatchPath::Device:
      return "device";
  }
  return "unknown";
}

std::string batch_backend_unavailable(BatchBackend backend, BatchEngineFactory cuda_engine) {
  switch (backend) {
    case BatchBackend::Cpu:
      return {};
    case BatchBackend::Cuda:
      if (cuda_engine != nullptr) return {};
      return "backend cuda: this program was built without the CUDA batch (knot::solver_cuda, which needs nvcc "
             "at build time); use backend cpu";
  }
  return "unknown batch backend " + std::to_string(static_cast<int>(backend));
}

std::string BatchOptions::validate() const {
  if (backend != BatchBackend::Cpu && backend != BatchBackend::Cuda)
    return "backend must be cpu or cuda, found " + std::to_string(static_cast<int>(backend));
  if (path != BatchPath::Auto && path != BatchPath::Solvers && path != BatchPath::Device)
    return "path must be auto, solvers or device, found " + std::to_string(static_cast<int>(path));
  if (threads < 0) return "threads must be >= 0 (0: every core), found " + std::to_string(threads);
  // On cuda, threads is the block size (CudaBatch: at least a warp, at most 256).
  if (backend == BatchBackend::Cuda && threads != 0 && (threads < 32 || threads > 256))
    return "threads (the block size on backend cuda) must be 0 or in 32..256, found " + std::to_string(threads);
  if (backend == BatchBackend::Cuda && path == BatchPath::Solvers)
    return "path solvers runs on backend cpu only (backend cuda is the device path)";
  if (single && backend != BatchBackend::Cuda)
    return "single (float) runs on backend cuda only; backend cpu solves in double";
  if (solver)
    if (std::string why = solver->validate(); !why.empty()) return "solver: " + why;
  return {};
}

struct BatchSolver::Impl {
  BatchBackend backend = BatchBackend::Cpu;
  bool single = false;
  BatchPath path = BatchPath::Solvers;
  std::string refusal;  // why Auto did not take the device path
  int B = 0;
  // ---- Solvers path
  std::vector<Solver> solvers;
  std::vector<std::string> shared_costs;   // reference-carrying costs the batch could not copy
  std::vector<std::exception_ptr> errors;  // one per problem, set only if its solve() threw
  // ---- Device path: DeviceSqp per problem on the pool (cpu), or the engine (cuda)
  std::vector<device::DeviceSqp> devices;
  std::unique_ptr<BatchEngine> engine;
  device::BatchProblemData data;       // the compiled problem (the engine's; devices hold their own)
  std::vector<Solution> engine_solutions;
  std::vector<Stats> device_stats;     // per problem, capacity max_iter + 1 rows
  std::vector<double> seconds;         // cpu device path: each problem's solve time
  problems::Problem base;              // device path: the problem, to compile other models into
  std::vector<std::shared_ptr<const problems::Model>> models;  // device path: problem i's model

  // ---- The pool (no workers when one thread solves the batch; null on backend cuda).
  std::unique_ptr<WorkPool> pool;

  void solve_one(int i) {
    const std::size_t u = static_cast<std::size_t>(i);
    try {
      if (path == BatchPath::Solvers) {
        solvers[u].solve();
        return;
      }
      const auto t0 = std::chrono::steady_clock::now();
      devices[u].solve();
      seconds[u] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } catch (...) {
      errors[u] = std::current_exception();
    }
  }

  void solve_all() {
    pool->run(B, [](void* self, int i, int) { static_cast<Impl*>(self)->solve_one(i); }, this);
  }

  void check(int i) const {
    if (i < 0 || i >= B)
      throw std::out_of_range("BatchSolver: problem " + std::to_string(i) + " of a batch of " + std::to_string(B));
  }
  Solver& at(int i) {
    check(i);
    if (path != BatchPath::Solvers)
      throw std::logic_error("BatchSolver: the batch runs on the device path, which has no Solver per problem");
    return solvers[static_cast<std::size_t>(i)];
  }
  const device::BatchProblemData& compiled() const { return engine ? data : devices.front().data(); }
  double* slice(int i) {
    check(i);
    return engine ? engine->slice(i) : devices[static_cast<std::size_t>(i)].slice().data();
  }

  // The device path's rows of problem i -> its Stats (no allocation: per_iteration has max_iter + 1).
  void fill_stats(int i, const device::DeviceResult& r, const IterationStats* rows, double total) {
    Stats& st = device_stats[static_cast<std::size_t>(i)];
    st.iterations = r.iterations;
    st.rows = r.rows;
    st.linsys = r.linsys == 1 ? Linsys::Bdsv : r.linsys == 2 ? Linsys::Pcg : Linsys::Riccati;
    st.lq_solves = r.lq_solves;
    st.lq_iterations = r.lq_iterations;
    st.riccati_fallbacks = r.riccati_fallbacks;
    st.regularized = r.regularized;
    st.restorations = r.restorations;
    st.max_regularization = r.max_regularization;
    st.time = PhaseTimes{};
    st.time.total = total;
    std::copy(rows, rows + r.rows, st.per_iteration.begin());
  }

  // The engine's problem i -> its Solution.
  void publish_engine(int i) {
    Solution& s = engine_solutions[static_cast<std::size_t>(i)];
    const device::BatchProblem& P = data.problem;
    // The iterate holds every row the arrays can (P.n_ineq); problem i's layout uses the first.
    const auto rows = static_cast<std::size_t>(
        device::row_offsets(P, engine->slice(i), device::ConstraintSet::Inequality)[P.N + 1]);
    s.z.resize(rows);
    s.s.resize(rows);
    const double* it = engine->iterate(i);
    for (std::vector<double>* v : {&s.x, &s.u, &s.lambda, &s.z, &s.s, &s.y}) {
      std::copy(it, it + v->size(), v->begin());
      it += v == &s.z || v == &s.s ? static_cast<std::size_t>(P.n_ineq) : v->size();
    }
    const device::DeviceResult& r = engine->result(i);
    s.cost = r.cost;
    s.mu = r.mu;
    s.status = r.status;
    s.iterations = r.iterations;
    device::format_device_message(r, s.message_.data(), s.message_.size());
  }
};

BatchSolver::BatchSolver(problems::Problem problem, int batch_size)
    : BatchSolver(std::move(problem), batch_size, BatchOptions{}) {}

BatchSolver::BatchSolver(problems::Problem problem, int batch_size, const BatchOptions& options)
    : impl_(std::make_unique<Impl>()) {
  if (batch_size < 1)
    throw std::invalid_argument("BatchSolver: batch_size must be >= 1, found " + std::to_string(batch_size));
  if (std::string why = options.validate(); !why.empty()) throw std::invalid_argument("BatchOptions: " + why);
  if (std::string why = batch_backend_unavailable(options.backend, options.cuda_engine); !why.empty())
    throw std::invalid_argument("BatchSolver: " + why);
  Impl& m = *impl_;
  m.backend = options.backend;
  m.single = options.single;
  m.B = batch_size;
  const SolverOptions solver_options = options.solver ? *options.solver : from_settings(problem.solver);
  // solver.memory_limit bounds the whole batch: B workspaces are allocated here, before any solve.
  const double need = estimate_workspace_bytes(problem, solver_options) * batch_size;
  if (need > solver_options.memory_limit * detail::kGiB)
    throw problems::ProblemError(problems::SourceLocation{problem.source, 0, 0}, "solver.memory_limit",
                                 "a batch within the limit of " +
                                     detail::bytes_text(solver_options.memory_limit * detail::kGiB) +
                                     " of solver workspace",
                                 std::to_string(batch_size) + " problems that need about " + detail::bytes_text(need) +
                                     " (" + detail::sizes_text(problem) + ")",
                                 "raise solver.memory_limit, or solve a smaller batch");
  problem.validate();
  const std::string refusal = device::device_sqp_unsupported(problem, solver_options);
  // Path auto: the device path on the GPU, the solvers path on the CPU, where Solver is the faster
  // implementation of the same iterations (iiwa14_reach 11.2 against 16.8 ms a Gauss-Newton solve,
  // 13.1 against 15.0 under hessian auto; docs/batch.md) and keeps warm starts and shift().
  const bool device_path = options.backend == BatchBackend::Cuda || options.path == BatchPath::Device;
  if (device_path && !refusal.empty())
    throw problems::ProblemError(problems::SourceLocation{problem.source, 0, 0}, "solver",
                                 std::string("a problem the device path runs (backend ") + to_string(options.backend) +
                                     ", path " + to_string(options.path) + ")",
                                 refusal);
  if (options.backend == BatchBackend::Cuda && options.single && solver_options.hessian != Hessian::GaussNewton)
    throw problems::ProblemError(problems::SourceLocation{problem.source, 0, 0}, "solver.hessian",
                                 "gauss_newton on backend cuda in single precision (the exact Hessian runs in double)",
                                 to_string(solver_options.hessian), "set solver: {hessian: gauss_newton}");
  device::BatchProblemData compiled;  // backend cuda's, compiled once
  if (options.backend == BatchBackend::Cuda) {
    compiled = device::compile_batch_problem(problem);
    const char* why = device::gpu_exact_hessian_refusal(compiled.problem, compiled.arena.data());
    if (solver_options.hessian != Hessian::GaussNewton && why != nullptr)
      throw problems::ProblemError(problems::SourceLocation{problem.source, 0, 0}, "solver.hessian",
                                   std::string("gauss_newton on backend cuda (") + why + ")",
                                   std::string(to_string(solver_options.hessian)) + " with model " +
                                       std::string(problem.model->type()) + ", nx + nu = " +
                                       std::to_string(problem.nx() + problem.nu()),
                                   "set solver: {hessian: gauss_newton}, or solve on backend cpu");
  }
  m.path = device_path ? BatchPath::Device : BatchPath::Solvers;
  m.refusal = device_path ? std::string() : refusal;
  m.errors.resize(static_cast<std::size_t>(batch_size));

  if (m.path == BatchPath::Solvers) {
    for (const auto& c : problem.costs)
      if (c->reference() != nullptr && problems::own_reference_copy(c) == c) m.shared_costs.push_back(c->info().name);
    m.solvers.reserve(static_cast<std::size_t>(batch_size));
    // Each Solver owns its reference-carrying costs and its bounded and obstacle terms
    // (Solver::set_reference, set_bounds, set_obstacle). Threads the pool cannot use (fewer problems
    // than threads) evaluate each problem's knots instead: one problem at the lowest latency.
    SolverOptions per_problem = solver_options;
    if (options.backend == BatchBackend::Cpu && per_problem.threads == 1)
      per_problem.threads = std::max(1, batch_threads(options) / batch_size);
    for (int i = 0; i < batch_size; ++i) m.solvers.emplace_back(problem, per_problem);
  } else {
    m.base = problem;
    m.models.assign(static_cast<std::size_t>(batch_size), problem.model);
    m.device_stats.resize(static_cast<std::size_t>(batch_size));
    for (Stats& st : m.device_stats) st.per_iteration.assign(static_cast<std::size_t>(solver_options.max_iter) + 1, {});
    if (options.backend == BatchBackend::Cuda) {
      m.data = std::move(compiled);
      std::string error;
      m.engine = options.cuda_engine(m.data, device::device_options(solver_options), batch_size, options.threads,
                                     options.single, &error);
      if (!m.engine) throw std::runtime_error("BatchSolver: backend cuda: " + error);
      std::vector<double> x, u;
      default_initial_guess(problem, x, u);
      m.engine_solutions.resize(static_cast<std::size_t>(batch_size));
      const device::BatchProblem& P = m.data.problem;
      for (Solution& s : m.engine_solutions) {
        s.nx = P.nx;
        s.nu = P.nu;
        s.N = P.N;
        s.x = x;
        s.u = u;
        s.lambda.assign(x.size(), 0.0);
        // Capacity for every row (set_bounds may add some; publish_engine sizes them, no allocation).
        const auto rows = static_cast<std::size_t>(
            device::row_offsets(P, m.data.slice.data(), device::ConstraintSet::Inequality)[P.N + 1]);
        s.z.reserve(static_cast<std::size_t>(P.n_ineq));
        s.s.reserve(static_cast<std::size_t>(P.n_ineq));
        s.z.assign(rows, 0.0);
        s.s.assign(rows, 0.0);
        s.y.assign(static_cast<std::size_t>(P.n_eq), 0.0);
      }
    } else {
      m.devices.reserve(static_cast<std::size_t>(batch_size));
      for (int i = 0; i < batch_size; ++i) m.devices.emplace_back(problem, solver_options);
      m.seconds.assign(static_cast<std::size_t>(batch_size), 0.0);
    }
  }

  if (m.engine) return;  // the GPU solves; no pool
  const int threads = std::min(batch_threads(options), batch_size);
  m.pool = std::make_unique<WorkPool>(threads);
}

BatchSolver::~BatchSolver() = default;
BatchSolver::BatchSolver(BatchSolver&&) noexcept = default;
BatchSolver& BatchSolver::operator=(BatchSolver&&) noexcept = default;

int BatchSolver::solve() {
  Impl& m = *impl_;
  if (m.engine) {
    const auto t0 = std::chrono::steady_clock::now();
    if (std::string error = m.engine->solve(); !error.empty())
      throw std::runtime_error("BatchSolver: backend cuda: " + error);
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int solved = 0;
    for (int i = 0; i < m.B; ++i) {
      m.publish_engine(i);
      // The batch's wall clock: one kernel solves every problem at once.
      m.fill_stats(i, m.engine->result(i), m.engine->rows(i), total);
      solved += is_solved(m.engine_solutions[static_cast<std::size_t>(i)].status) ? 1 : 0;
    }
    return solved;
  }
  m.solve_all();
  for (std::exception_ptr& e : m.errors)
    if (e) {
      // A Solver reports numerical trouble as a status; an exception is a broken invariant.
      std::exception_ptr first = e;
      for (std::exception_ptr& r : m.errors) r = nullptr;
      std::rethrow_exception(first);
    }
  int solved = 0;
  for (int i = 0; i < m.B; ++i) {
    if (m.path == BatchPath::Device) {
      const device::DeviceSqp& d = m.devices[static_cast<std::size_t>(i)];
      m.fill_stats(i, d.result(), d.rows().data(), m.seconds[static_cast<std::size_t>(i)]);
    }
    solved += is_solved(solution(i).status) ? 1 : 0;
  }
  return solved;
}

void BatchSolver::set_initial_state(int i, std::span<const double> x0) {
  Impl& m = *impl_;
  if (m.path == BatchPath::Solvers) return m.at(i).set_initial_state(x0);
  m.check(i);
  if (x0.size() != static_cast<std::size_t>(m.compiled().problem.nx))
    throw std::invalid_argument("BatchSolver::set_initial_state: expected " +
                                std::to_string(m.compiled().problem.nx) + " values, found " +
                                std::to_string(x0.size()));
  std::copy(x0.begin(), x0.end(), m.slice(i) + m.compiled().problem.x0);
}

void BatchSolver::set_reference(int i, std::string_view cost_name, const problems::Reference& ref) {
  Impl& m = *impl_;
  if (m.path != BatchPath::Solvers) {
    m.check(i);
    device::set_slice_reference(m.compiled(), m.slice(i), cost_name, ref.values);
    return;
  }
  Solver& s = m.at(i);
  for (const std::string& name : m.shared_costs)
    if (name == cost_name)
      throw std::invalid_argument("BatchSolver::set_reference: cost '" + name +
                                  "' is shared by the problems of the batch (its type cannot be copied per problem)");
  s.set_reference(cost_name, ref);
}

void BatchSolver::set_bounds(int i, std::string_view constraint_name, std::span<const double> lower,
                             std::span<const double> upper) {
  Impl& m = *impl_;
  m.check(i);
  const auto name = [constraint_name] { return std::string(constraint_name); };  // errors only: no allocation
  const problems::Problem& problem = m.path == BatchPath::Solvers ? m.at(i).problem() : m.base;
  const problems::ConstraintTerm* term = nullptr;
  for (const auto& c : problem.constraints)
    if (c->info().name == constraint_name) term = c.get();
  const bool height = dynamic_cast<const problems::EndEffectorHeight*>(term) != nullptr;
  const bool ee_box = dynamic_cast<const problems::EndEffectorBox*>(term) != nullptr;
  if (term == nullptr || (term->box() == nullptr && !height && !ee_box))
    throw std::invalid_argument("BatchSolver::set_bounds: no control_box, state_box, end_effector_box or "
                                "end_effector_height constraint named '" + name() + "'");
  // Checked here for both paths, so that they refuse alike and with this class's name. An
  // end-effector term's bounds as three axes (x, y, z); a height's one pair is z's [z_min, inf).
  std::array<double, 3> lo3{}, hi3{};
  const std::string why = height || ee_box
                              ? problems::end_effector_axis_bounds(*term, lower, upper, lo3, hi3)
                              : problems::bounds_error(lower, upper, term->box()->index.size());
  if (!why.empty()) throw std::invalid_argument("BatchSolver::set_bounds: constraint '" + name() + "': " + why);
  if (m.path == BatchPath::Solvers) {
    try {
      m.at(i).set_bounds(constraint_name, lower, upper);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("BatchSolver::set_bounds: problem ") + std::to_string(i) + ": " + e.what());
    }
    return;
  }
  // The slice's bounds, and its row layout laid out again.
  try {
    if (height || ee_box)
      device::set_slice_bounds(m.compiled(), m.slice(i), constraint_name, lo3, hi3);
    else
      device::set_slice_bounds(m.compiled(), m.slice(i), constraint_name, lower, upper);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("BatchSolver::set_bounds: ") + e.what());
  }
}

void BatchSolver::set_obstacle(int i, std::string_view constraint_name, std::array<double, 2> center, double radius) {
  Impl& m = *impl_;
  m.check(i);
  try {
    if (m.path != BatchPath::Solvers)
      return device::set_slice_obstacle(m.compiled(), m.slice(i), constraint_name, center, radius);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("BatchSolver::set_obstacle: ") + e.what());
  }
  const problems::ConstraintTerm* term = nullptr;
  for (const auto& c : m.at(i).problem().constraints)
    if (c->info().name == constraint_name) term = c.get();
  if (dynamic_cast<const problems::CircleObstacle*>(term) == nullptr)
    throw std::invalid_argument("BatchSolver::set_obstacle: no circle_obstacle constraint named '" +
                                std::string(constraint_name) + "'");
  if (std::string why = problems::CircleObstacle::geometry_error(center, radius); !why.empty())
    throw std::invalid_argument("BatchSolver::set_obstacle: circle_obstacle '" + std::string(constraint_name) +
                                "': " + why);
  m.at(i).set_obstacle(constraint_name, center, radius);
}

void BatchSolver::set_initial_guess(int i, std::span<const double> x, std::span<const double> u) {
  Impl& m = *impl_;
  if (m.path == BatchPath::Solvers) return m.at(i).set_initial_guess(x, u);
  m.check(i);
  if (!m.engine) return m.devices[static_cast<std::size_t>(i)].set_initial_guess(x, u);
  const device::BatchProblem& P = m.data.problem;
  const std::size_t nxs = static_cast<std::size_t>(P.N + 1) * P.nx, nus = static_cast<std::size_t>(P.N) * P.nu;
  if (x.size() != nxs || u.size() != nus)
    throw std::invalid_argument("BatchSolver::set_initial_guess: expected " + std::to_string(nxs) + " and " +
                                std::to_string(nus) + " values, found " + std::to_string(x.size()) + " and " +
                                std::to_string(u.size()));
  double* it = m.engine->iterate(i);
  std::copy(x.begin(), x.end(), it);
  std::copy(u.begin(), u.end(), it + nxs);
}

void BatchSolver::set_model(int i, std::shared_ptr<const problems::Model> model) {
  Impl& m = *impl_;
  m.check(i);
  if (!model) throw std::invalid_argument("BatchSolver::set_model: expected a model, found none");
  const problems::Problem& current = m.path == BatchPath::Solvers ? m.at(i).problem() : m.base;
  if (std::string why = problems::model_swap_refusal(current, *model); !why.empty())
    throw std::invalid_argument("BatchSolver::set_model: " + why);
  if (m.path == BatchPath::Solvers) return m.at(i).set_model(std::move(model));
  problems::Problem p = m.base;
  p.model = model;
  std::vector<unsigned char> arena;
  try {
    arena = device::recompiled_arena(p, m.compiled().problem);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("BatchSolver::set_model: ") + e.what());
  }
  if (!m.engine)
    m.devices[static_cast<std::size_t>(i)].set_arena(std::move(arena));
  else if (std::string error = m.engine->set_arena(i, arena); !error.empty())
    throw std::runtime_error("BatchSolver: backend cuda: " + error);
  m.models[static_cast<std::size_t>(i)] = std::move(model);
}

void BatchSolver::set_model_parameters(int i, const std::vector<problems::ModelParameter>& changes) {
  set_model(i, problems::with_parameters(model(i), changes));
}

const problems::Model& BatchSolver::model(int i) const {
  const Impl& m = *impl_;
  m.check(i);
  const std::size_t u = static_cast<std::size_t>(i);
  if (m.path == BatchPath::Solvers) return *m.solvers[u].problem().model;
  return *m.models[u];
}

void BatchSolver::set_warm_start(int i, const problems::InitialGuess& guess) { impl_->at(i).set_warm_start(guess); }

void BatchSolver::shift(int i) { impl_->at(i).shift(); }

const Solution& BatchSolver::solution(int i) const {
  const Impl& m = *impl_;
  m.check(i);
  const std::size_t u = static_cast<std::size_t>(i);
  if (m.path == BatchPath::Solvers) return m.solvers[u].solution();
  return m.engine ? m.engine_solutions[u] : m.devices[u].solution();
}
Status BatchSolver::status(int i) const { return solution(i).status; }
const Stats& BatchSolver::stats(int i) const {
  const Impl& m = *impl_;
  m.check(i);
  const std::size_t u = static_cast<std::size_t>(i);
  return m.path == BatchPath::Solvers ? m.solvers[u].stats() : m.device_stats[u];
}
const Solver& BatchSolver::solver(int i) const { return impl_->at(i); }

int BatchSolver::size() const { return impl_->B; }
int BatchSolver::threads() const {
  return impl_->engine ? impl_->engine->threads() : impl_->pool->threads() *
                                                   (impl_->path == BatchPath::Solvers ? impl_->solvers[0].threads() : 1);
}
BatchBackend BatchSolver::backend() const { return impl_->backend; }
bool BatchSolver::single() const { return impl_->single; }
BatchPath BatchSolver::path() const { return impl_->path; }
const std::string& BatchSolver::device_path_refusal() const { return impl_->refusal; }

std::size_t BatchSolver::bytes_allocated() const {
  std::size_t bytes = 0;
  for (const Solver& s : impl_->solvers) bytes += s.bytes_allocated();
  for (const device::DeviceSqp& d : impl_->devices) bytes += d.bytes_allocated();
  return bytes;
}

std::size_t BatchSolver::device_bytes() const { return impl_->engine ? impl_->engine->device_bytes() : 0; }

}  // namespace knot::solver
