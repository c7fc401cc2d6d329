// Solver::solve allocates nothing: this executable replaces the global operator new (every form) with
// a counting one and requires zero allocations over several solves, warm-started MPC steps
// (set_initial_state, set_reference, shift) and real-time iterations, for problems that exercise
// every path: inequality and equality rows, kinematics, the exact Hessian and hessian auto's switch to
// it, every LQ backend.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>

#include "alloc_counter.hpp"
#include "knot/problems/error.hpp"
#include "test_sqp_common.hpp"

namespace knot::test {
namespace {

// The counter sees allocations, standard containers' included (the check can fail).
TEST(SqpAlloc, CounterCountsAllocations) {
  EXPECT_EQ(allocations_during([] {}), 0);
  EXPECT_GE(allocations_during([] {
              std::vector<double> v(100);
              v[3] = 1.0;
            }),
            1);
  const problems::Problem p = load_config("double_integrator_lqr");
  EXPECT_GE(allocations_during([&] { solver::Solver s(p); }), 1);  // construction allocates
}

// Several full solves, then MPC steps: new state, new reference (same shape), shift, solve.
void expect_allocation_free(const std::string& name, const std::vector<std::string>& overrides,
                            bool real_time = false) {
  SCOPED_TRACE(name);
  const problems::Problem p = load_config(name, overrides);
  solver::SolverOptions o = sqp_options(p);
  o.real_time_iteration = real_time;
  solver::Solver s(p, o);
  std::vector<double> x0 = p.x0;
  // A reference row of the first cost that has one, for set_reference.
  const problems::CostTerm* tracked = nullptr;
  for (const auto& c : p.costs)
    if (c->reference() != nullptr && c->reference()->rows() == 1) {
      tracked = c.get();
      break;
    }
  problems::Reference ref;
  if (tracked) ref = *tracked->reference();

  solver::Status first = solver::Status::NotRun;
  const long n = allocations_during([&] {
    first = s.solve();
    s.solve();  // from the solution: converged at once
    for (int step = 0; step < 4; ++step) {
      const double* x1 = s.solution().x.data() + p.nx();
      for (int i = 0; i < p.nx(); ++i) x0[static_cast<std::size_t>(i)] = x1[i];
      x0[0] += 1e-3;
      s.set_initial_state(x0);
      if (tracked) {
        ref.values[0] += 1e-3;
        s.set_reference(tracked->info().name, ref);
      }
      s.shift();
      s.solve();
    }
  });
  EXPECT_EQ(n, 0);
  if (!real_time) {
    EXPECT_EQ(first, solver::Status::Solved) << s.solution().message();
  }
  EXPECT_NE(s.solution().status, solver::Status::NumericalError) << s.solution().message();
}

TEST(SqpAlloc, SolveAllocatesNothing) {
  expect_allocation_free("cartpole_swingup", {});
  expect_allocation_free("double_integrator_rest_to_rest", {});
  expect_allocation_free("bryson_denham", {});
  expect_allocation_free("unicycle_obstacles", {});  // auto's switch to the exact Hessian, obstacle rows
  expect_allocation_free("iiwa14_gravity_limits", {});  // kinematics, model limits
  expect_allocation_free("quadrotor_to_point", {"solver.globalization=merit"});
  expect_allocation_free("cartpole_swingup_smooth", {});  // control_rate: the augmented LQ
}

// SolverOptions::threads: the pool's rounds (a function pointer and a context) allocate nothing on
// any thread; the counter sees the workers' allocations (test_batch_alloc.cpp shows it).
TEST(SqpAlloc, KnotThreadsAllocateNothing) {
  expect_allocation_free("unicycle_obstacles", {"solver.threads=2"});
  expect_allocation_free("cartpole_swingup_smooth", {"solver.threads=3"});
  expect_allocation_free("iiwa14_gravity_limits", {"solver.threads=2", "solver.hessian=exact"});
}

// set_bounds that adds and removes rows (and moves bounds in place), set_obstacle, then solves.
TEST(SqpAlloc, SetBoundsAndSetObstacleAllocateNothing) {
  const double inf = std::numeric_limits<double>::infinity();
  const problems::Problem p = load_config("cartpole_swingup");
  solver::Solver s(p, sqp_options(p));
  const std::vector<double> lo = {-80.0}, hi = {80.0}, open = {inf}, tight = {9.0};
  const long n = allocations_during([&] {
    s.solve();
    s.set_bounds("force_limit", lo, open);
    s.solve();
    s.set_bounds("force_limit", lo, tight);
    s.solve();
    s.set_bounds("force_limit", lo, hi);
    s.solve();
  });
  EXPECT_EQ(n, 0);
  EXPECT_EQ(s.solution().status, solver::Status::Solved) << s.solution().message();
  const problems::Problem q = load_config("unicycle_obstacles");
  solver::Solver u(q, sqp_options(q));
  EXPECT_EQ(allocations_during([&] {
              u.set_obstacle("rock", {1.6, 0.3}, 0.45);
              u.solve();
            }),
            0);
}

TEST(SqpAlloc, EveryBackendAllocatesNothing) {
  for (const char* linsys : {"riccati", "bdsv", "pcg", "kkt_ldlt"})
    expect_allocation_free("cartpole_swingup", {std::string("solver.linsys=") + linsys});
}

TEST(SqpAlloc, RealTimeIterationAllocatesNothing) {
  expect_allocation_free("cartpole_swingup", {}, true);
  expect_allocation_free("pendulum_swingup", {}, true);
}

// hessian auto's switch (a second linearization of the iterate, with the exact Hessian from then on)
// inside the counted region: in closed form on the cart-pole start whose Gauss-Newton tail stalls,
// differenced on iiwa14_reach.
TEST(SqpAlloc, HessianAutoSwitchAllocatesNothing) {
  problems::Problem cartpole = load_config("cartpole_swingup");
  const auto x0 = cartpole_starts(46)[45];
  cartpole.x0.assign(x0.begin(), x0.end());
  for (const problems::Problem& p : {cartpole, load_config("iiwa14_reach")}) {
    SCOPED_TRACE(p.name);
    solver::Solver s(p, sqp_options(p));
    solver::Status st = solver::Status::NotRun;
    EXPECT_EQ(allocations_during([&] { st = s.solve(); }), 0);
    EXPECT_EQ(st, solver::Status::Solved) << s.solution().message();
    int exact = 0;
    for (const auto& row : s.stats().history()) exact += row.exact_hessian ? 1 : 0;
    EXPECT_GT(exact, 0);
  }
}

// Failing solves report through the status without allocating either.
TEST(SqpAlloc, FailingSolvesAllocateNothing) {
  const problems::Problem p = load_config("pendulum_swingup", {"solver.max_iter=2"});
  solver::Solver s(p, sqp_options(p));
  solver::Status st = solver::Status::NotRun;
  EXPECT_EQ(allocations_during([&] { st = s.solve(); }), 0);
  EXPECT_EQ(st, solver::Status::MaxIterations);
  const double bad[] = {std::numeric_limits<double>::quiet_NaN(), 0};
  s.set_initial_state(bad);
  EXPECT_EQ(allocations_during([&] { st = s.solve(); }), 0);
  EXPECT_EQ(st, solver::Status::NumericalError);
}

// An allocation that fails anywhere in construction is a ProblemError naming the workspace and the
// problem's size, never a bare std::bad_alloc: every allocation of the constructor is failed in turn.
TEST(SqpAlloc, AllocationFailureInConstructionNamesTheSize) {
  for (const char* name : {"double_integrator_lqr", "cartpole_swingup_smooth"}) {
    const problems::Problem p = load_config(name);
    const solver::SolverOptions o = sqp_options(p);
    // The Problem is moved in, so that the allocations counted are the constructor's own.
    problems::Problem q = p;
    const auto construct = [&] { solver::Solver s(std::move(q), o); };
    construct();  // first-use statics out of the count
    q = p;
    const long total = allocations_during(construct);
    ASSERT_GT(total, 5) << name;
    const std::string size = "N = " + std::to_string(p.horizon.N) + ", nx = " + std::to_string(p.nx()) +
                             ", nu = " + std::to_string(p.nu()) + ")";
    for (long k = 0; k < total; ++k) {
      try {
        q = p;
        const bool reached = failing_allocation(k, construct);
        ADD_FAILURE() << name << ": allocation " << k << (reached ? " failed and construction succeeded" : " was never made");
      } catch (const problems::ProblemError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("solver.memory_limit: expected memory for the solver workspace (about "), std::string::npos)
            << m;
        EXPECT_NE(m.find(size + ", found an allocation that failed (std::bad_alloc)"), std::string::npos) << m;
      } catch (const std::exception& e) {
        ADD_FAILURE() << name << ": allocation " << k << ": " << e.what();
      }
    }
    // Negative control: past the last allocation nothing fails.
    q = p;
    EXPECT_FALSE(failing_allocation(total, construct)) << name;
  }
}

}  // namespace
}  // namespace knot::test
