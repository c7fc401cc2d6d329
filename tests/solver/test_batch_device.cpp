// BatchSolver on the device path (backend cpu): the pool runs DeviceSqp per problem, so each
// problem's answer must be bitwise the one DeviceSqp gives alone, for every thread count; it agrees
// with the solvers path (B Solvers) to rounding; one problem's NaN leaves the others bitwise
// unchanged; per-problem references and bounds reach only their problem. Under the label
// solver_threads: ThreadSanitizer runs it too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "knot/problems/constraint.hpp"
#include "knot/problems/error.hpp"
#include "knot/solver/batch.hpp"
#include "knot/solver/device/device_sqp.hpp"
#include "test_sqp_common.hpp"
#include "test_util.hpp"
#include "source_tree.hpp"

namespace knot::test {
namespace {

using solver::BatchOptions;
using solver::BatchPath;
using solver::BatchSolver;
using solver::Status;

// The file's options with what the device path needs (Gauss-Newton, Riccati).
solver::SolverOptions device_fit(const problems::Problem& p) {
  return solver::device::device_path_options(solver::from_settings(p.solver));
}


// Empty when equal bit for bit.
std::string difference(const solver::Solution& a, const solver::Solution& b) {
  if (a.status != b.status) return std::string("status ") + solver::to_string(a.status) + " vs " + solver::to_string(b.status);
  if (a.iterations != b.iterations) return "iterations";
  if (!bitwise_equal(a.x, b.x) || !bitwise_equal(a.u, b.u)) return "x or u";
  if (!bitwise_equal(a.lambda, b.lambda) || !bitwise_equal(a.z, b.z) || !bitwise_equal(a.s, b.s) ||
      !bitwise_equal(a.y, b.y))
    return "multipliers";
  if (!same_bits(a.cost, b.cost)) return "cost";
  return {};
}

// DeviceSqp alone, problem by problem, each from the batch's starting point: the file's default
// guess (set_initial_state moves x0, not the guess, as Solver's does).
std::vector<solver::Solution> alone(const problems::Problem& p, const std::vector<std::vector<double>>& x0) {
  std::vector<solver::Solution> out;
  solver::device::DeviceSqp d(p, device_fit(p));
  std::vector<double> x, u;
  solver::default_initial_guess(p, x, u);
  for (const auto& start : x0) {
    d.set_initial_state(start);
    d.set_initial_guess(x, u);
    d.solve();
    out.push_back(d.solution());
  }
  return out;
}

TEST(BatchDevice, PoolGivesBitwiseWhatEachProblemGivesAloneForEveryThreadCount) {
  for (const char* name : {"cartpole_swingup", "pendulum_swingup", "double_integrator_rest_to_rest"}) {
    const problems::Problem p = load_config(name);
    const auto x0 = perturbed_starts(p, 6, 0.01);
    const auto want = alone(p, x0);
    for (int threads : {1, 2, 3, 7}) {
      BatchOptions o;
      o.threads = threads;
      o.solver = device_fit(p);
      o.path = BatchPath::Device;
      BatchSolver batch(p, 6, o);
      ASSERT_EQ(batch.path(), BatchPath::Device) << name;
      EXPECT_GT(batch.bytes_allocated(), 0u);
      EXPECT_EQ(batch.device_bytes(), 0u);  // the cpu backend holds no GPU memory
      for (int i = 0; i < 6; ++i) batch.set_initial_state(i, x0[std::size_t(i)]);
      batch.solve();
      for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(difference(batch.solution(i), want[std::size_t(i)]), "") << name << " problem " << i << ", "
                                                                           << threads << " threads";
        EXPECT_EQ(batch.stats(i).iterations, want[std::size_t(i)].iterations);
        EXPECT_EQ(batch.stats(i).history().size(), std::size_t(want[std::size_t(i)].iterations) + 1);
      }
    }
  }
}

TEST(BatchDevice, AgreesWithTheSolversPath) {
  const problems::Problem p = load_config("cartpole_swingup");
  const auto x0 = perturbed_starts(p, 4, 0.05);
  BatchOptions o;
  o.solver = device_fit(p);
  o.path = BatchPath::Device;
  o.path = BatchPath::Solvers;
  BatchSolver solvers(p, 4, o);
  o.path = BatchPath::Device;
  BatchSolver device(p, 4, o);
  for (int i = 0; i < 4; ++i) {
    solvers.set_initial_state(i, x0[std::size_t(i)]);
    device.set_initial_state(i, x0[std::size_t(i)]);
  }
  EXPECT_EQ(solvers.solve(), device.solve());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(solvers.status(i), device.status(i));
    EXPECT_EQ(solvers.solution(i).iterations, device.solution(i).iterations);
    EXPECT_NEAR(solvers.solution(i).cost, device.solution(i).cost, 1e-9 * std::abs(solvers.solution(i).cost));
  }
}

TEST(BatchDevice, NanInOneProblemLeavesTheOthersBitwiseUnchanged) {
  const problems::Problem p = load_config("pendulum_swingup");
  auto x0 = perturbed_starts(p, 4, 0.01);
  const auto want = alone(p, x0);
  x0[1][0] = std::numeric_limits<double>::quiet_NaN();
  BatchOptions o;
  o.threads = 2;
  o.solver = device_fit(p);
  o.path = BatchPath::Device;
  BatchSolver batch(p, 4, o);
  for (int i = 0; i < 4; ++i) batch.set_initial_state(i, x0[std::size_t(i)]);
  EXPECT_EQ(batch.solve(), 3);
  EXPECT_EQ(batch.status(1), Status::NumericalError);
  for (int i : {0, 2, 3}) EXPECT_EQ(difference(batch.solution(i), want[std::size_t(i)]), "") << i;
}

// set_reference and set_bounds reach problem i's slice only; the result is a Solver's on a problem
// given the same values.
TEST(BatchDevice, PerProblemReferencesAndBoundsReachOnlyTheirProblem) {
  problems::Problem p = load_config("pendulum_swingup");
  BatchOptions o;
  o.solver = device_fit(p);
  o.path = BatchPath::Device;
  BatchSolver batch(p, 3, o);
  ASSERT_EQ(batch.path(), BatchPath::Device);
  const problems::Reference ref = problems::Reference::constant({3.0, 0.0});
  batch.set_reference(1, "upright", ref);
  const std::vector<double> lo = {-2.5}, hi = {2.5};
  batch.set_bounds(2, "torque_limit", lo, hi);
  batch.solve();

  solver::Solver plain(p, *o.solver);
  plain.solve();
  problems::Problem moved = p;
  for (auto& c : moved.costs)
    if (c->info().name == "upright") {
      auto copy = std::make_shared<problems::StateCost>(dynamic_cast<const problems::StateCost&>(*c));
      copy->set_reference(ref);
      c = copy;
    }
  solver::Solver with_ref(moved, *o.solver);
  with_ref.solve();
  problems::Problem tight = load_config("pendulum_swingup", {"constraints[0].lower=[-2.5]", "constraints[0].upper=[2.5]"});
  solver::Solver with_bounds(tight, *o.solver);
  with_bounds.solve();

  const auto near = [](const solver::Solution& a, const solver::Solution& b) {
    return a.status == b.status && std::abs(a.cost - b.cost) <= 1e-9 * std::max(1.0, std::abs(b.cost));
  };
  EXPECT_TRUE(near(batch.solution(0), plain.solution()));
  EXPECT_TRUE(near(batch.solution(1), with_ref.solution())) << batch.solution(1).cost << " " << with_ref.solution().cost;
  EXPECT_TRUE(near(batch.solution(2), with_bounds.solution()))
      << batch.solution(2).cost << " " << with_bounds.solution().cost;
  // Negative control: the moved problems are other problems.
  EXPECT_FALSE(near(batch.solution(1), plain.solution()));
  EXPECT_FALSE(near(batch.solution(2), plain.solution()));
  EXPECT_THROW(batch.set_bounds(0, "torque_limit", std::vector<double>{INFINITY}, hi), std::invalid_argument);
  EXPECT_THROW(batch.set_reference(0, "nope", ref), std::invalid_argument);
}

// Every box term of every config the device path runs, a bound taken away (its finite first one
// made infinite) and one given (its infinite first one made finite, far from the optimum): problem 1
// after set_bounds is bit for bit a DeviceSqp built on the problem with that term made with those
// bounds (the slice's layout is the compiled one's), and agrees with Solver there (status, cost to
// 1e-9); problems 0 and 2 stay the file's.
TEST(BatchDevice, BoundsThatAddOrRemoveRowsOnEveryConfig) {
  int checked = 0;
  for (const std::string& name : config_names()) {
    const problems::Problem p = load_config(name);
    if (!solver::device::device_path_unsupported(p).empty()) continue;
    const solver::SolverOptions o = device_fit(p);
    if (!solver::device::device_sqp_unsupported(p, o).empty()) continue;
    for (const BoxMove& m : box_moves(p)) {
      SCOPED_TRACE(name + " " + m.term + (m.removes ? " without a bound" : " with a bound more"));
      BatchOptions bo;
      bo.solver = o;
      bo.path = BatchPath::Device;
      bo.threads = 2;
      BatchSolver batch(p, 3, bo);
      batch.set_bounds(1, m.term, m.lower, m.upper);
      batch.solve();
      solver::device::DeviceSqp alone(m.moved, o), file(p, o);
      alone.solve();
      file.solve();
      EXPECT_EQ(difference(batch.solution(1), alone.solution()), "");
      EXPECT_EQ(difference(batch.solution(0), file.solution()), "");
      EXPECT_EQ(difference(batch.solution(2), file.solution()), "");
      EXPECT_NE(batch.solution(1).z.size(), batch.solution(0).z.size());
      solver::Solver host(m.moved, o);
      host.solve();
      EXPECT_EQ(batch.status(1), host.solution().status);
      EXPECT_NEAR(batch.solution(1).cost, host.solution().cost, 1e-9 * std::max(1.0, std::abs(host.solution().cost)));
      ++checked;
    }
  }
  std::printf("  %d bounds taken away or given, on the device path\n", checked);
  EXPECT_GE(checked, 12);
}

// set_obstacle reaches problem i's slice only; the result is a Solver's on the file with that
// obstacle moved by --set.
TEST(BatchDevice, PerProblemObstacleReachesOnlyItsProblem) {
  const problems::Problem p = load_config("unicycle_obstacles");
  BatchOptions o;
  o.solver = device_fit(p);
  o.path = BatchPath::Device;
  BatchSolver batch(p, 2, o);
  ASSERT_EQ(batch.path(), BatchPath::Device);
  batch.set_obstacle(1, "tree", {2.9, -0.35}, 0.5);
  batch.solve();
  solver::Solver plain(p, *o.solver);
  plain.solve();
  const problems::Problem moved =
      load_config("unicycle_obstacles", {"constraints[2].center=[2.9, -0.35]", "constraints[2].radius=0.5"});
  solver::Solver with_obstacle(moved, *o.solver);
  with_obstacle.solve();
  const auto near = [](const solver::Solution& a, const solver::Solution& b) {
    return a.status == b.status && std::abs(a.cost - b.cost) <= 1e-9 * std::max(1.0, std::abs(b.cost));
  };
  EXPECT_TRUE(near(batch.solution(0), plain.solution())) << batch.solution(0).cost << " " << plain.solution().cost;
  EXPECT_TRUE(near(batch.solution(1), with_obstacle.solution()))
      << batch.solution(1).cost << " " << with_obstacle.solution().cost;
  EXPECT_FALSE(near(batch.solution(1), plain.solution()));  // negative control: another problem
  EXPECT_THROW(batch.set_obstacle(0, "tree", {2.9, -0.35}, -1.0), std::invalid_argument);
  EXPECT_THROW(batch.set_obstacle(0, "speed_limits", {2.9, -0.35}, 0.5), std::invalid_argument);
}

// An expression model (ModelKind::Expression) in the pool: each problem bitwise what DeviceSqp gives
// alone, for every thread count; Auto takes the device path for it and for planar_quadrotor's
// expression terms, while a control-rate cost sends the expression model to the Solvers path, named.
TEST(BatchDevice, ExpressionModelInThePool) {
  const problems::Problem p =
      problems::load_problem(std::filesystem::path(knot::source_tree::test_data_dir()) / "expression" / "cartpole_swingup.yaml");
  const auto x0 = perturbed_starts(p, 5, 0.01);
  const auto want = alone(p, x0);
  for (int threads : {1, 2, 3, 7}) {
    BatchOptions o;
    o.threads = threads;
    o.solver = device_fit(p);
    o.path = BatchPath::Device;
    BatchSolver batch(p, 5, o);
    ASSERT_EQ(batch.path(), BatchPath::Device);
    for (int i = 0; i < 5; ++i) batch.set_initial_state(i, x0[std::size_t(i)]);
    batch.solve();
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(difference(batch.solution(i), want[std::size_t(i)]), "") << "problem " << i << ", " << threads
                                                                         << " threads";
  }
  const problems::Problem quad = load_config("planar_quadrotor");
  BatchOptions o;
  o.path = BatchPath::Device;
  o.solver = device_fit(quad);
  EXPECT_EQ(BatchSolver(quad, 2, o).path(), BatchPath::Device);
  const problems::Problem smooth =
      problems::load_problem(std::filesystem::path(knot::source_tree::test_data_dir()) / "expression" / "cartpole_swingup.yaml",
                             {"costs[1]={name: smooth, type: control_rate, weights: [0.002]}"});
  o.path = BatchPath::Auto;
  o.solver = device_fit(smooth);
  BatchSolver fallback(smooth, 2, o);
  EXPECT_EQ(fallback.path(), BatchPath::Solvers);
  EXPECT_NE(fallback.device_path_refusal().find("cost 'smooth' (control_rate)"), std::string::npos)
      << fallback.device_path_refusal();
}

// Per-problem model parameters, on both paths: problem 1 with a heavier pendulum and problem 2 with
// a heavier expression cart-pole are bitwise what a Solver / DeviceSqp built from the file with
// that value set (--set) gives; the others stay bitwise the plain problem's (and the changed ones
// differ from it: the negative control).
TEST(BatchDevice, PerProblemModelParametersReachOnlyTheirProblem) {
  const std::filesystem::path expr = std::filesystem::path(knot::source_tree::test_data_dir()) / "expression" / "cartpole_swingup.yaml";
  struct Case {
    problems::Problem plain, set;
    std::vector<problems::ModelParameter> change;
  };
  const Case cases[] = {
      {load_config("pendulum_swingup"), load_config("pendulum_swingup", {"model.params.mass=1.4"}), {{"mass", {1.4}}}},
      {problems::load_problem(expr), problems::load_problem(expr, {"model.params.pole_mass=0.2"}),
       {{"pole_mass", {0.2}}}},
  };
  for (const Case& c : cases) {
    for (BatchPath path : {BatchPath::Solvers, BatchPath::Device}) {
      const std::string what = c.plain.name + ", path " + solver::to_string(path);
      BatchOptions o;
      o.path = path;
      o.threads = 2;
      o.solver = device_fit(c.plain);
      BatchSolver batch(c.plain, 3, o);
      ASSERT_EQ(batch.path(), path);
      batch.set_model_parameters(1, c.change);
      const auto values = [](const problems::Model& m) {
        std::vector<std::vector<double>> v;
        for (const problems::ModelParameter& q : m.parameters()) v.push_back(q.values);
        return v;
      };
      EXPECT_EQ(values(batch.model(1)), values(*c.set.model)) << what;
      EXPECT_EQ(values(batch.model(0)), values(*c.plain.model)) << what;
      batch.solve();
      solver::Solution want_plain, want_set;
      if (path == BatchPath::Solvers) {
        solver::Solver a(c.plain, *o.solver), b(c.set, *o.solver);
        a.solve();
        b.solve();
        want_plain = a.solution();
        want_set = b.solution();
      } else {
        solver::device::DeviceSqp a(c.plain, *o.solver), b(c.set, *o.solver);
        a.solve();
        b.solve();
        want_plain = a.solution();
        want_set = b.solution();
      }
      EXPECT_EQ(difference(batch.solution(0), want_plain), "") << what;
      EXPECT_EQ(difference(batch.solution(2), want_plain), "") << what;
      EXPECT_EQ(difference(batch.solution(1), want_set), "") << what;
      EXPECT_NE(difference(batch.solution(1), want_plain), "") << what;
      // Back to the file's value, from the default guess again: the plain problem.
      batch.set_model(1, c.plain.model);
      std::vector<double> x, u;
      solver::default_initial_guess(c.plain, x, u);
      batch.set_initial_guess(1, x, u);
      batch.solve();
      EXPECT_EQ(difference(batch.solution(1), want_plain), "") << what;
    }
  }
}

TEST(BatchDevice, ModelSwapsThatCannotWorkAreRefusedByName) {
  const problems::Problem p = load_config("pendulum_swingup");
  const problems::Problem cartpole = load_config("cartpole_swingup");
  const problems::Problem quad = load_config("planar_quadrotor");  // an expression model with expression terms
  for (BatchPath path : {BatchPath::Solvers, BatchPath::Device}) {
    BatchOptions o;
    o.path = path;
    o.threads = 1;
    o.solver = device_fit(p);
    BatchSolver batch(p, 2, o);
    const auto message = [&](auto&& f) -> std::string {
      try {
        f();
      } catch (const std::invalid_argument& e) {
        return e.what();
      }
      return "no error";
    };
    EXPECT_NE(message([&] { batch.set_model(0, cartpole.model); }).find("a model like the problem's 'pendulum'"),
              std::string::npos);
    EXPECT_NE(message([&] { batch.set_model(0, nullptr); }).find("found none"), std::string::npos);
    EXPECT_THROW(batch.set_model_parameters(0, {{"mas", {2.0}}}), problems::ProblemError);
    EXPECT_THROW(batch.set_model_parameters(0, {{"mass", {-2.0}}}), problems::ProblemError);
    EXPECT_THROW(batch.set_model(2, p.model), std::out_of_range);
    // omega^k folds to omega at k = 1: one instruction less, so another compiled layout.
    const std::filesystem::path pend = std::filesystem::path(knot::source_tree::test_data_dir()) / "expression" / "pendulum_swingup.yaml";
    const std::string ode = "model.ode.omega=(tau - damping * omega^k - mass * gravity * length * sin(theta)) / (mass * length * length)";
    const problems::Problem power = problems::load_problem(pend, {"model.params.k=2", "model.params.damping=0.1", ode});
    o.solver = device_fit(power);
    BatchSolver pw(power, 2, o);
    const std::string layout = message([&] { pw.set_model_parameters(1, {{"k", {1.0}}}); });
    if (path == BatchPath::Device)
      EXPECT_NE(layout.find("another length"), std::string::npos) << layout;
    else
      EXPECT_EQ(layout, "no error");
    o.solver = device_fit(quad);
    BatchSolver q(quad, 2, o);
    const std::string why = message([&] { q.set_model_parameters(1, {{"mass", {quad.model->parameters()[0].values[0]}}}); });
    EXPECT_NE(why.find("as compiled constants"), std::string::npos) << why;
  }
}

// Path auto is the solvers path on the CPU (Solver is the faster code there, with warm starts and
// shift()), whatever the options; device_path_refusal says whether the device path could run them.
TEST(BatchDevice, AutoIsTheSolversPathOnTheCpuAndSaysWhyNotTheDevicePath) {
  const problems::Problem p = load_config("cartpole_swingup");
  BatchOptions o;
  o.solver = device_fit(p);
  BatchSolver gauss_newton(p, 2, o);
  EXPECT_EQ(gauss_newton.path(), BatchPath::Solvers);
  EXPECT_EQ(gauss_newton.device_path_refusal(), "");
  BatchSolver file_options(p, 2);  // hessian auto: the device path could run it too
  EXPECT_EQ(file_options.path(), BatchPath::Solvers);
  EXPECT_EQ(file_options.device_path_refusal(), "");
  EXPECT_NO_THROW(file_options.solver(0));
  o.solver->lq.linsys = solver::Linsys::KktLdlt;
  BatchSolver kkt(p, 2, o);
  EXPECT_EQ(kkt.path(), BatchPath::Solvers);
  EXPECT_NE(kkt.device_path_refusal().find("solver.linsys"), std::string::npos) << kkt.device_path_refusal();
  // Asked for explicitly, the device path refuses what it cannot run, naming it.
  o.path = BatchPath::Device;
  EXPECT_THROW(BatchSolver(p, 2, o), problems::ProblemError);
  // The device path has no Solver per problem and no warm start.
  o.solver->lq.linsys = solver::Linsys::Riccati;
  BatchSolver device(p, 2, o);
  EXPECT_EQ(device.path(), BatchPath::Device);
  EXPECT_THROW(device.solver(0), std::logic_error);
  EXPECT_THROW(device.shift(0), std::logic_error);
  // backend cuda without the CUDA engine is a clear error.
  o.backend = solver::BatchBackend::Cuda;
  try {
    BatchSolver cuda(p, 2, o);
    FAIL() << "a cuda batch was built without an engine";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("backend cuda"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace knot::test
