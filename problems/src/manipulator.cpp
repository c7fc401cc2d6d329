#include "knot/problems/models/manipulator.hpp"

#include <limits>

#include "knot/problems/error.hpp"
#include "knot/problems/robot/dynamics.hpp"

namespace knot::problems {
namespace {

struct ManipulatorData final : ModelData {
  robot::Workspace<double> ws;
};

robot::Workspace<double>& workspace(ModelData& data) { return static_cast<ManipulatorData&>(data).ws; }

}  // namespace

Manipulator::Manipulator(robot::RobotModel robot) : robot_(std::move(robot)) {}

std::vector<std::string> Manipulator::state_names() const {
  std::vector<std::string> names;
  for (const auto& j : robot_.joint_names) names.push_back("q_" + j);
  for (const auto& j : robot_.joint_names) names.push_back("qd_" + j);
  return names;
}

std::vector<std::string> Manipulator::control_names() const {
  std::vector<std::string> names;
  for (const auto& j : robot_.joint_names) names.push_back("tau_" + j);
  return names;
}

std::unique_ptr<ModelData> Manipulator::make_data() const { return std::make_unique<ManipulatorData>(); }

void Manipulator::dynamics(ModelData& data, const double* x, const double* u, double* f) const {
  const int n = robot_.data.n;
  for (int i = 0; i < n; ++i) f[i] = x[n + i];
  robot::forward_dynamics(robot_.data, x, x + n, u, f + n, workspace(data));
}

void Manipulator::dynamics_jacobian(ModelData& data, const double* x, const double* u, double* f, double* fx,
                                    double* fu) const {
  const int n = robot_.data.n, nx = 2 * n;
  for (int i = 0; i < n; ++i) f[i] = x[n + i];
  for (int k = 0; k < nx * nx; ++k) fx[k] = 0.0;
  for (int k = 0; k < nx * n; ++k) fu[k] = 0.0;
  for (int i = 0; i < n; ++i) fx[i + (n + i) * nx] = 1.0;
  // The lower blocks are written in place: dqdd/dq at rows n.., columns 0..; dqdd/dqd at columns n...
  robot::forward_dynamics_derivatives(robot_.data, x, x + n, u, f + n, fx + n, fx + n + n * nx, fu + n, nx,
                                      workspace(data));
}

ModelLimits Manipulator::limits() const {
  const robot::RobotData& d = robot_.data;
  const int n = d.n;
  ModelLimits lim;
  lim.x_lower.resize(2 * n);
  lim.x_upper.resize(2 * n);
  lim.u_lower.resize(n);
  lim.u_upper.resize(n);
  for (int i = 0; i < n; ++i) {
    lim.x_lower[i] = d.q_lower[i];
    lim.x_upper[i] = d.q_upper[i];
    lim.x_lower[n + i] = -d.velocity_limit[i];
    lim.x_upper[n + i] = d.velocity_limit[i];
    lim.u_lower[i] = -d.effort_limit[i];
    lim.u_upper[i] = d.effort_limit[i];
  }
  return lim;
}

std::vector<ModelParameter> Manipulator::parameters() const {
  const double* g = robot_.data.gravity;
  std::vector<ModelParameter> out = {{"urdf", {}, robot_.file}, {"gravity", {g[0], g[1], g[2]}, {}}};
  if (robot_.ee_frame >= 0) out.push_back({"ee_frame", {}, frame_name(robot_.ee_frame)});
  return out;
}

std::string Manipulator::frame_name(int frame) const {
  return robot_.frames.at(static_cast<std::size_t>(frame)).name;
}

std::optional<int> Manipulator::frame_index(std::string_view name) const {
  for (std::size_t k = 0; k < robot_.frames.size(); ++k)
    if (robot_.frames[k].name == name) return static_cast<int>(k);
  return std::nullopt;
}

void Manipulator::frame_position(ModelData& data, const double* x, int frame, const std::array<double, 3>& offset,
                                 double* p, double* J) const {
  const robot::Frame& f = robot_.frames.at(static_cast<std::size_t>(frame));
  const int n = robot_.data.n;
  robot::Workspace<double>& w = workspace(data);
  // The point in body coordinates: the link frame's placement applied to the offset.
  double in_body[3];
  for (int k = 0; k < 3; ++k) in_body[k] = f.p[k] + f.R[k] * offset[0] + f.R[k + 3] * offset[1] + f.R[k + 6] * offset[2];
  robot::forward_kinematics(robot_.data, x, w);
  robot::point_position(w, f.body, in_body, p);
  if (J == nullptr) return;
  for (int k = 0; k < 3 * 2 * n; ++k) J[k] = 0.0;
  robot::point_jacobian(robot_.data, w, f.body, p, J, 3);
}

std::shared_ptr<const Model> make_manipulator(const ParamReader& params) {
  const std::string path = params.path("urdf");
  const std::vector<double> gravity = params.vector("gravity", {0.0, 0.0, -9.81}, 3);
  const std::string ee_frame = params.string("ee_frame", "");
  robot::RobotModel robot;
  try {
    robot = robot::load_urdf(path, ee_frame, "");
  } catch (const ProblemError& e) {
    // Re-raised through the reader, so the error carries the problem file's position and key path.
    params.fail(e.key_path() == "ee_frame" ? "ee_frame" : "urdf", e.expected(), e.found());
  }
  for (int k = 0; k < 3; ++k) robot.data.gravity[k] = gravity[static_cast<std::size_t>(k)];
  return std::make_shared<const Manipulator>(std::move(robot));
}

}  // namespace knot::problems
