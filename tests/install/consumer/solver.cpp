// knot::solver: the SQP solver on a small problem, which it must solve.
#include <cstdio>

#include "knot/problems/loader.hpp"
#include "knot/solver/build.hpp"
#include "knot/solver/solver.hpp"

int main() {
  const char* text =
      "name: consumer\nmodel: {type: cartpole}\nhorizon: {N: 20, dt: 0.05}\nx0: [0, 0.5, 0, 0]\n"
      "costs:\n  - {type: state, weights: [10, 10, 1, 1]}\n  - {type: control, weights: 0.1}\n";
  const knot::problems::Problem p = knot::problems::load_problem_from_string(text, "consumer.yaml", ".");
  knot::solver::Solver s(p);
  const knot::solver::Status st = s.solve();
  const bool ok = st == knot::solver::Status::Solved;
  std::printf("solver consumer: %s after %d iterations (knot_solver built for %s, %s): %s\n", knot::solver::to_string(st),
              s.solution().iterations, knot::solver::build_arch(), knot::solver::build_isa(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
