// Quadrotor: a rigid body lifted by four rotors in a "+" layout, as Drake's QuadrotorPlant
// (examples/quadrotor) models it, but with body angular rates as the last three states.
//
//   x = [x, y, z,  roll, pitch, yaw,  xdot, ydot, zdot,  p, q, r]
//       world position (m); Z-Y-X Euler angles, R = Rz(yaw) Ry(pitch) Rx(roll) (rad); world
//       velocity (m/s); body angular velocity in body axes (rad/s). World z is up.
//   u = [T0, T1, T2, T3]  rotor thrusts (N) along body z; rotor 0 on the +x arm, 1 on +y, 2 on -x,
//       3 on -y; rotors 0 and 2 spin so that their drag torque is +z.
//   position'  = velocity
//   euler'     = E(roll, pitch)^-1 omega:
//                roll'  = p + (q sin(roll) + r cos(roll)) tan(pitch)
//                pitch' = q cos(roll) - r sin(roll)
//                yaw'   = (q sin(roll) + r cos(roll)) / cos(pitch)    (singular at pitch = +-pi/2)
//   velocity'  = R [0; 0; T0 + T1 + T2 + T3] / mass - [0; 0; gravity]
//   omega'     = J^-1 (tau - omega x J omega),  J = diag(inertia),
//                tau = [L (T1 - T3), L (T2 - T0), kM (T0 - T1 + T2 - T3)]
//   nq = 6 (q = [position; euler], v = [velocity; omega]; q' depends on v through E^-1)
//
// Parameters: mass 0.775 kg, arm_length L 0.15 m, inertia [0.0015, 0.0025, 0.0035] kg m^2, kM
// 0.0245 m (yaw torque per newton of thrust), gravity 9.81 m/s^2: Drake's QuadrotorPlant defaults
// (the mass and inertia of its examples/quadrotor/quadrotor.urdf, a Skydio 2; thrust coefficient kF
// = 1, so u is thrust). Hover: every rotor at mass gravity / 4.
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "knot/linalg/config.hpp"
#include "knot/problems/model.hpp"

namespace knot::problems::models {

struct Quadrotor {
  struct Params {
    double mass = 0.775;
    double arm_length = 0.15;
    double inertia[3] = {0.0015, 0.0025, 0.0035};
    double kM = 0.0245;
    double gravity = 9.81;
  };
  Params params;

  static constexpr std::string_view kType = "quadrotor";
  static constexpr int kNw = 16;  // nx + nu at compile time: one second-order width to build
  KNOT_HD int nx() const { return 12; }
  KNOT_HD int nu() const { return 4; }
  KNOT_HD int nq() const { return 6; }

  template <class S>
  KNOT_HD void dynamics(const S* x, const S* u, S* f) const {
    using std::cos;
    using std::sin;
    using std::tan;
    const S sr = sin(x[3]), cr = cos(x[3]);
    const S sp = sin(x[4]), cp = cos(x[4]);
    const S sy = sin(x[5]), cy = cos(x[5]);
    const S p = x[9], q = x[10], r = x[11];

    for (int i = 0; i < 3; ++i) f[i] = x[6 + i];

    const S qr = q * sr + r * cr;
    f[3] = p + qr * tan(x[4]);
    f[4] = q * cr - r * sr;
    f[5] = qr / cp;

    // Thrust acts along the body z axis, the third column of R.
    const S thrust_per_mass = (u[0] + u[1] + u[2] + u[3]) / S(params.mass);
    f[6] = (cy * sp * cr + sy * sr) * thrust_per_mass;
    f[7] = (sy * sp * cr - cy * sr) * thrust_per_mass;
    f[8] = cp * cr * thrust_per_mass - S(params.gravity);

    const S L = S(params.arm_length);
    const S Jx = S(params.inertia[0]), Jy = S(params.inertia[1]), Jz = S(params.inertia[2]);
    const S tx = L * (u[1] - u[3]);
    const S ty = L * (u[2] - u[0]);
    const S tz = S(params.kM) * (u[0] - u[1] + u[2] - u[3]);
    // Euler's equations with a diagonal inertia: J omega' = tau - omega x (J omega).
    f[9] = (tx - (Jz - Jy) * q * r) / Jx;
    f[10] = (ty - (Jx - Jz) * r * p) / Jy;
    f[11] = (tz - (Jy - Jx) * p * q) / Jz;
  }

  std::vector<std::string> state_names() const {
    return {"x", "y", "z", "roll", "pitch", "yaw", "xdot", "ydot", "zdot", "p", "q", "r"};
  }
  std::vector<std::string> control_names() const { return {"T0", "T1", "T2", "T3"}; }
  std::vector<ModelParameter> parameters() const {
    return {{"mass", {params.mass}},
            {"arm_length", {params.arm_length}},
            {"inertia", {params.inertia[0], params.inertia[1], params.inertia[2]}},
            {"kM", {params.kM}},
            {"gravity", {params.gravity}}};
  }
};

}  // namespace knot::problems::models
