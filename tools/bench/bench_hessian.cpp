// The manipulator's exact second-order terms (issue 14) on the iiwa14 (nx + nu = 21): the closed
// form by forward mode over the analytic first derivatives against the central differences of the
// analytic gradient that the SQP's exact Hessian used before (2 (nx + nu) step Jacobians).
//   StepHessian        lambda' d2F of one integrator step (euler, semi_implicit_euler, rk4)
//   FrameCurvature     sum_a c_a d2p_a of the end-effector point (an end_effector cost's or
//                      constraint's curvature)
//   StepHessianWidth   robot::step_hessian's dual sweeps at 8 directions a sweep (the device
//                      path's width) and at Manipulator::kSecondOrderWidth (the host's), side by
//                      side, compiled with manipulator.cpp's flags (tools/bench/CMakeLists.txt)
// Each at one fixed point inside the joint limits; microseconds per evaluation.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "knot/problems/integrator.hpp"
#include "knot/problems/models/manipulator.hpp"
#include "knot/problems/params.hpp"
#include "knot/problems/robot/step_hessian.hpp"
#include "knot/problems/robot/urdf.hpp"
#include "source_tree.hpp"

namespace {

using namespace knot::problems;

std::shared_ptr<const Model> iiwa() {
  ParamMap params("model.params");
  params.set("urdf", std::string(knot::source_tree::configs_dir()) + "/robots/iiwa14_iiwa_grid.urdf");
  return make_manipulator(params);
}

// w = (q, qd, tau) and lambda with entries of every sign and moderate size.
struct Point {
  std::vector<double> w, lambda;
  explicit Point(const Model& m) {
    const int nx = m.nx(), nw = nx + m.nu();
    for (int i = 0; i < nw; ++i) w.push_back(0.3 * std::sin(1.7 * i + 0.4) + (i >= nx ? 2.0 * std::cos(i) : 0.0));
    for (int i = 0; i < nx; ++i) lambda.push_back(std::cos(0.9 * i) * 5.0);
  }
};

constexpr IntegratorType kSchemes[] = {IntegratorType::Euler, IntegratorType::SemiImplicitEuler, IntegratorType::Rk4};

void BM_StepHessianClosedForm(benchmark::State& state) {
  const auto m = iiwa();
  const IntegratorType type = kSchemes[state.range(0)];
  const Integrator in(*m, type);
  auto data = m->make_data();
  const Point pt(*m);
  const int nx = m->nx(), nw = nx + m->nu();
  std::vector<double> H(std::size_t(nw) * nw);
  for (auto _ : state) {
    if (in.step_hessian(*data, pt.w.data(), pt.w.data() + nx, 0.01, pt.lambda.data(), H.data()) !=
        SecondOrderStatus::Ok) {
      state.SkipWithError("step_hessian failed");
      return;
    }
    benchmark::DoNotOptimize(H.data());
  }
  state.SetLabel(std::string(to_string(type)));
}

// As the solver's differenced_hessian: column j from the gradients [A' lambda; B' lambda] at
// w +- h e_j, h = eps^(1/3) max(1, |w_j|), then symmetrized.
void BM_StepHessianDifferenced(benchmark::State& state) {
  const auto m = iiwa();
  const IntegratorType type = kSchemes[state.range(0)];
  Integrator in(*m, type);
  auto data = m->make_data();
  const Point pt(*m);
  const int nx = m->nx(), nu = m->nu(), nw = nx + nu;
  std::vector<double> w = pt.w, y(nx), A(std::size_t(nx) * nx), B(std::size_t(nx) * nu), gp(nw), gm(nw),
                      H(std::size_t(nw) * nw);
  const auto gradient = [&](double* g) {
    if (in.step_jacobian(*data, w.data(), w.data() + nx, 0.01, y.data(), A.data(), B.data()) != IntegratorStatus::Ok)
      return false;
    for (int j = 0; j < nw; ++j) {
      const double* col = j < nx ? A.data() + std::size_t(j) * nx : B.data() + std::size_t(j - nx) * nx;
      double s = 0;
      for (int i = 0; i < nx; ++i) s += col[i] * pt.lambda[i];
      g[j] = s;
    }
    return true;
  };
  const double scale = std::cbrt(std::numeric_limits<double>::epsilon());
  for (auto _ : state) {
    for (int j = 0; j < nw; ++j) {
      const double wj = w[j], h = scale * std::max(1.0, std::abs(wj));
      w[j] = wj + h;
      bool ok = gradient(gp.data());
      w[j] = wj - h;
      ok = gradient(gm.data()) && ok;
      w[j] = wj;
      if (!ok) {
        state.SkipWithError("step_jacobian failed");
        return;
      }
      for (int i = 0; i < nw; ++i) H[i + std::size_t(j) * nw] = (gp[i] - gm[i]) / (2 * h);
    }
    for (int j = 0; j < nw; ++j)
      for (int i = j + 1; i < nw; ++i) {
        const double v = 0.5 * (H[i + std::size_t(j) * nw] + H[j + std::size_t(i) * nw]);
        H[i + std::size_t(j) * nw] = H[j + std::size_t(i) * nw] = v;
      }
    benchmark::DoNotOptimize(H.data());
  }
  state.SetLabel(std::string(to_string(type)));
}

void schemes(benchmark::internal::Benchmark* b) {
  b->ArgName("scheme");
  for (int s = 0; s < 3; ++s) b->Arg(s);
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_StepHessianClosedForm)->Apply(schemes);
BENCHMARK(BM_StepHessianDifferenced)->Apply(schemes);

// The same evaluation on the robot's data directly, W directions a sweep: the arm's 14 state
// directions in two sweeps at W = 8, in one at the host's 16.
template <int W>
void BM_StepHessianWidth(benchmark::State& state) {
  using D = Dual<double, Tangent<double, W>>;
  const robot::RobotModel robot =
      robot::load_urdf(std::string(knot::source_tree::configs_dir()) + "/robots/iiwa14_iiwa_grid.urdf");
  const auto m = iiwa();
  const IntegratorType type = kSchemes[state.range(0)];
  const Point pt(*m);
  const int n = robot.data.n, nx = 2 * n, nw = 3 * n;
  auto ws = std::make_unique<robot::Workspace<D>>();
  auto wd = std::make_unique<robot::Workspace<double>>();
  std::vector<D> duals(robot::step_hessian_duals(n));
  std::vector<double> G(std::size_t(nw) * nw), work(robot::step_hessian_doubles(n)), H(std::size_t(nw) * nw);
  for (auto _ : state) {
    if (robot::step_hessian<W>(robot.data, type, pt.w.data(), pt.w.data() + nx, 0.01, pt.lambda.data(), H.data(),
                               G.data(), *ws, duals.data(), *wd, work.data()) != SecondOrderStatus::Ok) {
      state.SkipWithError("step_hessian failed");
      return;
    }
    benchmark::DoNotOptimize(H.data());
  }
  state.SetLabel(std::string(to_string(type)) + ", width " + std::to_string(W));
}

BENCHMARK(BM_StepHessianWidth<8>)->Apply(schemes);
static_assert(Manipulator::kSecondOrderWidth == 16, "the host's width is the second row");
BENCHMARK(BM_StepHessianWidth<16>)->Apply(schemes);

constexpr std::array<double, 3> kOffset = {0.0, 0.0, 0.05};
constexpr double kWeights[3] = {3.0, -2.0, 1.5};

void BM_FrameCurvatureClosedForm(benchmark::State& state) {
  const auto m = iiwa();
  const Kinematics& k = *m->kinematics();
  auto data = m->make_data();
  const Point pt(*m);
  const int nx = m->nx();
  std::vector<double> H(std::size_t(nx) * nx);
  for (auto _ : state) {
    std::fill(H.begin(), H.end(), 0.0);
    k.add_frame_curvature(*data, pt.w.data(), k.default_frame(), kOffset, kWeights, H.data(), nx);
    benchmark::DoNotOptimize(H.data());
  }
}

// Central differences of c' J(x), J = dp/dx from frame_position.
void BM_FrameCurvatureDifferenced(benchmark::State& state) {
  const auto m = iiwa();
  const Kinematics& k = *m->kinematics();
  auto data = m->make_data();
  const Point pt(*m);
  const int nx = m->nx();
  std::vector<double> x(pt.w.begin(), pt.w.begin() + nx), J(3 * std::size_t(nx)), gp(nx), gm(nx),
      H(std::size_t(nx) * nx);
  const auto gradient = [&](double* g) {
    double p[3];
    k.frame_position(*data, x.data(), k.default_frame(), kOffset, p, J.data());
    for (int j = 0; j < nx; ++j)
      g[j] = kWeights[0] * J[3 * j] + kWeights[1] * J[3 * j + 1] + kWeights[2] * J[3 * j + 2];
  };
  const double scale = std::cbrt(std::numeric_limits<double>::epsilon());
  for (auto _ : state) {
    for (int j = 0; j < nx; ++j) {
      const double xj = x[j], h = scale * std::max(1.0, std::abs(xj));
      x[j] = xj + h;
      gradient(gp.data());
      x[j] = xj - h;
      gradient(gm.data());
      x[j] = xj;
      for (int i = 0; i < nx; ++i) H[i + std::size_t(j) * nx] = (gp[i] - gm[i]) / (2 * h);
    }
    benchmark::DoNotOptimize(H.data());
  }
}

BENCHMARK(BM_FrameCurvatureClosedForm)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FrameCurvatureDifferenced)->Unit(benchmark::kMicrosecond);

}  // namespace
