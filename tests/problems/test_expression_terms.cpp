// Residual costs and expression constraints (expression_terms.hpp): a linear residual against the
// built-in StateCost and ControlCost; a nonlinear residual's gradient, Gauss-Newton Hessian and
// curvature against finite differences; a constraint's rows, Jacobian and curvature against
// finite differences and against ControlBox; the loader's keys and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "knot/problems/cost.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/expression_terms.hpp"
#include "knot/problems/loader.hpp"
#include "test_models_local.hpp"
#include "test_util.hpp"

namespace knot::problems {
namespace {

using test::Mat;
using test::rel_err;
using test::Vec;

constexpr double kPi = 3.141592653589793;

ExprSymbols cartpole_symbols() {
  ExprSymbols s;
  s.states = {"p", "theta", "v", "omega"};
  s.controls = {"F"};
  s.params = {{"l", 0.8, "params.l", {}}};
  return s;
}

std::shared_ptr<const TermExpressions> terms(const std::vector<std::string>& texts) {
  std::vector<ExprSource> src;
  for (const std::string& t : texts) src.push_back({t, "residual", {}});
  return std::make_shared<const TermExpressions>(cartpole_symbols(), src);
}

struct Blocks {
  Vec gx = Vec::Zero(4), gu = Vec::Zero(1);
  Mat Hxx = Mat::Zero(4, 4), Huu = Mat::Zero(1, 1), Hux = Mat::Zero(1, 4);
  CostBlocks view() { return CostBlocks{gx.data(), gu.data(), Hxx.data(), Huu.data(), Hux.data()}; }
  // The full (x, u) Hessian.
  Mat H() const {
    Mat h(5, 5);
    h << Hxx, Hux.transpose(), Hux, Huu;
    return h;
  }
};

StagePoint point(const double* x, const double* u) {
  StagePoint p;
  p.k = 0;
  p.N = 10;
  p.dt = 0.05;
  p.x = x;
  p.u = u;
  return p;
}

TEST(ResidualCost, LinearResidualIsTheStateAndControlCost) {
  const double x[4] = {0.3, 2.9, -0.4, 1.1}, u[1] = {4.0};
  TermInfo info{"c", StageSet::All, true};
  const ResidualCost r(info, terms({"p", "theta - pi", "v", "omega", "F - 1"}),
                       Weight::diagonal({2000, 2000, 0.02, 0.02, 0.5}));
  const StateCost sc(info, 4, Weight::diagonal({2000, 2000, 0.02, 0.02}), Reference::constant({0, kPi, 0, 0}));
  const ControlCost cc(info, 1, Weight::diagonal({0.5}), Reference::constant({1}));
  Blocks a, b;
  const StagePoint p = point(x, u);
  const double va = r.accumulate(p, a.view());
  const double vb = sc.accumulate(p, b.view()) + cc.accumulate(p, b.view());
  EXPECT_NEAR(va, vb, 1e-12 * vb);
  EXPECT_NEAR(r.value(p), va, 1e-15 * va);
  EXPECT_LE(rel_err(a.gx, b.gx), 1e-14);
  EXPECT_LE(rel_err(a.gu, b.gu), 1e-14);
  EXPECT_LE(rel_err(a.H(), b.H()), 1e-14);
  EXPECT_TRUE(r.uses_control());
  // Negative control: another reference is told apart.
  const StateCost off(info, 4, Weight::diagonal({2000, 2000, 0.02, 0.02}), Reference::constant({0, 3.1, 0, 0}));
  Blocks c;
  off.accumulate(p, c.view());
  cc.accumulate(p, c.view());
  EXPECT_GT(rel_err(a.gx, c.gx), 1e-6);
}

TEST(ResidualCost, NonlinearResidualAgainstFiniteDifferences) {
  const double x0[4] = {0.3, 2.9, -0.4, 1.1}, u0[1] = {4.0};
  TermInfo info{"tip", StageSet::All, false};
  // The pole tip's position and a control-dependent term.
  const ResidualCost r(info, terms({"p - l * sin(theta) - 0.2", "l * cos(theta) - 0.8", "F * omega"}),
                       Weight::dense(3, {2, 0.5, 0, 0.5, 1, 0, 0, 0, 0.1}));
  const auto value = [&](const Vec& w) { return r.value(point(w.data(), w.data() + 4)); };
  Vec w(5);
  w << x0[0], x0[1], x0[2], x0[3], u0[0];
  Blocks b;
  r.accumulate(point(x0, u0), b.view());
  Vec g(5), fd(5);
  g << b.gx, b.gu;
  for (int j = 0; j < 5; ++j) {
    Vec wp = w, wm = w;
    wp(j) += 1e-6;
    wm(j) -= 1e-6;
    fd(j) = (value(wp) - value(wm)) / 2e-6;
  }
  EXPECT_LE(rel_err(g, fd), 1e-7);
  // Gauss-Newton plus curvature is the exact Hessian: differences of the gradient.
  Blocks c = b;
  ASSERT_TRUE(r.add_curvature(point(x0, u0), c.view()));
  const auto grad = [&](const Vec& v, Vec& out) {
    Blocks t;
    r.accumulate(point(v.data(), v.data() + 4), t.view());
    out.resize(5);
    out << t.gx, t.gu;
  };
  const Mat H = test::fd_jacobian(grad, w, 5);
  EXPECT_LE(rel_err(c.H(), H), 1e-6);
  // Negative control: the Gauss-Newton Hessian alone is not the exact one here.
  EXPECT_GT(rel_err(b.H(), H), 1e-3);
}

TEST(ExpressionConstraint, RowsJacobianAndCurvature) {
  const double x0[4] = {0.3, 2.9, -0.4, 1.1}, u0[1] = {4.0};
  TermInfo info{"g", StageSet::All, false};
  const ExpressionConstraint c(info, terms({"p^2 + sin(theta) * F", "omega * v"}), {-1, -INFINITY}, {2, 0.5});
  ASSERT_EQ(c.dim(), 3);  // g0 - 2, -1 - g0, g1 - 0.5
  EXPECT_EQ(c.kind(), ConstraintKind::Inequality);
  double g[3];
  c.evaluate(point(x0, u0), g);
  const double g0 = 0.09 + std::sin(2.9) * 4.0, g1 = 1.1 * -0.4;
  EXPECT_NEAR(g[0], g0 - 2, 1e-15);
  EXPECT_NEAR(g[1], -1 - g0, 1e-15);
  EXPECT_NEAR(g[2], g1 - 0.5, 1e-15);
  Mat gx(3, 4), gu(3, 1);
  c.jacobian(point(x0, u0), nullptr, gx.data(), gu.data());
  Vec w(5);
  w << x0[0], x0[1], x0[2], x0[3], u0[0];
  const auto G = [&](const Vec& v, Vec& out) {
    out.resize(3);
    c.evaluate(point(v.data(), v.data() + 4), out.data());
  };
  Mat J(3, 5);
  J << gx, gu;
  EXPECT_LE(rel_err(J, test::fd_jacobian(G, w, 3)), 1e-8);
  // Curvature of mult' g against differences of mult' dg/dw.
  const double mult[3] = {0.7, -0.2, 1.3};
  Mat H = Mat::Zero(5, 5);
  ASSERT_TRUE(c.add_curvature(point(x0, u0), mult, H.data(), 5));
  const auto MG = [&](const Vec& v, Vec& out) {
    Mat a(3, 4), b(3, 1);
    c.jacobian(point(v.data(), v.data() + 4), nullptr, a.data(), b.data());
    Mat j(3, 5);
    j << a, b;
    out = j.transpose() * Eigen::Map<const Vec>(mult, 3);
  };
  EXPECT_LE(rel_err(H, test::fd_jacobian(MG, w, 5)), 1e-6);
  // Equal bounds make an equality.
  const ExpressionConstraint eq(info, terms({"v + omega"}), {0.25}, {0.25});
  EXPECT_EQ(eq.kind(), ConstraintKind::Equality);
  ASSERT_EQ(eq.dim(), 1);
  eq.evaluate(point(x0, u0), g);
  EXPECT_NEAR(g[0], 0.7 - 0.25, 1e-15);
  EXPECT_FALSE(eq.uses_control());
}

TEST(ExpressionTerms, LoadedFromTheProblemFile) {
  const std::string text = R"(
name: terms
model: {type: cartpole}
horizon: {N: 10, dt: 0.05}
x0: [0, 3.14, 0, 0]
costs:
  - {name: tip, type: residual, residual: [p - 0.8 * sin(theta), 0.8 * cos(theta)], weights: [1, 2]}
  - {name: effort, type: residual, residual: F, weights: 0.1, scale_by_dt: true}
constraints:
  - {name: force, type: expression, expression: F, lower: [-80], upper: [80]}
  - {name: rail, type: expression, expression: [p], upper: [1], stage: terminal}
)";
  const Problem p = load_problem_from_string(text);
  ASSERT_EQ(p.costs.size(), 2u);
  EXPECT_EQ(p.costs[0]->type(), "residual");
  EXPECT_EQ(p.costs[0]->info().stages, StageSet::All);
  EXPECT_EQ(p.costs[1]->info().stages, StageSet::Running);  // reads the control
  ASSERT_EQ(p.constraints.size(), 2u);
  EXPECT_EQ(p.constraints[0]->dim(), 2);
  EXPECT_EQ(p.constraints[1]->dim(), 1);
  EXPECT_EQ(p.constraints[1]->info().stages, StageSet::Terminal);

  const auto error = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    try {
      load_problem_from_string(t, "t.yaml");
    } catch (const ProblemError& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  const std::string unknown = error("0.8 * cos(theta)", "0.8 * cos(thet)");
  EXPECT_NE(unknown.find("t.yaml:7:76: costs[0].residual[1]: expected a state, control, parameter or definition, found "
                         "'thet' at character 11 of '0.8 * cos(thet)' (did you mean 'theta'?)"),
            std::string::npos)
      << unknown;
  EXPECT_NE(error("weights: [1, 2]", "weights: [1, 2, 3]").find("costs[0].weights"), std::string::npos);
  EXPECT_NE(error("upper: [1], stage: terminal", "upper: [1], stage: terminal, extra: 1").find("unknown key 'extra'"),
            std::string::npos);
  EXPECT_NE(error("expression: F, lower", "expression: F, stage: terminal, lower")
                .find("expected all or running (a control term has no control at the terminal knot)"),
            std::string::npos);
  EXPECT_NE(error("expression: F, lower: [-80]", "expression: F / 0, lower: [-80]")
                .find("constraints[0].expression: expected a denominator that is not the constant 0"),
            std::string::npos);
  EXPECT_EQ(error("name: terms", "name: terms"), "loaded");
}

}  // namespace
}  // namespace knot::problems
