// Cart-pole: a pendulum on a cart pushed along a horizontal rail. The model, its angle convention
// and its default parameters are acados' "pendulum on cart" example (get_pendulum_on_cart_model,
// export_pendulum_ode_model).
//
//   x = [p, theta, v, omega]   cart position (m), pole angle from the UPWARD vertical (rad; 0 upright,
//                              positive when the bob is at -x of the cart), cart velocity (m/s),
//                              pole rate (rad/s)
//   u = [F]                    horizontal force on the cart (N)
//   denom  = M + m - m cos^2(theta)
//   v'     = (-m l sin(theta) omega^2 + m g cos(theta) sin(theta) + F) / denom
//   omega' = (-m l cos(theta) sin(theta) omega^2 + F cos(theta) + (M + m) g sin(theta)) / (l denom)
//   nq = 2
//
// Parameters: cart_mass M 1 kg, pole_mass m 0.1 kg (a point mass at the rod's end), length l 0.8 m,
// gravity g 9.81 m/s^2.
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "knot/linalg/config.hpp"
#include "knot/problems/model.hpp"

namespace knot::problems::models {

struct Cartpole {
  struct Params {
    double cart_mass = 1.0;
    double pole_mass = 0.1;
    double length = 0.8;
    double gravity = 9.81;
  };
  Params params;

  static constexpr std::string_view kType = "cartpole";
  static constexpr int kNw = 5;  // nx + nu at compile time: one second-order width to build
  KNOT_HD int nx() const { return 4; }
  KNOT_HD int nu() const { return 1; }
  KNOT_HD int nq() const { return 2; }

  template <class S>
  KNOT_HD void dynamics(const S* x, const S* u, S* f) const {
    using std::cos;
    using std::sin;
    const S M = S(params.cart_mass), m = S(params.pole_mass), l = S(params.length), g = S(params.gravity);
    const S s = sin(x[1]), c = cos(x[1]), w2 = x[3] * x[3], F = u[0];
    const S denom = M + m - m * c * c;
    f[0] = x[2];
    f[1] = x[3];
    f[2] = (-m * l * s * w2 + m * g * c * s + F) / denom;
    f[3] = (-m * l * c * s * w2 + F * c + (M + m) * g * s) / (l * denom);
  }

  std::vector<std::string> state_names() const { return {"p", "theta", "v", "omega"}; }
  std::vector<std::string> control_names() const { return {"F"}; }
  std::vector<ModelParameter> parameters() const {
    return {{"cart_mass", {params.cart_mass}},
            {"pole_mass", {params.pole_mass}},
            {"length", {params.length}},
            {"gravity", {params.gravity}}};
  }
};

}  // namespace knot::problems::models
