// The device path's flat problem and linearize phase (solver/device/problem.hpp, linearize.hpp)
// against the host objects it replaces: for every config that compiles, at random points near x0,
// the LQ blocks, constraint rows and knot costs equal what the Problem's own Integrator, CostTerm and
// ConstraintTerm objects give (the reference is built as sqp_linearize.cpp builds it), to 1e-13
// relative; the row layout is the host Solver's; SerialGroup and ThreadedGroup of sizes 1, 2, 3, 7
// agree bit for bit; unsupported configs are refused by name; and negative controls.
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
#include "knot/problems/error.hpp"
#include "knot/problems/expression.hpp"
#include "knot/problems/model_adapter.hpp"
#include "knot/solver/device/linearize.hpp"
#include "test_sqp_common.hpp"
#include "source_tree.hpp"

namespace knot::test {
namespace {

using solver::device::BatchProblemData;
using solver::device::LqView;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Everything linearize writes, poisoned with NaN so that an unwritten element shows.
struct Output {
  std::vector<double> lq, ineq_value, ineq_jac, eq_value, eq_jac, cost;
  LqView<double> view;
  bool ok = false;
  explicit Output(const solver::device::BatchProblem& P) {
    lq.assign(LqView<double>::size(P.nx, P.nu, P.N), kNaN);
    view = LqView<double>::carve(P.nx, P.nu, P.N, lq.data());
    const std::size_t nw = static_cast<std::size_t>(P.nx + P.nu);
    ineq_value.assign(std::size_t(P.n_ineq), kNaN);
    ineq_jac.assign(std::size_t(P.n_ineq) * nw, kNaN);
    eq_value.assign(std::size_t(P.n_eq), kNaN);
    eq_jac.assign(std::size_t(P.n_eq) * nw, kNaN);
    cost.assign(std::size_t(P.N) + 1, kNaN);
  }
  Output(const Output&) = delete;
  std::vector<double> all() const {
    std::vector<double> v = lq;
    for (const auto* p : {&ineq_value, &ineq_jac, &eq_value, &eq_jac, &cost}) v.insert(v.end(), p->begin(), p->end());
    return v;
  }
};

void run_serial(const BatchProblemData& d, const double* slice, const std::vector<double>& x,
                const std::vector<double>& u, Output& o) {
  const auto& P = d.problem;
  std::vector<double> work(solver::device::linearize_work_size(P), kNaN);
  linalg::SerialGroup g;
  o.ok = solver::device::linearize(g, P, d.arena.data(), slice, x.data(), u.data(), o.view, o.ineq_value.data(),
                                   o.ineq_jac.data(), o.eq_value.data(), o.eq_jac.data(), o.cost.data(), work.data());
}

// Runs on `threads` ranks; every rank's answer must be the same (checked, then returned in o.ok).
void run_threaded(const BatchProblemData& d, const double* slice, const std::vector<double>& x,
                  const std::vector<double>& u, int threads, Output& o) {
  const auto& P = d.problem;
  std::vector<double> work(std::size_t(threads) * solver::device::linearize_work_size(P), kNaN);
  std::vector<int> answers(static_cast<std::size_t>(threads), -1);
  linalg::run_threaded(threads, [&](linalg::ThreadedGroup& g) {
    const bool ok =
        solver::device::linearize(g, P, d.arena.data(), slice, x.data(), u.data(), o.view, o.ineq_value.data(),
                                  o.ineq_jac.data(), o.eq_value.data(), o.eq_jac.data(), o.cost.data(), work.data());
    answers[static_cast<std::size_t>(g.rank())] = ok ? 1 : 0;
  });
  for (int a : answers) ASSERT_EQ(a, answers[0]) << threads << " ranks disagree on the finiteness";
  o.ok = answers[0] == 1;
}

// The host's linearization from the Problem's own objects, laid out as Output (sqp_linearize.cpp:
// per knot zeroed blocks, each active cost's accumulate, the integrator's step_jacobian, and
// evaluate_rows over the constraint terms of each kind in problem order).
struct HostReference {
  std::vector<double> A, B, c, Q, R, S, q, r, x_init, ineq_value, ineq_jac, eq_value, eq_jac, cost;
  std::vector<int> ioff, eoff;
  bool ok = true;
};

HostReference host_linearize(const problems::Problem& p, const std::vector<double>& x, const std::vector<double>& u) {
  const int nx = p.nx(), nu = p.nu(), N = p.horizon.N, nw = nx + nu;
  HostReference h;
  auto data = p.model->make_data();
  problems::Integrator integ(*p.model, p.horizon.integrator);
  std::vector<const problems::ConstraintTerm*> ineq, eq;
  for (const auto& c : p.constraints) (c->kind() == problems::ConstraintKind::Equality ? eq : ineq).push_back(c.get());
  const auto offsets = [&](const std::vector<const problems::ConstraintTerm*>& terms) {
    std::vector<int> off(std::size_t(N) + 2, 0);
    for (int k = 0; k <= N; ++k) {
      int m = 0;
      for (const auto* t : terms)
        if (t->active(k, N)) m += t->dim();
      off[std::size_t(k) + 1] = off[std::size_t(k)] + m;
    }
    return off;
  };
  h.ioff = offsets(ineq);
  h.eoff = offsets(eq);
  h.A.assign(std::size_t(N) * nx * nx, 0.0);
  h.B.assign(std::size_t(N) * nx * nu, 0.0);
  h.c.assign(std::size_t(N) * nx, 0.0);
  h.Q.assign(std::size_t(N + 1) * nx * nx, 0.0);
  h.R.assign(std::size_t(N) * nu * nu, 0.0);
  h.S.assign(std::size_t(N) * nu * nx, 0.0);
  h.q.assign(std::size_t(N + 1) * nx, 0.0);
  h.r.assign(std::size_t(N) * nu, 0.0);
  h.ineq_value.assign(std::size_t(h.ioff.back()), 0.0);
  h.ineq_jac.assign(std::size_t(h.ioff.back()) * nw, 0.0);
  h.eq_value.assign(std::size_t(h.eoff.back()), 0.0);
  h.eq_jac.assign(std::size_t(h.eoff.back()) * nw, 0.0);
  h.cost.assign(std::size_t(N) + 1, 0.0);
  std::vector<double> xn(static_cast<std::size_t>(nx)), tg(64), tgx(std::size_t(64) * nx), tgu(std::size_t(64) * nu);
  for (int k = 0; k <= N; ++k) {
    problems::StagePoint pt;
    pt.k = k;
    pt.N = N;
    pt.dt = p.horizon.dt;
    pt.x = x.data() + std::size_t(k) * nx;
    pt.u = k < N ? u.data() + std::size_t(k) * nu : nullptr;
    pt.u_prev = k > 0 ? u.data() + std::size_t(k - 1) * nu : nullptr;
    pt.data = data.get();
    problems::CostBlocks b;
    b.gx = h.q.data() + std::size_t(k) * nx;
    b.Hxx = h.Q.data() + std::size_t(k) * nx * nx;
    if (k < N) {
      b.gu = h.r.data() + std::size_t(k) * nu;
      b.Huu = h.R.data() + std::size_t(k) * nu * nu;
      b.Hux = h.S.data() + std::size_t(k) * nu * nx;
    }
    double cost = 0;
    for (const auto& c : p.costs)
      if (c->active(k, N)) cost += c->accumulate(pt, b);
    h.cost[std::size_t(k)] = cost;
    if (k < N) {
      const auto st = integ.step_jacobian(*data, pt.x, pt.u, p.horizon.dt, xn.data(),
                                          h.A.data() + std::size_t(k) * nx * nx, h.B.data() + std::size_t(k) * nx * nu);
      h.ok = h.ok && st == problems::IntegratorStatus::Ok;
      for (int i = 0; i < nx; ++i) h.c[std::size_t(k) * nx + i] = xn[std::size_t(i)] - pt.x[nx + i];
    }
    for (int kind = 0; kind < 2; ++kind) {
      const auto& terms = kind == 0 ? ineq : eq;
      double* values = (kind == 0 ? h.ineq_value : h.eq_value).data();
      double* jac = (kind == 0 ? h.ineq_jac : h.eq_jac).data();
      int row = (kind == 0 ? h.ioff : h.eoff)[std::size_t(k)];
      for (const auto* t : terms) {
        if (!t->active(k, N)) continue;
        const int m = t->dim();
        std::fill(tgx.begin(), tgx.end(), 0.0);
        std::fill(tgu.begin(), tgu.end(), 0.0);
        t->jacobian(pt, tg.data(), tgx.data(), pt.u != nullptr ? tgu.data() : nullptr);
        for (int i = 0; i < m; ++i) {
          values[row + i] = tg[std::size_t(i)];
          double* J = jac + std::size_t(row + i) * nw;
          for (int j = 0; j < nx; ++j) J[j] = tgx[std::size_t(i) + std::size_t(j) * m];
          for (int j = 0; j < nu; ++j) J[nx + j] = pt.u != nullptr ? tgu[std::size_t(i) + std::size_t(j) * m] : 0.0;
        }
        row += m;
      }
    }
  }
  for (int i = 0; i < nx; ++i) h.x_init.push_back(p.x0[std::size_t(i)] - x[std::size_t(i)]);
  return h;
}

// Compares n values in blocks of `block` (one knot's A_k, Q_k, c_k, one Jacobian row, ...), each to
// 1e-13 relative, normwise: ||a - b|| <= 1e-13 max(1, ||b||) (Frobenius). The arithmetic is the host's,
// operation for operation; what differs is the compiler's contraction of a * b + c into FMAs (-march
// with FMA, GCC's default -ffp-contract=fast for C++), which moves a result by a few ulps of the
// largest term it sums, and the manipulator's mass-matrix solve amplifies that by its condition
// number. Built with -ffp-contract=off (CMAKE_CXX_FLAGS) every value of this test is bitwise the
// host's. Counts the bitwise-equal values and keeps the largest normwise difference.
struct Compare {
  std::size_t total = 0, bitwise = 0;
  double worst = 0;
  void operator()(const std::string& what, const double* a, const double* b, std::size_t n, std::size_t block = 1) {
    for (std::size_t b0 = 0; b0 < n; b0 += block) {
      const std::size_t b1 = std::min(n, b0 + block);
      double diff = 0, norm = 0;
      for (std::size_t i = b0; i < b1; ++i) {
        ++total;
        bitwise += a[i] == b[i];
        diff += (a[i] - b[i]) * (a[i] - b[i]);
        norm += b[i] * b[i];
      }
      const double rel = std::sqrt(diff) / std::max(1.0, std::sqrt(norm));
      worst = std::max(worst, rel);
      ASSERT_LE(rel, 1e-13) << what << " block at " << b0 << " (" << b1 - b0 << " values): device " << a[b0]
                            << ", host " << b[b0];
    }
  }
};

struct Point {
  std::vector<double> x, u;
};

// Every block linearize writes against the host's.
void compare_all(Compare& cmp, const solver::device::BatchProblem& P, const Output& o, const HostReference& h) {
  const LqView<double>& v = o.view;
  const std::size_t N = std::size_t(P.N), nx = std::size_t(P.nx), nu = std::size_t(P.nu);
  const std::size_t nw = nx + nu;
  cmp("A", v.A, h.A.data(), N * nx * nx, nx * nx);
  cmp("B", v.B, h.B.data(), N * nx * nu, nx * nu);
  cmp("c", v.c, h.c.data(), N * nx, nx);
  cmp("Q", v.Q, h.Q.data(), (N + 1) * nx * nx, nx * nx);
  cmp("R", v.R, h.R.data(), N * nu * nu, nu * nu);
  cmp("S", v.S, h.S.data(), N * nu * nx, nu * nx);
  cmp("q", v.q, h.q.data(), (N + 1) * nx, nx);
  cmp("r", v.r, h.r.data(), N * nu, nu);
  cmp("x_init", v.x_init, h.x_init.data(), nx, nx);
  cmp("ineq_value", o.ineq_value.data(), h.ineq_value.data(), h.ineq_value.size());
  cmp("ineq_jac", o.ineq_jac.data(), h.ineq_jac.data(), h.ineq_jac.size(), nw);
  cmp("eq_value", o.eq_value.data(), h.eq_value.data(), h.eq_value.size());
  cmp("eq_jac", o.eq_jac.data(), h.eq_jac.data(), h.eq_jac.size(), nw);
  cmp("cost", o.cost.data(), h.cost.data(), h.cost.size());
}

// x_k = x0 + 0.1 N(0, 1), u_k = 0.3 N(0, 1) (the manipulator's torques 3 N(0, 1)).
Point random_point(const problems::Problem& p, std::mt19937_64& rng) {
  std::normal_distribution<double> n01;
  const int nx = p.nx(), nu = p.nu(), N = p.horizon.N;
  const double us = p.model->type() == "manipulator" ? 3.0 : 0.3;
  Point pt;
  for (int k = 0; k <= N; ++k)
    for (int i = 0; i < nx; ++i) pt.x.push_back(p.x0[std::size_t(i)] + 0.1 * n01(rng));
  for (int k = 0; k < N; ++k)
    for (int i = 0; i < nu; ++i) pt.u.push_back(us * n01(rng));
  return pt;
}

// Configs with a device path, and those refused with the term that is not.
const std::vector<std::string> kRefused = {"cartpole_swingup_smooth"};

struct Case {
  std::string config;
  std::vector<std::string> overrides;
};

// The built-in systems written as expression models (tests/data/expression/).
problems::Problem load_expression(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return problems::load_problem(std::filesystem::path(knot::source_tree::test_data_dir()) / "expression" / (name + ".yaml"), overrides);
}

// Those the device path takes (unicycle_obstacles among them: its circle obstacles), each explicit
// scheme on the cart-pole, and a parameter set on the command line.
std::vector<Case> expression_cases() {
  std::vector<Case> out;
  for (const char* name :
       {"cartpole_swingup", "pendulum_swingup", "acrobot_swingup", "unicycle_obstacles", "quadrotor_to_point"})
    out.push_back({name, {}});
  for (const char* scheme : {"euler", "semi_implicit_euler", "rk4"})
    out.push_back({"cartpole_swingup", {std::string("horizon.integrator=") + scheme}});
  out.push_back({"cartpole_swingup", {"model.params.pole_mass=0.11"}});
  return out;
}

// Every config with a device path, and each explicit scheme on a first-order model, a model with an
// analytic host Jacobian, and the manipulator (velocity rows).
std::vector<Case> compiling_cases() {
  std::vector<Case> out;
  for (const std::string& name : config_names())
    if (std::find(kRefused.begin(), kRefused.end(), name) == kRefused.end()) out.push_back({name, {}});
  for (const char* scheme : {"euler", "semi_implicit_euler", "rk4"})
    for (const char* name : {"cartpole_swingup", "iiwa14_reach", "bryson_denham", "acrobot_swingup"})
      out.push_back({name, {std::string("horizon.integrator=") + scheme}});
  out.push_back({"iiwa14_reach", end_effector_constraint_overrides()});  // end-effector height and box rows
  return out;
}

TEST(DeviceLinearize, MatchesTheHostLinearizationOnEveryConfig) {
  std::mt19937_64 rng(20261202);
  std::size_t configs = 0;
  for (const Case& c : compiling_cases()) {
    const std::string name = c.config + (c.overrides.empty() ? "" : " " + c.overrides[0]);
    SCOPED_TRACE(name);
    const problems::Problem p = load_config(c.config, c.overrides);
    ASSERT_EQ(solver::device::device_path_unsupported(p), "");
    const BatchProblemData d = solver::device::compile_batch_problem(p);
    const auto& P = d.problem;
    // The row layout is the host Solver's (z, s, y laid out as Solution's).
    const solver::Solver host(p, sqp_options(p));
    const auto io = solver::device::row_offsets(P, d.slice.data(), solver::device::ConstraintSet::Inequality);
    const auto eo = solver::device::row_offsets(P, d.slice.data(), solver::device::ConstraintSet::Equality);
    for (int k = 0; k <= P.N + 1; ++k) {
      ASSERT_EQ(io[k], host.inequality_offset(k)) << "knot " << k;
      ASSERT_EQ(eo[k], host.equality_offset(k)) << "knot " << k;
    }
    ASSERT_EQ(io[P.N + 1], static_cast<int>(host.solution().z.size()));
    ASSERT_EQ(eo[P.N + 1], static_cast<int>(host.solution().y.size()));
    ASSERT_GE(P.n_ineq, io[P.N + 1]);  // the arrays' rows: every bound finite
    ASSERT_EQ(P.n_eq, eo[P.N + 1]);
    Compare cmp;
    for (int trial = 0; trial < 3; ++trial) {
      const Point pt = random_point(p, rng);
      const HostReference h = host_linearize(p, pt.x, pt.u);
      ASSERT_TRUE(h.ok);
      Output o(P);
      run_serial(d, d.slice.data(), pt.x, pt.u, o);
      ASSERT_TRUE(o.ok);
      const std::size_t nx = std::size_t(P.nx), nu = std::size_t(P.nu);
      compare_all(cmp, P, o, h);
      if (HasFatalFailure()) return;
      // step() alone agrees with step_jacobian's x_next.
      std::vector<double> work(solver::device::step_work_size(P)), y(nx), y2(nx), A(nx * nx), B(nx * nu);
      ASSERT_TRUE(solver::device::step(P, d.arena.data(), pt.x.data(), pt.u.data(), y.data(), work.data()));
      ASSERT_TRUE(solver::device::step_jacobian(P, d.arena.data(), pt.x.data(), pt.u.data(), y2.data(), A.data(),
                                                B.data(), work.data()));
      cmp("step", y.data(), y2.data(), nx, nx);
    }
    std::printf("%-50s model %-18s %7zu values, %7zu bitwise equal, largest difference %.2g of its block\n",
                name.c_str(), std::string(p.model->type()).c_str(), cmp.total, cmp.bitwise, cmp.worst);
    ++configs;
  }
  EXPECT_GE(configs, 20u);
}

// Threaded groups of 1, 2, 3 and 7 members give bitwise the serial group's linearization at a random point.
void expect_group_sizes_bitwise(const problems::Problem& p, std::mt19937_64& rng) {
  const BatchProblemData d = solver::device::compile_batch_problem(p);
  const Point pt = random_point(p, rng);
  Output serial(d.problem);
  run_serial(d, d.slice.data(), pt.x, pt.u, serial);
  ASSERT_TRUE(serial.ok);
  const std::vector<double> ref = serial.all();
  for (int threads : {1, 2, 3, 7}) {
    Output o(d.problem);
    run_threaded(d, d.slice.data(), pt.x, pt.u, threads, o);
    ASSERT_TRUE(o.ok) << threads;
    const std::vector<double> got = o.all();
    ASSERT_EQ(got.size(), ref.size());
    EXPECT_EQ(std::memcmp(got.data(), ref.data(), got.size() * sizeof(double)), 0) << threads << " ranks";
  }
}

TEST(DeviceLinearize, GroupSizesAgreeBitwise) {
  std::mt19937_64 rng(7);
  for (const char* name : {"cartpole_swingup", "iiwa14_reach", "chain_of_masses", "double_integrator_lqr"}) {
    SCOPED_TRACE(name);
    const problems::Problem p = load_config(name);
    expect_group_sizes_bitwise(p, rng);
  }
}

// A circle obstacle's center comes from the problem's slice: moved there by 0.25, exactly one row of
// the knot changes, to what a host CircleObstacle with the moved center computes (the negative
// control of the comparison above: the file's obstacle no longer matches it).
TEST(DeviceLinearize, CircleObstacleReadsItsCenterFromTheSlice) {
  const problems::Problem p = load_config("unicycle_obstacles");
  const BatchProblemData d = solver::device::compile_batch_problem(p);
  const auto& P = d.problem;
  const problems::CircleObstacle* co = nullptr;
  for (const auto& c : p.constraints)
    if ((co = dynamic_cast<const problems::CircleObstacle*>(c.get())) != nullptr) break;
  ASSERT_NE(co, nullptr);
  const solver::device::RowRecord* rec =
      solver::device::arena_at<solver::device::RowRecord>(d.arena.data(), P.ineq_terms);
  int t = 0;
  while (t < P.n_ineq_terms && rec[t].kind != solver::device::RowKind::CircleObstacle) ++t;
  ASSERT_LT(t, P.n_ineq_terms);
  std::vector<double> moved = d.slice;
  moved[rec[t].lower] += 0.25;
  const int k = 1, nw = P.nx + P.nu;
  std::vector<double> x(p.x0), u(std::size_t(P.nu), 0.1), work(solver::device::knot_work_size(P));
  const int rows = solver::device::row_offsets(P, d.slice.data(), solver::device::ConstraintSet::Inequality)[k + 1] -
                   solver::device::row_offsets(P, d.slice.data(), solver::device::ConstraintSet::Inequality)[k];
  std::vector<double> g0(static_cast<std::size_t>(rows)), g1(g0.size()), j0(g0.size() * nw), j1(j0.size());
  solver::device::knot_rows(P, d.arena.data(), d.slice.data(), solver::device::ConstraintSet::Inequality, k, x.data(),
                            u.data(), g0.data(), j0.data(), work.data());
  solver::device::knot_rows(P, d.arena.data(), moved.data(), solver::device::ConstraintSet::Inequality, k, x.data(),
                            u.data(), g1.data(), j1.data(), work.data());
  const problems::CircleObstacle host(co->info(), *p.model, {co->center()[0] + 0.25, co->center()[1]}, co->radius());
  problems::StagePoint pt;
  pt.k = k;
  pt.N = P.N;
  pt.x = x.data();
  pt.u = u.data();
  ASSERT_LE(P.nx, 16);
  double want = 0, want_gx[16] = {};
  host.jacobian(pt, &want, want_gx, nullptr);
  int changed = 0;
  for (int r = 0; r < rows; ++r) {
    if (g0[std::size_t(r)] == g1[std::size_t(r)]) continue;
    ++changed;
    EXPECT_EQ(g1[std::size_t(r)], want);
    for (int i = 0; i < P.nx; ++i) EXPECT_EQ(j1[std::size_t(r) * nw + i], want_gx[i]) << i;
  }
  EXPECT_EQ(changed, 1);
}

TEST(DeviceLinearize, RefusesWhatHasNoDevicePathByName) {
  const struct {
    const char* config;
    const char* names;
  } cases[] = {{"cartpole_swingup_smooth", "(control_rate) has no device path yet"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.config);
    const problems::Problem p = load_config(c.config);
    const std::string why = solver::device::device_path_unsupported(p);
    EXPECT_NE(why.find(c.names), std::string::npos) << why;
    try {
      (void)solver::device::compile_batch_problem(p);
      ADD_FAILURE() << "compiled";
    } catch (const problems::ProblemError& e) {
      EXPECT_NE(std::string(e.what()).find("no device path yet"), std::string::npos) << e.what();
    }
  }
  // The term's own name is in the sentence.
  const problems::Problem smooth = load_config("cartpole_swingup_smooth");
  for (const auto& cost : smooth.costs) {
    if (cost->type() != "control_rate") continue;
    EXPECT_NE(solver::device::device_path_unsupported(smooth).find("'" + cost->info().name + "'"), std::string::npos);
  }
  // An implicit integrator too.
  const problems::Problem implicit = load_config("cartpole_swingup", {"horizon.integrator=implicit_euler"});
  EXPECT_NE(solver::device::device_path_unsupported(implicit).find("implicit_euler"), std::string::npos);
  // An expression model takes a term's refusal by the term's name, not the model's.
  const problems::Problem expr_smooth =
      load_expression("cartpole_swingup", {"costs[1]={name: smooth, type: control_rate, weights: [0.002]}"});
  EXPECT_EQ(solver::device::device_path_unsupported(expr_smooth),
            "cost 'smooth' (control_rate) has no device path yet");
  const problems::Problem expr_implicit = load_expression("pendulum_swingup", {"horizon.integrator=implicit_midpoint"});
  EXPECT_NE(solver::device::device_path_unsupported(expr_implicit).find("implicit_midpoint"), std::string::npos);
}

// Negative controls: the comparison sees a changed reference, and non-finite inputs give false on
// every rank.
TEST(DeviceLinearize, NegativeControls) {
  const problems::Problem p = load_config("cartpole_swingup");
  const BatchProblemData d = solver::device::compile_batch_problem(p);
  std::mt19937_64 rng(11);
  const Point pt = random_point(p, rng);
  Output base(d.problem);
  run_serial(d, d.slice.data(), pt.x, pt.u, base);
  ASSERT_TRUE(base.ok);

  // A state cost's reference moved in this problem's slice moves its gradient, and only it.
  std::string state_cost;
  std::vector<double> ref;
  for (const auto& c : p.costs)
    if (c->type() == "state") {
      state_cost = c->info().name;
      ref.assign(c->reference()->at(0).begin(), c->reference()->at(0).end());
      break;
    }
  ASSERT_FALSE(state_cost.empty());
  std::vector<double> slice = d.slice;
  for (double& v : ref) v += 0.25;
  solver::device::set_slice_reference(d, slice.data(), state_cost, ref);
  Output moved(d.problem);
  run_serial(d, slice.data(), pt.x, pt.u, moved);
  ASSERT_TRUE(moved.ok);
  EXPECT_NE(base.lq, moved.lq);
  EXPECT_EQ(std::vector<double>(base.view.A, base.view.A + d.problem.N * 16),
            std::vector<double>(moved.view.A, moved.view.A + d.problem.N * 16));
  // The host reference with the same move agrees with the moved slice, not the base one.
  problems::Problem p2 = load_config("cartpole_swingup");
  for (const auto& c : p2.costs)
    if (c->info().name == state_cost) c->set_reference(problems::Reference::constant(ref));
  const HostReference h2 = host_linearize(p2, pt.x, pt.u);
  for (int k = 0; k <= d.problem.N; ++k)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(moved.view.q_k(k)[i], h2.q[std::size_t(k) * 4 + i]);

  // x0 in the slice: x_init follows.
  std::vector<double> x0 = p.x0;
  x0[1] += 1.0;
  solver::device::set_slice_initial_state(d, slice.data(), x0);
  Output shifted(d.problem);
  run_serial(d, slice.data(), pt.x, pt.u, shifted);
  EXPECT_EQ(shifted.view.x_init[1], x0[1] - pt.x[1]);

  // A NaN anywhere in x or u: false, from every rank.
  for (int threads : {1, 3}) {
    Point bad = pt;
    bad.x[std::size_t(7 * 4 + 2)] = kNaN;
    Output o(d.problem);
    run_threaded(d, d.slice.data(), bad.x, bad.u, threads, o);
    EXPECT_FALSE(o.ok) << threads;
    bad = pt;
    bad.u[3] = std::numeric_limits<double>::infinity();
    Output o2(d.problem);
    run_threaded(d, d.slice.data(), bad.x, bad.u, threads, o2);
    EXPECT_FALSE(o2.ok) << threads;
  }
}

// The expression model on the device path (ModelKind::Expression: the tape's arrays in the arena)
// against the host Problem's objects, as MatchesTheHostLinearizationOnEveryConfig does for the
// built-in models: the same blocks to 1e-13, the same row layout.
TEST(DeviceLinearize, ExpressionModelsMatchTheHostLinearization) {
  std::mt19937_64 rng(20261218);
  for (const Case& c : expression_cases()) {
    const std::string name = c.config + (c.overrides.empty() ? "" : " " + c.overrides[0]);
    SCOPED_TRACE(name);
    const problems::Problem p = load_expression(c.config, c.overrides);
    ASSERT_EQ(p.model->type(), "expression");
    ASSERT_EQ(solver::device::device_path_unsupported(p), "");
    const BatchProblemData d = solver::device::compile_batch_problem(p);
    const auto& P = d.problem;
    ASSERT_EQ(P.model, solver::device::ModelKind::Expression);
    const solver::Solver host(p, sqp_options(p));
    const auto io = solver::device::row_offsets(P, d.slice.data(), solver::device::ConstraintSet::Inequality);
    for (int k = 0; k <= P.N + 1; ++k) ASSERT_EQ(io[k], host.inequality_offset(k)) << "knot " << k;
    Compare cmp;
    for (int trial = 0; trial < 3; ++trial) {
      const Point pt = random_point(p, rng);
      const HostReference h = host_linearize(p, pt.x, pt.u);
      ASSERT_TRUE(h.ok);
      Output o(P);
      run_serial(d, d.slice.data(), pt.x, pt.u, o);
      ASSERT_TRUE(o.ok);
      const std::size_t nx = std::size_t(P.nx), nu = std::size_t(P.nu);
      compare_all(cmp, P, o, h);
      if (HasFatalFailure()) return;
      std::vector<double> work(solver::device::step_work_size(P)), y(nx), y2(nx), A(nx * nx), B(nx * nu);
      ASSERT_TRUE(solver::device::step(P, d.arena.data(), pt.x.data(), pt.u.data(), y.data(), work.data()));
      ASSERT_TRUE(solver::device::step_jacobian(P, d.arena.data(), pt.x.data(), pt.u.data(), y2.data(), A.data(),
                                                B.data(), work.data()));
      cmp("step", y.data(), y2.data(), nx, nx);
    }
    std::printf("%-50s %7zu values, %7zu bitwise equal, largest difference %.2g of its block\n", name.c_str(),
                cmp.total, cmp.bitwise, cmp.worst);
  }
}

TEST(DeviceLinearize, ExpressionModelGroupSizesAgreeBitwise) {
  std::mt19937_64 rng(8);
  for (const char* name : {"cartpole_swingup", "quadrotor_to_point"}) {
    SCOPED_TRACE(name);
    const problems::Problem p = load_expression(name);
    expect_group_sizes_bitwise(p, rng);
  }
}

// Negative controls: the device path reads the tape from the arena (a constant changed there moves
// the dynamics' blocks beyond the tolerance above, and only them), and a NaN state gives false.
TEST(DeviceLinearize, ExpressionModelNegativeControls) {
  const problems::Problem p = load_expression("cartpole_swingup");
  const BatchProblemData d = solver::device::compile_batch_problem(p);
  const auto& P = d.problem;
  std::mt19937_64 rng(12);
  const Point pt = random_point(p, rng);
  const HostReference h = host_linearize(p, pt.x, pt.u);
  Output base(P);
  run_serial(d, d.slice.data(), pt.x, pt.u, base);
  ASSERT_TRUE(base.ok);

  // The tape's first instruction with a nonzero constant (a parameter folded in), scaled by 1.1.
  BatchProblemData changed = d;
  auto* code = reinterpret_cast<problems::ExprInstr*>(changed.arena.data() + P.expr_code);
  const auto* model = dynamic_cast<const problems::ModelAdapter<problems::ExpressionDynamics>*>(p.model.get());
  ASSERT_NE(model, nullptr);
  const int size = model->model().tape.size;
  int at = -1;
  for (int i = model->model().tape.loads; i < size && at < 0; ++i)
    if (code[i].k != 0 && code[i].op != problems::ExprOp::PowInt) at = i;
  ASSERT_GE(at, 0) << "no constant in the tape";
  code[at].k *= 1.1;
  Output moved(P);
  run_serial(changed, changed.slice.data(), pt.x, pt.u, moved);
  ASSERT_TRUE(moved.ok);
  const std::size_t nA = std::size_t(P.N) * P.nx * P.nx;
  double diff = 0, norm = 0;
  for (std::size_t e = 0; e < nA; ++e) {
    diff = std::max(diff, std::abs(moved.view.A[e] - h.A[e]));
    norm = std::max(norm, std::abs(h.A[e]));
  }
  EXPECT_GT(diff, 1e-6 * std::max(1.0, norm)) << "instruction " << at;
  // The costs do not read the tape.
  EXPECT_EQ(std::vector<double>(moved.view.Q, moved.view.Q + std::size_t(P.N + 1) * P.nx * P.nx),
            std::vector<double>(base.view.Q, base.view.Q + std::size_t(P.N + 1) * P.nx * P.nx));
  // The original arena still matches the host.
  double base_diff = 0;
  for (std::size_t e = 0; e < nA; ++e) base_diff = std::max(base_diff, std::abs(base.view.A[e] - h.A[e]));
  EXPECT_LE(base_diff, 1e-13 * std::max(1.0, norm));

  for (int threads : {1, 3}) {
    Point bad = pt;
    bad.x[std::size_t(5 * 4 + 1)] = kNaN;
    Output o(P);
    run_threaded(d, d.slice.data(), bad.x, bad.u, threads, o);
    EXPECT_FALSE(o.ok) << threads;
  }
}

// Expression terms (a residual cost's and an expression constraint's tapes in the arena): a residual
// that mixes states and the control under a dense weight (so S, the cross term, is not zero), a
// state-only residual at the terminal knot, an inequality on x and u with one side unbounded, and a
// terminal equality (expression_term_overrides), on the expression cart-pole and on the built-in
// one, and planar_quadrotor's residual and obstacle.
std::vector<std::pair<std::string, problems::Problem>> term_problems() {
  std::vector<std::pair<std::string, problems::Problem>> out;
  out.emplace_back("planar_quadrotor", load_config("planar_quadrotor"));
  out.emplace_back("expression cartpole + terms", load_expression("cartpole_swingup", expression_term_overrides()));
  out.emplace_back("cartpole + terms", load_config("cartpole_swingup", expression_term_overrides()));
  return out;
}

TEST(DeviceLinearize, ExpressionTermsMatchTheHostLinearization) {
  std::mt19937_64 rng(20261202);
  for (const auto& [name, p] : term_problems()) {
    SCOPED_TRACE(name);
    ASSERT_EQ(solver::device::device_path_unsupported(p), "");
    const BatchProblemData d = solver::device::compile_batch_problem(p);
    const auto& P = d.problem;
    EXPECT_GT(P.term_work, 0u);
    const solver::Solver host(p, sqp_options(p));
    const auto io = solver::device::row_offsets(P, d.slice.data(), solver::device::ConstraintSet::Inequality);
    const auto eo = solver::device::row_offsets(P, d.slice.data(), solver::device::ConstraintSet::Equality);
    for (int k = 0; k <= P.N + 1; ++k) {
      ASSERT_EQ(io[k], host.inequality_offset(k)) << "knot " << k;
      ASSERT_EQ(eo[k], host.equality_offset(k)) << "knot " << k;
    }
    Compare cmp;
    double cross = 0;
    for (int trial = 0; trial < 3; ++trial) {
      const Point pt = random_point(p, rng);
      const HostReference h = host_linearize(p, pt.x, pt.u);
      ASSERT_TRUE(h.ok);
      Output o(P);
      run_serial(d, d.slice.data(), pt.x, pt.u, o);
      ASSERT_TRUE(o.ok);
      compare_all(cmp, P, o, h);
      if (HasFatalFailure()) return;
      for (double v : h.S) cross = std::max(cross, std::abs(v));
    }
    if (name != "planar_quadrotor") {
      EXPECT_GT(cross, 1e-3) << "the residual's cross term is exercised";
      EXPECT_EQ(P.n_eq, 2);
    }
    std::printf("%-50s %7zu values, %7zu bitwise equal, largest difference %.2g of its block\n", name.c_str(),
                cmp.total, cmp.bitwise, cmp.worst);
  }
}

TEST(DeviceLinearize, ExpressionTermsGroupSizesAgreeBitwise) {
  std::mt19937_64 rng(9);
  for (const auto& [name, p] : term_problems()) {
    SCOPED_TRACE(name);
    expect_group_sizes_bitwise(p, rng);
  }
}

// Negative controls: the terms are read from the arena. A residual's constant changed there moves
// the costs beyond the tolerance above; a constraint row's bound moved moves that row's value by the
// same amount and leaves the Jacobian rows alone.
TEST(DeviceLinearize, ExpressionTermsNegativeControls) {
  const problems::Problem p = load_expression("cartpole_swingup", expression_term_overrides());
  const BatchProblemData d = solver::device::compile_batch_problem(p);
  const auto& P = d.problem;
  std::mt19937_64 rng(13);
  const Point pt = random_point(p, rng);
  const HostReference h = host_linearize(p, pt.x, pt.u);
  Output base(P);
  run_serial(d, d.slice.data(), pt.x, pt.u, base);
  ASSERT_TRUE(base.ok);
  using solver::device::arena_at;

  // The 'mix' residual's (cost 3) tape: its constant 0.5 scaled by 1.1.
  BatchProblemData changed = d;
  const auto* costs = arena_at<solver::device::CostRecord>(changed.arena.data(), P.costs);
  ASSERT_EQ(costs[3].kind, solver::device::CostKind::Residual);
  const auto* tt = arena_at<solver::device::TermTape>(changed.arena.data(), costs[3].tape);
  auto* code = reinterpret_cast<problems::ExprInstr*>(changed.arena.data() + tt->code);
  int at = -1;
  for (int i = tt->loads; i < tt->size && at < 0; ++i)
    if (code[i].k == 0.5 || code[i].k == -0.5) at = i;
  ASSERT_GE(at, 0) << "no constant 0.5 in the residual's tape";
  code[at].k *= 1.1;
  Output moved(P);
  run_serial(changed, changed.slice.data(), pt.x, pt.u, moved);
  ASSERT_TRUE(moved.ok);
  double diff = 0, norm = 0;
  for (std::size_t k = 0; k < h.r.size(); ++k) {
    diff = std::max(diff, std::abs(moved.view.r[k] - h.r[k]));
    norm = std::max(norm, std::abs(h.r[k]));
  }
  EXPECT_GT(diff, 1e-6 * std::max(1.0, norm));
  EXPECT_NE(moved.cost, base.cost);
  EXPECT_EQ(moved.ineq_value, base.ineq_value);  // the constraints do not read the cost's tape

  // The 'lean' constraint's (inequality term 1) first row: F cos(theta) - 78, bound moved to 68.
  BatchProblemData bounds = d;
  const auto* rows = arena_at<solver::device::RowRecord>(bounds.arena.data(), P.ineq_terms);
  ASSERT_EQ(rows[1].kind, solver::device::RowKind::Expression);
  auto* er = reinterpret_cast<solver::device::ExprRow*>(bounds.arena.data() + rows[1].index);
  ASSERT_EQ(er[0].bound, 78.0);
  er[0].bound = 68.0;
  Output shifted(P);
  run_serial(bounds, bounds.slice.data(), pt.x, pt.u, shifted);
  ASSERT_TRUE(shifted.ok);
  EXPECT_EQ(shifted.ineq_jac, base.ineq_jac);
  int moved_rows = 0;
  for (std::size_t i = 0; i < base.ineq_value.size(); ++i)
    if (shifted.ineq_value[i] != base.ineq_value[i]) {
      ++moved_rows;
      EXPECT_NEAR(shifted.ineq_value[i] - base.ineq_value[i], 10.0, 1e-12) << "row " << i;
    }
  EXPECT_EQ(moved_rows, P.N);  // lean reads the control: its first row at every running knot
  // set_slice_bounds does not reach an expression constraint's bounds.
  std::vector<double> slice = d.slice;
  EXPECT_THROW(solver::device::set_slice_bounds(d, slice.data(), "lean", std::vector<double>{-1, -1},
                                                std::vector<double>{1, 1}),
               std::invalid_argument);

  // A NaN control gives false on every rank.
  for (int threads : {1, 3}) {
    Point bad = pt;
    bad.u[4] = kNaN;
    Output o(P);
    run_threaded(d, d.slice.data(), bad.x, bad.u, threads, o);
    EXPECT_FALSE(o.ok) << threads;
  }
}

// set_slice_bounds moves a box's bounds in place, and lays the rows out again when a bound becomes
// infinite (a row removed) or finite (a row added): the slice then linearizes bit for bit as the
// problem compiled with those bounds, whose rows are the host Solver's.
TEST(DeviceLinearize, SliceBoundsLayTheRowsOutAgain) {
  const problems::Problem p = load_config("cartpole_swingup");
  const BatchProblemData d = solver::device::compile_batch_problem(p);
  ASSERT_EQ(p.constraints.size(), 1u);
  const std::string box = p.constraints[0]->info().name;
  const std::vector<double> lo = p.constraints[0]->box()->lower, hi = p.constraints[0]->box()->upper;
  ASSERT_TRUE(std::isfinite(lo[0]) && std::isfinite(hi[0]));
  const double inf = std::numeric_limits<double>::infinity();
  std::mt19937_64 rng(3);
  const Point pt = random_point(p, rng);
  const auto bits = [](const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
  };
  const auto rows = [](const BatchProblemData& c, const double* slice, int k) {
    return solver::device::row_offsets(c.problem, slice, solver::device::ConstraintSet::Inequality)[k];
  };

  // The same rows: the values move, the Jacobian and the layout stay.
  std::vector<double> slice = d.slice;
  solver::device::set_slice_bounds(d, slice.data(), box, lo, std::vector<double>{0.5 * hi[0]});
  Output a(d.problem), b(d.problem);
  run_serial(d, d.slice.data(), pt.x, pt.u, a);
  run_serial(d, slice.data(), pt.x, pt.u, b);
  EXPECT_NE(a.ineq_value, b.ineq_value);
  EXPECT_EQ(a.ineq_jac, b.ineq_jac);
  EXPECT_EQ(rows(d, slice.data(), p.horizon.N + 1), rows(d, d.slice.data(), p.horizon.N + 1));

  // Upper removed, then back: against the problems compiled with those bounds.
  const problems::Problem open = load_config("cartpole_swingup", {"constraints[0].upper=[.inf]"});
  const BatchProblemData od = solver::device::compile_batch_problem(open);
  const solver::Solver host(open, sqp_options(open));
  for (int k = 0; k <= p.horizon.N + 1; ++k) ASSERT_EQ(rows(od, od.slice.data(), k), host.inequality_offset(k)) << k;
  ASSERT_LT(rows(od, od.slice.data(), p.horizon.N + 1), rows(d, d.slice.data(), p.horizon.N + 1));
  EXPECT_EQ(od.problem.n_ineq, d.problem.n_ineq);  // the arrays hold every bound's row either way
  solver::device::set_slice_bounds(d, slice.data(), box, lo, std::vector<double>{inf});
  for (int k = 0; k <= p.horizon.N + 1; ++k) EXPECT_EQ(rows(d, slice.data(), k), host.inequality_offset(k)) << k;
  Output removed(d.problem), want_removed(od.problem);
  run_serial(d, slice.data(), pt.x, pt.u, removed);
  run_serial(od, od.slice.data(), pt.x, pt.u, want_removed);
  EXPECT_TRUE(removed.ok && want_removed.ok);
  EXPECT_TRUE(bits(removed.all(), want_removed.all()));
  EXPECT_FALSE(bits(removed.all(), a.all()));  // negative control: not the problem with both rows

  std::vector<double> reopened = od.slice;
  solver::device::set_slice_bounds(od, reopened.data(), box, lo, hi);
  Output added(od.problem);
  run_serial(od, reopened.data(), pt.x, pt.u, added);
  EXPECT_TRUE(bits(added.all(), a.all()));
  for (int k = 0; k <= p.horizon.N + 1; ++k) EXPECT_EQ(rows(od, reopened.data(), k), rows(d, d.slice.data(), k)) << k;

  // Refused, the slice unchanged: NaN, lower above upper, a lower of +inf, an upper of -inf, the
  // wrong count, an unknown name.
  const std::vector<double> before = slice;
  for (const auto& [l, h] : {std::pair{std::vector<double>{kNaN}, hi}, std::pair{hi, lo},
                             std::pair{std::vector<double>{inf}, std::vector<double>{inf}},
                             std::pair{std::vector<double>{-inf}, std::vector<double>{-inf}},
                             std::pair{std::vector<double>{-1.0, -1.0}, std::vector<double>{1.0, 1.0}}})
    EXPECT_THROW(solver::device::set_slice_bounds(d, slice.data(), box, l, h), std::invalid_argument);
  EXPECT_THROW(solver::device::set_slice_bounds(d, slice.data(), "no_such_box", lo, hi), std::invalid_argument);
  EXPECT_THROW(solver::device::set_slice_reference(d, slice.data(), "no_such_cost", std::vector<double>{1.0}), std::invalid_argument);
  EXPECT_TRUE(bits(slice, before));
}

}  // namespace
}  // namespace knot::test

namespace knot::test {
namespace {

// The float instance (the GPU's single-precision path) on the host: the same phase in float agrees
// with the double one to single precision (relative to each block, as above).
TEST(DeviceLinearize, FloatInstanceAgreesToSinglePrecision) {
  for (const char* name : {"cartpole_swingup", "iiwa14_reach"}) {
    SCOPED_TRACE(name);
    const problems::Problem p = load_config(name);
    const BatchProblemData d = solver::device::compile_batch_problem(p);
    const auto& P = d.problem;
    std::mt19937_64 rng(5);
    const Point pt = random_point(p, rng);
    Output o(P);
    run_serial(d, d.slice.data(), pt.x, pt.u, o);
    ASSERT_TRUE(o.ok);
    const std::vector<float> xf(pt.x.begin(), pt.x.end()), uf(pt.u.begin(), pt.u.end());
    std::vector<float> lq(LqView<float>::size(P.nx, P.nu, P.N), NAN);
    const std::size_t nw = std::size_t(P.nx + P.nu);
    std::vector<float> iv(std::size_t(P.n_ineq)), ij(std::size_t(P.n_ineq) * nw), ev(std::size_t(P.n_eq)),
        ej(std::size_t(P.n_eq) * nw), cost(std::size_t(P.N) + 1), work(solver::device::linearize_work_size<float>(P));
    linalg::SerialGroup g;
    ASSERT_TRUE(solver::device::linearize(g, P, d.arena.data(), d.slice.data(), xf.data(), uf.data(),
                                          LqView<float>::carve(P.nx, P.nu, P.N, lq.data()), iv.data(), ij.data(),
                                          ev.data(), ej.data(), cost.data(), work.data()));
    const std::size_t block = std::size_t(P.nx) * P.nx;
    for (std::size_t b0 = 0; b0 < std::size_t(P.N) * block; b0 += block) {  // the A_k
      double diff = 0, norm = 0;
      for (std::size_t i = b0; i < b0 + block; ++i) {
        diff += (double(lq[i]) - o.lq[i]) * (double(lq[i]) - o.lq[i]);
        norm += o.lq[i] * o.lq[i];
      }
      EXPECT_LE(std::sqrt(diff) / std::max(1.0, std::sqrt(norm)), 1e-4) << "A block at " << b0;
    }
    for (int k = 0; k <= P.N; ++k)
      EXPECT_NEAR(cost[std::size_t(k)], o.cost[std::size_t(k)], 1e-4 * std::max(1.0, std::abs(o.cost[std::size_t(k)])));
  }
}

}  // namespace
}  // namespace knot::test
