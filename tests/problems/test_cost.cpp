// Stages, references and cost terms: gradients against central differences of value(), Gauss-
// Newton Hessians against J'WJ formed with Eigen (and the exact Hessian where the residual is
// linear), dt scaling, stage activity, accumulation (+=), validation; each with a negative control.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "knot/problems/cost.hpp"
#include "test_models_local.hpp"

namespace {

using namespace knot::problems;
using knot::test::Arm2;
using knot::test::fd_jacobian;
using knot::test::Mat;
using knot::test::Pendulum;
using knot::test::rel_err;
using knot::test::Rng;
using knot::test::Vec;

std::vector<double> vec(const Mat& m) { return knot::test::to_vec(m); }

// Gradient of a scalar function by central differences.
Vec fd_gradient(const std::function<double(const Vec&)>& f, const Vec& x) {
  return fd_jacobian([&](const Vec& v, Vec& out) { out = Vec::Constant(1, f(v)); }, x, 1).transpose();
}

// Caller-owned blocks, pre-filled with random values so that accumulate()'s += shows, and a copy
// of the fill to subtract.
struct Blocks {
  Vec gx, gu, gp;
  Mat Hxx, Huu, Hux, Hpp, Hup;
  Blocks(Rng& rng, int nx, int nu)
      : gx(rng.vector(nx)),
        gu(rng.vector(nu)),
        gp(rng.vector(nu)),
        Hxx(rng.matrix(nx, nx)),
        Huu(rng.matrix(nu, nu)),
        Hux(rng.matrix(nu, nx)),
        Hpp(rng.matrix(nu, nu)),
        Hup(rng.matrix(nu, nu)) {}
  CostBlocks view() {
    return CostBlocks{gx.data(), gu.data(), Hxx.data(), Huu.data(), Hux.data(), gp.data(), Hpp.data(), Hup.data()};
  }
};

// The increments accumulate() adds to a random fill.
struct Added {
  double value;
  Vec gx, gu, gp;
  Mat Hxx, Huu, Hux, Hpp, Hup;
};

Added accumulate(const CostTerm& c, const StagePoint& p, int nx, int nu) {
  Rng rng(99);
  Blocks b(rng, nx, nu);
  const Blocks before = b;
  const double v = c.accumulate(p, b.view());
  return Added{v,           b.gx - before.gx,   b.gu - before.gu,   b.gp - before.gp,  b.Hxx - before.Hxx,
               b.Huu - before.Huu, b.Hux - before.Hux, b.Hpp - before.Hpp, b.Hup - before.Hup};
}

StagePoint point(int k, int N, double dt, const Vec& x, const Vec* u = nullptr, const Vec* u_prev = nullptr,
                 ModelData* data = nullptr) {
  StagePoint p;
  p.k = k;
  p.N = N;
  p.dt = dt;
  p.x = x.data();
  p.u = u ? u->data() : nullptr;
  p.u_prev = u_prev ? u_prev->data() : nullptr;
  p.data = data;
  return p;
}

bool zero(const Mat& m) { return m.cwiseAbs().maxCoeff() == 0.0; }

// ---- stages and references ----

TEST(Stage, NamesAndMembership) {
  EXPECT_EQ(to_string(StageSet::All), "all");
  EXPECT_EQ(to_string(StageSet::Running), "running");
  EXPECT_EQ(to_string(StageSet::Terminal), "terminal");
  const int N = 3;
  for (int k = -1; k <= N + 1; ++k) {
    const bool in = k >= 0 && k <= N;
    EXPECT_EQ(applies(StageSet::All, k, N), in) << k;
    EXPECT_EQ(applies(StageSet::Running, k, N), in && k < N) << k;
    EXPECT_EQ(applies(StageSet::Terminal, k, N), k == N) << k;
  }
}

TEST(Stage, ReferenceRows) {
  const Reference c = Reference::constant({1, 2});
  EXPECT_EQ(c.dim, 2);
  EXPECT_EQ(c.rows(), 1);
  EXPECT_EQ(c.at(7)[1], 2);
  const Reference r = Reference::per_knot(2, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(r.rows(), 3);
  EXPECT_EQ(r.at(0)[0], 1);
  EXPECT_EQ(r.at(1)[0], 3);
  EXPECT_EQ(r.at(2)[1], 6);
  EXPECT_EQ(r.at(9)[0], 5);  // past the last row: the last row
  EXPECT_EQ(r.at(9).size(), 2u);
  EXPECT_THROW(Reference::per_knot(2, {1, 2, 3}), std::invalid_argument);
  EXPECT_THROW(Reference::per_knot(0, {}), std::invalid_argument);
  EXPECT_THROW(Reference::constant({}), std::invalid_argument);
}

// ---- weights: the three forms ----

// Each form of a weight against the explicit Eigen matrix it stands for: value, gradient, Hessian
// contribution, product, entries; the Scalar and Diagonal forms also bitwise against the Dense form
// of the same matrix (what keeps the results of existing problem files unchanged).
TEST(Weight, FormsMatchTheDenseMatrix) {
  const int n = 6;
  Rng rng(5);
  const Vec diag = (rng.vector(n).array() + 1.5).matrix();
  struct Case {
    Weight W;
    Mat ref;
  };
  const std::vector<Case> cases = {{Weight::scalar(n, 0.7), 0.7 * Mat::Identity(n, n)},
                                   {Weight::diagonal(vec(diag)), diag.asDiagonal()},
                                   {Weight::dense(n, vec(rng.spd(n))), Mat()}};
  const Vec a = rng.vector(n), b = rng.vector(n), v = rng.vector(n);
  const double s = 0.3;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Weight& W = cases[c].W;
    const Mat ref = c == 2 ? knot::test::to_mat(W.values(), n, n) : cases[c].ref;
    const Vec r = a - b;
    EXPECT_EQ(W.dim(), n);
    EXPECT_NEAR(W.half_quadratic(a.data(), b.data()), 0.5 * r.dot(ref * r), 1e-14) << c;
    Vec g = rng.vector(n);
    const Vec g0 = g;
    W.add_gradient(a.data(), b.data(), s, g.data());
    EXPECT_LE(rel_err(g - g0, s * ref * r), 1e-14) << c;
    Mat H = rng.matrix(n, n);
    const Mat H0 = H;
    W.add_to(s, H.data());
    EXPECT_LE(rel_err(H - H0, s * ref), 1e-15) << c;
    Vec y(n);
    W.apply(v.data(), y.data());
    EXPECT_LE(rel_err(y, ref * v), 1e-14) << c;
    Mat entries(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) entries(i, j) = W(i, j);
    EXPECT_EQ(rel_err(entries, ref), 0.0) << c;
    // Negative control: one changed entry of the reference fails the same comparison.
    Mat wrong = ref;
    wrong(1, 2) += 1e-6;
    EXPECT_GT(rel_err(H - H0, s * wrong), 1e-15) << c;

    if (c == 2) continue;
    // Bitwise: the same matrix written out in full.
    const Weight D = Weight::dense(n, vec(ref));
    EXPECT_EQ(W.half_quadratic(a.data(), b.data()), D.half_quadratic(a.data(), b.data())) << c;
    Vec gd = g0;
    D.add_gradient(a.data(), b.data(), s, gd.data());
    EXPECT_TRUE((g.array() == gd.array()).all()) << c;
    Mat Hd = H0;
    D.add_to(s, Hd.data());
    EXPECT_TRUE((H.array() == Hd.array()).all()) << c;
    Vec yd(n);
    D.apply(v.data(), yd.data());
    EXPECT_TRUE((y.array() == yd.array()).all()) << c;
  }
}

// Each form is checked for what it can get wrong, and only that: a number, n numbers, or the
// matrix's symmetry and eigenvalues.
TEST(Weight, EachFormIsChecked) {
  const auto error = [](auto&& make) -> std::string {
    try {
      make();
    } catch (const WeightError& e) {
      return e.what();
    }
    return "no exception";
  };
  EXPECT_EQ(error([] { Weight::scalar(3, -1); }), "weights: expected finite values >= 0, found -1");
  EXPECT_EQ(error([] { Weight::scalar(3, NAN); }), "weights: expected finite values >= 0, found nan");
  EXPECT_EQ(error([] { Weight::scalar(3, INFINITY); }), "weights: expected finite values >= 0, found inf");
  EXPECT_EQ(error([] { Weight::scalar(0, 1); }), "weights: expected a positive dimension, found 0");
  EXPECT_EQ(error([] { Weight::diagonal({1, -0.5, 2}); }), "weights: expected finite values >= 0, found -0.5");
  EXPECT_EQ(error([] { Weight::diagonal({1, NAN}); }), "weights: expected finite values >= 0, found nan");
  EXPECT_EQ(error([] { Weight::diagonal({}); }), "weights: expected a positive dimension, found 0");
  EXPECT_EQ(error([] { Weight::dense(2, {1, 0, 0}); }), "weights: expected 4 values (2 x 2), found 3");
  EXPECT_EQ(error([] {
              Weight::dense(2, {1, 0.5, 0, 1});
            }),
            "weights: expected a symmetric matrix, found |W - W'| = 0.5");
  EXPECT_EQ(error([] {
              Weight::dense(2, {1, 0, 0, -1});
            }),
            "weights: expected a positive semidefinite matrix, found smallest eigenvalue -1");
  EXPECT_EQ(error([] { Weight::dense(2, {1, 0, 0, NAN}); }), "weights: expected finite values, found nan");
  // Negative controls: zero and semidefinite weights are valid.
  EXPECT_EQ(error([] { Weight::scalar(3, 0); }), "no exception");
  EXPECT_EQ(error([] { Weight::diagonal({0, 1}); }), "no exception");
  EXPECT_EQ(error([] { Weight::dense(2, {1, 1, 1, 1}); }), "no exception");
}

// The form is what is stored: a 65536-dimensional identity is one number, a diagonal n numbers.
TEST(Weight, KeepsItsForm) {
  const int n = 1 << 16;
  const Weight s = Weight::scalar(n, 2);
  EXPECT_EQ(s.form(), Weight::Form::Scalar);
  EXPECT_EQ(s.values().size(), 1u);
  EXPECT_EQ(s(n - 1, n - 1), 2);
  EXPECT_EQ(s(0, n - 1), 0);
  const Weight d = Weight::diagonal(std::vector<double>(static_cast<std::size_t>(n), 3.0));
  EXPECT_EQ(d.form(), Weight::Form::Diagonal);
  EXPECT_EQ(d.dim(), n);
  EXPECT_EQ(d.values().size(), static_cast<std::size_t>(n));
  EXPECT_LE(d.bytes(), sizeof(double) * static_cast<std::size_t>(n));
  EXPECT_STREQ(to_string(Weight::Form::Scalar), "scalar");
  EXPECT_STREQ(to_string(Weight::Form::Diagonal), "diagonal");
  EXPECT_STREQ(to_string(Weight::Form::Dense), "dense");
  // A cost term on it evaluates in O(n): value and gradient against the closed form.
  const StateCost c({"big", StageSet::All, false}, n, s, Reference::constant(std::vector<double>(n, 1.0)));
  EXPECT_EQ(c.weight()->form(), Weight::Form::Scalar);
  const Vec x = Vec::Zero(n);
  Vec gx = Vec::Zero(n);
  CostBlocks blocks;
  blocks.gx = gx.data();
  EXPECT_EQ(c.accumulate(point(0, 1, 0.1, x), blocks), 0.5 * 2 * n);
  EXPECT_EQ(gx.minCoeff(), -2);
  EXPECT_EQ(gx.maxCoeff(), -2);
  // Negative control: a term of another dimension is refused.
  EXPECT_THROW(StateCost({"big", StageSet::All, false}, n - 1, s, Reference::constant(std::vector<double>(n - 1, 1.0))),
               std::invalid_argument);
}

// ---- state and control costs: linear residuals ----

// value = 1/2 (x - x_ref)' W (x - x_ref) with the reference row of knot k; gradient against
// central differences of value(); Hessian W, which for a linear residual is J'WJ (J = I) and the
// exact Hessian (central differences of the gradient).
TEST(Cost, StateCostDerivatives) {
  Rng rng(1);
  const int nx = 3, nu = 2, N = 4;
  const Mat W = rng.spd(nx, 0.1);
  const Mat refs = rng.matrix(nx, 3);  // one column per knot row
  const StateCost c({"track", StageSet::All, false}, nx, vec(W), Reference::per_knot(nx, vec(refs)));
  const Vec x = rng.vector(nx);
  for (int k : {0, 1, 4}) {
    const StagePoint p = point(k, N, 0.1, x);
    const Vec r = x - refs.col(std::min(k, 2));
    EXPECT_NEAR(c.value(p), 0.5 * r.dot(W * r), 1e-14);
    const Added a = accumulate(c, p, nx, nu);
    EXPECT_EQ(a.value, c.value(p));
    const Vec g_fd = fd_gradient([&](const Vec& xx) { return c.value(point(k, N, 0.1, xx)); }, x);
    EXPECT_LE(rel_err(a.gx, g_fd), 1e-6);
    EXPECT_LE(rel_err(a.Hxx, Mat::Identity(nx, nx).transpose() * W * Mat::Identity(nx, nx)), 1e-15);
    const Mat H_fd = fd_jacobian([&](const Vec& xx, Vec& g) { g = accumulate(c, point(k, N, 0.1, xx), nx, nu).gx; },
                                 x, nx);
    EXPECT_LE(rel_err(a.Hxx, H_fd), 1e-6);
    EXPECT_TRUE(zero(a.gu) && zero(a.Huu) && zero(a.Hux) && zero(a.gp) && zero(a.Hpp) && zero(a.Hup));
    // Negative controls: another knot's reference row, and a perturbed weight, fail the same checks.
    if (k == 1) {
      EXPECT_GT(rel_err(accumulate(c, point(0, N, 0.1, x), nx, nu).gx, g_fd), 1e-6);
      Mat W2 = W;
      W2(0, 1) += 1e-4;
      W2(1, 0) += 1e-4;
      const StateCost c2({"track", StageSet::All, false}, nx, vec(W2), Reference::per_knot(nx, vec(refs)));
      EXPECT_GT(rel_err(accumulate(c2, p, nx, nu).gx, g_fd), 1e-6);
      EXPECT_GT(rel_err(accumulate(c2, p, nx, nu).Hxx, H_fd), 1e-6);
    }
  }
  // Null blocks are skipped.
  EXPECT_NO_THROW(c.accumulate(point(0, N, 0.1, x), CostBlocks{}));
}

TEST(Cost, ControlCostDerivatives) {
  Rng rng(2);
  const int nx = 3, nu = 2, N = 4;
  const Mat W = rng.spd(nu, 0.1);
  const Vec ur = rng.vector(nu), x = rng.vector(nx), u = rng.vector(nu);
  const ControlCost c({"effort", StageSet::All, false}, nu, vec(W), Reference::constant(vec(ur)));
  const StagePoint p = point(2, N, 0.1, x, &u);
  EXPECT_NEAR(c.value(p), 0.5 * (u - ur).dot(W * (u - ur)), 1e-14);
  const Added a = accumulate(c, p, nx, nu);
  const Vec g_fd = fd_gradient([&](const Vec& uu) { return c.value(point(2, N, 0.1, x, &uu)); }, u);
  EXPECT_LE(rel_err(a.gu, g_fd), 1e-6);
  EXPECT_LE(rel_err(a.Huu, W), 1e-15);
  const Mat H_fd = fd_jacobian([&](const Vec& uu, Vec& g) { g = accumulate(c, point(2, N, 0.1, x, &uu), nx, nu).gu; },
                               u, nu);
  EXPECT_LE(rel_err(a.Huu, H_fd), 1e-6);
  EXPECT_TRUE(zero(a.gx) && zero(a.Hxx) && zero(a.Hux) && zero(a.gp) && zero(a.Hpp) && zero(a.Hup));
  // Negative control: the gradient at another control fails the comparison.
  const Vec u2 = u + Vec::Constant(nu, 1e-4);
  EXPECT_GT(rel_err(accumulate(c, point(2, N, 0.1, x, &u2), nx, nu).gu, g_fd), 1e-6);
  // A control term evaluated without a control is a caller bug, reported loudly.
  EXPECT_THROW(c.value(point(N, N, 0.1, x)), std::invalid_argument);
}

// ---- end-effector cost: nonlinear residual ----

TEST(Cost, EndEffectorCostDerivatives) {
  Rng rng(3);
  auto arm = std::make_shared<Arm2>();
  auto data = arm->make_data();
  const int nx = 4, nu = 2, N = 5;
  const Mat W = rng.spd(3, 0.1);
  const std::array<double, 3> offset = {0.4, 0.1, -0.05};
  const Vec pref = rng.vector(3);
  const EndEffectorCost c({"reach", StageSet::Terminal, false}, arm, 1, offset, vec(W), Reference::constant(vec(pref)));
  const auto position = [&](const Vec& xx) {
    Vec pos(3);
    arm->kinematics()->frame_position(*data, xx.data(), 1, offset, pos.data(), nullptr);
    return pos;
  };
  for (int trial = 0; trial < 3; ++trial) {
    const Vec x = rng.vector(nx) * 2;
    const StagePoint p = point(N, N, 0.1, x, nullptr, nullptr, data.get());
    const Vec r = position(x) - pref;
    EXPECT_NEAR(c.value(p), 0.5 * r.dot(W * r), 1e-14);
    const Added a = accumulate(c, p, nx, nu);
    EXPECT_EQ(a.value, c.value(p));
    const Vec g_fd =
        fd_gradient([&](const Vec& xx) { return c.value(point(N, N, 0.1, xx, nullptr, nullptr, data.get())); }, x);
    EXPECT_LE(rel_err(a.gx, g_fd), 1e-6);
    // J'WJ with J from central differences of the position alone.
    const Mat J = fd_jacobian([&](const Vec& xx, Vec& out) { out = position(xx); }, x, 3);
    EXPECT_LE(rel_err(a.Hxx, J.transpose() * W * J), 1e-6);
    EXPECT_LE(rel_err(a.Hxx, a.Hxx.transpose()), 1e-15);
    EXPECT_TRUE(zero(a.gu) && zero(a.Huu) && zero(a.Hux));
    // Negative controls: the exact Hessian differs from Gauss-Newton here (the curvature of p(x) is
    // left out), and so does J'WJ with a wrong Jacobian (the upper frame's).
    const Mat H_exact = fd_jacobian(
        [&](const Vec& xx, Vec& g) { g = accumulate(c, point(N, N, 0.1, xx, nullptr, nullptr, data.get()), nx, nu).gx; },
        x, nx);
    EXPECT_GT(rel_err(a.Hxx, H_exact), 1e-6);
    Mat J0(3, nx);
    arm->kinematics()->frame_position(*data, x.data(), 0, offset, Vec(3).data(), J0.data());
    EXPECT_GT(rel_err(a.Hxx, J0.transpose() * W * J0), 1e-6);
  }
}

TEST(Cost, EndEffectorCostValidation) {
  auto arm = std::make_shared<Arm2>();
  const std::vector<double> W = vec(Mat::Identity(3, 3));
  const Reference ref = Reference::constant({0, 0, 0});
  const auto message = [](auto&& make) -> std::string {
    try {
      make();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no exception";
  };
  EXPECT_NE(message([&] { EndEffectorCost({"ee", StageSet::All, false}, std::make_shared<Pendulum>(), 0, {}, W, ref); })
                .find("'ee'"),
            std::string::npos);
  EXPECT_NE(message([&] { EndEffectorCost({"ee", StageSet::All, false}, arm, 2, {}, W, ref); }).find("frame"),
            std::string::npos);
  EXPECT_NE(message([&] { EndEffectorCost({"ee", StageSet::All, false}, arm, 0, {}, {1, 0, 0, 1}, ref); })
                .find("weights"),
            std::string::npos);
  EXPECT_NE(message([&] { EndEffectorCost({"ee", StageSet::All, false}, arm, 0, {}, W, Reference::constant({0, 0})); })
                .find("reference"),
            std::string::npos);
  EXPECT_EQ(message([&] { EndEffectorCost({"ee", StageSet::All, false}, arm, 1, {}, W, ref); }), "no exception");
}

// ---- control rate ----

TEST(Cost, ControlRateDerivatives) {
  Rng rng(4);
  const int nx = 2, nu = 3, N = 6;
  const Mat W = rng.spd(nu, 0.1);
  const ControlRateCost c({"smooth", StageSet::All, false}, nu, vec(W));
  EXPECT_TRUE(c.couples_previous_control());
  const Vec x = rng.vector(nx), u = rng.vector(nu), up = rng.vector(nu);
  const StagePoint p = point(2, N, 0.1, x, &u, &up);
  EXPECT_NEAR(c.value(p), 0.5 * (u - up).dot(W * (u - up)), 1e-14);
  const Added a = accumulate(c, p, nx, nu);
  const Vec gu_fd = fd_gradient([&](const Vec& v) { return c.value(point(2, N, 0.1, x, &v, &up)); }, u);
  const Vec gp_fd = fd_gradient([&](const Vec& v) { return c.value(point(2, N, 0.1, x, &u, &v)); }, up);
  EXPECT_LE(rel_err(a.gu, gu_fd), 1e-6);
  EXPECT_LE(rel_err(a.gp, gp_fd), 1e-6);
  // [Huu Hup; Hup' Hpp] = J'WJ with J = [I, -I], and the exact Hessian.
  Mat J(nu, 2 * nu);
  J << Mat::Identity(nu, nu), -Mat::Identity(nu, nu);
  const Mat H = J.transpose() * W * J;
  EXPECT_LE(rel_err(a.Huu, H.topLeftCorner(nu, nu)), 1e-15);
  EXPECT_LE(rel_err(a.Hup, H.topRightCorner(nu, nu)), 1e-15);
  EXPECT_LE(rel_err(a.Hpp, H.bottomRightCorner(nu, nu)), 1e-15);
  const auto grads = [&](const Vec& uu, const Vec& pp) { return accumulate(c, point(2, N, 0.1, x, &uu, &pp), nx, nu); };
  EXPECT_LE(rel_err(a.Huu, fd_jacobian([&](const Vec& v, Vec& g) { g = grads(v, up).gu; }, u, nu)), 1e-6);
  EXPECT_LE(rel_err(a.Hup, fd_jacobian([&](const Vec& v, Vec& g) { g = grads(u, v).gu; }, up, nu)), 1e-6);
  EXPECT_LE(rel_err(a.Hpp, fd_jacobian([&](const Vec& v, Vec& g) { g = grads(u, v).gp; }, up, nu)), 1e-6);
  EXPECT_TRUE(zero(a.gx) && zero(a.Hxx) && zero(a.Hux));
  // Negative control: the sign of the coupling block matters.
  EXPECT_GT(rel_err(-a.Hup, fd_jacobian([&](const Vec& v, Vec& g) { g = grads(u, v).gu; }, up, nu)), 1e-6);
}

TEST(Cost, ControlRateWithoutPreviousControlContributesNothing) {
  Rng rng(5);
  const int nx = 2, nu = 2;
  const ControlRateCost c({"smooth", StageSet::All, true}, nu, vec(rng.spd(nu)));
  const Vec x = rng.vector(nx), u = rng.vector(nu), up = rng.vector(nu);
  const StagePoint p = point(0, 5, 0.1, x, &u);
  EXPECT_EQ(c.value(p), 0.0);
  const Added a = accumulate(c, p, nx, nu);
  EXPECT_EQ(a.value, 0.0);
  EXPECT_TRUE(zero(a.gx) && zero(a.gu) && zero(a.gp) && zero(a.Hxx) && zero(a.Huu) && zero(a.Hux) && zero(a.Hpp) &&
              zero(a.Hup));
  // Negative control: with a previous control it contributes.
  EXPECT_GT(c.value(point(0, 5, 0.1, x, &u, &up)), 0.0);
  EXPECT_FALSE(zero(accumulate(c, point(0, 5, 0.1, x, &u, &up), nx, nu).gu));
}

TEST(Cost, ControlRateHasNoReference) {
  const ControlRateCost c({"smooth", StageSet::All, false}, 1, {1.0});
  EXPECT_EQ(c.reference(), nullptr);
  try {
    const_cast<ControlRateCost&>(c).set_reference(Reference::constant({0}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no reference"), std::string::npos);
  }
}

// ---- shared behaviour ----

// scale_by_dt multiplies the value and every block by dt; without it dt plays no part.
TEST(Cost, ScaleByDt) {
  Rng rng(6);
  auto arm = std::make_shared<Arm2>();
  auto data = arm->make_data();
  const int nx = 4, nu = 2;
  const Mat Wx = rng.spd(nx), Wu = rng.spd(nu), We = rng.spd(3);
  const Vec x = rng.vector(nx), u = rng.vector(nu), up = rng.vector(nu);
  const auto terms = [&](bool scaled) {
    const TermInfo info{"t", StageSet::All, scaled};
    return std::vector<std::shared_ptr<CostTerm>>{
        std::make_shared<StateCost>(info, nx, vec(Wx), Reference::constant(vec(rng.vector(nx)))),
        std::make_shared<ControlCost>(info, nu, vec(Wu), Reference::constant(vec(rng.vector(nu)))),
        std::make_shared<EndEffectorCost>(info, arm, 1, std::array<double, 3>{0.3, 0, 0}, vec(We),
                                          Reference::constant(vec(rng.vector(3)))),
        std::make_shared<ControlRateCost>(info, nu, vec(Wu))};
  };
  Rng same(7);
  rng = same;
  const auto plain = terms(false);
  rng = same;
  const auto scaled = terms(true);
  const double dt = 0.2;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    const StagePoint p = point(1, 4, dt, x, &u, &up, data.get());
    const Added a = accumulate(*plain[i], p, nx, nu), s = accumulate(*scaled[i], p, nx, nu);
    ASSERT_GT(a.value, 0.0) << plain[i]->type();
    EXPECT_NEAR(s.value, dt * a.value, 1e-15 * a.value) << plain[i]->type();
    const std::vector<std::pair<Mat, Mat>> blocks = {{s.gx, a.gx},   {s.gu, a.gu},   {s.gp, a.gp}, {s.Hxx, a.Hxx},
                                                     {s.Huu, a.Huu}, {s.Hpp, a.Hpp}, {s.Hup, a.Hup}};
    for (const auto& [got, want] : blocks)
      EXPECT_LE(rel_err(got, dt * want), 1e-15) << plain[i]->type();
    // Unscaled terms ignore dt; a scaled term at another dt differs (negative control).
    StagePoint q = p;
    q.dt = 0.3;
    EXPECT_EQ(plain[i]->value(q), a.value) << plain[i]->type();
    EXPECT_GT(std::abs(scaled[i]->value(q) - s.value), 1e-3 * s.value) << plain[i]->type();
  }
}

// A control term is never active at the terminal knot, whatever its stages say.
TEST(Cost, StageActivity) {
  const int N = 5;
  const StateCost all({"s", StageSet::All, false}, 1, {1.0}, Reference::constant({0}));
  const StateCost terminal({"s", StageSet::Terminal, false}, 1, {1.0}, Reference::constant({0}));
  const StateCost running({"s", StageSet::Running, false}, 1, {1.0}, Reference::constant({0}));
  const ControlCost u_all({"u", StageSet::All, false}, 1, {1.0}, Reference::constant({0}));
  const ControlCost u_terminal({"u", StageSet::Terminal, false}, 1, {1.0}, Reference::constant({0}));
  const ControlRateCost rate({"r", StageSet::All, false}, 1, {1.0});
  for (int k = 0; k <= N; ++k) {
    EXPECT_TRUE(all.active(k, N));
    EXPECT_EQ(terminal.active(k, N), k == N);
    EXPECT_EQ(running.active(k, N), k < N);
    EXPECT_EQ(u_all.active(k, N), k < N);
    EXPECT_FALSE(u_terminal.active(k, N));
    EXPECT_EQ(rate.active(k, N), k < N);
  }
  EXPECT_FALSE(all.active(N + 1, N));
  EXPECT_FALSE(all.active(-1, N));
}

// Every term gives bitwise the same value and blocks for a diagonal or scalar weight as for the
// same matrix written out in full: existing problem files solve exactly as before.
TEST(Cost, EveryTermGivesTheDenseResultsForEachForm) {
  Rng rng(8);
  auto arm = std::make_shared<Arm2>();
  auto data = arm->make_data();
  const int nx = 4, nu = 2;
  const Vec x = rng.vector(nx), u = rng.vector(nu), up = rng.vector(nu);
  const Vec xr = rng.vector(nx), ur = rng.vector(nu), pr = rng.vector(3);
  const TermInfo info{"t", StageSet::All, true};
  const auto forms = [](int n, double seed) {
    std::vector<double> d(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) d[static_cast<std::size_t>(i)] = seed + 0.37 * i;
    return std::vector<Weight>{Weight::scalar(n, seed), Weight::diagonal(d)};
  };
  const auto full = [](const Weight& W) {
    Mat m(W.dim(), W.dim());
    for (int i = 0; i < W.dim(); ++i)
      for (int j = 0; j < W.dim(); ++j) m(i, j) = W(i, j);
    return Weight::dense(W.dim(), vec(m));
  };
  const StagePoint p = point(1, 5, 0.05, x, &u, &up, data.get());
  std::size_t compared = 0;
  for (int term = 0; term < 4; ++term) {
    const int n = term == 0 ? nx : term == 2 ? 3 : nu;
    for (const Weight& W : forms(n, 0.8)) {
      const auto make = [&](const Weight& w) -> std::shared_ptr<CostTerm> {
        switch (term) {
          case 0:
            return std::make_shared<StateCost>(info, nx, w, Reference::constant(vec(xr)));
          case 1:
            return std::make_shared<ControlCost>(info, nu, w, Reference::constant(vec(ur)));
          case 2:
            return std::make_shared<EndEffectorCost>(info, arm, 1, std::array<double, 3>{0.3, 0, 0}, w,
                                                     Reference::constant(vec(pr)));
          default:
            return std::make_shared<ControlRateCost>(info, nu, w);
        }
      };
      const auto form = make(W), dense = make(full(W));
      EXPECT_EQ(form->weight()->form(), W.form());
      EXPECT_EQ(dense->weight()->form(), Weight::Form::Dense);
      const Added a = accumulate(*form, p, nx, nu), b = accumulate(*dense, p, nx, nu);
      EXPECT_EQ(a.value, b.value) << term;
      EXPECT_EQ(form->value(p), dense->value(p)) << term;
      const auto same = [&](const auto& fa, const auto& fb) {
        EXPECT_TRUE((fa.array() == fb.array()).all()) << term;
        compared += fa.cwiseAbs().maxCoeff() == 0.0 ? 0 : 1;
      };
      same(a.gx, b.gx), same(a.gu, b.gu), same(a.gp, b.gp), same(a.Hxx, b.Hxx);
      same(a.Huu, b.Huu), same(a.Hux, b.Hux), same(a.Hpp, b.Hpp), same(a.Hup, b.Hup);
    }
  }
  EXPECT_GE(compared, 12u);  // the blocks compared were written, not all zero
  // Negative control: a weight differing by 1e-9 in one entry gives a different value.
  const Weight d = Weight::diagonal({1, 2, 3, 4});
  const Weight e = Weight::diagonal({1, 2, 3 + 1e-9, 4});
  const StateCost cd(info, nx, d, Reference::constant(vec(xr))), ce(info, nx, e, Reference::constant(vec(xr)));
  EXPECT_NE(cd.value(p), ce.value(p));
}

TEST(Cost, WeightAndReferenceValidation) {
  const auto message = [](auto&& make) -> std::string {
    try {
      make();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no exception";
  };
  const TermInfo info{"goal", StageSet::All, false};
  const Reference r2 = Reference::constant({0, 0});
  const std::string size = message([&] { StateCost(info, 2, {1, 0, 0}, r2); });
  EXPECT_NE(size.find("'goal'"), std::string::npos) << size;
  EXPECT_NE(size.find("weights"), std::string::npos) << size;
  EXPECT_NE(message([&] { StateCost(info, 2, {1, 0.5, 0, 1}, r2); }).find("symmetric"), std::string::npos);
  EXPECT_NE(message([&] { StateCost(info, 2, {1, 0, 0, -1}, r2); }).find("semidefinite"), std::string::npos);
  EXPECT_NE(message([&] { StateCost(info, 2, {1, 0, 0, NAN}, r2); }).find("finite"), std::string::npos);
  EXPECT_NE(message([&] { StateCost(info, 2, {1, 0, 0, 1}, Reference::constant({0, 0, 0})); }).find("reference"),
            std::string::npos);
  EXPECT_NE(message([&] { ControlCost(info, 1, {1, 1}, Reference::constant({0})); }).find("'goal'"), std::string::npos);
  EXPECT_NE(message([&] { ControlRateCost(info, 2, {1}); }).find("'goal'"), std::string::npos);
  // Semidefinite (singular) weights are accepted, as are the valid forms (negative controls).
  EXPECT_EQ(message([&] { StateCost(info, 2, {1, 1, 1, 1}, r2); }), "no exception");
  EXPECT_EQ(message([&] { StateCost(info, 2, {1, 0, 0, 0}, Reference::per_knot(2, {0, 0, 1, 1})); }), "no exception");

  StateCost c(info, 2, {1, 0, 0, 1}, r2);
  EXPECT_THROW(c.set_reference(Reference::constant({1, 2, 3})), std::invalid_argument);
  c.set_reference(Reference::per_knot(2, {1, 2, 3, 4}));
  ASSERT_NE(c.reference(), nullptr);
  EXPECT_EQ(c.reference()->rows(), 2);
  const Vec x = Vec::Zero(2);
  EXPECT_DOUBLE_EQ(c.value(point(1, 3, 0.1, x)), 0.5 * (9 + 16));
}

}  // namespace
