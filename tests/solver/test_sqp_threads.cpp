// Threads and the SQP solver, two ways:
// - independent Solver instances on separate threads: two threads, each solving its own problem (MPC
//   steps included), give bitwise the results of the same solves run one after the other;
// - one Solver whose knots are evaluated by several threads (SolverOptions::threads): every thread
//   count gives the single thread's solve bit for bit, iteration by iteration, failures included.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

#include "test_util.hpp"
#include "test_sqp_common.hpp"

namespace knot::test {
namespace {

struct Record {
  std::vector<double> x, u, lambda, z;
  double cost = 0;
  solver::Status status = solver::Status::NotRun;
  int iterations = 0;
  std::vector<solver::IterationStats> rows;  // the last solve's
  std::string message;
};

// A solve and three MPC steps; the record of the last solve.
Record run(const problems::Problem& p, const solver::SolverOptions& o) {
  solver::Solver s(p, o);
  s.solve();
  std::vector<double> x0 = p.x0;
  for (int step = 0; step < 3; ++step) {
    for (int i = 0; i < p.nx(); ++i) x0[static_cast<std::size_t>(i)] = s.solution().x[static_cast<std::size_t>(p.nx() + i)];
    s.set_initial_state(x0);
    s.shift();
    s.solve();
  }
  const solver::Solution& sol = s.solution();
  const auto rows = s.stats().history();
  return {sol.x,         sol.u,      sol.lambda, sol.z, sol.cost, sol.status, sol.iterations,
          {rows.begin(), rows.end()}, std::string(sol.message())};
}

Record run(const std::string& name) {
  const problems::Problem p = load_config(name);
  return run(p, sqp_options(p));
}

// Every measure of every row but its wall-clock time.
bool same_rows(const std::vector<solver::IterationStats>& a, const std::vector<solver::IterationStats>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const solver::IterationStats& r = a[i];
    const solver::IterationStats& t = b[i];
    if (!bitwise_equal({r.cost, r.merit, r.stationarity, r.feasibility, r.complementarity, r.duality_gap, r.dual_scale,
                        r.mu, r.penalty, r.regularization, r.step, r.dual_step, r.step_norm, r.lq_residual},
                       {t.cost, t.merit, t.stationarity, t.feasibility, t.complementarity, t.duality_gap, t.dual_scale,
                        t.mu, t.penalty, t.regularization, t.step, t.dual_step, t.step_norm, t.lq_residual}) ||
        r.backtracks != t.backtracks || r.restoration != t.restoration || r.exact_hessian != t.exact_hessian ||
        r.lq_iterations != t.lq_iterations)
      return false;
  }
  return true;
}

bool same(const Record& a, const Record& b) {
  return bitwise_equal(a.x, b.x) && bitwise_equal(a.u, b.u) && bitwise_equal(a.lambda, b.lambda) &&
         bitwise_equal(a.z, b.z) && bitwise_equal({a.cost}, {b.cost}) && a.status == b.status &&
         a.iterations == b.iterations && same_rows(a.rows, b.rows) && a.message == b.message;
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

// The problems cover each per-knot phase and what couples the knots: costs summed over knots and
// terms, a control-rate cost's gradient in the previous control (cartpole_swingup_smooth,
// unicycle_obstacles), inequality rows (unicycle_obstacles, iiwa14_gravity_limits' joint limits),
// the closed-form exact Hessian (iiwa14_reach under hessian auto, RK4's under exact), the
// differenced one (an implicit scheme), the line search's trial points and the restoration rollout.
struct Case {
  const char* name;
  std::vector<std::string> overrides;
};

std::vector<Case> knot_thread_cases() {
  return {{"cartpole_swingup_smooth", {}},
          {"unicycle_obstacles", {}},
          {"iiwa14_reach", {"horizon.N=12"}},
          {"iiwa14_gravity_limits", {"horizon.N=8", "solver.hessian=exact"}},
          {"pendulum_swingup", {"horizon.integrator=implicit_euler", "solver.hessian=exact"}}};
}

TEST(SqpKnotThreads, EveryThreadCountGivesTheSingleThreadsSolveBitwise) {
  for (const Case& c : knot_thread_cases()) {
    SCOPED_TRACE(c.name);
    const problems::Problem p = load_config(c.name, c.overrides);
    solver::SolverOptions o = sqp_options(p);
    o.threads = 1;
    const Record serial = run(p, o);
    EXPECT_NE(serial.status, solver::Status::NumericalError) << serial.message;
    EXPECT_GT(serial.iterations, 0);
    for (int threads : {2, 3, 7}) {
      o.threads = threads;
      EXPECT_TRUE(same(run(p, o), serial)) << threads << " threads";
    }
  }
  // Negative control: the comparison notices a one-ulp change in one row.
  const problems::Problem p = load_config("unicycle_obstacles");
  const Record serial = run(p, sqp_options(p));
  ASSERT_GT(serial.rows.size(), 1u);
  Record changed = serial;
  changed.rows[1].merit = std::nextafter(changed.rows[1].merit, 1e300);
  EXPECT_FALSE(same(changed, serial));
}

// The exact Hessians are most of what the threads split: hessian auto switches to them at the same
// iterate, and every row is the same, for every thread count (iiwa14_reach at N = 32 switches).
TEST(SqpKnotThreads, HessianAutoSwitchesAtTheSameIterate) {
  const problems::Problem p = load_config("iiwa14_reach", {"horizon.N=32"});
  solver::SolverOptions o = sqp_options(p);
  const auto first_solve = [&](int threads) {
    o.threads = threads;
    solver::Solver s(p, o);
    EXPECT_EQ(s.solve(), solver::Status::Solved) << s.solution().message();
    const auto rows = s.stats().history();
    return std::vector<solver::IterationStats>(rows.begin(), rows.end());
  };
  const std::vector<solver::IterationStats> serial = first_solve(1);
  int exact = 0;
  for (const auto& row : serial) exact += row.exact_hessian ? 1 : 0;
  EXPECT_GT(exact, 0);
  for (int threads : {2, 5}) EXPECT_TRUE(same_rows(first_solve(threads), serial)) << threads << " threads";
}

// A NaN in the guess at knot 5: the status and message name the knot the serial loop stops at,
// whichever thread found it first.
TEST(SqpKnotThreads, AFailingKnotIsReportedAsTheSerialLoopWould) {
  const problems::Problem p = load_config("iiwa14_reach", {"horizon.N=12"});
  std::vector<double> x, u;
  solver::default_initial_guess(p, x, u);
  x[static_cast<std::size_t>(5 * p.nx() + 2)] = std::numeric_limits<double>::quiet_NaN();
  x[static_cast<std::size_t>(9 * p.nx() + 1)] = std::numeric_limits<double>::quiet_NaN();
  std::string serial_message;
  for (int threads : {1, 2, 3, 13}) {
    solver::SolverOptions o = sqp_options(p);
    o.threads = threads;
    solver::Solver s(p, o);
    s.set_initial_guess(x, u);
    EXPECT_EQ(s.solve(), solver::Status::NumericalError) << threads << " threads";
    const std::string message(s.solution().message());
    if (threads == 1) serial_message = message;
    EXPECT_EQ(message, serial_message) << threads << " threads";
    EXPECT_NE(message.find("knot 5"), std::string::npos) << message;
  }
}

// A cost term that throws at one knot: the exception leaves solve() on every thread count, the
// pool's workers survive it, and the solver solves again once the term stops throwing.
class ThrowingCost final : public problems::CostTerm {
 public:
  explicit ThrowingCost(const bool* armed) : CostTerm(problems::TermInfo{"throwing"}), armed_(armed) {}
  std::string_view type() const override { return "throwing"; }
  bool uses_control() const override { return false; }
  double value(const problems::StagePoint& p) const override { return check(p); }
  double accumulate(const problems::StagePoint& p, const problems::CostBlocks&) const override { return check(p); }

 private:
  double check(const problems::StagePoint& p) const {
    if (*armed_ && p.k == 7) throw std::runtime_error("cost evaluation failed at knot 7");
    return 0.0;
  }
  const bool* armed_;
};

TEST(SqpKnotThreads, AnExceptionAtAKnotLeavesSolveOnEveryThreadCount) {
  bool armed = true;
  problems::Problem p = load_config("pendulum_swingup");
  p.costs.push_back(std::make_shared<ThrowingCost>(&armed));
  for (int threads : {1, 3}) {
    armed = true;
    solver::SolverOptions o = sqp_options(p);
    o.threads = threads;
    solver::Solver s(p, o);
    EXPECT_THROW(s.solve(), std::runtime_error) << threads << " threads";
    armed = false;
    EXPECT_EQ(s.solve(), solver::Status::Solved) << threads << " threads: " << s.solution().message();
  }
}

// 0 asks for every core (at most N + 1 threads); a negative count is refused with its value.
TEST(SqpKnotThreads, ThreadCountsAreCheckedAndCapped) {
  const problems::Problem p = load_config("pendulum_swingup");
  solver::SolverOptions o = sqp_options(p);
  o.threads = -1;
  EXPECT_NE(o.validate().find("threads must be >= 0"), std::string::npos) << o.validate();
  EXPECT_THROW(solver::Solver(p, o), std::invalid_argument);
  o.threads = 0;
  EXPECT_EQ(o.validate(), "");
  solver::Solver every(p, o);
  EXPECT_EQ(every.solve(), solver::Status::Solved) << every.solution().message();
  o.threads = 1000;  // more threads than knots: N + 1 of them
  solver::Solver many(p, o);
  EXPECT_EQ(many.threads(), p.horizon.N + 1);
  EXPECT_EQ(many.solve(), solver::Status::Solved) << many.solution().message();
  EXPECT_TRUE(bitwise_equal(many.solution().x, every.solution().x));
#if defined(__linux__)
  // "Every core" is the cores the thread may run on: one, on a thread pinned to CPU 0.
  int pinned = 0;
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) return;
    o.threads = 0;
    pinned = solver::Solver(p, o).threads();
  });
  t.join();
  EXPECT_EQ(pinned, 1);
#endif
}

}  // namespace
}  // namespace knot::test
