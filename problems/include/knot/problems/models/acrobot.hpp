// Acrobot: Spong's two-link planar arm with only the elbow actuated, as Drake's AcrobotPlant
// (examples/acrobot) models it, with Drake's default AcrobotParams (Spong 1994, "Swing up control of
// the acrobot").
//
//   x = [theta1, theta2, theta1dot, theta2dot]   shoulder angle from the downward vertical, elbow
//                                                angle relative to link 1 (rad; 0, 0 hanging
//                                                straight down, pi, 0 upright), their rates (rad/s)
//   u = [tau]                                    elbow torque (N m)
//   M(q) qdd + bias(q, qd) = [0; tau]            nq = 2
//     I1 = Ic1 + m1 lc1^2,  I2 = Ic2 + m2 lc2^2,  a = m2 l1 lc2
//     M = [I1 + I2 + m2 l1^2 + 2 a cos(theta2),  I2 + a cos(theta2);  I2 + a cos(theta2),  I2]
//     bias = [-2 a sin(theta2) theta2dot theta1dot - a sin(theta2) theta2dot^2
//               + g (m1 lc1 sin(theta1) + m2 (l1 sin(theta1) + lc2 sin(theta1 + theta2))) + b1 theta1dot;
//             a sin(theta2) theta1dot^2 + g m2 lc2 sin(theta1 + theta2) + b2 theta2dot]
//
// Parameters (Drake's defaults): m1 1 kg, m2 1 kg, l1 1 m, l2 2 m (geometry only: it does not enter
// the dynamics), lc1 0.5 m, lc2 1 m (joint to centre of mass), Ic1 0.083 kg m^2, Ic2 0.33 kg m^2
// (about the centres of mass), b1 0.1, b2 0.1 (joint damping, N m s/rad), gravity 9.81 m/s^2.
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "knot/linalg/config.hpp"
#include "knot/problems/model.hpp"

namespace knot::problems::models {

struct Acrobot {
  struct Params {
    double m1 = 1.0, m2 = 1.0;
    double l1 = 1.0, l2 = 2.0;
    double lc1 = 0.5, lc2 = 1.0;
    double Ic1 = 0.083, Ic2 = 0.33;
    double b1 = 0.1, b2 = 0.1;
    double gravity = 9.81;
  };
  Params params;

  static constexpr std::string_view kType = "acrobot";
  static constexpr int kNw = 5;  // nx + nu at compile time: one second-order width to build
  KNOT_HD int nx() const { return 4; }
  KNOT_HD int nu() const { return 1; }
  KNOT_HD int nq() const { return 2; }

  template <class S>
  KNOT_HD void dynamics(const S* x, const S* u, S* f) const {
    using std::cos;
    using std::sin;
    const Params& p = params;
    const S q1 = x[0], q2 = x[1], qd1 = x[2], qd2 = x[3];
    const S s1 = sin(q1), s2 = sin(q2), c2 = cos(q2), s12 = sin(q1 + q2);
    const S g = S(p.gravity), m1 = S(p.m1), m2 = S(p.m2), l1 = S(p.l1), lc1 = S(p.lc1), lc2 = S(p.lc2);
    const S I1 = S(p.Ic1) + m1 * lc1 * lc1;
    const S I2 = S(p.Ic2) + m2 * lc2 * lc2;
    const S a = m2 * l1 * lc2;

    const S M11 = I1 + I2 + m2 * l1 * l1 + S(2) * a * c2;
    const S M12 = I2 + a * c2;
    const S M22 = I2;
    const S bias1 = -S(2) * a * s2 * qd2 * qd1 - a * s2 * qd2 * qd2 + g * (m1 * lc1 * s1 + m2 * (l1 * s1 + lc2 * s12)) +
                    S(p.b1) * qd1;
    const S bias2 = a * s2 * qd1 * qd1 + g * m2 * lc2 * s12 + S(p.b2) * qd2;

    // qdd = M^-1 (B tau - bias), M symmetric 2 x 2.
    const S r1 = -bias1, r2 = u[0] - bias2;
    const S det = M11 * M22 - M12 * M12;
    f[0] = qd1;
    f[1] = qd2;
    f[2] = (M22 * r1 - M12 * r2) / det;
    f[3] = (M11 * r2 - M12 * r1) / det;
  }

  std::vector<std::string> state_names() const { return {"theta1", "theta2", "theta1dot", "theta2dot"}; }
  std::vector<std::string> control_names() const { return {"tau"}; }
  std::vector<ModelParameter> parameters() const {
    return {{"m1", {params.m1}},   {"m2", {params.m2}},   {"l1", {params.l1}},          {"l2", {params.l2}},
            {"lc1", {params.lc1}}, {"lc2", {params.lc2}}, {"Ic1", {params.Ic1}},        {"Ic2", {params.Ic2}},
            {"b1", {params.b1}},   {"b2", {params.b2}},   {"gravity", {params.gravity}}};
  }
};

}  // namespace knot::problems::models
