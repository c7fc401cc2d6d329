// BatchSolver, backend cpu: B Solvers on a pool of threads made at construction (docs/batch.md).
//
// The pool: workers sleep on a condition variable until solve() opens a new round (a generation
// number), then take problem indices from one atomic counter until none is left, and the last one
// to finish wakes solve(). The calling thread takes indices too. Dynamic hand-out keeps threads busy
// when problems need different iteration counts; which thread solves a problem cannot change its
// result, because the problems share nothing mutable. Nothing here allocates after construction:
// the mutex, the condition variables and the counter are all fixed state.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "knot/problems/constraint.hpp"
#include "knot/problems/cost.hpp"
#include "knot/problems/error.hpp"
#include "knot/solver/batch.hpp"
#include "size_text.hpp"

namespace knot::solver {

const char* to_string(BatchBackend backend) {
  switch (backend) {
    case BatchBackend::Cpu:
      return "cpu";
    case BatchBackend::Cuda:
      return "cuda";
  }
  return "unknown";
}

std::string batch_backend_unavailable(BatchBackend backend) {
  switch (backend) {
    case BatchBackend::Cpu:
      return {};
    case BatchBackend::Cuda:
      return "backend cuda: the batched SQP has no CUDA path yet (docs/batch.md, \"What exists today\"); use "
             "backend cpu";
  }
  return "unknown batch backend " + std::to_string(static_cast<int>(backend));
}

std::string BatchOptions::validate() const {
  if (backend != BatchBackend::Cpu && backend != BatchBackend::Cuda)
    return "backend must be cpu or cuda, found " + std::to_string(static_cast<int>(backend));
  if (threads < 0) return "threads must be >= 0 (0: every core), found " + std::to_string(threads);
  if (solver)
    if (std::string why = solver->validate(); !why.empty()) return "solver: " + why;
  return {};
}

namespace {

// The cost terms that hold a reference, copied so that each problem of the batch owns its own
// (Solver::set_reference writes into the term). Terms without a reference are immutable and shared.
// A reference-carrying type not listed here stays shared; set_reference refuses it (shared_costs).
std::shared_ptr<problems::CostTerm> own_copy(const std::shared_ptr<problems::CostTerm>& c) {
  if (c->reference() == nullptr) return c;
  if (const auto* t = dynamic_cast<const problems::StateCost*>(c.get()))
    return std::make_shared<problems::StateCost>(*t);
  if (const auto* t = dynamic_cast<const problems::ControlCost*>(c.get()))
    return std::make_shared<problems::ControlCost>(*t);
  if (const auto* t = dynamic_cast<const problems::EndEffectorCost*>(c.get()))
    return std::make_shared<problems::EndEffectorCost>(*t);
  return c;
}

// Box terms are copied per problem too, so that set_bounds can move one problem's bounds.
std::shared_ptr<problems::ConstraintTerm> own_copy(const std::shared_ptr<problems::ConstraintTerm>& c) {
  if (const auto* t = dynamic_cast<const problems::ControlBox*>(c.get()))
    return std::make_shared<problems::ControlBox>(*t);
  if (const auto* t = dynamic_cast<const problems::StateBox*>(c.get())) return std::make_shared<problems::StateBox>(*t);
  return c;
}

// Empty when `lo`, `hi` may replace the box's bounds in place: as many values, no NaN, lo <= hi, and
// every bound finite where it was finite and the same infinity where it was infinite (the Solver's
// constraint rows, one per finite bound, are laid out at creation).
std::string bounds_mismatch(const problems::BoxBounds& box, std::span<const double> lo, std::span<const double> hi) {
  const std::size_t n = box.index.size();
  if (lo.size() != n || hi.size() != n)
    return "expected " + std::to_string(n) + " lower and upper values, found " + std::to_string(lo.size()) + " and " +
           std::to_string(hi.size());
  for (std::size_t j = 0; j < n; ++j) {
    const bool same_kind =
        std::isfinite(lo[j]) == std::isfinite(box.lower[j]) && std::isfinite(hi[j]) == std::isfinite(box.upper[j]) &&
        (std::isfinite(lo[j]) || lo[j] == box.lower[j]) && (std::isfinite(hi[j]) || hi[j] == box.upper[j]);
    if (std::isnan(lo[j]) || std::isnan(hi[j]) || !same_kind || lo[j] > hi[j])
      return "entry " + std::to_string(j) +
             ": expected lower <= upper, each finite where the problem's is finite and " +
             "infinite where it is, found [" + std::to_string(lo[j]) + ", " + std::to_string(hi[j]) + "] for [" +
             std::to_string(box.lower[j]) + ", " + std::to_string(box.upper[j]) + "]";
  }
  return {};
}

}  // namespace

struct BatchSolver::Impl {
  BatchBackend backend = BatchBackend::Cpu;
  std::vector<Solver> solvers;
  std::vector<std::string> shared_costs;   // reference-carrying costs the batch could not copy
  std::vector<std::exception_ptr> errors;  // one per problem, set only if its solve() threw
  // Problem i's box terms (its own copies, held by its Solver's problem), in the problem's order.
  std::vector<std::vector<problems::ConstraintTerm*>> boxes;

  // ---- The pool.
  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable start, done;
  std::uint64_t generation = 0;  // rounds opened by solve()
  int running = 0;               // workers not yet finished with the current round
  bool stop = false;
  std::atomic<int> next{0};  // the next problem to hand out

  void solve_problems() {
    const int B = static_cast<int>(solvers.size());
    for (int i = next.fetch_add(1, std::memory_order_relaxed); i < B;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      try {
        solvers[static_cast<std::size_t>(i)].solve();
      } catch (...) {
        errors[static_cast<std::size_t>(i)] = std::current_exception();
      }
    }
  }

  void work() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex);
        start.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
      }
      solve_problems();
      std::lock_guard lock(mutex);
      if (--running == 0) done.notify_one();
    }
  }

  void solve_all() {
    next.store(0, std::memory_order_relaxed);
    {
      std::lock_guard lock(mutex);
      ++generation;
      running = static_cast<int>(workers.size());
    }
    start.notify_all();
    solve_problems();
    std::unique_lock lock(mutex);
    done.wait(lock, [&] { return running == 0; });
  }

  ~Impl() {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    start.notify_all();
    for (std::thread& t : workers) t.join();
  }

  Solver& at(int i) {
    if (i < 0 || i >= static_cast<int>(solvers.size()))
      throw std::out_of_range("BatchSolver: problem " + std::to_string(i) + " of a batch of " +
                              std::to_string(solvers.size()));
    return solvers[static_cast<std::size_t>(i)];
  }
};

BatchSolver::BatchSolver(problems::Problem problem, int batch_size)
    : BatchSolver(std::move(problem), batch_size, BatchOptions{}) {}

BatchSolver::BatchSolver(problems::Problem problem, int batch_size, const BatchOptions& options)
    : impl_(std::make_unique<Impl>()) {
  if (batch_size < 1)
    throw std::invalid_argument("BatchSolver: batch_size must be >= 1, found " + std::to_string(batch_size));
  if (std::string why = options.validate(); !why.empty()) throw std::invalid_argument("BatchOptions: " + why);
  if (std::string why = batch_backend_unavailable(options.backend); !why.empty())
    throw std::invalid_argument("BatchSolver: " + why);
  Impl& m = *impl_;
  m.backend = options.backend;
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
  for (const auto& c : problem.costs)
    if (c->reference() != nullptr && own_copy(c) == c) m.shared_costs.push_back(c->info().name);
  m.solvers.reserve(static_cast<std::size_t>(batch_size));
  for (int i = 0; i < batch_size; ++i) {
    problems::Problem copy = problem;
    for (auto& c : copy.costs) c = own_copy(c);
    std::vector<problems::ConstraintTerm*> boxes;
    for (auto& c : copy.constraints) {
      c = own_copy(c);
      if (c->box() != nullptr) boxes.push_back(c.get());
    }
    m.boxes.push_back(std::move(boxes));
    m.solvers.emplace_back(std::move(copy), solver_options);
  }
  m.errors.resize(static_cast<std::size_t>(batch_size));

  unsigned threads = options.threads > 0 ? static_cast<unsigned>(options.threads) : std::thread::hardware_concurrency();
  if (threads == 0) threads = 1;
  if (threads > static_cast<unsigned>(batch_size)) threads = static_cast<unsigned>(batch_size);
  m.workers.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) m.workers.emplace_back([&m] { m.work(); });
}

BatchSolver::~BatchSolver() = default;
BatchSolver::BatchSolver(BatchSolver&&) noexcept = default;
BatchSolver& BatchSolver::operator=(BatchSolver&&) noexcept = default;

int BatchSolver::solve() {
  Impl& m = *impl_;
  m.solve_all();
  for (std::exception_ptr& e : m.errors)
    if (e) {
      // A Solver reports numerical trouble as a status; an exception is a broken invariant.
      std::exception_ptr first = e;
      for (std::exception_ptr& r : m.errors) r = nullptr;
      std::rethrow_exception(first);
    }
  int solved = 0;
  for (const Solver& s : m.solvers) solved += is_solved(s.solution().status) ? 1 : 0;
  return solved;
}

void BatchSolver::set_initial_state(int i, std::span<const double> x0) { impl_->at(i).set_initial_state(x0); }

void BatchSolver::set_reference(int i, std::string_view cost_name, const problems::Reference& ref) {
  Solver& s = impl_->at(i);
  for (const std::string& name : impl_->shared_costs)
    if (name == cost_name)
      throw std::invalid_argument("BatchSolver::set_reference: cost '" + name +
                                  "' is shared by the problems of the batch (its type cannot be copied per problem)");
  s.set_reference(cost_name, ref);
}

void BatchSolver::set_bounds(int i, std::string_view constraint_name, std::span<const double> lower,
                             std::span<const double> upper) {
  impl_->at(i);
  for (problems::ConstraintTerm* c : impl_->boxes[static_cast<std::size_t>(i)]) {
    if (c->info().name != constraint_name) continue;
    // The term is problem i's own, not const (made by own_copy); box() only hands out a const view.
    auto* box = const_cast<problems::BoxBounds*>(c->box());
    if (std::string why = bounds_mismatch(*box, lower, upper); !why.empty())
      throw std::invalid_argument("BatchSolver::set_bounds: constraint '" + std::string(constraint_name) + "': " + why);
    std::copy(lower.begin(), lower.end(), box->lower.begin());
    std::copy(upper.begin(), upper.end(), box->upper.begin());
    return;
  }
  throw std::invalid_argument("BatchSolver::set_bounds: no control_box or state_box constraint named '" +
                              std::string(constraint_name) + "'");
}

void BatchSolver::set_initial_guess(int i, std::span<const double> x, std::span<const double> u) {
  impl_->at(i).set_initial_guess(x, u);
}

void BatchSolver::set_warm_start(int i, const problems::InitialGuess& guess) { impl_->at(i).set_warm_start(guess); }

void BatchSolver::shift(int i) { impl_->at(i).shift(); }

const Solution& BatchSolver::solution(int i) const { return impl_->at(i).solution(); }
Status BatchSolver::status(int i) const { return impl_->at(i).solution().status; }
const Stats& BatchSolver::stats(int i) const { return impl_->at(i).stats(); }
const Solver& BatchSolver::solver(int i) const { return impl_->at(i); }

int BatchSolver::size() const { return static_cast<int>(impl_->solvers.size()); }
int BatchSolver::threads() const { return static_cast<int>(impl_->workers.size()) + 1; }
BatchBackend BatchSolver::backend() const { return impl_->backend; }

std::size_t BatchSolver::bytes_allocated() const {
  std::size_t bytes = 0;
  for (const Solver& s : impl_->solvers) bytes += s.bytes_allocated();
  return bytes;
}

}  // namespace knot::solver
