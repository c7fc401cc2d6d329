// The calls of bench_expression.cpp in a fixed number of repetitions, for instruction counts that
// load on the machine does not move (valgrind's callgrind counts only run_calls):
//
//   valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*run_calls*' \
//       build/release/tools/bench/knot_count_expression <dynamics|jacobian|hessian|solve> <builtin|expression> [reps]
//
// callgrind's total over reps is the count per call times reps.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "knot/problems/integrator.hpp"
#include "knot/problems/loader.hpp"
#include "knot/solver/solver.hpp"
#include "source_tree.hpp"

namespace {

using namespace knot;

const double kX[4] = {0.3, 2.9, -0.4, 1.1}, kU[1] = {4.0}, kLambda[4] = {0.5, -1, 0.25, 2};

struct Calls {
  const problems::Problem* p;
  problems::ModelData* data;
  solver::Solver* s;
  const std::vector<double>* x0;
  const std::vector<double>* u0;
};

// Out of line, so that callgrind can count it alone.
[[gnu::noinline]] double run_calls(const Calls& c, char what, int reps) {
  double sink = 0, f[4], fx[16], fu[4], H[25];
  const problems::Model& m = *c.p->model;
  switch (what) {
    case 'd':
      for (int r = 0; r < reps; ++r) m.dynamics(*c.data, kX, kU, f), sink += f[3];
      break;
    case 'j':
      for (int r = 0; r < reps; ++r) m.dynamics_jacobian(*c.data, kX, kU, f, fx, fu), sink += fx[7];
      break;
    case 'h':
      for (int r = 0; r < reps; ++r)
        m.step_hessian(*c.data, problems::IntegratorType::Rk4, kX, kU, 0.05, kLambda, H), sink += H[7];
      break;
    default:
      for (int r = 0; r < reps; ++r) {
        c.s->set_initial_guess(*c.x0, *c.u0);
        c.s->solve();
        sink += c.s->solution().iterations;
      }
  }
  return sink;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <dynamics|jacobian|hessian|solve> <builtin|expression> [reps]\n", argv[0]);
    return 2;
  }
  const std::string what = argv[1];
  const bool expression = std::strcmp(argv[2], "expression") == 0;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 10;
  const problems::Problem p =
      expression
          ? problems::load_problem(std::filesystem::path(knot::source_tree::test_data_dir()) / "expression" / "cartpole_swingup.yaml")
          : problems::load_problem(std::filesystem::path(knot::source_tree::configs_dir()) / "cartpole_swingup.yaml");
  auto data = p.model->make_data();
  solver::Solver s(p);
  std::vector<double> x0, u0;
  solver::default_initial_guess(p, x0, u0);
  const Calls c{&p, data.get(), &s, &x0, &u0};
  std::printf("%g\n", run_calls(c, what[0], reps));
  return 0;
}
