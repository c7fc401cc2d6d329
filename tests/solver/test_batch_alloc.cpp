// BatchSolver::solve allocates nothing: the counting operator new of alloc_counter.hpp sees every
// thread's allocations, the pool's workers' included, and over several batch solves and MPC steps
// (per-problem initial states, references of the same shape, box bounds, shifts) it must count zero.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "alloc_counter.hpp"
#include "knot/solver/batch.hpp"
#include "knot/solver/device/device_sqp.hpp"
#include "test_sqp_common.hpp"

namespace knot::test {
namespace {

// The counter sees allocations made on a pool thread (so the check below can fail), and building a
// batch allocates (its threads and workspaces).
TEST(BatchAlloc, CounterCountsOtherThreadsAndConstruction) {
  EXPECT_GE(allocations_during([] {
              std::thread t([] {
                std::vector<double> v(10);
                v[1] = 2.0;
              });
              t.join();
            }),
            2);
  const problems::Problem p = load_config("double_integrator_lqr");
  EXPECT_GE(allocations_during([&] { solver::BatchSolver b(p, 3); }), 3);
}

// The solvers path; the device path with Gauss-Newton and Riccati; the device path with the file's
// options (hessian auto: its exact steps too). The device path has no shift(): its steps move x0,
// the references and the bounds only.
enum class Path { Solvers, DeviceGaussNewton, DeviceFileOptions };

void expect_allocation_free(const std::string& name, int B, int threads, Path path = Path::Solvers) {
  const bool device = path != Path::Solvers;
  SCOPED_TRACE(name + (path == Path::Solvers ? "" : path == Path::DeviceGaussNewton ? " (device path)" : " (device path, file options)"));
  const problems::Problem p = load_config(name);
  solver::BatchOptions o;
  o.threads = threads;
  o.path = device ? solver::BatchPath::Device : solver::BatchPath::Solvers;
  if (path == Path::DeviceGaussNewton) o.solver = solver::device::device_path_options(solver::from_settings(p.solver));
  solver::BatchSolver batch(p, B, o);
  ASSERT_EQ(batch.threads(), std::min(B, threads));
  const problems::CostTerm* tracked = nullptr;
  for (const auto& c : p.costs)
    if (c->reference() != nullptr && c->reference()->rows() == 1) tracked = c.get();
  problems::Reference ref;
  if (tracked) ref = *tracked->reference();
  // A box term's bounds, moved a little at each step (finite ones stay finite).
  const problems::ConstraintTerm* box = nullptr;
  for (const auto& c : p.constraints)
    if (c->box() != nullptr && std::isfinite(c->box()->lower[0])) box = c.get();
  std::vector<double> lower, upper, open;
  if (box) lower = box->box()->lower, upper = box->box()->upper;
  // The second step also takes the first lower bound away (a row removed on every knot: the rows
  // laid out again, allocating nothing), the third gives it back.
  open = lower;
  if (box) open[0] = -std::numeric_limits<double>::infinity();
  std::vector<double> x0 = p.x0;
  int first = -1;
  const long n = allocations_during([&] {
    first = batch.solve();
    for (int step = 0; step < 3; ++step) {
      for (int i = 0; i < B; ++i) {
        const double* x1 = batch.solution(i).x.data() + p.nx();
        for (int j = 0; j < p.nx(); ++j) x0[static_cast<std::size_t>(j)] = x1[j];
        x0[0] += 1e-3 * i;
        batch.set_initial_state(i, x0);
        if (tracked) {
          ref.values[0] += 1e-3;
          batch.set_reference(i, tracked->info().name, ref);
        }
        if (box) {
          lower[0] -= 1e-3;
          batch.set_bounds(i, box->info().name, step == 1 ? open : lower, upper);
        }
        if (!device) batch.shift(i);
      }
      batch.solve();
    }
  });
  EXPECT_EQ(n, 0);
  EXPECT_EQ(first, B);
}

TEST(BatchAlloc, SolveAllocatesNothing) {
  expect_allocation_free("cartpole_swingup", 4, 2);
  expect_allocation_free("unicycle_obstacles", 3, 3);
  expect_allocation_free("iiwa14_gravity_limits", 2, 2);
  expect_allocation_free("double_integrator_lqr", 5, 1);  // no pool threads: the caller alone
  expect_allocation_free("pendulum_swingup", 3, 2, Path::DeviceGaussNewton);
  expect_allocation_free("iiwa14_gravity_limits", 2, 2, Path::DeviceGaussNewton);
  expect_allocation_free("iiwa14_reach", 2, 2, Path::DeviceFileOptions);  // switches to the exact Hessian
  expect_allocation_free("unicycle_obstacles", 2, 2, Path::DeviceFileOptions);
}

// After set_model_parameters (which allocates the new model), the solves allocate nothing, on both
// paths.
TEST(BatchAlloc, SolveAfterAModelChangeAllocatesNothing) {
  const problems::Problem p = load_config("pendulum_swingup");
  for (bool device : {false, true}) {
    SCOPED_TRACE(device ? "device path" : "solvers path");
    solver::BatchOptions o;
    o.threads = 2;
    o.path = device ? solver::BatchPath::Device : solver::BatchPath::Solvers;
    if (device) o.solver = solver::device::device_path_options(solver::from_settings(p.solver));
    solver::BatchSolver batch(p, 3, o);
    batch.set_model_parameters(1, {{"mass", {1.3}}});
    EXPECT_GT(allocations_during([&] { batch.set_model_parameters(2, {{"mass", {0.8}}}); }), 0);
    EXPECT_EQ(allocations_during([&] {
                batch.solve();
                batch.solve();
              }),
              0);
  }
}

}  // namespace
}  // namespace knot::test
