// BatchSolver, backend cpu, against its independent reference: B separate Solvers given the same
// data, solved one after the other on this thread. The batch runs the same SQP code, so the answer
// must be the same bit for bit (status, iterations, x, u, multipliers, cost, final residuals), for
// every config, every thread count (1, 2, 3, 7), and for the healthy problems of a batch in which one
// problem has NaN in its initial state. Under the label solver_threads: ThreadSanitizer runs it too.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <limits>
#include <random>
#include <stdexcept>

#include "knot/problems/error.hpp"
#include "knot/solver/batch.hpp"
#include "test_sqp_common.hpp"
#include "test_util.hpp"

namespace knot::test {
namespace {

using solver::BatchOptions;
using solver::BatchSolver;
using solver::Status;

// What one problem's solve produced, copied out for comparison.
struct Record {
  std::vector<double> x, u, lambda, z, s, y;
  double cost = 0, stationarity = 0, feasibility = 0, complementarity = 0;
  Status status = Status::NotRun;
  int iterations = 0;
};

Record record(const solver::Solution& sol, const solver::Stats& st) {
  Record r{sol.x, sol.u, sol.lambda, sol.z, sol.s, sol.y, sol.cost, 0, 0, 0, sol.status, sol.iterations};
  if (const auto rows = st.history(); !rows.empty()) {
    r.stationarity = rows.back().stationarity;
    r.feasibility = rows.back().feasibility;
    r.complementarity = rows.back().complementarity;
  }
  return r;
}

// The solvers path (B Solvers), which this file holds to separate Solvers bit for bit: asked for by
// name, though path auto takes it on backend cpu too (the device path: test_batch_device.cpp).
BatchOptions solvers_path() {
  BatchOptions o;
  o.path = solver::BatchPath::Solvers;
  return o;
}

// Empty when a and b are the same bit for bit, else the first field that differs.
std::string difference(const Record& a, const Record& b) {
  if (a.status != b.status)
    return std::string("status ") + solver::to_string(a.status) + " vs " + solver::to_string(b.status);
  if (a.iterations != b.iterations)
    return "iterations " + std::to_string(a.iterations) + " vs " + std::to_string(b.iterations);
  if (!bitwise_equal(a.x, b.x)) return "x";
  if (!bitwise_equal(a.u, b.u)) return "u";
  if (!bitwise_equal(a.lambda, b.lambda)) return "lambda";
  if (!bitwise_equal(a.z, b.z)) return "z";
  if (!bitwise_equal(a.s, b.s)) return "s";
  if (!bitwise_equal(a.y, b.y)) return "y";
  if (!same_bits(a.cost, b.cost)) return "cost";
  if (!same_bits(a.stationarity, b.stationarity) || !same_bits(a.feasibility, b.feasibility) ||
      !same_bits(a.complementarity, b.complementarity))
    return "residuals";
  return {};
}


// The reference: one Solver per start, each solved on this thread.
std::vector<Record> separate_solves(const problems::Problem& p, const std::vector<std::vector<double>>& x0) {
  std::vector<Record> out;
  for (const auto& start : x0) {
    solver::Solver s(p, sqp_options(p));
    s.set_initial_state(start);
    s.solve();
    out.push_back(record(s.solution(), s.stats()));
  }
  return out;
}

std::vector<Record> batch_solves(const problems::Problem& p, const std::vector<std::vector<double>>& x0, int threads) {
  BatchOptions o = solvers_path();
  o.threads = threads;
  BatchSolver batch(p, static_cast<int>(x0.size()), o);
  for (std::size_t i = 0; i < x0.size(); ++i) batch.set_initial_state(static_cast<int>(i), x0[i]);
  const int solved = batch.solve();
  std::vector<Record> out;
  int counted = 0;
  for (int i = 0; i < batch.size(); ++i) {
    out.push_back(record(batch.solution(i), batch.stats(i)));
    EXPECT_EQ(batch.status(i), batch.solution(i).status);
    counted += solver::is_solved(batch.status(i)) ? 1 : 0;
  }
  EXPECT_EQ(solved, counted);
  return out;
}

void expect_same(const std::vector<Record>& got, const std::vector<Record>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(difference(got[i], want[i]), "") << what << ", problem " << i;
}

// Every config, three problems each (the file's start and two perturbed ones), on two threads.
TEST(BatchSolver, EveryConfigMatchesSeparateSolvers) {
  for (const std::string& name : config_names()) {
    if (kUnderSanitizer && name != "cartpole_swingup" && name != "unicycle_obstacles") continue;
    SCOPED_TRACE(name);
    const problems::Problem p = load_config(name);
    const auto x0 = perturbed_starts(p, 3, 1e-2);
    const std::vector<Record> want = separate_solves(p, x0);
    expect_same(batch_solves(p, x0, 2), want, name);
    // The file's own start solves, so the comparison is not only between failures.
    EXPECT_TRUE(solver::is_solved(want[0].status)) << name << ": " << solver::to_string(want[0].status);
  }
}

// The result of each problem does not depend on how many threads share the batch.
TEST(BatchSolver, ThreadCountsGiveBitwiseIdenticalResults) {
  const problems::Problem p = load_config("cartpole_swingup");
  std::vector<std::vector<double>> x0;
  for (const auto& s : cartpole_starts(kUnderSanitizer ? 4 : 9)) x0.emplace_back(s.begin(), s.end());
  const std::vector<Record> want = separate_solves(p, x0);
  for (const int threads : {1, 2, 3, 7}) {
    const std::vector<Record> got = batch_solves(p, x0, threads);
    expect_same(got, want, "threads " + std::to_string(threads));
  }
}

// Fewer problems than threads: the spare threads evaluate each problem's knots (SolverOptions::
// threads = threads / B), with the same bits; solver options that name a count keep it.
TEST(BatchSolver, SpareThreadsEvaluateEachProblemsKnots) {
  const problems::Problem p = load_config("unicycle_obstacles");
  const auto x0 = perturbed_starts(p, 2, 1e-2);
  const std::vector<Record> want = separate_solves(p, x0);
  for (const auto& [B, threads, knot_threads] : {std::array<int, 3>{1, 3, 3}, {2, 5, 2}, {2, 2, 1}}) {
    SCOPED_TRACE("B " + std::to_string(B) + ", threads " + std::to_string(threads));
    BatchOptions o = solvers_path();
    o.threads = threads;
    BatchSolver batch(p, B, o);
    EXPECT_EQ(batch.solver(0).threads(), knot_threads);
    EXPECT_EQ(batch.threads(), std::min(B, threads) * knot_threads);
    for (int i = 0; i < B; ++i) batch.set_initial_state(i, x0[static_cast<std::size_t>(i)]);
    batch.solve();
    for (int i = 0; i < B; ++i)
      EXPECT_EQ(difference(record(batch.solution(i), batch.stats(i)), want[static_cast<std::size_t>(i)]), "")
          << "problem " << i;
  }
  BatchOptions o = solvers_path();
  o.threads = 4;
  o.solver = sqp_options(p);
  o.solver->threads = 2;  // asked for: kept, though 4 threads would give one problem 4
  EXPECT_EQ(BatchSolver(p, 1, o).solver(0).threads(), 2);
}

// A problem with NaN in its initial state ends NumericalError; every other problem is bitwise the
// batch without it.
TEST(BatchSolver, NanInOneProblemLeavesTheOthersUnchanged) {
  const problems::Problem p = load_config("unicycle_obstacles");
  auto x0 = perturbed_starts(p, 5, 1e-2);
  const std::vector<Record> clean = batch_solves(p, x0, 3);
  x0[2][0] = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Record> got = batch_solves(p, x0, 3);
  EXPECT_EQ(got[2].status, Status::NumericalError);
  for (std::size_t i = 0; i < got.size(); ++i)
    if (i != 2) {
      EXPECT_EQ(difference(got[i], clean[i]), "") << "problem " << i;
      EXPECT_TRUE(solver::is_solved(got[i].status)) << "problem " << i;
    }
}

// MPC steps per problem (new initial state, shift, solve) match the same steps of separate Solvers.
TEST(BatchSolver, MpcStepsMatchSeparateSolvers) {
  const problems::Problem p = load_config("cartpole_mpc");
  const int B = 4, steps = 3;
  const auto x0 = perturbed_starts(p, B, 1e-2);
  BatchOptions o = solvers_path();
  o.threads = 2;
  BatchSolver batch(p, B, o);
  std::vector<solver::Solver> separate;
  for (int i = 0; i < B; ++i) {
    separate.emplace_back(p, sqp_options(p));
    separate.back().set_initial_state(x0[static_cast<std::size_t>(i)]);
    batch.set_initial_state(i, x0[static_cast<std::size_t>(i)]);
  }
  for (int step = 0; step <= steps; ++step) {
    batch.solve();
    for (auto& s : separate) s.solve();
    for (int i = 0; i < B; ++i) {
      solver::Solver& s = separate[static_cast<std::size_t>(i)];
      EXPECT_EQ(difference(record(batch.solution(i), batch.stats(i)), record(s.solution(), s.stats())), "")
          << "step " << step << ", problem " << i;
      const std::vector<double> next(s.solution().x.begin() + p.nx(), s.solution().x.begin() + 2 * p.nx());
      s.set_initial_state(next);
      s.shift();
      batch.set_initial_state(i, next);
      batch.shift(i);
    }
  }
}

// Problems 0 and 2 of a batch of 3 solved from p's x0 are bitwise p's separate solve, problem 1 is
// bitwise `want_moved`, and the two answers differ (the change does change the answer).
void expect_only_problem_1_moved(const BatchSolver& batch, const problems::Problem& p, const Record& want_moved) {
  const std::vector<Record> want = separate_solves(p, {p.x0});
  EXPECT_EQ(difference(record(batch.solution(0), batch.stats(0)), want[0]), "");
  EXPECT_EQ(difference(record(batch.solution(1), batch.stats(1)), want_moved), "");
  EXPECT_EQ(difference(record(batch.solution(2), batch.stats(2)), want[0]), "");
  EXPECT_NE(difference(want_moved, want[0]), "");
}

// What a Solver on `p` with the file's options gives.
Record solved(const problems::Problem& p) {
  solver::Solver s(p, sqp_options(p));
  s.solve();
  return record(s.solution(), s.stats());
}

// set_reference(i, ...) changes problem i alone; the Problem the batch was built from keeps its own.
TEST(BatchSolver, ReferencePerProblem) {
  const problems::Problem p = load_config("cartpole_swingup");
  const problems::CostTerm* tracked = nullptr;
  for (const auto& c : p.costs)
    if (c->reference() != nullptr && c->reference()->rows() == 1) tracked = c.get();
  ASSERT_NE(tracked, nullptr);
  const problems::Reference original = *tracked->reference();
  problems::Reference moved = original;
  moved.values[0] += 0.3;

  BatchSolver batch(p, 3, solvers_path());
  batch.set_reference(1, tracked->info().name, moved);
  batch.solve();
  EXPECT_TRUE(bitwise_equal(tracked->reference()->values, original.values));

  // Reference: a Solver with its own copy of the problem, given the moved reference.
  solver::Solver s(load_config("cartpole_swingup"));
  s.set_reference(tracked->info().name, moved);
  s.solve();
  expect_only_problem_1_moved(batch, p, record(s.solution(), s.stats()));
}

// set_bounds(i, ...) moves problem i's control bounds alone; the reference is a Solver built from
// a problem whose control_box term was made with those bounds.
TEST(BatchSolver, BoundsPerProblem) {
  const problems::Problem p = load_config("cartpole_swingup");
  ASSERT_EQ(p.constraints.size(), 1u);
  const problems::ConstraintTerm& box = *p.constraints[0];
  ASSERT_EQ(box.type(), "control_box");
  const std::vector<double> lo = {-12.0}, hi = {9.0};

  BatchSolver batch(p, 3, solvers_path());
  batch.set_bounds(1, box.info().name, lo, hi);
  batch.solve();
  EXPECT_EQ(box.box()->upper[0], 80.0);  // the Problem the batch was built from keeps its bounds

  problems::Problem tight = p;
  tight.constraints[0] = std::make_shared<problems::ControlBox>(box.info(), p.nu(), lo, hi);
  expect_only_problem_1_moved(batch, p, solved(tight));
  double umax = 0;
  for (double u : batch.solution(1).u) umax = std::max(umax, u);
  EXPECT_LE(umax, 9.0 + 1e-6);
  EXPECT_GT(umax, 8.9);  // the bound is active

  // Mistakes are refused (bounds that add or remove rows: BoundsThatAddOrRemoveRows).
  const double inf = std::numeric_limits<double>::infinity();
  const std::string name = box.info().name;
  EXPECT_THROW(batch.set_bounds(0, name, std::vector<double>{inf}, std::vector<double>{inf}), std::invalid_argument);
  EXPECT_THROW(batch.set_bounds(0, name, lo, std::vector<double>{-inf}), std::invalid_argument);
  EXPECT_THROW(batch.set_bounds(0, name, lo, std::vector<double>{1.0, 2.0}), std::invalid_argument);
  EXPECT_THROW(batch.set_bounds(0, name, hi, lo), std::invalid_argument);  // lower > upper
  EXPECT_THROW(batch.set_bounds(0, name, std::vector<double>{kNaN}, hi), std::invalid_argument);
  EXPECT_THROW(batch.set_bounds(0, "no_such_box", lo, hi), std::invalid_argument);
  EXPECT_THROW(batch.set_bounds(3, name, lo, hi), std::out_of_range);
}

// set_obstacle(i, ...) moves problem i's obstacle alone; the reference is a Solver on the file with
// that obstacle moved by --set.
TEST(BatchSolver, ObstaclePerProblem) {
  const problems::Problem p = load_config("unicycle_obstacles");
  BatchSolver batch(p, 3, solvers_path());
  ASSERT_EQ(batch.path(), solver::BatchPath::Solvers);
  batch.set_obstacle(1, "rock", {1.6, 0.3}, 0.45);
  batch.solve();
  const auto* rock = dynamic_cast<const problems::CircleObstacle*>(p.constraints[1].get());
  ASSERT_NE(rock, nullptr);
  EXPECT_EQ(rock->radius(), 0.5);  // the Problem the batch was built from keeps its obstacle

  expect_only_problem_1_moved(
      batch, p,
      solved(load_config("unicycle_obstacles", {"constraints[1].center=[1.6, 0.3]", "constraints[1].radius=0.45"})));

  EXPECT_THROW(batch.set_obstacle(0, "rock", {kNaN, 0.0}, 0.5), std::invalid_argument);
  EXPECT_THROW(batch.set_obstacle(0, "rock", {1.0, 0.0}, 0.0), std::invalid_argument);
  EXPECT_THROW(batch.set_obstacle(0, "speed_limits", {1.0, 0.0}, 0.5), std::invalid_argument);
  EXPECT_THROW(batch.set_obstacle(3, "rock", {1.0, 0.0}, 0.5), std::out_of_range);
}

// The comparisons can fail: a one-ulp change, and a problem solved from another start.
TEST(BatchSolver, NegativeControl) {
  const problems::Problem p = load_config("cartpole_swingup");
  auto x0 = perturbed_starts(p, 2, 1e-2);
  const std::vector<Record> want = separate_solves(p, x0);
  Record changed = want[0];
  changed.x[5] = std::nextafter(changed.x[5], 1e300);
  EXPECT_EQ(difference(changed, want[0]), "x");
  changed = want[0];
  changed.cost = std::nextafter(changed.cost, 1e300);
  EXPECT_EQ(difference(changed, want[0]), "cost");
  x0[1][0] += 1e-9;
  const std::vector<Record> got = batch_solves(p, x0, 2);
  EXPECT_EQ(difference(got[0], want[0]), "");
  EXPECT_NE(difference(got[1], want[1]), "");
}

TEST(BatchSolver, CudaBackendIsAClearError) {
  const problems::Problem p = load_config("double_integrator_lqr");
  BatchOptions o;
  o.backend = solver::BatchBackend::Cuda;
  EXPECT_EQ(o.validate(), "");
  EXPECT_NE(solver::batch_backend_unavailable(solver::BatchBackend::Cuda), "");
  EXPECT_EQ(solver::batch_backend_unavailable(solver::BatchBackend::Cpu), "");
  try {
    BatchSolver batch(p, 4, o);
    FAIL() << "a cuda batch was built";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("backend cuda"), std::string::npos) << e.what();
  }
}

// Three problems of p with options `so` on `path`, on `threads` threads.
BatchSolver batch_on(const problems::Problem& p, const solver::SolverOptions& so, solver::BatchPath path, int threads) {
  BatchOptions o;
  o.threads = threads;
  o.solver = so;
  o.path = path;
  return BatchSolver(p, 3, o);
}

// set_bounds on the end-effector terms (iiwa14_reach with test_sqp_common.hpp's floor height and
// workspace box): problem 1's floor raised, problem 2's box narrowed in x, on both paths; each
// solution is a Solver's on the file given those values (bitwise on the solvers path, to 1e-9 on the
// device path), problem 0 keeps the file's, and the moved problems are other problems.
TEST(BatchSolver, EndEffectorBoundsPerProblem) {
  const std::vector<std::string> ee = end_effector_constraint_overrides();
  const problems::Problem p = load_config("iiwa14_reach", ee);
  const auto with = [&ee](const std::string& set) {
    std::vector<std::string> o = ee;
    o.push_back(set);
    return load_config("iiwa14_reach", o);
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> floor_lo = {0.3}, floor_hi = {inf};
  const std::vector<double> box_lo = {-0.8, -inf, 0.1}, box_hi = {0.5, 0.9, inf};
  solver::SolverOptions so = sqp_options(p);
  so.hessian = solver::Hessian::GaussNewton;  // the device path's default steps; Solver takes the same
  std::vector<solver::Solution> want;
  for (const problems::Problem& q :
       {p, with("constraints[0].min=0.3"), with("constraints[1].upper=[0.5, 0.9, .inf]")}) {
    solver::Solver s(q, so);
    s.solve();
    want.push_back(s.solution());
  }
  ASSERT_NE(want[1].cost, want[0].cost);  // both moves change the optimum
  ASSERT_NE(want[2].cost, want[0].cost);
  for (const solver::BatchPath path : {solver::BatchPath::Solvers, solver::BatchPath::Device}) {
    SCOPED_TRACE(solver::to_string(path));
    BatchSolver batch = batch_on(p, so, path, 1);
    ASSERT_EQ(batch.path(), path);
    batch.set_bounds(1, "floor", floor_lo, floor_hi);
    batch.set_bounds(2, "workspace", box_lo, box_hi);
    batch.solve();
    for (int i = 0; i < 3; ++i) {
      const solver::Solution& got = batch.solution(i);
      const solver::Solution& w = want[std::size_t(i)];
      EXPECT_EQ(got.status, w.status) << i;
      if (path == solver::BatchPath::Solvers)
        EXPECT_EQ(got.cost, w.cost) << i;
      else
        EXPECT_NEAR(got.cost, w.cost, 1e-9 * std::max(1.0, std::abs(w.cost))) << i;
    }
    // Mistakes are refused, naming the term: a finite upper or an infinite minimum on a height, a
    // lower bound of +inf, the wrong count, lower > upper, an unknown name.
    EXPECT_THROW(batch.set_bounds(0, "floor", floor_lo, std::vector<double>{1.0}), std::invalid_argument);
    EXPECT_THROW(batch.set_bounds(0, "floor", std::vector<double>{kNaN}, floor_hi), std::invalid_argument);
    EXPECT_THROW(batch.set_bounds(0, "floor", std::vector<double>{-inf}, floor_hi), std::invalid_argument);
    EXPECT_THROW(batch.set_bounds(0, "workspace", std::vector<double>{-0.8, inf, 0.1}, box_hi),
                 std::invalid_argument);
    EXPECT_THROW(batch.set_bounds(0, "workspace", floor_lo, floor_hi), std::invalid_argument);
    EXPECT_THROW(batch.set_bounds(0, "workspace", box_hi, box_lo), std::invalid_argument);
    try {
      batch.set_bounds(0, "ceiling", floor_lo, floor_hi);
      ADD_FAILURE() << "an unknown name was taken";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("end_effector_height"), std::string::npos) << e.what();
    }
  }
}

// Bounds that add or remove constraint rows, on both paths: each problem's solution is a Solver's on
// the file given those bounds (bitwise on the solvers path, status and cost to 1e-9 on the device
// path), from the same start. A control box on the cart-pole loses its upper bound (problem 1) or
// its lower (problem 2), and gets it back for a second solve, which starts cold from the first
// solve's iterate on both paths; the arm's workspace box gains a y bound (problem 1) and loses its
// x upper bound (problem 2).
TEST(BatchSolver, BoundsThatAddOrRemoveRows) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Move {
    std::string term, set;
    std::vector<double> lower, upper;
  };
  struct Case {
    std::string config;
    std::vector<std::string> overrides;
    Move one, two;
    bool gauss_newton;
  };
  const std::vector<std::string> ee = end_effector_constraint_overrides();
  const std::vector<Case> cases = {
      {"cartpole_swingup", {}, {"", "constraints[0].upper=[.inf]", {-80.0}, {inf}},
       {"", "constraints[0].lower=[-.inf]", {-inf}, {80.0}}, false},
      {"iiwa14_reach", ee, {"workspace", "constraints[1].lower=[-0.8, -0.05, 0.1]", {-0.8, -0.05, 0.1}, {0.58, 0.9, inf}},
       {"workspace", "constraints[1].upper=[.inf, 0.9, .inf]", {-0.8, -inf, 0.1}, {inf, 0.9, inf}}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.config);
    const problems::Problem p = load_config(c.config, c.overrides);
    solver::SolverOptions so = sqp_options(p);
    if (c.gauss_newton) so.hessian = solver::Hessian::GaussNewton;
    const auto with = [&](const std::string& set) {
      std::vector<std::string> o = c.overrides;
      o.push_back(set);
      return load_config(c.config, o);
    };
    const problems::Problem one = with(c.one.set), two = with(c.two.set);
    const std::string term = c.one.term.empty() ? p.constraints[0]->info().name : c.one.term;
    const problems::BoxBounds* file_box = p.constraints[c.one.term.empty() ? 0 : 1]->box();
    std::vector<double> file_lo, file_hi;
    if (file_box) {
      file_lo = file_box->lower;
      file_hi = file_box->upper;
    } else {
      const auto& b = dynamic_cast<const problems::EndEffectorBox&>(*p.constraints[1]);
      file_lo.assign(b.lower().begin(), b.lower().end());
      file_hi.assign(b.upper().begin(), b.upper().end());
    }
    // The references: Solvers on the files, then the file's bounds again from each first solution.
    std::vector<solver::Solution> first, second;
    for (const problems::Problem* q : {&p, &one, &two}) {
      solver::Solver s(*q, so);
      s.solve();
      first.push_back(s.solution());
      solver::Solver back(p, so);
      back.set_initial_guess(s.solution().x, s.solution().u);
      back.solve();
      second.push_back(back.solution());
    }
    ASSERT_NE(first[1].cost, first[0].cost);  // each move changes the optimum
    ASSERT_NE(first[2].cost, first[0].cost);
    ASSERT_NE(first[1].z.size(), first[0].z.size());  // and the rows
    ASSERT_NE(first[2].z.size(), first[0].z.size());
    for (const solver::BatchPath path : {solver::BatchPath::Solvers, solver::BatchPath::Device}) {
      SCOPED_TRACE(solver::to_string(path));
      BatchSolver batch = batch_on(p, so, path, 2);
      ASSERT_EQ(batch.path(), path);
      batch.set_bounds(1, term, c.one.lower, c.one.upper);
      batch.set_bounds(2, term, c.two.lower, c.two.upper);
      const auto expect = [&](const std::vector<solver::Solution>& want) {
        for (int i = 0; i < 3; ++i) {
          const solver::Solution& got = batch.solution(i);
          const solver::Solution& w = want[std::size_t(i)];
          EXPECT_EQ(got.status, w.status) << i;
          EXPECT_EQ(got.z.size(), w.z.size()) << i;
          if (path == solver::BatchPath::Solvers) {
            EXPECT_EQ(got.cost, w.cost) << i;
            EXPECT_EQ(got.x, w.x) << i;
            EXPECT_EQ(got.z, w.z) << i;
          } else {
            EXPECT_NEAR(got.cost, w.cost, 1e-9 * std::max(1.0, std::abs(w.cost))) << i;
          }
        }
      };
      batch.solve();
      expect(first);
      for (int i : {1, 2}) batch.set_bounds(i, term, file_lo, file_hi);
      batch.solve();
      const std::vector<solver::Solution> again = {second[0], second[1], second[2]};
      // Problem 0 kept its bounds: its second solve continues from its solution, as Solver's does.
      solver::Solver keep(p, so);
      keep.solve();
      keep.solve();
      std::vector<solver::Solution> want2 = again;
      want2[0] = keep.solution();
      if (path == solver::BatchPath::Device) {  // the device path starts every solve cold
        solver::Solver cold(p, so);
        cold.solve();
        cold.set_initial_guess(cold.solution().x, cold.solution().u);
        cold.solve();
        want2[0] = cold.solution();
      }
      expect(want2);
    }
  }
}

// The GPU's exact Hessian runs in double, on the manipulator, with expression terms over at most 8
// states and controls: the cuda backend refuses the rest by key before it builds an engine. The
// stand-in engine factory counts the batches that got past the checks (the negative control).
int g_engines_asked = 0;
std::unique_ptr<solver::BatchEngine> no_engine(const solver::device::BatchProblemData&, const solver::device::DeviceOptions&,
                                               int, int, bool, std::string* error) {
  ++g_engines_asked;
  *error = "the test's stand-in: no engine";
  return nullptr;
}

TEST(BatchSolver, CudaBackendRefusesAnExactHessianTheGpuDoesNotRun) {
  BatchOptions o;
  o.backend = solver::BatchBackend::Cuda;
  o.cuda_engine = no_engine;
  const auto refusal = [&o](const problems::Problem& p, solver::Hessian h, bool single) -> std::string {
    o.solver = sqp_options(p);
    o.solver->hessian = h;
    o.single = single;
    try {
      BatchSolver batch(p, 2, o);
    } catch (const problems::ProblemError& e) {
      return e.key_path() + ": " + e.what();
    } catch (const std::exception&) {  // the stand-in factory's error: past the checks
    }
    return "";
  };
  const problems::Problem cart = load_config("cartpole_swingup");
  for (const solver::Hessian h : {solver::Hessian::Exact, solver::Hessian::Auto}) {
    const std::string why = refusal(cart, h, false);
    EXPECT_EQ(why.rfind("solver.hessian: ", 0), 0u) << why;
    EXPECT_NE(why.find("takes the manipulator"), std::string::npos) << why;
    EXPECT_NE(why.find("model cartpole, nx + nu = 5"), std::string::npos) << why;
  }
  const problems::Problem reach = load_config("iiwa14_reach");
  const std::string single = refusal(reach, solver::Hessian::Exact, true);
  EXPECT_NE(single.find("single precision"), std::string::npos) << single;
  // An expression term over more than 8 states and controls (the arm's nine here) is refused; over
  // two it runs.
  std::string nine = "qd_iiwa_joint_1^2";
  for (int j = 2; j <= 7; ++j) nine += " + qd_iiwa_joint_" + std::to_string(j) + "^2";
  nine += " + q_iiwa_joint_1^2 + q_iiwa_joint_2^2";
  const auto arm = [](const std::string& e) {
    return load_config("iiwa14_reach", {"constraints=[{name: speed, type: expression, expression: \"" + e +
                                            "\", upper: [100]}]"});
  };
  const std::string wide = refusal(arm(nine), solver::Hessian::Exact, false);
  EXPECT_NE(wide.find("expression constraints reading at most 8"), std::string::npos) << wide;
  g_engines_asked = 0;
  EXPECT_EQ(refusal(reach, solver::Hessian::Exact, false), "");
  EXPECT_EQ(refusal(cart, solver::Hessian::GaussNewton, false), "");
  EXPECT_EQ(refusal(arm("q_iiwa_joint_1^2 + q_iiwa_joint_2^2"), solver::Hessian::Auto, false), "");
  EXPECT_EQ(refusal(arm(nine), solver::Hessian::GaussNewton, false), "");
  EXPECT_EQ(g_engines_asked, 4);
}

// solver.memory_limit bounds the whole batch: twice one problem's estimate admits two, not three.
TEST(BatchSolver, MemoryLimitBoundsTheBatch) {
  const problems::Problem p = load_config("cartpole_swingup");
  BatchOptions o;
  o.threads = 1;
  o.solver = sqp_options(p);
  o.solver->memory_limit = 2.5 * solver::estimate_workspace_bytes(p, *o.solver) / (1024.0 * 1024.0 * 1024.0);
  EXPECT_NO_THROW(BatchSolver(p, 2, o));
  try {
    BatchSolver batch(p, 3, o);
    FAIL() << "a batch over the memory limit was built";
  } catch (const problems::ProblemError& e) {
    EXPECT_EQ(e.key_path(), "solver.memory_limit");
    EXPECT_NE(std::string(e.what()).find("3 problems that need about"), std::string::npos) << e.what();
  }
}

TEST(BatchSolver, InvalidArguments) {
  const problems::Problem p = load_config("double_integrator_lqr");
  BatchOptions o;
  o.threads = -1;
  EXPECT_EQ(o.validate(), "threads must be >= 0 (0: every core), found -1");
  EXPECT_THROW(BatchSolver(p, 2, o), std::invalid_argument);
  EXPECT_THROW(BatchSolver(p, 0), std::invalid_argument);
  // On cuda, threads is the block size: a whole warp at least (16 refused, 32 and 0 taken).
  o.backend = solver::BatchBackend::Cuda;
  o.threads = 16;
  EXPECT_EQ(o.validate(), "threads (the block size on backend cuda) must be 0 or in 32..256, found 16");
  o.threads = 32;
  EXPECT_EQ(o.validate(), "");
  o.threads = 0;
  EXPECT_EQ(o.validate(), "");
  o.single = true;  // float is the GPU's: taken on cuda, refused on cpu
  EXPECT_EQ(o.validate(), "");
  o.backend = solver::BatchBackend::Cpu;
  EXPECT_EQ(o.validate(), "single (float) runs on backend cuda only; backend cpu solves in double");
  EXPECT_THROW(BatchSolver(p, 2, o), std::invalid_argument);
  o.single = false;
  solver::SolverOptions bad;
  bad.max_iter = 0;
  o.threads = 1;
  o.solver = bad;
  EXPECT_EQ(o.validate().rfind("solver: max_iter", 0), 0u) << o.validate();
  BatchSolver batch(p, 2);
  EXPECT_THROW(batch.status(2), std::out_of_range);
  EXPECT_THROW(batch.set_initial_state(-1, p.x0), std::out_of_range);
  EXPECT_THROW(batch.set_initial_state(0, std::vector<double>(p.x0.size() + 1)), std::invalid_argument);
  EXPECT_EQ(batch.status(0), Status::NotRun);
  EXPECT_LE(batch.threads(), 2);
  EXPECT_GE(batch.threads(), 1);
}

}  // namespace
}  // namespace knot::test
