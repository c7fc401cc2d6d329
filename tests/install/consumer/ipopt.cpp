// knot::ipopt: the IPOPT cross-check on a small problem, which it must solve.
#include <cstdio>

#include "knot/problems/loader.hpp"
#include "knot/solver/ipopt.hpp"

int main() {
  const char* text =
      "name: consumer\nmodel: {type: cartpole}\nhorizon: {N: 20, dt: 0.05}\nx0: [0, 0.5, 0, 0]\n"
      "costs:\n  - {type: state, weights: [10, 10, 1, 1]}\n  - {type: control, weights: 0.1}\n";
  const knot::problems::Problem p = knot::problems::load_problem_from_string(text, "consumer.yaml", ".");
  const knot::solver::IpoptResult r = knot::solver::solve_with_ipopt(p);
  const bool ok = knot::solver::ipopt_available() && r.status == knot::solver::IpoptStatus::Solved;
  std::printf("ipopt consumer: %s, cost %g: %s\n", r.message.c_str(), r.cost, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
