// Every shipped problem file in configs/ loads, has the dimensions its comment promises, and can be
// rolled out (zero controls) with finite states and exact integrator sensitivities; plus the
// registry's pendulum under RK4 keeps its energy, the physical check the problem issue asks for.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "knot/problems/integrator.hpp"
#include "knot/problems/loader.hpp"
#include "knot/problems/params.hpp"
#include "knot/problems/registry.hpp"
#include "source_tree.hpp"

namespace {

namespace fs = std::filesystem;
using namespace knot::problems;

struct Dims {
  int nx, nu, N;
};

// The dimensions each file's header comment states (chain_of_masses: nx 21, nu 3, N 40 per the issue).
const std::map<std::string, Dims> kExpected = {
    {"double_integrator_lqr", {2, 1, 50}},     {"double_integrator_rest_to_rest", {2, 1, 50}},
    {"bryson_denham", {2, 1, 100}},            {"pendulum_swingup", {2, 1, 80}},
    {"cartpole_swingup", {4, 1, 20}},          {"acrobot_swingup", {4, 1, 100}},
    {"cartpole_swingup_smooth", {4, 1, 20}},
    {"quadrotor_to_point", {12, 4, 50}},       {"unicycle_obstacles", {3, 2, 60}},
    {"chain_of_masses", {21, 3, 40}},          {"iiwa14_reach", {14, 7, 32}},
    {"iiwa14_gravity_limits", {14, 7, 48}},    {"cartpole_mpc", {4, 1, 60}},
    {"iiwa14_mpc", {14, 7, 32}},               {"planar_quadrotor", {6, 2, 60}},
};

std::vector<fs::path> config_files() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(knot::source_tree::configs_dir()))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  return files;
}

TEST(Configs, EveryFileIsListedAndLoadsWithItsDimensions) {
  const auto files = config_files();
  ASSERT_EQ(files.size(), kExpected.size()) << "a config was added or removed: update kExpected";
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    const auto it = kExpected.find(f.stem().string());
    ASSERT_NE(it, kExpected.end());
    const Problem p = load_problem(f);
    EXPECT_EQ(p.name, f.stem().string());
    EXPECT_EQ(p.nx(), it->second.nx);
    EXPECT_EQ(p.nu(), it->second.nu);
    EXPECT_EQ(p.horizon.N, it->second.N);
    EXPECT_FALSE(p.costs.empty());
    EXPECT_NO_THROW(p.validate());
    EXPECT_FALSE(describe(p).empty());
  }
}

TEST(Configs, ZeroControlRolloutIsFiniteWithExactSensitivities) {
  for (const auto& f : config_files()) {
    SCOPED_TRACE(f.string());
    const Problem p = load_problem(f);
    const int nx = p.nx(), nu = p.nu();
    auto data = p.model->make_data();
    Integrator integ(*p.model, p.horizon.integrator);
    std::vector<double> x = p.x0, u(nu, 0.0), xn(nx), A(nx * nx), B(nx * nu), xp(nx), xm(nx);
    for (int k = 0; k < p.horizon.N; ++k) {
      ASSERT_EQ(integ.step_jacobian(*data, x.data(), u.data(), p.horizon.dt, xn.data(), A.data(), B.data()),
                IntegratorStatus::Ok)
          << "knot " << k;
      for (double v : xn) ASSERT_TRUE(std::isfinite(v)) << "knot " << k;
      if (k == 0) {  // one column of A against central differences, at the start state
        const int j = nx - 1;
        const double h = 1e-6 * std::max(1.0, std::abs(x[j]));
        std::vector<double> xa = x, xb = x;
        xa[j] += h;
        xb[j] -= h;
        ASSERT_EQ(integ.step(*data, xa.data(), u.data(), p.horizon.dt, xp.data()), IntegratorStatus::Ok);
        ASSERT_EQ(integ.step(*data, xb.data(), u.data(), p.horizon.dt, xm.data()), IntegratorStatus::Ok);
        for (int i = 0; i < nx; ++i) {
          const double fd = (xp[i] - xm[i]) / (2 * h);
          EXPECT_NEAR(A[i + j * nx], fd, 1e-6 * std::max(1.0, std::abs(fd))) << "A(" << i << "," << j << ")";
        }
      }
      x = xn;
    }
  }
}

// Energy of the frictionless registry pendulum (theta = 0 hanging): E = 1/2 m l^2 w^2 - m g l cos(theta).
double pendulum_energy(const std::vector<double>& x) { return 0.5 * x[1] * x[1] - 9.81 * std::cos(x[0]); }

double energy_drift(IntegratorType type, int steps, double dt) {
  const auto model = make_model("pendulum", ParamMap("model.params"));
  auto data = model->make_data();
  Integrator integ(*model, type);
  std::vector<double> x = {1.0, 0.0}, u = {0.0};
  const double e0 = pendulum_energy(x);
  for (int k = 0; k < steps; ++k) integ.step(*data, x.data(), u.data(), dt, x.data());
  return std::abs(pendulum_energy(x) - e0) / std::abs(e0);
}

TEST(Physics, PendulumEnergyUnderRk4) {
  // RK4's energy error per step is O((w dt)^5) with w = sqrt(g/l) ~ 3.1: 1000 steps of 1e-3 s give
  // about 1e-13 relative; explicit Euler gains energy at O(w^2 dt) per step, the negative control.
  EXPECT_LT(energy_drift(IntegratorType::Rk4, 1000, 1e-3), 1e-10);
  EXPECT_GT(energy_drift(IntegratorType::Euler, 1000, 1e-3), 1e-3);
}

}  // namespace
