#include "knot/problems/models/manipulator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "knot/problems/dual.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/problems/robot/dynamics.hpp"
#include "knot/problems/robot/step_hessian.hpp"

namespace knot::problems {
namespace {

constexpr int kW = Manipulator::kSecondOrderWidth;
using D = Dual<double, Tangent<double, kW>>;

// The scratch of the second-order evaluations, sized for the robot at make_data.
struct SecondOrderScratch {
  robot::Workspace<D> ws;
  std::vector<D> duals;      // robot::step_hessian_duals(n) (the frame curvature takes 4 n of them)
  std::vector<double> G;     // the raw sum of the columns, before the mirrored pairs are averaged
  std::vector<double> work;  // robot::step_hessian_doubles(n): RK4's stage derivatives
};

struct ManipulatorData final : ModelData {
  robot::Workspace<double> ws;
  std::unique_ptr<SecondOrderScratch> second;
};

robot::Workspace<double>& workspace(ModelData& data) { return static_cast<ManipulatorData&>(data).ws; }
SecondOrderScratch& second_order(ModelData& data) { return *static_cast<ManipulatorData&>(data).second; }

// Adds the average of G's mirrored pairs to H's (G n x n, ld n; H ld ldh): equal numbers to H(i, j)
// and H(j, i), which keeps a symmetric H symmetric bit for bit.
void add_symmetrized(int n, const double* G, double* H, int ldh) {
  for (int j = 0; j < n; ++j) {
    H[j + std::size_t(j) * ldh] += G[j + std::size_t(j) * n];
    for (int i = j + 1; i < n; ++i) {
      const double v = 0.5 * (G[i + std::size_t(j) * n] + G[j + std::size_t(i) * n]);
      H[i + std::size_t(j) * ldh] += v;
      H[j + std::size_t(i) * ldh] += v;
    }
  }
}

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

std::unique_ptr<ModelData> Manipulator::make_data() const {
  auto d = std::make_unique<ManipulatorData>();
  const int n = robot_.data.n, nw = 3 * n;
  d->second = std::make_unique<SecondOrderScratch>();
  SecondOrderScratch& s = *d->second;
  s.duals.assign(robot::step_hessian_duals(n), D{});
  s.G.assign(std::size_t(nw) * nw, 0.0);
  s.work.assign(robot::step_hessian_doubles(n), 0.0);
  return d;
}

void Manipulator::dynamics(ModelData& data, const double* x, const double* u, double* f) const {
  const int n = robot_.data.n;
  for (int i = 0; i < n; ++i) f[i] = x[n + i];
  robot::forward_dynamics(robot_.data, x, x + n, u, f + n, workspace(data));
}

void Manipulator::dynamics_jacobian(ModelData& data, const double* x, const double* u, double* f, double* fx,
                                    double* fu) const {
  robot::state_jacobian(robot_.data, x, u, f, fx, fu, workspace(data));
}

// robot::step_hessian (step_hessian.hpp), which the device path runs too.
SecondOrderStatus Manipulator::step_hessian(ModelData& data, IntegratorType type, const double* x, const double* u,
                                            double dt, const double* lambda, double* H) const {
  SecondOrderScratch& s = second_order(data);
  return robot::step_hessian<kW>(robot_.data, type, x, u, dt, lambda, H, s.G.data(), s.ws, s.duals.data(),
                                 workspace(data), s.work.data());
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

// The point Jacobian on duals seeded with the joint directions q_j0.., kW at a time: component k
// of J(a, j)'s tangent is d2p_a / dq_j dq_(j0 + k). The velocities do not move the point.
bool Manipulator::add_frame_curvature(ModelData& data, const double* x, int frame, const std::array<double, 3>& offset,
                                      const double* c, double* H, int ldh) const {
  const robot::Frame& f = robot_.frames.at(static_cast<std::size_t>(frame));
  const robot::RobotData& r = robot_.data;
  const int n = r.n;
  SecondOrderScratch& s = second_order(data);
  D in_body[3];
  for (int k = 0; k < 3; ++k)
    in_body[k] = D(f.p[k] + f.R[k] * offset[0] + f.R[k + 3] * offset[1] + f.R[k + 6] * offset[2]);
  D* q = s.duals.data();
  D* J = q + n;            // 3 x n, ld 3
  double* G = s.G.data();  // n x n, ld n
  for (int j0 = 0; j0 < n; j0 += kW) {
    const int w = std::min(kW, n - j0);
    for (int i = 0; i < n; ++i) q[i] = D(x[i]);
    for (int k = 0; k < w; ++k) q[j0 + k].d[k] = 1.0;
    robot::forward_kinematics(r, q, s.ws);
    D p[3];
    robot::point_position(s.ws, f.body, in_body, p);
    robot::point_jacobian(r, s.ws, f.body, p, J, 3);
    for (int j = 0; j < n; ++j) {
      const D* col = J + 3 * std::size_t(j);
      for (int k = 0; k < w; ++k)
        G[j + std::size_t(j0 + k) * n] = c[0] * col[0].d[k] + c[1] * col[1].d[k] + c[2] * col[2].d[k];
    }
  }
  add_symmetrized(n, G, H, ldh);
  return true;
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
