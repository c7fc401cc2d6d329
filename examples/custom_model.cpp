// A model of your own in C++: the planar quadrotor of configs/planar_quadrotor.yaml written as a
// template model (model_adapter.hpp), swapped in for the file's expression model, solved, and
// compared with the expression model's solve. docs/problem-format.md ("Models of your own")
// walks through it.
//
//   custom_model [PROBLEM.yaml]      exit status 1 when the two optima differ by more than 1e-9
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"
#include "knot/problems/model_adapter.hpp"
#include "knot/solver/solver.hpp"

// The model: plain data, and dynamics() written once for every scalar type S (double for values,
// the dual numbers the adapter seeds for exact Jacobians and Hessians, device code under nvcc).
struct PlanarQuadrotor {
  struct Params {
    double mass = 0.5, arm = 0.15, inertia = 0.005, gravity = 9.81;
  };
  Params params;

  static constexpr std::string_view kType = "planar_quadrotor";
  KNOT_HD int nx() const { return 6; }  // [px, pz, phi, vx, vz, omega]
  KNOT_HD int nu() const { return 2; }  // [T1, T2]
  KNOT_HD int nq() const { return 3; }  // positions first, for semi-implicit Euler

  template <class S>
  KNOT_HD void dynamics(const S* x, const S* u, S* f) const {
    using std::cos;
    using std::sin;
    const S thrust = u[0] + u[1];
    f[0] = x[3];
    f[1] = x[4];
    f[2] = x[5];
    f[3] = -thrust * sin(x[2]) / S(params.mass);
    f[4] = thrust * cos(x[2]) / S(params.mass) - S(params.gravity);
    f[5] = S(params.arm) * (u[1] - u[0]) / S(params.inertia);
  }

  std::vector<std::string> state_names() const { return {"px", "pz", "phi", "vx", "vz", "omega"}; }
  std::vector<std::string> control_names() const { return {"T1", "T2"}; }
  // Optional: what the obstacle constraints read as the planar position.
  std::optional<std::array<int, 2>> planar_position() const { return std::array<int, 2>{0, 1}; }
};

int main(int argc, char** argv) {
  const std::string file = argc > 1 ? argv[1] : KNOT_EXAMPLE_PROBLEM;
  knot::problems::Problem from_file;
  try {
    from_file = knot::problems::load_problem(file);
  } catch (const knot::problems::ProblemError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  // The same problem with the C++ model: the horizon, costs and constraints stay the file's.
  knot::problems::Problem in_cpp = from_file;
  in_cpp.model = std::make_shared<knot::problems::ModelAdapter<PlanarQuadrotor>>(PlanarQuadrotor{});
  in_cpp.validate();

  knot::solver::Solver a(from_file), b(in_cpp);
  const knot::solver::Status sa = a.solve(), sb = b.solve();
  const auto& xa = a.solution().x;
  const auto& xb = b.solution().x;
  double diff = 0;
  for (std::size_t i = 0; i < xa.size(); ++i) diff = std::max(diff, std::abs(xa[i] - xb[i]));
  std::printf("expression model: %s, cost %.12g, %d iterations\n", knot::solver::to_string(sa), a.solution().cost,
              a.solution().iterations);
  std::printf("C++ model:        %s, cost %.12g, %d iterations\n", knot::solver::to_string(sb), b.solution().cost,
              b.solution().iterations);
  std::printf("largest state difference %.3g\n", diff);
  const bool same = sa == knot::solver::Status::Solved && sb == sa && diff <= 1e-9;
  return same ? 0 : 1;
}
