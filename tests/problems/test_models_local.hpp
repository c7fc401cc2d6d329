// Test-local models with hand-written analytic Jacobians, independent of the model registry, and
// the finite-difference reference every problem-layer derivative is checked against.
//   Pendulum      theta' = w, w' = -a sin(theta) - b w + c u                    (nq = 1)
//   Nonlinear3    a 3-state, 2-control system with products, sin and squares   (nq = 0)
//   LinearModel   x' = A x + B u (or x+ = A x + B u when discrete), optional nq and planar position
//   Arm2          planar 2-link arm in the x-z plane, x = [q1, q2, v1, v2], with Kinematics
#pragma once

#include <Eigen/Dense>
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "knot/problems/model.hpp"
#include "test_util.hpp"

namespace knot::test {

struct LocalData final : problems::ModelData {};

// Column-major Eigen maps of raw model outputs.
inline void put(const Mat& m, double* out) {
  if (out != nullptr) Eigen::Map<Mat>(out, m.rows(), m.cols()) = m;
}

class Pendulum final : public problems::Model {
 public:
  Pendulum(double a = 9.81, double b = 0.3, double c = 1.0) : a_(a), b_(b), c_(c) {}
  std::string_view type() const override { return "local_pendulum"; }
  int nx() const override { return 2; }
  int nu() const override { return 1; }
  int nq() const override { return 1; }
  std::unique_ptr<problems::ModelData> make_data() const override { return std::make_unique<LocalData>(); }
  void dynamics(problems::ModelData&, const double* x, const double* u, double* f) const override {
    f[0] = x[1];
    f[1] = -a_ * std::sin(x[0]) - b_ * x[1] + c_ * u[0];
  }
  void dynamics_jacobian(problems::ModelData& d, const double* x, const double* u, double* f, double* fx,
                         double* fu) const override {
    dynamics(d, x, u, f);
    fx[0] = 0;
    fx[1] = -a_ * std::cos(x[0]);
    fx[2] = 1;
    fx[3] = -b_;
    fu[0] = 0;
    fu[1] = c_;
  }
  // Energy per unit inertia of the frictionless pendulum (b = 0, u = 0): conserved by the flow.
  double energy(const double* x) const { return 0.5 * x[1] * x[1] - a_ * std::cos(x[0]); }

 private:
  double a_, b_, c_;
};

class Nonlinear3 final : public problems::Model {
 public:
  std::string_view type() const override { return "local_nonlinear3"; }
  int nx() const override { return 3; }
  int nu() const override { return 2; }
  std::unique_ptr<problems::ModelData> make_data() const override { return std::make_unique<LocalData>(); }
  void dynamics(problems::ModelData&, const double* x, const double* u, double* f) const override {
    f[0] = -x[0] + x[1] * x[2] + u[0];
    f[1] = std::sin(x[0]) - 0.5 * x[1] + x[2] * u[1];
    f[2] = 0.3 * x[1] * x[1] - 2 * x[2] + u[0] * u[1];
  }
  void dynamics_jacobian(problems::ModelData& d, const double* x, const double* u, double* f, double* fx,
                         double* fu) const override {
    dynamics(d, x, u, f);
    Mat A(3, 3), B(3, 2);
    A << -1, x[2], x[1], std::cos(x[0]), -0.5, u[1], 0, 0.6 * x[1], -2;
    B << 1, 0, 0, x[2], u[1], u[0];
    put(A, fx);
    put(B, fu);
  }
};

class LinearModel final : public problems::Model {
 public:
  LinearModel(Mat A, Mat B, int nq = 0, bool discrete = false,
              std::optional<std::array<int, 2>> planar = std::nullopt)
      : A_(std::move(A)), B_(std::move(B)), nq_(nq), discrete_(discrete), planar_(planar) {}
  std::string_view type() const override { return "local_linear"; }
  int nx() const override { return static_cast<int>(A_.rows()); }
  int nu() const override { return static_cast<int>(B_.cols()); }
  int nq() const override { return nq_; }
  bool discrete_time() const override { return discrete_; }
  std::optional<std::array<int, 2>> planar_position() const override { return planar_; }
  std::unique_ptr<problems::ModelData> make_data() const override { return std::make_unique<LocalData>(); }
  // Plain loops: the no-allocation test evaluates this model.
  void dynamics(problems::ModelData&, const double* x, const double* u, double* f) const override {
    for (int i = 0; i < nx(); ++i) {
      double s = 0;
      for (int j = 0; j < nx(); ++j) s += A_(i, j) * x[j];
      for (int j = 0; j < nu(); ++j) s += B_(i, j) * u[j];
      f[i] = s;
    }
  }
  void dynamics_jacobian(problems::ModelData& d, const double* x, const double* u, double* f, double* fx,
                         double* fu) const override {
    dynamics(d, x, u, f);
    for (int j = 0; j < nx(); ++j)
      for (int i = 0; i < nx(); ++i) fx[i + j * nx()] = A_(i, j);
    for (int j = 0; j < nu(); ++j)
      for (int i = 0; i < nx(); ++i) fu[i + j * nx()] = B_(i, j);
  }
  const Mat& A() const { return A_; }
  const Mat& B() const { return B_; }

 private:
  Mat A_, B_;
  int nq_;
  bool discrete_;
  std::optional<std::array<int, 2>> planar_;
};

// Frames: 0 = upper link (at the base, angle q1), 1 = forearm (at the elbow, angle q1 + q2). A
// frame at angle phi has its x axis along (cos phi, 0, sin phi), y = world y, z = (-sin phi, 0, cos phi).
class Arm2Kinematics final : public problems::Kinematics {
 public:
  Arm2Kinematics(double l1, int nx) : l1_(l1), nx_(nx) {}
  int frame_count() const override { return 2; }
  std::string frame_name(int frame) const override { return frame == 0 ? "upper" : "fore"; }
  std::optional<int> frame_index(std::string_view name) const override {
    if (name == "upper") return 0;
    if (name == "fore") return 1;
    return std::nullopt;
  }
  void frame_position(problems::ModelData&, const double* x, int frame, const std::array<double, 3>& o, double* p,
                      double* J) const override {
    const double q1 = x[0], phi = frame == 0 ? x[0] : x[0] + x[1];
    const double c = std::cos(phi), s = std::sin(phi);
    // p = origin + ox (c, 0, s) + oy (0, 1, 0) + oz (-s, 0, c); dp/dphi = ox (-s, 0, c) + oz (-c, 0, -s).
    const double ox = frame == 0 ? 0.0 : l1_ * std::cos(q1), oz = frame == 0 ? 0.0 : l1_ * std::sin(q1);
    p[0] = ox + o[0] * c - o[2] * s;
    p[1] = o[1];
    p[2] = oz + o[0] * s + o[2] * c;
    if (J == nullptr) return;
    for (int e = 0; e < 3 * nx_; ++e) J[e] = 0;
    const double dx = -o[0] * s - o[2] * c, dz = o[0] * c - o[2] * s;
    // Column q1: the frame angle and (forearm) the elbow move; column q2: the forearm angle only.
    J[0] = dx + (frame == 0 ? 0.0 : -l1_ * std::sin(q1));
    J[2] = dz + (frame == 0 ? 0.0 : l1_ * std::cos(q1));
    if (frame == 1) {
      J[3] = dx;
      J[5] = dz;
    }
  }

 private:
  double l1_;
  int nx_;
};

class Arm2 final : public problems::Model {
 public:
  Arm2() : kin_(0.7, 4) {}
  std::string_view type() const override { return "local_arm2"; }
  int nx() const override { return 4; }
  int nu() const override { return 2; }
  int nq() const override { return 2; }
  const problems::Kinematics* kinematics() const override { return &kin_; }
  std::unique_ptr<problems::ModelData> make_data() const override { return std::make_unique<LocalData>(); }
  // q'' = u - 0.5 q' - (2 cos q1, cos(q1 + q2)): a damped arm with a gravity-like load.
  void dynamics(problems::ModelData&, const double* x, const double* u, double* f) const override {
    f[0] = x[2];
    f[1] = x[3];
    f[2] = u[0] - 0.5 * x[2] - 2 * std::cos(x[0]);
    f[3] = u[1] - 0.5 * x[3] - std::cos(x[0] + x[1]);
  }
  void dynamics_jacobian(problems::ModelData& d, const double* x, const double* u, double* f, double* fx,
                         double* fu) const override {
    dynamics(d, x, u, f);
    for (int e = 0; e < 16; ++e) fx[e] = 0;
    for (int e = 0; e < 8; ++e) fu[e] = 0;
    fx[0 + 2 * 4] = 1;
    fx[1 + 3 * 4] = 1;
    const double s12 = std::sin(x[0] + x[1]);
    fx[2 + 0 * 4] = 2 * std::sin(x[0]);
    fx[2 + 2 * 4] = -0.5;
    fx[3 + 0 * 4] = s12;
    fx[3 + 1 * 4] = s12;
    fx[3 + 3 * 4] = -0.5;
    fu[2 + 0 * 4] = 1;
    fu[3 + 1 * 4] = 1;
  }

 private:
  Arm2Kinematics kin_;
};

// Central differences of F: R^n -> R^m (F writes m values) at x, with the scale-aware step
// h_j = 1e-5 max(1, |x_j|): truncation O(h^2) and rounding O(eps / h) both stay near 1e-10.
inline Mat fd_jacobian(const std::function<void(const Vec&, Vec&)>& F, const Vec& x, int m) {
  Mat J(m, x.size());
  Vec xp = x, fp(m), fm(m);
  for (int j = 0; j < x.size(); ++j) {
    const double h = 1e-5 * std::max(1.0, std::abs(x(j)));
    xp(j) = x(j) + h;
    F(xp, fp);
    xp(j) = x(j) - h;
    F(xp, fm);
    xp(j) = x(j);
    J.col(j) = (fp - fm) / (2 * h);
  }
  return J;
}

}  // namespace knot::test
