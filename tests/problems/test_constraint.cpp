// Constraint terms: values against hand-computed rows, Jacobians against central differences of
// evaluate(), box row layout and dropped infinite bounds, obstacle sign, activity, validation; each
// with a negative control.
#include "knot/problems/constraint.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

#include "test_models_local.hpp"

namespace {

using namespace knot::problems;
using knot::test::Arm2;
using knot::test::fd_jacobian;
using knot::test::kNaN;
using knot::test::LinearModel;
using knot::test::Mat;
using knot::test::Pendulum;
using knot::test::rel_err;
using knot::test::Rng;
using knot::test::Vec;

constexpr double kInf = std::numeric_limits<double>::infinity();

StagePoint point(const Vec& x, const Vec* u = nullptr, ModelData* data = nullptr, int k = 0, int N = 5) {
  StagePoint p;
  p.k = k;
  p.N = N;
  p.dt = 0.1;
  p.x = x.data();
  p.u = u ? u->data() : nullptr;
  p.data = data;
  return p;
}

Vec evaluate(const ConstraintTerm& c, const StagePoint& p) {
  Vec g = Vec::Constant(c.dim(), kNaN);
  c.evaluate(p, g.data());
  return g;
}

// jacobian() into NaN-poisoned outputs; a block of a variable the term does not depend on is
// passed poisoned and must come back untouched.
struct Jac {
  Vec g;
  Mat gx, gu;
};
Jac jacobian(const ConstraintTerm& c, const StagePoint& p, int nx, int nu) {
  Jac j{Vec::Constant(c.dim(), kNaN), Mat::Constant(c.dim(), nx, kNaN), Mat::Constant(c.dim(), nu, kNaN)};
  c.jacobian(p, j.g.data(), j.gx.data(), j.gu.data());
  return j;
}

bool all_nan(const Mat& m) { return m.array().isNaN().all(); }

// Central differences of evaluate() in x (and in u when u is given).
Mat fd_x(const ConstraintTerm& c, const Vec& x, const Vec* u, ModelData* data) {
  return fd_jacobian([&](const Vec& xx, Vec& g) { g = evaluate(c, point(xx, u, data)); }, x, c.dim());
}
Mat fd_u(const ConstraintTerm& c, const Vec& x, const Vec& u) {
  return fd_jacobian([&](const Vec& uu, Vec& g) { g = evaluate(c, point(x, &uu)); }, u, c.dim());
}

std::string message_of(const std::function<void()>& make) {
  try {
    make();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no exception";
}

// Rows: per entry, upper (u - hi) then lower (lo - u), finite bounds only.
TEST(Constraint, ControlBoxRowsAndJacobian) {
  const ControlBox c({"torque", StageSet::All, false}, 3, {-1, -kInf, -3}, {2, 5, kInf});
  ASSERT_EQ(c.dim(), 4);
  EXPECT_TRUE(c.uses_control());
  EXPECT_EQ(c.kind(), ConstraintKind::Inequality);
  const Vec x = Vec::Zero(2), u = (Vec(3) << 0.2, 6.0, -4.0).finished();
  const Vec g = evaluate(c, point(x, &u));
  const Vec want = (Vec(4) << 0.2 - 2, -1 - 0.2, 6.0 - 5, -3 - -4.0).finished();
  EXPECT_EQ(g, want);
  // Satisfied rows are <= 0, violated ones > 0: entry 1 exceeds 5, entry 2 is below -3.
  EXPECT_LE(g(0), 0);
  EXPECT_LE(g(1), 0);
  EXPECT_GT(g(2), 0);
  EXPECT_GT(g(3), 0);
  const Jac j = jacobian(c, point(x, &u), 2, 3);
  EXPECT_EQ(j.g, want);
  Mat gu(4, 3);
  gu << 1, 0, 0, -1, 0, 0, 0, 1, 0, 0, 0, -1;
  EXPECT_EQ(j.gu, gu);
  EXPECT_LE(rel_err(j.gu, fd_u(c, x, u)), 1e-6);
  EXPECT_TRUE(all_nan(j.gx));  // control-only: gx is the caller's
  // The bounds, as simple bounds.
  ASSERT_NE(c.box(), nullptr);
  EXPECT_TRUE(c.box()->on_control);
  EXPECT_EQ(c.box()->index, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(c.box()->upper[2], kInf);
  // Negative control: the rows in another order (lower first) fail the layout check.
  Vec swapped = want;
  std::swap(swapped(0), swapped(1));
  EXPECT_NE(g, swapped);
}

TEST(Constraint, StateBoxRowsAndJacobian) {
  Rng rng(1);
  const int nx = 4;
  const StateBox c({"limits", StageSet::All, false}, nx, {3, 1}, {-kInf, -1}, {0.5, kInf});
  ASSERT_EQ(c.dim(), 2);
  EXPECT_FALSE(c.uses_control());
  const Vec x = rng.vector(nx);
  const Vec want = (Vec(2) << x(3) - 0.5, -1 - x(1)).finished();
  EXPECT_EQ(evaluate(c, point(x)), want);
  const Jac j = jacobian(c, point(x), nx, 2);
  EXPECT_EQ(j.g, want);
  Mat gx = Mat::Zero(2, nx);
  gx(0, 3) = 1;
  gx(1, 1) = -1;
  EXPECT_EQ(j.gx, gx);
  EXPECT_LE(rel_err(j.gx, fd_x(c, x, nullptr, nullptr)), 1e-6);
  EXPECT_TRUE(all_nan(j.gu));
  EXPECT_FALSE(c.box()->on_control);
  EXPECT_EQ(c.box()->index, (std::vector<int>{3, 1}));
  // Every bound infinite: no rows. Negative control: a sign flip in the Jacobian is caught.
  EXPECT_EQ(StateBox({"free", StageSet::All, false}, nx, {0, 2}, {-kInf, -kInf}, {kInf, kInf}).dim(), 0);
  EXPECT_GT(rel_err(-j.gx, fd_x(c, x, nullptr, nullptr)), 1e-6);
}

TEST(Constraint, BoxValidation) {
  const TermInfo info{"lim", StageSet::All, false};
  const std::string order = message_of([&] { ControlBox(info, 2, {0, 1}, {1, 0}); });
  EXPECT_NE(order.find("'lim'"), std::string::npos) << order;
  EXPECT_NE(order.find("entry 1"), std::string::npos) << order;
  EXPECT_NE(message_of([&] { ControlBox(info, 2, {0}, {1, 1}); }).find("2 values"), std::string::npos);
  EXPECT_NE(message_of([&] { ControlBox(info, 1, {kInf}, {kInf}); }).find("lower <= upper"), std::string::npos);
  EXPECT_NE(message_of([&] { ControlBox(info, 1, {kNaN}, {1}); }).find("nan"), std::string::npos);
  EXPECT_NE(message_of([&] { StateBox(info, 3, {3}, {0}, {1}); }).find("index"), std::string::npos);
  EXPECT_NE(message_of([&] { StateBox(info, 3, {1, 1}, {0, 0}, {1, 1}); }).find("distinct"), std::string::npos);
  EXPECT_NE(message_of([&] { StateBox(info, 3, {1}, {0, 0}, {1, 1}); }).find("one per index"), std::string::npos);
  // Equal bounds and one-sided infinities are valid (negative controls).
  EXPECT_EQ(message_of([&] { ControlBox(info, 2, {1, -kInf}, {1, 0}); }), "no exception");
  EXPECT_EQ(message_of([&] { StateBox(info, 3, {2, 0}, {0, -kInf}, {kInf, 1}); }), "no exception");
}

// g = r^2 - |p - c|^2: positive inside (violated), zero on the circle, negative outside.
TEST(Constraint, CircleObstacleSignAndJacobian) {
  LinearModel point_mass(Mat::Zero(4, 4), Mat::Zero(4, 2), 2, false, std::array<int, 2>{2, 0});
  const CircleObstacle c({"pillar", StageSet::All, false}, point_mass, {1.0, -0.5}, 0.5);
  ASSERT_EQ(c.dim(), 1);
  const auto at = [](double px, double py) { return (Vec(4) << py, 7.0, px, -3.0).finished(); };  // p = (x2, x0)
  EXPECT_GT(evaluate(c, point(at(1.1, -0.4)))(0), 0);
  EXPECT_NEAR(evaluate(c, point(at(1.0, -0.5)))(0), 0.25, 1e-15);
  EXPECT_NEAR(evaluate(c, point(at(1.5, -0.5)))(0), 0.0, 1e-15);
  EXPECT_LT(evaluate(c, point(at(2.0, 1.0)))(0), 0);
  EXPECT_NEAR(evaluate(c, point(at(2.0, 1.0)))(0), 0.25 - (1.0 + 2.25), 1e-15);
  Rng rng(2);
  for (int trial = 0; trial < 3; ++trial) {
    const Vec x = rng.vector(4) * 2;
    const Jac j = jacobian(c, point(x), 4, 2);
    EXPECT_EQ(j.g, evaluate(c, point(x)));
    EXPECT_LE(rel_err(j.gx, fd_x(c, x, nullptr, nullptr)), 1e-6);
    EXPECT_EQ(j.gx(0, 1), 0.0);
    EXPECT_TRUE(all_nan(j.gu));
    // Negative control: the Jacobian of a swapped planar index fails.
    Mat wrong = j.gx;
    std::swap(wrong(0, 0), wrong(0, 2));
    EXPECT_GT(rel_err(wrong, fd_x(c, x, nullptr, nullptr)), 1e-6);
  }
  EXPECT_NE(message_of([] { CircleObstacle({"pillar", StageSet::All, false}, Pendulum(), {0, 0}, 1); }).find("planar"),
            std::string::npos);
  EXPECT_NE(message_of([&] { CircleObstacle({"pillar", StageSet::All, false}, point_mass, {0, 0}, 0); }).find("radius"),
            std::string::npos);
}

TEST(Constraint, EndEffectorHeight) {
  auto arm = std::make_shared<Arm2>();
  auto data = arm->make_data();
  const std::array<double, 3> offset = {0.5, 0.0, 0.1};
  const EndEffectorHeight c({"floor", StageSet::All, false}, arm, 1, offset, -0.2);
  ASSERT_EQ(c.dim(), 1);
  Rng rng(3);
  for (int trial = 0; trial < 3; ++trial) {
    const Vec x = rng.vector(4) * 2;
    double pos[3];
    arm->kinematics()->frame_position(*data, x.data(), 1, offset, pos, nullptr);
    EXPECT_EQ(evaluate(c, point(x, nullptr, data.get()))(0), -0.2 - pos[2]);
    const Jac j = jacobian(c, point(x, nullptr, data.get()), 4, 2);
    EXPECT_LE(rel_err(j.gx, fd_x(c, x, nullptr, data.get())), 1e-6);
    EXPECT_TRUE(all_nan(j.gu));
    EXPECT_GT(rel_err(-j.gx, fd_x(c, x, nullptr, data.get())), 1e-6);  // negative control
  }
  // Above z_min is satisfied, below violated: the arm hanging straight down reaches z = -1.2.
  const Vec down = (Vec(4) << -std::numbers::pi / 2, 0, 0, 0).finished();
  EXPECT_GT(evaluate(c, point(down, nullptr, data.get()))(0), 0);
  const Vec up = (Vec(4) << std::numbers::pi / 2, 0, 0, 0).finished();
  EXPECT_LT(evaluate(c, point(up, nullptr, data.get()))(0), 0);
  EXPECT_NE(message_of([] {
              EndEffectorHeight({"floor", StageSet::All, false}, std::make_shared<Pendulum>(), 0, {}, 0);
            }).find("kinematics"),
            std::string::npos);
  EXPECT_NE(message_of([&] { EndEffectorHeight({"floor", StageSet::All, false}, arm, -1, {}, 0); }).find("frame"),
            std::string::npos);
}

TEST(Constraint, EndEffectorBox) {
  auto arm = std::make_shared<Arm2>();
  auto data = arm->make_data();
  const std::array<double, 3> offset = {0.5, 0.05, 0.0};
  // x: both bounds; y: none (rows dropped); z: lower only.
  const EndEffectorBox c({"workspace", StageSet::All, false}, arm, 1, offset, {-0.3, -kInf, 0.1}, {0.9, kInf, kInf});
  ASSERT_EQ(c.dim(), 3);
  Rng rng(4);
  for (int trial = 0; trial < 3; ++trial) {
    const Vec x = rng.vector(4) * 2;
    double pos[3];
    arm->kinematics()->frame_position(*data, x.data(), 1, offset, pos, nullptr);
    const Vec want = (Vec(3) << pos[0] - 0.9, -0.3 - pos[0], 0.1 - pos[2]).finished();
    EXPECT_EQ(evaluate(c, point(x, nullptr, data.get())), want);
    const Jac j = jacobian(c, point(x, nullptr, data.get()), 4, 2);
    EXPECT_EQ(j.g, want);
    const Mat fd = fd_x(c, x, nullptr, data.get());
    EXPECT_LE(rel_err(j.gx, fd), 1e-6);
    EXPECT_TRUE(all_nan(j.gu));
    Mat wrong = j.gx;
    wrong.row(2) *= -1;  // negative control: the lower row's sign
    EXPECT_GT(rel_err(wrong, fd), 1e-6);
  }
  EXPECT_NE(message_of([&] {
              EndEffectorBox({"workspace", StageSet::All, false}, arm, 1, offset, {1, 0, 0}, {0, 1, 1});
            }).find("entry 0"),
            std::string::npos);
}

TEST(Constraint, StateEquality) {
  Rng rng(5);
  const int nx = 5;
  const StateEquality c({"arrive", StageSet::Terminal, false}, nx, {4, 0}, {1.5, -2.0});
  EXPECT_EQ(c.kind(), ConstraintKind::Equality);
  ASSERT_EQ(c.dim(), 2);
  const Vec x = rng.vector(nx);
  const Vec want = (Vec(2) << x(4) - 1.5, x(0) + 2.0).finished();
  EXPECT_EQ(evaluate(c, point(x)), want);
  const Jac j = jacobian(c, point(x), nx, 1);
  Mat gx = Mat::Zero(2, nx);
  gx(0, 4) = 1;
  gx(1, 0) = 1;
  EXPECT_EQ(j.gx, gx);
  EXPECT_LE(rel_err(j.gx, fd_x(c, x, nullptr, nullptr)), 1e-6);
  EXPECT_TRUE(all_nan(j.gu));
  const Vec target = (Vec(5) << -2.0, 0, 0, 0, 1.5).finished();
  EXPECT_EQ(evaluate(c, point(target)), Vec::Zero(2));
  EXPECT_NE(evaluate(c, point(x)), Vec::Zero(2));  // negative control
  EXPECT_NE(message_of([] { StateEquality({"arrive", StageSet::Terminal, false}, 2, {2}, {0}); }).find("index"),
            std::string::npos);
  EXPECT_NE(message_of([] { StateEquality({"arrive", StageSet::Terminal, false}, 2, {1}, {kNaN}); }).find("target"),
            std::string::npos);
}

// Stage membership, and no control-dependent constraint at the terminal knot.
TEST(Constraint, Activity) {
  const int N = 4;
  const ControlBox u_all({"u", StageSet::All, false}, 1, {-1}, {1});
  const StateBox x_all({"x", StageSet::All, false}, 1, {0}, {-1}, {1});
  const StateEquality x_end({"e", StageSet::Terminal, false}, 1, {0}, {0});
  const StateBox x_run({"r", StageSet::Running, false}, 1, {0}, {-1}, {1});
  for (int k = 0; k <= N; ++k) {
    EXPECT_EQ(u_all.active(k, N), k < N);
    EXPECT_TRUE(x_all.active(k, N));
    EXPECT_EQ(x_end.active(k, N), k == N);
    EXPECT_EQ(x_run.active(k, N), k < N);
  }
  EXPECT_FALSE(x_all.active(N + 1, N));
}

}  // namespace
