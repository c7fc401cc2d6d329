// Fixed-base manipulator from a URDF file: a tree of revolute, continuous, prismatic and fixed
// joints (robot/urdf.hpp says what a file may contain). State x = [q; qd] over every moving joint
// in the reader's depth-first order (nq = number of moving joints), control u = joint efforts.
// Parameters: urdf (path), gravity (3-vector, m/s^2, default [0, 0, -9.81]), ee_frame (link name,
// default the single leaf of the link tree): the frame end-effector terms read when they name none.
//
//   q' = qd,   qd' = qdd = M(q)^-1 (u - c(q, qd))      (robot/dynamics.hpp; joint damping ignored)
//   fx = [[0, I], [dqdd/dq, dqdd/dqd]],   fu = [[0], [M^-1]]   (analytic RNEA derivatives)
// When M(q) cannot be factored (not finite), f and the Jacobians come back NaN, which the
// integrator reports as a status.
//
// Second order, exact to rounding, by forward mode over the analytic first derivatives, on dual
// numbers carrying kSecondOrderWidth unit directions at a time through the templated derivative
// sweep and mass-matrix Cholesky (robot::step_hessian, step_hessian.hpp, shared with the device
// path): the Hessian of mu' qdd from its contracted gradient (one solve with mu instead of M^-1 and
// its products), once for the Euler family and at each of RK4's four stage points, chained there
// by the stage Jacobians. The mirrored pairs are then averaged, so the Hessian is symmetric bit for
// bit. Frame curvature (add_frame_curvature) differentiates the point Jacobian the same way.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "knot/problems/model.hpp"
#include "knot/problems/params.hpp"
#include "knot/problems/robot/urdf.hpp"

namespace knot::problems {

// The registry's factory for type "manipulator"; throws ProblemError on a bad file or parameter.
std::shared_ptr<const Model> make_manipulator(const ParamReader& params);

// Frames are the URDF links that are modeled (robot::RobotModel::frames), by link name.
class Manipulator final : public Model, public Kinematics {
 public:
  explicit Manipulator(robot::RobotModel robot);

  const robot::RobotModel& robot() const { return robot_; }

  std::string_view type() const override { return "manipulator"; }
  int nx() const override { return 2 * robot_.data.n; }
  int nu() const override { return robot_.data.n; }
  int nq() const override { return robot_.data.n; }
  bool velocity_rows() const override { return true; }
  std::vector<std::string> state_names() const override;    // q_<joint>..., qd_<joint>...
  std::vector<std::string> control_names() const override;  // tau_<joint>...

  std::unique_ptr<ModelData> make_data() const override;
  void dynamics(ModelData& data, const double* x, const double* u, double* f) const override;
  void dynamics_jacobian(ModelData& data, const double* x, const double* u, double* f, double* fx,
                         double* fu) const override;
  // Euler, semi-implicit Euler and RK4; Unsupported for the implicit schemes.
  SecondOrderStatus step_hessian(ModelData& data, IntegratorType type, const double* x, const double* u, double dt,
                                 const double* lambda, double* H) const override;

  const Kinematics* kinematics() const override { return this; }
  // q within the URDF position limits, |qd| within the velocity limits, |u| within the effort limits.
  ModelLimits limits() const override;
  std::vector<std::string> warnings() const override { return robot_.warnings; }
  // urdf (the path as resolved), gravity, ee_frame (the link end-effector terms read by default).
  std::vector<ModelParameter> parameters() const override;

  int frame_count() const override { return static_cast<int>(robot_.frames.size()); }
  std::string frame_name(int frame) const override;
  std::optional<int> frame_index(std::string_view name) const override;
  int default_frame() const override { return robot_.ee_frame; }
  void frame_position(ModelData& data, const double* x, int frame, const std::array<double, 3>& offset, double* p,
                      double* J) const override;
  bool add_frame_curvature(ModelData& data, const double* x, int frame, const std::array<double, 3>& offset,
                           const double* c, double* H, int ldh) const override;

  // Directions per dual sweep of the second-order evaluations: 16 takes the step Hessian's 2 nq
  // state directions in one sweep up to nq = 8 (the 7-joint arm's exact iterations took 1.1x the
  // time in two sweeps of 8, docs/BENCHMARKS.md). Each direction is a lane of its own, so the width
  // changes no bit of the result (the device path sweeps 8 at a time, device/hessian.hpp).
  static constexpr int kSecondOrderWidth = 16;

 private:
  robot::RobotModel robot_;
};

}  // namespace knot::problems
