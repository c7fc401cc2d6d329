// A 100 Hz model-predictive control loop around Knot's solver, the program docs/embedding.md walks
// through.
//
//   embedding_loop [PROBLEM.yaml] [TICKS] [fast]
//
// Every 10 ms the controller takes the measured state, improves its plan by one real-time SQP
// iteration, applies the plan's first control and shifts the plan one knot for the next tick. The
// plant here is the problem's own model integrated over the control period; on a robot those two
// lines read the sensors and write the actuators. `fast` skips the sleeping (for tests).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "knot/problems/error.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/problems/loader.hpp"
#include "knot/solver/solver.hpp"

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  const std::string file = argc > 1 ? argv[1] : KNOT_EXAMPLE_PROBLEM;
  const int ticks = argc > 2 ? std::max(1, std::atoi(argv[2])) : 300;
  const bool sleep = !(argc > 3 && std::string(argv[3]) == "fast");
  constexpr double period = 0.01;  // 100 Hz

  // ---- Setup: everything that allocates happens here, before the loop.
  knot::problems::Problem problem;
  try {
    // One knot per control period: the plan shifts by exactly one knot per tick. The horizon keeps
    // the file's length in seconds.
    const knot::problems::Problem file_problem = knot::problems::load_problem(file);
    const int N = static_cast<int>(file_problem.horizon.N * file_problem.horizon.dt / period + 0.5);
    problem = knot::problems::load_problem(file, {"horizon.dt=" + std::to_string(period), "horizon.N=" + std::to_string(N)});
  } catch (const knot::problems::ProblemError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  knot::solver::Solver controller(problem);  // allocates every workspace now
  const int nx = controller.nx(), nu = controller.nu();

  // The simulated plant: the same model, its own data and integrator.
  auto plant_data = problem.model->make_data();
  knot::problems::Integrator plant(*problem.model, problem.horizon.integrator);
  std::vector<double> x = problem.x0, u(static_cast<std::size_t>(nu), 0.0);

  // A full solve before the loop starts gives the first plan.
  const knot::solver::Status first = controller.solve();
  std::printf("initial plan: %s after %d iterations, cost %.6g\n", knot::solver::to_string(first),
              controller.solution().iterations, controller.solution().cost);

  // ---- The control loop: no allocation, no exception, bounded work per tick.
  std::vector<double> solve_us(static_cast<std::size_t>(ticks));
  int missed = 0, failed = 0;
  Clock::time_point next = Clock::now();
  for (int tick = 0; tick < ticks; ++tick) {
    // 1. Measure (here: the simulated plant's state).
    controller.set_initial_state(x);
    // 2. Improve the plan by one real-time iteration from the shifted previous plan.
    const Clock::time_point t0 = Clock::now();
    const knot::solver::Status status = controller.step();
    solve_us[static_cast<std::size_t>(tick)] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    // 3. Act: the plan's first control. Solved and MaxIterations both leave a usable plan; anything
    //    else keeps the previous control (a robot would switch to its safe fallback).
    if (knot::solver::is_solved(status) || status == knot::solver::Status::MaxIterations)
      std::copy(controller.solution().u.begin(), controller.solution().u.begin() + nu, u.begin());
    else
      ++failed;
    plant.step(*plant_data, x.data(), u.data(), period, x.data());
    // 4. Prepare the next tick: the plan moves one knot forward in time.
    controller.shift();

    if (tick % 50 == 0)
      std::printf("t = %5.2f s  x0 = %+.4f  x1 = %+.4f  u0 = %+.4f  step %.0f us\n", tick * period, x[0],
                  nx > 1 ? x[1] : 0.0, u[0], solve_us[static_cast<std::size_t>(tick)]);
    next += std::chrono::microseconds(static_cast<long>(period * 1e6));
    if (Clock::now() > next) ++missed;
    if (sleep) std::this_thread::sleep_until(next);
  }

  std::sort(solve_us.begin(), solve_us.end());
  std::printf("%d ticks at %.0f Hz: real-time step median %.0f us, worst %.0f us; %d deadline(s) missed, %d "
              "failed step(s)\n",
              ticks, 1 / period, solve_us[solve_us.size() / 2], solve_us.back(), missed, failed);
  std::printf("final state:");
  for (double v : x) std::printf(" %+.4f", v);
  std::printf("\n");
  return failed == 0 ? 0 : 2;
}
