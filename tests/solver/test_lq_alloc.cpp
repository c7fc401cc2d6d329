// LqSolver::solve allocates nothing: this executable replaces the global operator new (every form)
// with a counting one and requires zero allocations during solve() for every backend and path.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "alloc_counter.hpp"
#include "test_lq_common.hpp"

namespace knot::test {
namespace {

// The counter sees allocations, including aligned ones and those of standard containers.
TEST(LqAlloc, CounterCountsAllocations) {
  EXPECT_EQ(allocations_during([] {}), 0);
  EXPECT_GE(allocations_during([] {
              std::vector<double> v(100);
              v[3] = 1.0;
            }),
            1);
  EXPECT_EQ(allocations_during([] {
              LqSolution s(3, 2, 4);
              (void)s;
            }),
            3);
  EXPECT_GE(allocations_during([] { LqSolver s(3, 2, 4, with(Linsys::Riccati)); }), 1);
}

TEST(LqAlloc, SolveAllocatesNothing) {
  Rng rng(51);
  struct Case {
    Linsys linsys;
    Cost cost;
    LqSize size;
  };
  // Every backend, fixed-size and run-time kernels, and the regularized Schur path with refinement.
  const Case cases[] = {
      {Linsys::Riccati, Cost::PositiveDefinite, {4, 1, 20}},  {Linsys::Riccati, Cost::PositiveDefinite, {18, 9, 5}},
      {Linsys::Bdsv, Cost::PositiveDefinite, {6, 2, 20}},     {Linsys::Bdsv, Cost::TerminalOnly, {6, 2, 20}},
      {Linsys::Bdsv, Cost::PositiveDefinite, {18, 9, 5}},     {Linsys::Pcg, Cost::PositiveDefinite, {6, 2, 20}},
      {Linsys::Pcg, Cost::ZeroStateWeights, {3, 1, 8}},       {Linsys::KktLdlt, Cost::PositiveDefinite, {6, 2, 20}},
      {Linsys::Auto, Cost::PositiveDefinite, {12, 4, 10}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << solver::to_string(c.linsys) << " cost " << static_cast<int>(c.cost) << " nx "
                                    << c.size.nx);
    const LqData d = random_lq(rng, c.size.nx, c.size.nu, c.size.N, c.cost);
    LqOptions o = with(c.linsys);
    o.pcg_warm_start = true;
    LqSolver s(c.size.nx, c.size.nu, c.size.N, o);
    LqSolution sol(c.size.nx, c.size.nu, c.size.N);
    LqStatus st = LqStatus::NonFinite;
    EXPECT_EQ(allocations_during([&] {
                for (int rep = 0; rep < 3; ++rep) st = s.solve(d, sol);
              }),
              0);
    EXPECT_EQ(st, LqStatus::Solved);
    if (c.cost != Cost::PositiveDefinite) {
      EXPECT_GT(s.stats().refinement_steps, 0);
    }
  }
}

// Failing solves return a status without allocating either.
TEST(LqAlloc, FailingSolvesAllocateNothing) {
  Rng rng(52);
  LqData d = random_lq(rng, 4, 2, 10, Cost::TerminalOnly);
  put(-50.0 * Mat::Identity(2, 2), d.R_k(3));
  for (const Linsys l : {Linsys::Riccati, Linsys::Bdsv, Linsys::Pcg, Linsys::KktLdlt}) {
    LqSolver s(4, 2, 10, with(l));
    LqSolution sol(4, 2, 10);
    LqStatus st = LqStatus::Solved;
    EXPECT_EQ(allocations_during([&] { st = s.solve(d, sol); }), 0) << solver::to_string(l);
    EXPECT_EQ(st, LqStatus::NotPositiveDefinite) << solver::to_string(l);
  }
}

}  // namespace
}  // namespace knot::test
