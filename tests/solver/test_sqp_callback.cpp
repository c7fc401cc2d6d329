// The iteration callback (one call per row of Stats, the rows as stats() keeps them, a stop that ends
// Interrupted, no allocation) and starting points (Solver::set_warm_start, Problem::initial_guess):
// a warm start from a converged solution with inequality rows converges at once, a cold start from
// the same trajectory does not, and guesses of the wrong size are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "alloc_counter.hpp"
#include "knot/problems/error.hpp"
#include "test_sqp_common.hpp"

namespace knot::test {
namespace {

// What the callback saw: copies of the rows and their indices, in call order, in storage reserved
// up front so recording allocates nothing. Stops (returns false) after row `stop_at` when >= 0.
struct Recorder {
  std::vector<solver::IterationStats> rows;
  std::vector<int> indices;
  int stop_at = -1;
  explicit Recorder(std::size_t capacity) {
    rows.reserve(capacity);
    indices.reserve(capacity);
  }
  static bool record(const solver::IterationStats& row, int iteration, void* user) {
    auto* r = static_cast<Recorder*>(user);
    if (r->rows.size() < r->rows.capacity()) {
      r->rows.push_back(row);
      r->indices.push_back(iteration);
    }
    return r->stop_at < 0 || iteration < r->stop_at;
  }
};

// Field by field: a row the callback saw before its step was recorded would differ in step fields.
void expect_same_row(const solver::IterationStats& a, const solver::IterationStats& b, std::size_t i) {
  SCOPED_TRACE("row " + std::to_string(i));
  EXPECT_EQ(a.cost, b.cost);
  EXPECT_EQ(a.merit, b.merit);
  EXPECT_EQ(a.stationarity, b.stationarity);
  EXPECT_EQ(a.feasibility, b.feasibility);
  EXPECT_EQ(a.complementarity, b.complementarity);
  EXPECT_EQ(a.mu, b.mu);
  EXPECT_EQ(a.penalty, b.penalty);
  EXPECT_EQ(a.regularization, b.regularization);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.dual_step, b.dual_step);
  EXPECT_EQ(a.step_norm, b.step_norm);
  EXPECT_EQ(a.seconds, b.seconds);
  EXPECT_EQ(a.backtracks, b.backtracks);
  EXPECT_EQ(a.lq_iterations, b.lq_iterations);
  EXPECT_EQ(a.lq_status, b.lq_status);
}

TEST(SqpCallback, CalledOncePerRowWithTheRowsOfStats) {
  const problems::Problem p = load_config("cartpole_swingup");
  solver::Solver s(p);
  Recorder rec(static_cast<std::size_t>(s.options().max_iter) + 1);
  s.set_iteration_callback(&Recorder::record, &rec);
  ASSERT_EQ(s.solve(), solver::Status::Solved) << s.solution().message();
  const auto history = s.stats().history();
  ASSERT_GT(s.stats().iterations, 2);
  ASSERT_EQ(rec.rows.size(), history.size());
  ASSERT_EQ(history.size(), static_cast<std::size_t>(s.stats().iterations) + 1);
  bool some_step = false;
  for (std::size_t i = 0; i < history.size(); ++i) {
    EXPECT_EQ(rec.indices[i], static_cast<int>(i));
    expect_same_row(rec.rows[i], history[i], i);
    some_step = some_step || history[i].step > 0;
    if (i > 0) {
      EXPECT_GE(history[i].seconds, history[i - 1].seconds);
    }
  }
  EXPECT_TRUE(some_step);  // the comparison covers the step fields, not only zeros
  EXPECT_GT(history.front().seconds, 0.0);
  EXPECT_LE(history.back().seconds, s.stats().time.total);

  // A second solve reports its own rows only (the converged iterate: one row).
  rec.rows.clear();
  rec.indices.clear();
  ASSERT_EQ(s.solve(), solver::Status::Solved);
  ASSERT_EQ(rec.rows.size(), 1u);
  EXPECT_EQ(rec.indices[0], 0);

  // Without a callback the solve is unchanged (and nothing is recorded).
  s.set_iteration_callback(nullptr);
  rec.rows.clear();
  s.solve();
  EXPECT_TRUE(rec.rows.empty());
}

// The callback returns false for row 2 (after the step from iterate 2): the new iterate 3 is
// measured and reported, then the solve ends Interrupted after three steps.
TEST(SqpCallback, FalseStopsTheSolveInterrupted) {
  const problems::Problem p = load_config("cartpole_swingup");
  solver::Solver full(p);
  ASSERT_EQ(full.solve(), solver::Status::Solved);
  ASSERT_GT(full.stats().iterations, 4);  // so the stop below really cuts the solve short

  solver::Solver s(p);
  Recorder rec(static_cast<std::size_t>(s.options().max_iter) + 1);
  rec.stop_at = 2;
  s.set_iteration_callback(&Recorder::record, &rec);
  EXPECT_EQ(s.solve(), solver::Status::Interrupted);
  EXPECT_EQ(s.stats().iterations, 3);
  EXPECT_EQ(s.solution().iterations, 3);
  EXPECT_EQ(s.stats().history().size(), 4u);
  ASSERT_EQ(rec.rows.size(), 4u);
  EXPECT_EQ(rec.indices.back(), 3);
  EXPECT_NE(std::string(s.solution().message()).find("stopped by the iteration callback"), std::string::npos)
      << s.solution().message();
  EXPECT_STREQ(solver::to_string(s.solution().status), "interrupted");
  // The iterate is the one the full solve reached after the same three steps.
  EXPECT_EQ(s.stats().history()[3].cost, full.stats().history()[3].cost);

  // Continuing without the stop converges.
  s.set_iteration_callback(nullptr);
  EXPECT_EQ(s.solve(), solver::Status::Solved);
}

TEST(SqpCallback, NothingIsAllocatedWithACallback) {
  EXPECT_GE(allocations_during([] { std::vector<double> v(10); v[1] = 2; }), 1);  // the counter counts
  for (const char* name : {"cartpole_swingup", "iiwa14_gravity_limits"}) {
    SCOPED_TRACE(name);
    const problems::Problem p = load_config(name);
    solver::Solver s(p);
    Recorder rec(4 * (static_cast<std::size_t>(s.options().max_iter) + 1));
    s.set_iteration_callback(&Recorder::record, &rec);
    solver::Status first = solver::Status::NotRun;
    const long n = allocations_during([&] {
      first = s.solve();
      s.shift();
      s.solve();
    });
    EXPECT_EQ(n, 0);
    EXPECT_EQ(first, solver::Status::Solved) << s.solution().message();
    EXPECT_GT(rec.rows.size(), 2u);
  }
}

problems::InitialGuess guess_from(const solver::Solution& sol, bool with_duals) {
  problems::InitialGuess g;
  g.source = "test";
  g.x = sol.x;
  g.u = sol.u;
  if (with_duals) {
    g.lambda = sol.lambda;
    g.z = sol.z;
    g.s = sol.s;
    g.y = sol.y;
    g.mu = sol.mu;
  }
  return g;
}

// The cart-pole with its force limit: inequality rows, so the warm start must carry slacks and duals.
TEST(SqpWarmStart, FromAConvergedSolutionConvergesAtOnce) {
  const problems::Problem p = load_config("cartpole_swingup");
  solver::Solver first(p);
  ASSERT_EQ(first.solve(), solver::Status::Solved) << first.solution().message();
  const solver::Solution& sol = first.solution();
  ASSERT_FALSE(sol.z.empty());
  ASSERT_EQ(sol.s.size(), sol.z.size());
  for (std::size_t i = 0; i < sol.s.size(); ++i) ASSERT_GT(sol.s[i], 0.0);
  ASSERT_GT(sol.mu, 0.0);

  // Through the problem's initial_guess (the constructor).
  problems::Problem warm_problem = p;
  warm_problem.initial_guess = guess_from(sol, true);
  solver::Solver warm(warm_problem);
  ASSERT_EQ(warm.solve(), solver::Status::Solved) << warm.solution().message();
  EXPECT_LE(warm.stats().iterations, 2);
  EXPECT_NEAR(warm.solution().cost, sol.cost, 1e-9 * std::max(1.0, std::abs(sol.cost)));

  // Through set_warm_start, which allocates nothing.
  solver::Solver later(p);
  const problems::InitialGuess g = guess_from(sol, true);
  EXPECT_EQ(allocations_during([&] { later.set_warm_start(g); }), 0);
  ASSERT_EQ(later.solve(), solver::Status::Solved);
  EXPECT_LE(later.stats().iterations, 2);

  // Negative control: the same x, u without the multipliers is a cold start and takes longer.
  problems::Problem cold_problem = p;
  cold_problem.initial_guess = guess_from(sol, false);
  solver::Solver cold(cold_problem);
  ASSERT_EQ(cold.solve(), solver::Status::Solved) << cold.solution().message();
  EXPECT_GT(cold.stats().iterations, 2);

  // So does a guess with some multipliers missing (z and s here): not warm, and not an error.
  problems::InitialGuess partial = guess_from(sol, true);
  partial.z.clear();
  partial.s.clear();
  solver::Solver half(p);
  half.set_warm_start(partial);
  ASSERT_EQ(half.solve(), solver::Status::Solved);
  EXPECT_GT(half.stats().iterations, 2);
}

TEST(SqpWarmStart, WrongSizesAreRefused) {
  const problems::Problem p = load_config("cartpole_swingup");
  solver::Solver s(p);
  ASSERT_EQ(s.solve(), solver::Status::Solved);
  const solver::Solution& sol = s.solution();
  const std::size_t nx_total = sol.x.size();

  problems::Problem bad = p;
  bad.initial_guess = guess_from(sol, false);
  bad.initial_guess.x.pop_back();
  try {
    solver::Solver t(bad);
    FAIL() << "a short x was accepted";
  } catch (const problems::ProblemError& e) {
    // Problem::validate (run by the constructor) names the vector, what it expected and what it found.
    EXPECT_EQ(e.key_path(), "initial_guess.x");
    EXPECT_NE(e.expected().find(std::to_string(nx_total) + " values"), std::string::npos) << e.what();
    EXPECT_EQ(e.found(), std::to_string(nx_total - 1)) << e.what();
  }

  bad.initial_guess = guess_from(sol, true);
  bad.initial_guess.z.push_back(1.0);
  EXPECT_THROW(solver::Solver t(bad), problems::ProblemError);
  bad.initial_guess = guess_from(sol, true);
  bad.initial_guess.s[0] = -1.0;  // an interior point needs s > 0
  EXPECT_THROW(solver::Solver t(bad), problems::ProblemError);

  problems::InitialGuess g = guess_from(sol, true);
  g.u.push_back(0.0);
  EXPECT_THROW(s.set_warm_start(g), std::invalid_argument);
  g = guess_from(sol, true);
  g.lambda.resize(3);
  EXPECT_THROW(s.set_warm_start(g), std::invalid_argument);
  g = guess_from(sol, true);
  g.y.push_back(0.0);  // the cart-pole has no equality rows
  EXPECT_THROW(s.set_warm_start(g), std::invalid_argument);
  g = guess_from(sol, true);
  EXPECT_NO_THROW(s.set_warm_start(g));  // the control: the right sizes pass
}

}  // namespace
}  // namespace knot::test
