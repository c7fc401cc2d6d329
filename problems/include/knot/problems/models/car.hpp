// Car: the kinematic bicycle model referenced at the rear axle (no tyre slip).
//
//   x = [px, py, theta, v]   rear-axle position (m), heading from the x axis (rad), speed (m/s)
//   u = [a, delta]           acceleration (m/s^2), front steering angle (rad)
//   px' = v cos(theta),  py' = v sin(theta),  theta' = v tan(delta) / wheelbase,  v' = a
//   nq = 0 (the split is not [q; v]); planar position = states 0, 1
//
// Parameters: wheelbase 2.5 m (a mid-size passenger car).
#pragma once

#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "knot/linalg/config.hpp"
#include "knot/problems/model.hpp"

namespace knot::problems::models {

struct Car {
  struct Params {
    double wheelbase = 2.5;
  };
  Params params;

  static constexpr std::string_view kType = "car";
  static constexpr int kNw = 6;  // nx + nu at compile time: one second-order width to build
  KNOT_HD int nx() const { return 4; }
  KNOT_HD int nu() const { return 2; }
  KNOT_HD int nq() const { return 0; }

  template <class S>
  KNOT_HD void dynamics(const S* x, const S* u, S* f) const {
    using std::cos;
    using std::sin;
    using std::tan;
    f[0] = x[3] * cos(x[2]);
    f[1] = x[3] * sin(x[2]);
    f[2] = x[3] * tan(u[1]) / S(params.wheelbase);
    f[3] = u[0];
  }

  void jacobian(const double* x, const double* u, double* f, double* fx, double* fu) const {
    dynamics(x, u, f);
    const double c = std::cos(x[2]), s = std::sin(x[2]), t = std::tan(u[1]), L = params.wheelbase;
    // fx (4 x 4) and fu (4 x 2), column-major.
    for (int k = 0; k < 16; ++k) fx[k] = 0.0;
    for (int k = 0; k < 8; ++k) fu[k] = 0.0;
    fx[0 + 2 * 4] = -x[3] * s;
    fx[1 + 2 * 4] = x[3] * c;
    fx[0 + 3 * 4] = c;
    fx[1 + 3 * 4] = s;
    fx[2 + 3 * 4] = t / L;
    fu[3 + 0 * 4] = 1.0;
    fu[2 + 1 * 4] = x[3] * (1.0 + t * t) / L;
  }

  std::vector<std::string> state_names() const { return {"px", "py", "theta", "v"}; }
  std::vector<std::string> control_names() const { return {"a", "delta"}; }
  std::vector<ModelParameter> parameters() const { return {{"wheelbase", {params.wheelbase}}}; }
  std::optional<std::array<int, 2>> planar_position() const { return std::array<int, 2>{0, 1}; }
};

}  // namespace knot::problems::models
