// Unicycle: a planar vehicle commanded by its forward speed and turn rate (kinematic, no inertia).
//
//   x = [px, py, theta]   position (m), heading from the x axis (rad)
//   u = [v, omega]        forward speed (m/s), turn rate (rad/s)
//   px' = v cos(theta),  py' = v sin(theta),  theta' = omega
//   nq = 0 (first order); planar position = states 0, 1
//
// No parameters.
#pragma once

#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "knot/linalg/config.hpp"

namespace knot::problems::models {

struct Unicycle {
  struct Params {};
  Params params;

  static constexpr std::string_view kType = "unicycle";
  static constexpr int kNw = 5;  // nx + nu at compile time: one second-order width to build
  KNOT_HD int nx() const { return 3; }
  KNOT_HD int nu() const { return 2; }
  KNOT_HD int nq() const { return 0; }

  template <class S>
  KNOT_HD void dynamics(const S* x, const S* u, S* f) const {
    using std::cos;
    using std::sin;
    f[0] = u[0] * cos(x[2]);
    f[1] = u[0] * sin(x[2]);
    f[2] = u[1];
  }

  void jacobian(const double* x, const double* u, double* f, double* fx, double* fu) const {
    dynamics(x, u, f);
    const double c = std::cos(x[2]), s = std::sin(x[2]);
    // fx (3 x 3) and fu (3 x 2), column-major.
    for (int k = 0; k < 9; ++k) fx[k] = 0.0;
    fx[0 + 2 * 3] = -u[0] * s;
    fx[1 + 2 * 3] = u[0] * c;
    for (int k = 0; k < 6; ++k) fu[k] = 0.0;
    fu[0] = c;
    fu[1] = s;
    fu[2 + 1 * 3] = 1.0;
  }

  std::vector<std::string> state_names() const { return {"px", "py", "theta"}; }
  std::vector<std::string> control_names() const { return {"v", "omega"}; }
  std::optional<std::array<int, 2>> planar_position() const { return std::array<int, 2>{0, 1}; }
};

}  // namespace knot::problems::models
