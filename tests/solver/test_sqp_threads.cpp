// Independent Solver instances on separate threads: two threads, each solving its own problem
// (MPC steps included), give bitwise the results of the same solves run one after the other.
#include <gtest/gtest.h>

#include <thread>

#include "test_util.hpp"
#include "test_sqp_common.hpp"

namespace knot::test {
namespace {

struct Record {
  std::vector<double> x, u, lambda, z;
  double cost = 0;
  solver::Status status = solver::Status::NotRun;
  int iterations = 0;
};

// A solve and three MPC steps; the record of the last solve.
Record run(const std::string& name) {
  const problems::Problem p = load_config(name);
  solver::Solver s(p, sqp_options(p));
  s.solve();
  std::vector<double> x0 = p.x0;
  for (int step = 0; step < 3; ++step) {
    for (int i = 0; i < p.nx(); ++i) x0[static_cast<std::size_t>(i)] = s.solution().x[static_cast<std::size_t>(p.nx() + i)];
    s.set_initial_state(x0);
    s.shift();
    s.solve();
  }
  const solver::Solution& sol = s.solution();
  return {sol.x, sol.u, sol.lambda, sol.z, sol.cost, sol.status, sol.iterations};
}

bool same(const Record& a, const Record& b) {
  return bitwise_equal(a.x, b.x) && bitwise_equal(a.u, b.u) && bitwise_equal(a.lambda, b.lambda) &&
         bitwise_equal(a.z, b.z) && bitwise_equal({a.cost}, {b.cost}) && a.status == b.status &&
         a.iterations == b.iterations;
}

TEST(SqpThreads, TwoThreadsGiveTheSingleThreadedResultsBitwise) {
  const std::string names[2] = {"unicycle_obstacles", "iiwa14_gravity_limits"};
  const Record serial[2] = {run(names[0]), run(names[1])};
  for (const Record& r : serial) EXPECT_EQ(r.status, solver::Status::Solved);
  for (int repeat = 0; repeat < 3; ++repeat) {
    Record threaded[2];
    std::thread a([&] { threaded[0] = run(names[0]); });
    std::thread b([&] { threaded[1] = run(names[1]); });
    a.join();
    b.join();
    EXPECT_TRUE(same(threaded[0], serial[0])) << names[0] << ", repeat " << repeat;
    EXPECT_TRUE(same(threaded[1], serial[1])) << names[1] << ", repeat " << repeat;
  }
  // Negative control: the comparison notices a one-ulp change.
  Record changed = serial[0];
  changed.x[5] = std::nextafter(changed.x[5], 1e300);
  EXPECT_FALSE(same(changed, serial[0]));
}

}  // namespace
}  // namespace knot::test
