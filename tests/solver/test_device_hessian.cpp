// The device path's exact Hessian (solver/device/hessian.hpp, through linearize with HessianInputs)
// against two references: the host's closed form built from the Problem's own objects as
// Solver::Impl::closed_form_hessian builds it (Integrator::step_hessian, each term's add_curvature,
// the same symmetrization), to 1e-13 relative and counted bitwise; and central differences of the
// Lagrangian gradient, which share no code with either. Negative controls: the Gauss-Newton blocks
// miss the differenced Hessian on the arm, and a wrong multiplier is caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "knot/linalg/threaded_group.hpp"
#include "knot/problems/constraint.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/solver/device/device_sqp.hpp"
#include "knot/solver/device/linearize.hpp"
#include "source_tree.hpp"
#include "test_sqp_common.hpp"

namespace knot::test {
namespace {

using solver::device::BatchProblemData;
using solver::device::HessianInputs;
using solver::device::LqView;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An iterate with multipliers: x, u near the default guess, lambda ~ N(0, 1), z ~ U(0.1, 2), y ~ N(0, 1).
struct Iterate {
  std::vector<double> x, u, lambda, z, y;
};

Iterate random_iterate(const problems::Problem& p, const solver::device::BatchProblem& P, std::mt19937_64& rng) {
  std::normal_distribution<double> n01;
  std::uniform_real_distribution<double> pos(0.1, 2.0);
  const double us = p.model->type() == "manipulator" ? 3.0 : 0.3;
  Iterate it;
  for (int k = 0; k <= P.N; ++k)
    for (int i = 0; i < P.nx; ++i) it.x.push_back(p.x0[std::size_t(i)] + 0.1 * n01(rng));
  for (int k = 0; k < P.N; ++k)
    for (int i = 0; i < P.nu; ++i) it.u.push_back(us * n01(rng));
  for (int i = 0; i < (P.N + 1) * P.nx; ++i) it.lambda.push_back(n01(rng));
  for (int i = 0; i < P.n_ineq; ++i) it.z.push_back(pos(rng));
  for (int i = 0; i < P.n_eq; ++i) it.y.push_back(n01(rng));
  return it;
}

// What linearize writes (the LQ blocks and rows), NaN-poisoned.
struct Lin {
  std::vector<double> lq, ineq_value, ineq_jac, eq_value, eq_jac, cost;
  LqView<double> v;
  bool ok = false;
  explicit Lin(const solver::device::BatchProblem& P) {
    const std::size_t nw = std::size_t(P.nx + P.nu);
    lq.assign(LqView<double>::size(P.nx, P.nu, P.N), kNaN);
    v = LqView<double>::carve(P.nx, P.nu, P.N, lq.data());
    ineq_value.assign(std::size_t(P.n_ineq), kNaN);
    ineq_jac.assign(std::size_t(P.n_ineq) * nw, kNaN);
    eq_value.assign(std::size_t(P.n_eq), kNaN);
    eq_jac.assign(std::size_t(P.n_eq) * nw, kNaN);
    cost.assign(std::size_t(P.N) + 1, kNaN);
  }
  Lin(const Lin&) = delete;
};

// The device linearization at `it` on a group of `threads` members (0: a SerialGroup); the exact
// Hessian when `exact`, with the multipliers times `scale`.
void linearize(const BatchProblemData& d, const Iterate& it, bool exact, Lin& o, int threads = 0, double scale = 1.0) {
  const auto& P = d.problem;
  const HessianInputs<double> hin{it.lambda.data(), it.z.data(), it.y.data(), scale};
  const std::size_t per = solver::device::linearize_work_size(P, exact);
  std::vector<double> work(std::size_t(std::max(threads, 1)) * per, kNaN);
  const auto run = [&](auto& g) {
    return solver::device::linearize(g, P, d.arena.data(), d.slice.data(), it.x.data(), it.u.data(), o.v,
                                     o.ineq_value.data(), o.ineq_jac.data(), o.eq_value.data(), o.eq_jac.data(),
                                     o.cost.data(), work.data(), exact ? &hin : nullptr);
  };
  if (threads == 0) {
    linalg::SerialGroup g;
    o.ok = run(g);
  } else {
    std::vector<int> answers(std::size_t(threads), -1);
    linalg::run_threaded(threads, [&](linalg::ThreadedGroup& g) { answers[std::size_t(g.rank())] = run(g) ? 1 : 0; });
    o.ok = answers[0] == 1;
    for (int a : answers) EXPECT_EQ(a, answers[0]);
  }
}

// Solver::Impl::closed_form_hessian's blocks from the Problem's own objects, applied to the device's
// Gauss-Newton blocks (Q, R, S of `gn`, which test_device_linearize holds to the host's).
struct HostBlocks {
  std::vector<double> Q, R, S;
  bool ok = true;
};

HostBlocks host_exact(const problems::Problem& p, const Iterate& it, const Lin& gn) {
  const int nx = p.nx(), nu = p.nu(), N = p.horizon.N, nw = nx + nu;
  HostBlocks h;
  h.Q.assign(gn.v.Q, gn.v.Q + std::size_t(N + 1) * nx * nx);
  h.R.assign(gn.v.R, gn.v.R + std::size_t(N) * nu * nu);
  h.S.assign(gn.v.S, gn.v.S + std::size_t(N) * nu * nx);
  auto data = p.model->make_data();
  problems::Integrator integ(*p.model, p.horizon.integrator);
  std::vector<const problems::ConstraintTerm*> ineq, eq;
  for (const auto& c : p.constraints) (c->kind() == problems::ConstraintKind::Equality ? eq : ineq).push_back(c.get());
  int irow = 0, erow = 0;
  std::vector<double> H(std::size_t(nw) * nw);
  for (int k = 0; k <= N; ++k) {
    const bool running = k < N;
    const int n = running ? nw : nx;
    const problems::StagePoint pt = stage_point(p, k, it.x.data(), it.u.data(), data.get());
    if (running) {
      const auto st =
          integ.step_hessian(*data, pt.x, pt.u, p.horizon.dt, it.lambda.data() + std::size_t(k + 1) * nx, H.data());
      h.ok = h.ok && st == problems::SecondOrderStatus::Ok;
    } else {
      std::fill(H.begin(), H.end(), 0.0);
    }
    for (int kind = 0; kind < 2; ++kind) {
      const auto& terms = kind == 0 ? ineq : eq;
      const double* mult = kind == 0 ? it.z.data() : it.y.data();
      int& row = kind == 0 ? irow : erow;
      for (const auto* t : terms) {
        if (!t->active(k, N)) continue;
        h.ok = h.ok && t->add_curvature(pt, mult + row, H.data(), n);
        row += t->dim();
      }
    }
    double* Q = h.Q.data() + std::size_t(k) * nx * nx;
    double* R = running ? h.R.data() + std::size_t(k) * nu * nu : nullptr;
    double* S = running ? h.S.data() + std::size_t(k) * nu * nx : nullptr;
    problems::CostBlocks b;
    b.Hxx = Q;
    b.Huu = R;
    b.Hux = S;
    for (const auto& c : p.costs)
      if (c->active(k, N)) h.ok = h.ok && c->add_curvature(pt, b);
    const auto at = [n](int i, int j) { return std::size_t(i) + std::size_t(j) * n; };
    const auto add_symmetric = [&](double* M, int m, int off) {
      for (int j = 0; j < m; ++j)
        for (int i = j; i < m; ++i) {
          const std::size_t ij = i + std::size_t(j) * m, ji = j + std::size_t(i) * m;
          const double v = 0.5 * (M[ij] + M[ji]) + H[at(off + i, off + j)];
          M[ij] = v;
          M[ji] = v;
        }
    };
    add_symmetric(Q, nx, 0);
    if (running) {
      add_symmetric(R, nu, nx);
      for (int j = 0; j < nx; ++j)
        for (int i = 0; i < nu; ++i) S[i + std::size_t(j) * nu] += H[at(nx + i, j)];
    }
  }
  return h;
}

// Block by block to 1e-13 relative (normwise, as test_device_linearize: FMA contraction moves the
// last bits), counting the bitwise-equal values.
struct Compare {
  std::size_t total = 0, bitwise = 0;
  double worst = 0;
  void operator()(const char* what, const double* a, const double* b, std::size_t n, std::size_t block) {
    for (std::size_t b0 = 0; b0 < n; b0 += block) {
      double diff = 0, norm = 0;
      for (std::size_t i = b0; i < b0 + block; ++i) {
        ++total;
        bitwise += a[i] == b[i];
        diff += (a[i] - b[i]) * (a[i] - b[i]);
        norm += b[i] * b[i];
      }
      const double rel = std::sqrt(diff) / std::max(1.0, std::sqrt(norm));
      worst = std::max(worst, rel);
      ASSERT_LE(rel, 1e-13) << what << " block " << b0 / block << ": device " << a[b0] << ", host " << b[b0];
    }
  }
};

struct Case {
  std::string name;
  problems::Problem problem;
};

problems::Problem load_expression(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return problems::load_problem(
      std::filesystem::path(knot::source_tree::test_data_dir()) / "expression" / (name + ".yaml"), overrides);
}

// Every config the device path takes with the exact Hessian, each explicit scheme on the arm and on a
// HyperDual model, and expression residuals and constraints (on the built-in and the expression
// cart-pole).
std::vector<Case> cases() {
  std::vector<Case> out;
  for (const std::string& name : config_names()) {
    problems::Problem p = load_config(name);
    solver::SolverOptions o = sqp_options(p);
    o.hessian = solver::Hessian::Exact;
    if (!solver::device::device_sqp_unsupported(p, o).empty()) continue;
    out.push_back({name, std::move(p)});
  }
  for (const char* scheme : {"euler", "semi_implicit_euler"})
    for (const char* name : {"iiwa14_reach", "cartpole_swingup"})
      out.push_back(
          {std::string(name) + " " + scheme, load_config(name, {std::string("horizon.integrator=") + scheme})});
  out.push_back(
      {"iiwa14_reach + end-effector constraints", load_config("iiwa14_reach", end_effector_constraint_overrides())});
  out.push_back({"cartpole_swingup + expression terms", load_config("cartpole_swingup", expression_term_overrides())});
  out.push_back(
      {"expression cartpole + expression terms", load_expression("cartpole_swingup", expression_term_overrides())});
  out.push_back({"expression unicycle_obstacles", load_expression("unicycle_obstacles")});
  return out;
}

TEST(DeviceHessian, MatchesSolversClosedFormOnEveryConfig) {
  std::mt19937_64 rng(20261204);
  int checked = 0;
  for (Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const problems::Problem& p = c.problem;
    if (kUnderSanitizer && p.nx() > 8) continue;
    const BatchProblemData d = solver::device::compile_batch_problem(p);
    const auto& P = d.problem;
    const std::size_t N = std::size_t(P.N), nx = std::size_t(P.nx), nu = std::size_t(P.nu);
    Compare cmp;
    for (int trial = 0; trial < 2; ++trial) {
      const Iterate it = random_iterate(p, P, rng);
      Lin gn(P), ex(P);
      linearize(d, it, false, gn);
      linearize(d, it, true, ex);
      ASSERT_TRUE(gn.ok);
      ASSERT_TRUE(ex.ok);
      const HostBlocks h = host_exact(p, it, gn);
      ASSERT_TRUE(h.ok);
      cmp("Q", ex.v.Q, h.Q.data(), (N + 1) * nx * nx, nx * nx);
      cmp("R", ex.v.R, h.R.data(), N * nu * nu, nu * nu);
      cmp("S", ex.v.S, h.S.data(), N * nu * nx, nu * nx);
      if (HasFatalFailure()) return;
      // Everything else linearize writes is the Gauss-Newton linearization's, bit for bit (the rows
      // past the problem's layout keep their NaN poison in both).
      for (const auto& [a, b] :
           {std::pair{&ex.ineq_jac, &gn.ineq_jac}, std::pair{&ex.eq_jac, &gn.eq_jac}, std::pair{&ex.cost, &gn.cost}})
        EXPECT_TRUE(a->size() == b->size() &&
                    (a->empty() || std::memcmp(a->data(), b->data(), a->size() * sizeof(double)) == 0));
      EXPECT_TRUE(std::equal(ex.v.A, ex.v.Q, gn.v.A));                          // A, B, c
      EXPECT_TRUE(std::equal(ex.v.q, ex.v.q + (N + 1) * nx + N * nu, gn.v.q));  // q, r
    }
    std::printf("  %-44s %6zu values, %6zu bitwise equal, largest difference %.2g\n", c.name.c_str(), cmp.total,
                cmp.bitwise, cmp.worst);
    ++checked;
  }
  EXPECT_GE(checked, kUnderSanitizer ? 8 : 15);
}

// Knot k's Lagrangian gradient (the state entries, then the control entries for k < N) from a
// linearization: (q; r) + [A B]' lambda_{k+1} + J' z + J' y over the knot's rows.
std::vector<double> lagrangian_gradient(const solver::device::BatchProblem& P, const BatchProblemData& d, const Lin& o,
                                        const Iterate& it, int k) {
  const int nx = P.nx, nu = P.nu, nw = nx + nu, n = k < P.N ? nw : nx;
  std::vector<double> g(std::size_t(n), 0.0);
  for (int i = 0; i < nx; ++i) g[std::size_t(i)] = o.v.q_k(k)[i];
  if (k < P.N) {
    for (int i = 0; i < nu; ++i) g[std::size_t(nx + i)] = o.v.r_k(k)[i];
    const double* lam = it.lambda.data() + std::size_t(k + 1) * nx;
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nx; ++i) g[std::size_t(j)] += o.v.A_k(k)[i + std::size_t(j) * nx] * lam[i];
    for (int j = 0; j < nu; ++j)
      for (int i = 0; i < nx; ++i) g[std::size_t(nx + j)] += o.v.B_k(k)[i + std::size_t(j) * nx] * lam[i];
  }
  for (int kind = 0; kind < 2; ++kind) {
    const auto off = solver::device::row_offsets(
        P, d.slice.data(),
        kind == 0 ? solver::device::ConstraintSet::Inequality : solver::device::ConstraintSet::Equality);
    const std::vector<double>& jac = kind == 0 ? o.ineq_jac : o.eq_jac;
    const std::vector<double>& mult = kind == 0 ? it.z : it.y;
    for (int row = off[k]; row < off[k + 1]; ++row)
      for (int j = 0; j < n; ++j) g[std::size_t(j)] += jac[std::size_t(row) * nw + j] * mult[std::size_t(row)];
  }
  return g;
}

// max |H - Hfd| / max(1, max |Hfd|) over knot k's blocks, Hfd the central differences of the
// Lagrangian gradient (step eps^(1/3) max(1, |w_j|)).
double difference_error(const solver::device::BatchProblem& P, const BatchProblemData& d, const Iterate& at,
                        const Lin& blocks, int k) {
  const int nx = P.nx, nu = P.nu, n = k < P.N ? nx + nu : nx;
  std::vector<double> Hfd(std::size_t(n) * n);
  for (int j = 0; j < n; ++j) {
    Iterate plus = at, minus = at;
    double& wp = j < nx ? plus.x[std::size_t(k) * nx + j] : plus.u[std::size_t(k) * nu + j - nx];
    double& wm = j < nx ? minus.x[std::size_t(k) * nx + j] : minus.u[std::size_t(k) * nu + j - nx];
    const double h = std::cbrt(std::numeric_limits<double>::epsilon()) * std::max(1.0, std::abs(wp));
    wp += h;
    wm -= h;
    Lin lp(P), lm(P);
    linearize(d, plus, false, lp);
    linearize(d, minus, false, lm);
    const std::vector<double> gp = lagrangian_gradient(P, d, lp, plus, k), gm = lagrangian_gradient(P, d, lm, minus, k);
    for (int i = 0; i < n; ++i)
      Hfd[std::size_t(i) + std::size_t(j) * n] = (gp[std::size_t(i)] - gm[std::size_t(i)]) / (2 * h);
  }
  const auto H = [&](int i, int j) -> double {
    if (i < nx && j < nx) return blocks.v.Q_k(k)[i + std::size_t(j) * nx];
    if (i >= nx && j >= nx) return blocks.v.R_k(k)[(i - nx) + std::size_t(j - nx) * nu];
    if (i >= nx) return blocks.v.S_k(k)[(i - nx) + std::size_t(j) * nu];
    return blocks.v.S_k(k)[(j - nx) + std::size_t(i) * nu];
  };
  double err = 0, scale = 1;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      const double f = Hfd[std::size_t(i) + std::size_t(j) * n];
      err = std::max(err, std::abs(H(i, j) - f));
      scale = std::max(scale, std::abs(f));
    }
  return err / scale;
}

TEST(DeviceHessian, AgreesWithCentralDifferencesOfTheLagrangianGradient) {
  std::mt19937_64 rng(7);
  for (const char* name : {"iiwa14_reach", "cartpole_swingup", "unicycle_obstacles", "quadrotor_to_point",
                           "planar_quadrotor", "iiwa14_reach + end-effector constraints"}) {
    SCOPED_TRACE(name);
    const std::string config(name);
    const problems::Problem p = config.find(" + ") == std::string::npos
                                    ? load_config(config)
                                    : load_config("iiwa14_reach", end_effector_constraint_overrides());
    if (kUnderSanitizer && p.nx() > 8) continue;
    const BatchProblemData d = solver::device::compile_batch_problem(p);
    const auto& P = d.problem;
    const Iterate it = random_iterate(p, P, rng);
    Lin ex(P), gn(P);
    linearize(d, it, true, ex);
    linearize(d, it, false, gn);
    ASSERT_TRUE(ex.ok);
    double worst = 0, gn_worst = 0;
    for (int k : {0, P.N / 2, P.N}) {
      worst = std::max(worst, difference_error(P, d, it, ex, k));
      gn_worst = std::max(gn_worst, difference_error(P, d, it, gn, k));
    }
    std::printf("  %-20s exact %.2g, Gauss-Newton %.2g (relative to the differenced Hessian)\n", name, worst, gn_worst);
    EXPECT_LE(worst, 1e-6);
    // Negative control: leaving the curvature out is caught, by orders of magnitude beyond the
    // differences' own error (the cart-pole's curvature is the smallest, 1e-4 of its Hessian).
    EXPECT_GT(gn_worst, 1e3 * std::max(worst, 1e-9));
  }
}

TEST(DeviceHessian, AWrongMultiplierScaleIsCaught) {
  // The driver passes 1 / obj_scale; a scale of 2 doubles every curvature term, which the closed-form
  // comparison above would flag: here the differences themselves must show it.
  std::mt19937_64 rng(11);
  const problems::Problem p = load_config("iiwa14_reach");
  const BatchProblemData d = solver::device::compile_batch_problem(p);
  const Iterate it = random_iterate(p, d.problem, rng);
  Lin right(d.problem), wrong(d.problem);
  linearize(d, it, true, right);
  linearize(d, it, true, wrong, 0, 2.0);
  ASSERT_TRUE(right.ok && wrong.ok);
  const int k = d.problem.N / 2;
  EXPECT_LE(difference_error(d.problem, d, it, right, k), 1e-6);
  EXPECT_GT(difference_error(d.problem, d, it, wrong, k), 1e-2);
}

TEST(DeviceHessian, EveryGroupSizeGivesBitwiseTheSameBlocks) {
  std::mt19937_64 rng(3);
  for (const char* name : {"iiwa14_reach", "unicycle_obstacles"}) {
    const problems::Problem p = load_config(name);
    if (kUnderSanitizer && p.nx() > 8) continue;
    const BatchProblemData d = solver::device::compile_batch_problem(p);
    const Iterate it = random_iterate(p, d.problem, rng);
    Lin serial(d.problem);
    linearize(d, it, true, serial);
    ASSERT_TRUE(serial.ok);
    for (int threads : {1, 2, 3, 7}) {
      Lin o(d.problem);
      linearize(d, it, true, o, threads);
      EXPECT_TRUE(o.lq == serial.lq) << name << " on " << threads << " threads";
    }
  }
}

TEST(DeviceHessian, NonFiniteMultipliersMakeTheKnotNonFinite) {
  std::mt19937_64 rng(5);
  const problems::Problem p = load_config("iiwa14_reach");
  const BatchProblemData d = solver::device::compile_batch_problem(p);
  Iterate it = random_iterate(p, d.problem, rng);
  it.lambda[std::size_t(3) * p.nx()] = kNaN;  // lambda_3: knot 2's dynamics curvature
  Lin o(d.problem);
  linearize(d, it, true, o);
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(std::isnan(o.cost[2]));
  EXPECT_FALSE(std::isnan(o.cost[1]));
}

TEST(DeviceHessian, RefusesWhatHasNoClosedForm) {
  // A chain of masses with nx + nu > 24: Solver differences its gradient there; the device path says so.
  problems::Problem p =
      load_config("chain_of_masses",
                  {"model.params.masses=6",
                   "x0=[0.2, 0, 0, 0.4, 0, 0, 0.6, 0, 0, 0.8, 0, 0, 1.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]",
                   "costs=[{name: effort, type: control, weights: [1, 1, 1]}]"});
  solver::SolverOptions o = sqp_options(p);
  o.hessian = solver::Hessian::Exact;
  ASSERT_GT(p.nx() + p.nu(), 24);
  const std::string why = solver::device::device_sqp_unsupported(p, o);
  EXPECT_NE(why.find("solver.hessian"), std::string::npos) << why;
  EXPECT_NE(why.find("nx + nu = " + std::to_string(p.nx() + p.nu())), std::string::npos) << why;
  o.hessian = solver::Hessian::GaussNewton;
  EXPECT_EQ(solver::device::device_sqp_unsupported(p, o), "");
}

}  // namespace
}  // namespace knot::test
