// Torque-driven pendulum: a point mass on a massless rod about a fixed pivot.
//
//   x = [theta, omega]   angle from the downward vertical (rad; 0 hanging down, pi upright), rate (rad/s)
//   u = [tau]            torque at the pivot (N m)
//   theta' = omega
//   omega' = (tau - damping omega - mass gravity length sin(theta)) / (mass length^2)
//   nq = 1
//
// Parameters (textbook values): mass 1 kg, length 1 m, gravity 9.81 m/s^2, damping 0 N m s/rad.
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "knot/linalg/config.hpp"
#include "knot/problems/model.hpp"

namespace knot::problems::models {

struct Pendulum {
  struct Params {
    double mass = 1.0;
    double length = 1.0;
    double gravity = 9.81;
    double damping = 0.0;
  };
  Params params;

  static constexpr std::string_view kType = "pendulum";
  static constexpr int kNw = 3;  // nx + nu at compile time: one second-order width to build
  KNOT_HD int nx() const { return 2; }
  KNOT_HD int nu() const { return 1; }
  KNOT_HD int nq() const { return 1; }

  template <class S>
  KNOT_HD void dynamics(const S* x, const S* u, S* f) const {
    using std::sin;
    const S m = S(params.mass), l = S(params.length), g = S(params.gravity), b = S(params.damping);
    f[0] = x[1];
    f[1] = (u[0] - b * x[1] - m * g * l * sin(x[0])) / (m * l * l);
  }

  std::vector<std::string> state_names() const { return {"theta", "omega"}; }
  std::vector<std::string> control_names() const { return {"tau"}; }
  std::vector<ModelParameter> parameters() const {
    return {{"mass", {params.mass}},
            {"length", {params.length}},
            {"gravity", {params.gravity}},
            {"damping", {params.damping}}};
  }
};

}  // namespace knot::problems::models
