// Expression models' tapes evaluated in device code (expression_device.cu) against the same
// evaluate<S>() on the CPU: f in double, the Jacobian by a Dual<Tangent<5>> sweep and every output's
// Hessian by HyperDual<5>, at random points of the cart-pole and the acrobot written as expressions
// (tests/data/expression). Agreement to 1e-13 relative, not bitwise: nvcc contracts a * b + c into
// fused multiply-adds, the host build does not.
//
// Without a usable GPU the device tests skip with one line saying why; the launcher's width check
// runs everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "expression_device.hpp"
#include "knot/linalg/cuda/device.hpp"
#include "knot/problems/loader.hpp"
#include "knot/problems/model_adapter.hpp"
#include "test_util.hpp"
#include "source_tree.hpp"

namespace knot::test {
namespace {

namespace fs = std::filesystem;
using problems::Dual, problems::ExprTape, problems::HyperDual, problems::Tangent;
constexpr int W = kDeviceExprWidth, kPacked = kDeviceExprPacked;

const linalg::cuda::DeviceInfo& gpu() {
  static const linalg::cuda::DeviceInfo info = linalg::cuda::query_device();
  return info;
}

struct Model {
  problems::Problem problem;
  ExprTape tape;
  int nx, nu;
};

Model load(const char* name) {
  Model m{problems::load_problem(fs::path(knot::source_tree::test_data_dir()) / "expression" / (std::string(name) + ".yaml")), {}, 0, 0};
  const auto& adapter = dynamic_cast<const problems::ModelAdapter<problems::ExpressionDynamics>&>(*m.problem.model);
  m.tape = adapter.model().tape;
  m.nx = m.problem.model->nx();
  m.nu = m.problem.model->nu();
  return m;
}

// The kernel's three evaluations, on the CPU.
DeviceExprResult evaluate_on_cpu(const Model& m, const std::vector<double>& w) {
  const int nx = m.nx, nu = m.nu, nw = nx + nu, points = int(w.size()) / nw;
  DeviceExprResult r;
  r.f.resize(std::size_t(points) * nx);
  r.J.resize(std::size_t(points) * nx * nw);
  r.H.resize(std::size_t(points) * nx * kPacked);
  using D = Dual<double, Tangent<double, W>>;
  using HD = HyperDual<W>;
  for (int p = 0; p < points; ++p) {
    const double* wp = w.data() + std::size_t(p) * nw;
    problems::evaluate(m.tape, wp, wp + nx, r.f.data() + std::size_t(p) * nx);
    std::vector<D> wd(nw), fd(nx);
    std::vector<HD> wh(nw), fh(nx);
    for (int j = 0; j < nw; ++j) {
      wd[j] = D(wp[j]);
      wd[j].d.e[j] = 1.0;
      wh[j] = HD(wp[j]);
      wh[j].g[j] = 1.0;
    }
    problems::evaluate(m.tape, wd.data(), wd.data() + nx, fd.data());
    problems::evaluate(m.tape, wh.data(), wh.data() + nx, fh.data());
    for (int j = 0; j < nw; ++j)
      for (int i = 0; i < nx; ++i) r.J[(std::size_t(p) * nw + j) * nx + i] = fd[i].d.e[j];
    for (int i = 0; i < nx; ++i)
      for (int q = 0; q < kPacked; ++q) r.H[(std::size_t(p) * nx + i) * kPacked + q] = fh[i].h[q];
  }
  return r;
}

// The largest |a - b| / (1 + |b|).
double worst(const std::vector<double>& a, const std::vector<double>& b) {
  double e = a.size() == b.size() ? 0.0 : kNaN;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    e = std::max(e, std::abs(a[i] - b[i]) / (1 + std::abs(b[i])));
  return e;
}

TEST(GpuExpression, TapeInDeviceCodeAgreesWithTheCpu) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  for (const char* name : {"cartpole_swingup", "acrobot_swingup"}) {
    SCOPED_TRACE(name);
    const Model m = load(name);
    ASSERT_EQ(m.nx + m.nu, W);
    Rng rng(18);
    const int points = 1000;
    std::vector<double> w(std::size_t(points) * W);
    for (double& v : w) v = rng.uniform(-3, 3);
    DeviceExprResult dev;
    ASSERT_EQ(evaluate_tape_on_device(m.tape, m.nx, m.nu, w, dev), "");
    const DeviceExprResult cpu = evaluate_on_cpu(m, w);
    EXPECT_LE(worst(dev.f, cpu.f), 1e-13);
    EXPECT_LE(worst(dev.J, cpu.J), 1e-13);
    EXPECT_LE(worst(dev.JL, cpu.J), 1e-13);  // the lanes' Jacobian, against the full sweeps
    EXPECT_LE(worst(dev.H, cpu.H), 1e-13);
    // The derivatives are not all zero (a kernel that wrote nothing would match a CPU that did
    // neither), and one entry off by 1e-12 is seen.
    EXPECT_GT(*std::max_element(cpu.H.begin(), cpu.H.end()), 0.1);
    std::vector<double> off = dev.H;
    off[7] += 1e-12 * (1 + std::abs(off[7]));
    EXPECT_GT(worst(off, cpu.H), 1e-13);
  }
}

// Runs everywhere: a tape of another width is refused before any device call.
TEST(GpuExpression, LauncherRefusesOtherWidths) {
  const Model m = load("pendulum_swingup");
  DeviceExprResult dev;
  const std::vector<double> w(std::size_t(m.nx + m.nu) * 4, 0.5);
  EXPECT_NE(evaluate_tape_on_device(m.tape, m.nx, m.nu, w, dev), "");
  EXPECT_TRUE(dev.f.empty());
}

}  // namespace
}  // namespace knot::test
