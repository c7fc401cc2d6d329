// Expression models (expression.hpp, loader_expression.cpp): the cart-pole, pendulum, acrobot,
// unicycle and quadrotor written as expressions against the built-in models (dynamics, Jacobians,
// integrator-step Hessians at random points, with a negative control); Jacobians against finite
// differences; each function and operator against the C library; the tape's register reuse; and
// every error class with its message and position.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "knot/problems/error.hpp"
#include "knot/problems/expression.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/problems/loader.hpp"
#include "knot/problems/model_adapter.hpp"
#include "knot/problems/params.hpp"
#include "knot/problems/registry.hpp"
#include "test_models_local.hpp"
#include "test_util.hpp"
#include "source_tree.hpp"

namespace knot::problems {
namespace {

namespace fs = std::filesystem;
using test::Mat;
using test::rel_err;
using test::Rng;
using test::Vec;

const fs::path kExpressionDir = fs::path(knot::source_tree::test_data_dir()) / "expression";

Problem load_expression(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return load_problem(kExpressionDir / (name + ".yaml"), overrides);
}

struct Pair {
  const char* file;     // tests/data/expression/<file>.yaml
  const char* builtin;  // the registry's model of the same system
};
const Pair kPairs[] = {{"cartpole_swingup", "cartpole"},
                       {"pendulum_swingup", "pendulum"},
                       {"acrobot_swingup", "acrobot"},
                       {"unicycle_obstacles", "unicycle"},
                       {"quadrotor_to_point", "quadrotor"}};

struct Eval {
  Vec f, fx, fu, H;
};

// f, [fx | fu] and the rk4 step's curvature lambda' d2F/dw2 at (x, u).
Eval evaluate_model(const Model& m, const Vec& x, const Vec& u, const Vec& lambda) {
  const int n = m.nx(), k = m.nu();
  auto data = m.make_data();
  Eval e;
  e.f = Vec::Constant(n, test::kNaN);
  e.fx = Vec::Constant(n * n, test::kNaN);
  e.fu = Vec::Constant(n * k, test::kNaN);
  e.H = Vec::Constant((n + k) * (n + k), test::kNaN);
  Vec f2 = e.f;
  m.dynamics(*data, x.data(), u.data(), f2.data());
  m.dynamics_jacobian(*data, x.data(), u.data(), e.f.data(), e.fx.data(), e.fu.data());
  EXPECT_EQ(rel_err(f2, e.f), 0.0);
  const SecondOrderStatus st =
      m.step_hessian(*data, IntegratorType::Rk4, x.data(), u.data(), 0.05, lambda.data(), e.H.data());
  EXPECT_EQ(st, SecondOrderStatus::Ok);
  return e;
}

// A random point away from the quadrotor's pitch singularity (|pitch| < 1).
void random_point(Rng& rng, int n, int k, Vec& x, Vec& u, Vec& lambda) {
  x = Vec(n);
  u = Vec(k);
  lambda = Vec(n);
  for (int i = 0; i < n; ++i) x(i) = rng.uniform(-1, 1);
  for (int i = 0; i < k; ++i) u(i) = rng.uniform(-2, 2);
  for (int i = 0; i < n; ++i) lambda(i) = rng.uniform(-1, 1);
}

double max_err(const Eval& a, const Eval& b) {
  return std::max({rel_err(a.f, b.f), rel_err(a.fx, b.fx), rel_err(a.fu, b.fu)});
}

TEST(ExpressionModel, AgreesWithTheBuiltInModels) {
  for (const Pair& pair : kPairs) {
    SCOPED_TRACE(pair.file);
    const Problem p = load_expression(pair.file);
    const auto builtin = make_model(pair.builtin, ParamMap{});
    const Model& e = *p.model;
    ASSERT_EQ(e.type(), "expression");
    ASSERT_EQ(e.nx(), builtin->nx());
    ASSERT_EQ(e.nu(), builtin->nu());
    EXPECT_EQ(e.nq(), builtin->nq());
    EXPECT_EQ(e.planar_position(), builtin->planar_position());
    EXPECT_EQ(e.state_names(), builtin->state_names());
    Rng rng(18);
    for (int trial = 0; trial < 50; ++trial) {
      Vec x, u, lambda;
      random_point(rng, e.nx(), e.nu(), x, u, lambda);
      const Eval a = evaluate_model(e, x, u, lambda), b = evaluate_model(*builtin, x, u, lambda);
      EXPECT_LE(max_err(a, b), 1e-13) << "trial " << trial;
      EXPECT_LE(rel_err(a.H, b.H), 1e-12) << "trial " << trial;
    }
  }
}

// Negative control: --set reaches an expression model's parameter, and a pole 0.1% heavier is
// told apart from the built-in model by the comparison above.
TEST(ExpressionModel, SetReachesParametersAndTheComparisonSeesThem) {
  const Problem heavy = load_expression("cartpole_swingup", {"model.params.pole_mass=0.1001"});
  const auto builtin = make_model("cartpole", ParamMap{});
  Rng rng(7);
  Vec x, u, lambda;
  random_point(rng, 4, 1, x, u, lambda);
  EXPECT_GT(max_err(evaluate_model(*heavy.model, x, u, lambda), evaluate_model(*builtin, x, u, lambda)), 1e-6);
  const auto heavy_builtin = make_model("cartpole", ParamMap{}.set("pole_mass", 0.1001));
  EXPECT_LE(max_err(evaluate_model(*heavy.model, x, u, lambda), evaluate_model(*heavy_builtin, x, u, lambda)), 1e-13);
  ASSERT_EQ(heavy.model->parameters().size(), 4u);
  EXPECT_EQ(heavy.model->parameters()[1].name, "pole_mass");
  EXPECT_EQ(heavy.model->parameters()[1].values, std::vector<double>{0.1001});
}

TEST(ExpressionModel, JacobiansMatchFiniteDifferences) {
  for (const Pair& pair : kPairs) {
    SCOPED_TRACE(pair.file);
    const Problem p = load_expression(pair.file);
    const Model& m = *p.model;
    const int n = m.nx(), k = m.nu();
    auto data = m.make_data();
    Rng rng(3);
    Vec x, u, lambda;
    random_point(rng, n, k, x, u, lambda);
    Vec f(n), fx(n * n), fu(n * k);
    m.dynamics_jacobian(*data, x.data(), u.data(), f.data(), fx.data(), fu.data());
    const auto F = [&](const Vec& w, Vec& out) {
      out.resize(n);
      m.dynamics(*data, w.data(), w.data() + n, out.data());
    };
    Vec w(n + k);
    w << x, u;
    const Mat fd = test::fd_jacobian(F, w, n);
    Mat J(n, n + k);
    J << Eigen::Map<Mat>(fx.data(), n, n), Eigen::Map<Mat>(fu.data(), n, k);
    EXPECT_LE(rel_err(J, fd), 1e-6);
    // Negative control: one entry off by 1e-4 is seen.
    Mat wrong = J;
    wrong(0, n) += 1e-3;
    EXPECT_GT(rel_err(wrong, fd), 1e-6);
  }
}

// --- the language ------------------------------------------------------------------------------------

ExprSymbols xy_symbols() {
  ExprSymbols s;
  s.states = {"x", "y"};
  s.controls = {"u"};
  s.params = {{"k", 2.5, "params.k", {}}};
  return s;
}

CompiledExpressions compile(const std::vector<std::string>& texts, const ExprSymbols& s = xy_symbols()) {
  std::vector<ExprSource> src;
  for (const std::string& t : texts) src.push_back({t, "expr", {}});
  return compile_expressions(s, src);
}

double eval1(const std::string& text, double x, double y = 0.3, double u = -0.7) {
  const CompiledExpressions c = compile({text});
  const double xs[2] = {x, y}, us[1] = {u};
  double out = test::kNaN;
  evaluate(c.tape(), xs, us, &out);
  return out;
}

TEST(ExpressionLanguage, OperatorsAndFunctionsAgreeWithTheCLibrary) {
  const double x = 0.37, y = 0.3, u = -0.7;
  struct Case {
    const char* text;
    double want;
  };
  const Case cases[] = {
      {"x + y * u", x + y * u},
      {"x - y - u", (x - y) - u},
      {"x / y / u", (x / y) / u},
      {"-x^2", -(x * x)},
      {"2^3^2", 512},
      {"2^-1", 0.5},
      {"x^3", x * x * x},
      {"x^-2", 1 / (x * x)},
      {"x^0.5", std::pow(x, 0.5)},
      {"y^x", std::exp(x * std::log(y))},
      {"(x + y) * (x - y)", (x + y) * (x - y)},
      {"k * x", 2.5 * x},
      {"pi", 3.141592653589793},
      {"1.5e-1 + .5", 0.65},
      {"sin(x) + cos(y) + tan(u)", std::sin(x) + std::cos(y) + std::tan(u)},
      {"exp(x) * log(y) / sqrt(y)", std::exp(x) * std::log(y) / std::sqrt(y)},
      {"tanh(u) + abs(u)", std::tanh(u) + std::abs(u)},
      {"atan2(u, x)", std::atan2(u, x)},
      {"min(x, y) + max(x, u)", std::min(x, y) + std::max(x, u)},
      {"clamp(u, -0.5, 0.5) + clamp(x, 0, 0.2)", -0.5 + 0.2},
      {"smooth_clamp(u, -1, 3)", 1 + 2 * std::tanh((u - 1) / 2)},
  };
  for (const Case& c : cases) EXPECT_NEAR(eval1(c.text, x, y, u), c.want, 1e-15 * (1 + std::abs(c.want))) << c.text;
  // Negative control: precedence is checked (left to right would give 64).
  EXPECT_NE(eval1("2^3^2", x), 64);
}

// Every function's dual and hyperdual derivatives against central differences of its double value.
TEST(ExpressionLanguage, DerivativesOfEveryFunctionMatchFiniteDifferences) {
  const char* texts[] = {"sin(x*y)",  "cos(x)*u",  "tan(x)",   "exp(x*u)",    "log(y+x)",
                         "sqrt(x+1)", "tanh(x*u)", "abs(u)*x", "atan2(x, y)", "min(x, y)*u",
                         "max(x, u)", "y^x",       "x^2.5",    "x^-3",        "smooth_clamp(x*u, -1, 2)"};
  for (const char* text : texts) {
    SCOPED_TRACE(text);
    ExpressionModelSpec spec;
    spec.symbols = xy_symbols();
    spec.rhs = {{text, "ode.x", {}}, {"u", "ode.y", {}}};
    const auto m = make_expression_model(spec);
    auto data = m->make_data();
    const double x[2] = {0.37, 0.3}, u[1] = {-0.7};
    double f[2], fx[4], fu[2];
    m->dynamics_jacobian(*data, x, u, f, fx, fu);
    const auto F = [&](const Vec& w, Vec& out) {
      out.resize(2);
      m->dynamics(*data, w.data(), w.data() + 2, out.data());
    };
    Vec w(3);
    w << x[0], x[1], u[0];
    const Mat fd = test::fd_jacobian(F, w, 2);
    Mat J(2, 3);
    J << Eigen::Map<Mat>(fx, 2, 2), Eigen::Map<Mat>(fu, 2, 1);
    EXPECT_LE(rel_err(J, fd), 1e-7);
    // The Euler step's curvature against differences of its gradient (lambda = e_0).
    const double lambda[2] = {1, 0}, dt = 0.1;
    Mat H(3, 3);
    ASSERT_EQ(m->step_hessian(*data, IntegratorType::Euler, x, u, dt, lambda, H.data()), SecondOrderStatus::Ok);
    const auto G = [&](const Vec& v, Vec& out) {
      double g[2], gx[4], gu[2];
      m->dynamics_jacobian(*data, v.data(), v.data() + 2, g, gx, gu);
      out.resize(3);
      out << dt * gx[0], dt * gx[2], dt * gu[0];  // d(x + dt f_0)/dw, less the constant identity row
    };
    EXPECT_LE(rel_err(H, test::fd_jacobian(G, w, 3)), 1e-6);
  }
}

// The tape's in-place kernels for duals and second-order duals (expression.hpp) against the scalar
// operators of dual.hpp and hyperdual.hpp, instruction by instruction through fresh temporaries,
// bit for bit, with random seeds in every derivative component (so no term is multiplied away)
// and registers that are their own operands (the tape reuses them).
template <class S>
void operator_evaluate(const ExprTape& t, const S* x, const S* u, S* out) {
  using std::cos;
  using std::sin;
  std::vector<S> reg(std::size_t(t.registers));
  for (int i = 0; i < t.size; ++i) {
    const ExprInstr& in = t.code[i];
    const S a = reg[in.a], b = reg[in.b];
    if (in.op == ExprOp::State) {
      reg[in.dst] = x[in.n];
    } else if (in.op == ExprOp::Control) {
      reg[in.dst] = u[in.n];
    } else if (in.op == ExprOp::SinCos) {
      reg[in.b] = cos(a);
      reg[in.dst] = sin(a);
    } else if (is_fused(in.op)) {
      reg[in.dst] = expr_detail::apply<S>(in, a, b, S(reg[in.n]));
    } else {
      reg[in.dst] = expr_detail::apply<S>(in, a, b);
    }
  }
  for (int i = 0; i < t.n_outputs; ++i) out[i] = reg[t.outputs[i]];
}

template <class S>
bool same_bits(const S& a, const S& b) {
  return std::memcmp(&a, &b, sizeof(S)) == 0;
}

TEST(ExpressionLanguage, InPlaceDualKernelsAreTheOperatorsBitForBit) {
  // Every op with an in-place kernel: + - * / with registers and with constants, k - a, k / a,
  // negation, a^2, sin and cos of one operand, and every fused product (a * b or a * k, then + c,
  // - c, c -, * c, / c, c /); y * y * x reuses a register as its own operand.
  const CompiledExpressions c = compile(
      {"(x + y) * (x - y) / (y * y * x + 3)", "2 - x / 4 + 5 / (u * k)", "-(sin(x * u) * cos(x * u))^2 + (x + 1) - y^3",
       "x * y + u - (3 * x + y) + (y - x * u) - (u - 2 * y) + x * u * sin(y) + 4 * u * cos(x) + (u * y - x) +"
       " (7 * x - u) / (x - u * u)",
       "(x + y) / (u * x) + (3 * y) / (x + u) + sin(y) / (5 * x) + (x * y) / (u + y) + cos(u) * (x * y - u)"});
  bool reused = false;
  for (const ExprInstr& in : c.code) reused = reused || (in.op == ExprOp::Mul && (in.dst == in.a || in.dst == in.b));
  EXPECT_TRUE(reused);
  std::vector<int> fused(12, 0);
  for (const ExprInstr& in : c.code)
    if (is_fused(in.op)) ++fused[int(in.op) - int(ExprOp::MulAdd)];
  for (int f = 0; f < 12; ++f) EXPECT_GT(fused[f], 0) << "fused op " << f << " is not exercised";
  Rng rng(18);
  // Widths 3 and 8: the odd one takes the lanes one at a time, the even one in pairs on the host.
  using D = Dual<double, Tangent<double, 3>>;
  using D8 = Dual<double, Tangent<double, 8>>;
  using H = HyperDual<3>;
  for (int trial = 0; trial < 20; ++trial) {
    D xd[2], ud[1], got_d[5], want_d[5];
    D8 xw[2], uw[1], got_w[5], want_w[5];
    H xh[2], uh[1], got_h[5], want_h[5];
    for (D* v : {&xd[0], &xd[1], &ud[0]}) {
      v->v = rng.uniform(0.2, 1.5);
      for (double& e : v->d.e) e = rng.uniform();
    }
    for (D8* v : {&xw[0], &xw[1], &uw[0]}) {
      v->v = rng.uniform(0.2, 1.5);
      for (double& e : v->d.e) e = rng.uniform();
    }
    for (H* v : {&xh[0], &xh[1], &uh[0]}) {
      v->v = rng.uniform(0.2, 1.5);
      for (double& e : v->g) e = rng.uniform();
      for (double& e : v->h) e = rng.uniform();
    }
    evaluate(c.tape(), xd, ud, got_d);
    operator_evaluate(c.tape(), xd, ud, want_d);
    evaluate(c.tape(), xw, uw, got_w);
    operator_evaluate(c.tape(), xw, uw, want_w);
    evaluate(c.tape(), xh, uh, got_h);
    operator_evaluate(c.tape(), xh, uh, want_h);
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(same_bits(got_d[i], want_d[i])) << "trial " << trial << " output " << i;
      EXPECT_TRUE(same_bits(got_w[i], want_w[i])) << "trial " << trial << " output " << i;
      EXPECT_TRUE(same_bits(got_h[i], want_h[i])) << "trial " << trial << " output " << i;
    }
    // Negative control: one ulp in one second-derivative component is seen.
    H off = want_h[2];
    off.h[4] = std::nextafter(off.h[4], 10.0);
    EXPECT_FALSE(same_bits(got_h[2], off));
  }
}

TEST(ExpressionLanguage, LoadsLeadTheTapeWhenTheirRegistersFit) {
  // Two inputs: both loads first, then the arithmetic.
  const CompiledExpressions small = compile({"sin(x) * y + u"});
  EXPECT_EQ(small.loads, 3);
  for (int i = 0; i < int(small.code.size()); ++i) {
    const bool load = small.code[i].op == ExprOp::State || small.code[i].op == ExprOp::Control;
    EXPECT_EQ(load, i < small.loads) << "instruction " << i;
  }
  // 80 states summed: holding every input from the start would need 80 registers, so the loads
  // stay in place (and the value is the sum's).
  ExprSymbols s;
  std::string sum;
  std::vector<double> xs;
  double want = 0;
  for (int i = 0; i < 80; ++i) {
    s.states.push_back("x" + std::to_string(i));
    sum.append(i ? " + " : "").append("sin(x").append(std::to_string(i)).append(")");
    xs.push_back(0.01 * i);
    want += std::sin(0.01 * i);
  }
  const CompiledExpressions wide = compile({sum}, s);
  EXPECT_EQ(wide.loads, 0);
  EXPECT_LE(wide.registers, 4);
  double got = test::kNaN;
  evaluate(wide.tape(), xs.data(), static_cast<const double*>(nullptr), &got);
  EXPECT_NEAR(got, want, 1e-12 * std::abs(want));
}

// dynamics_jacobian of an expression model seeds only the inputs its computed outputs read (the
// tape's lanes, ExpressionDynamics::jacobian): against the adapter's full dual sweeps over every
// input, entry for entry (a structural zero is an exact 0 there, where the sweeps may give -0),
// with f the same bits. The five systems, a model of 13 lanes (two sweeps of 8) and one of 80
// states whose loads stay in the tape. Negative control: a tape told of one lane fewer misses it.
TEST(ExpressionModel, JacobianOverItsLanesIsTheFullSweeps) {
  const auto check = [](const Model& model, Rng& rng) {
    const auto* a = dynamic_cast<const ModelAdapter<ExpressionDynamics>*>(&model);
    ASSERT_NE(a, nullptr);
    const int n = model.nx(), k = model.nu();
    auto data = model.make_data();
    for (int trial = 0; trial < 5; ++trial) {
      Vec x, u, lambda;
      random_point(rng, n, k, x, u, lambda);
      Vec f(n), fx = Vec::Constant(n * n, test::kNaN), fu = Vec::Constant(n * k, test::kNaN);
      Vec g(n), gx(n * n), gu(n * k);
      model.dynamics_jacobian(*data, x.data(), u.data(), f.data(), fx.data(), fu.data());
      a->dual_jacobian(*data, x.data(), u.data(), g.data(), gx.data(), gu.data());
      EXPECT_EQ(f, g);
      for (int e = 0; e < n * n; ++e) EXPECT_EQ(fx(e), gx(e)) << "fx entry " << e;
      for (int e = 0; e < n * k; ++e) EXPECT_EQ(fu(e), gu(e)) << "fu entry " << e;
      // The seeded sweeps of the integrator's stages stay (one evaluation, no product afterwards).
      const Mat S = rng.matrix(n, n + k);
      Mat K(n, n + k);
      EXPECT_TRUE(model.dynamics_chain(*data, x.data(), u.data(), S.data(), f.data(), K.data()));
    }
  };
  Rng rng(41);
  for (const Pair& pair : kPairs) {
    SCOPED_TRACE(pair.file);
    check(*load_expression(pair.file).model, rng);
  }
  // The cart-pole's structure: f reads theta, omega and F; its first two outputs copy v and omega.
  const Problem cp = load_expression("cartpole_swingup");
  const auto& cart = dynamic_cast<const ModelAdapter<ExpressionDynamics>&>(*cp.model).model();
  ASSERT_EQ(cart.tape.lanes, 3);
  EXPECT_EQ(std::vector<int>(cart.tape.lane_input, cart.tape.lane_input + 3), (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(std::vector<int>(cart.tape.output_input, cart.tape.output_input + 4), (std::vector<int>{2, 3, -1, -1}));
  EXPECT_EQ(cart.tape.nonzeros, 6);
  {
    SCOPED_TRACE("13 lanes");
    ExpressionModelSpec spec;
    const auto x = [](int i) { return std::string("x").append(std::to_string(i)); };
    for (int i = 0; i < 12; ++i) spec.symbols.states.push_back(x(i));
    spec.symbols.controls = {"u"};
    for (int i = 0; i < 12; ++i)
      spec.rhs.push_back(
          {std::string("sin(").append(x(i)).append(") * ").append(x((i + 5) % 12)).append(" + u * x0"), "ode", {}});
    const auto m = make_expression_model(spec);
    EXPECT_EQ(dynamic_cast<const ModelAdapter<ExpressionDynamics>&>(*m).model().tape.lanes, 13);
    check(*m, rng);
  }
  {
    SCOPED_TRACE("80 states, loads in place");
    ExpressionModelSpec spec;
    std::string sum = "u";
    for (int i = 0; i < 80; ++i) {
      spec.symbols.states.push_back(std::string("x").append(std::to_string(i)));
      sum.append(" + sin(x").append(std::to_string(i)).append(")");
    }
    spec.symbols.controls = {"u"};
    spec.rhs.push_back({sum, "ode.x0", {}});
    for (int i = 1; i < 80; ++i)
      spec.rhs.push_back({i % 2 ? std::string("u") : std::string("x").append(std::to_string(i - 1)), "ode", {}});
    const auto m = make_expression_model(spec);
    const ExprTape& t = dynamic_cast<const ModelAdapter<ExpressionDynamics>&>(*m).model().tape;
    EXPECT_EQ(t.loads, 0);
    EXPECT_EQ(t.lanes, 81);
    check(*m, rng);
  }
  // Negative control: one lane fewer (the cart-pole's F) leaves df/dF at zero.
  ExpressionDynamics short_lanes = cart;
  short_lanes.tape.lanes = 2;
  const double x[4] = {0.3, 2.9, -0.4, 1.1}, u[1] = {4.0};
  double f[4], fx[16], fu[4], g[4], gx[16], gu[4];
  short_lanes.jacobian(x, u, f, fx, fu);
  cart.jacobian(x, u, g, gx, gu);
  EXPECT_EQ(fu[2], 0.0);
  EXPECT_NE(gu[2], 0.0);
  EXPECT_EQ(fx[1 * 4 + 2], gx[1 * 4 + 2]);  // d/dtheta is still seeded
}

TEST(ExpressionLanguage, SharesSubexpressionsAndReusesRegisters) {
  // sin(x) is computed once.
  const CompiledExpressions shared = compile({"sin(x) * sin(x) + sin(x)"});
  int sines = 0;
  for (const ExprInstr& in : shared.code) sines += in.op == ExprOp::Sin;
  EXPECT_EQ(sines, 1);
  // A chain of 200 additions needs a handful of registers, not 200.
  std::string chain = "x";
  for (int i = 0; i < 200; ++i) chain.append(" + sin(x * ").append(std::to_string(i)).append(".5)");
  const CompiledExpressions c = compile({chain});
  EXPECT_LE(c.registers, 4);
  double want = 0.37;
  for (int i = 0; i < 200; ++i) want += std::sin(0.37 * (i + 0.5));
  EXPECT_NEAR(eval1(chain, 0.37), want, 1e-12);
  // Constants fold: k * 2 is one constant.
  EXPECT_EQ(compile({"k * 2"}).code.size(), 1u);
  // sin and cos of one operand are one SinCos writing both; each keeps its own value, whichever
  // comes first (a swapped pair of registers would give cos for sin).
  for (const std::string text : {"sin(x + y) * 3 - cos(x + y)", "cos(x + y) * 3 - sin(x + y)"}) {
    const CompiledExpressions sc = compile({text, "sin(y)"});
    int fused = 0, single = 0;
    for (const ExprInstr& in : sc.code) {
      fused += in.op == ExprOp::SinCos;
      single += in.op == ExprOp::Sin || in.op == ExprOp::Cos;
    }
    EXPECT_EQ(fused, 1) << text;
    EXPECT_EQ(single, 1) << text;  // sin(y) has no cos to share
    const double xs[2] = {0.37, 0.3}, us[1] = {-0.7};
    double out[2];
    evaluate(sc.tape(), xs, us, out);
    const double a = 0.37 + 0.3;
    EXPECT_EQ(out[0], text[0] == 's' ? std::sin(a) * 3 - std::cos(a) : std::cos(a) * 3 - std::sin(a)) << text;
    EXPECT_EQ(out[1], std::sin(0.3));
  }
}

TEST(ExpressionModel, DiscreteMapAndSemiImplicitEuler) {
  const Problem p = load_problem_from_string(R"(
name: discrete
model:
  type: expression
  states: [q, v]
  controls: [a]
  params: {h: 0.1}
  next: {q: q + h * v, v: v + h * a}
horizon: {N: 5, dt: 0.1}
x0: [1, 2]
)");
  EXPECT_TRUE(p.model->discrete_time());
  auto data = p.model->make_data();
  const double x[2] = {1, 2}, u[1] = {3};
  double f[2];
  p.model->dynamics(*data, x, u, f);
  EXPECT_DOUBLE_EQ(f[0], 1.2);
  EXPECT_DOUBLE_EQ(f[1], 2.3);
  // nq reaches semi-implicit Euler: the pendulum's step equals the built-in's.
  const Problem e = load_expression("pendulum_swingup", {"horizon.integrator=semi_implicit_euler"});
  const auto b = make_model("pendulum", ParamMap{});
  Integrator ie(*e.model, IntegratorType::SemiImplicitEuler), ib(*b, IntegratorType::SemiImplicitEuler);
  auto de = e.model->make_data(), db = b->make_data();
  const double xp[2] = {0.4, -0.2}, up[1] = {0.5};
  double ye[2], yb[2];
  ASSERT_EQ(ie.step(*de, xp, up, 0.05, ye), IntegratorStatus::Ok);
  ASSERT_EQ(ib.step(*db, xp, up, 0.05, yb), IntegratorStatus::Ok);
  EXPECT_NEAR(ye[0], yb[0], 1e-15);
  EXPECT_NEAR(ye[1], yb[1], 1e-15);
}

// --- errors ------------------------------------------------------------------------------------------

// The message of loading a pendulum whose model section is `model` (indented two spaces).
std::string load_error(const std::string& model) {
  const std::string text = "name: e\nmodel:\n" + model + "horizon: {N: 5, dt: 0.1}\nx0: [0, 0]\n";
  try {
    load_problem_from_string(text, "e.yaml");
  } catch (const ProblemError& err) {
    return err.what();
  }
  return "loaded";
}

const std::string kHead = "  type: expression\n  states: [theta, omega]\n  controls: [tau]\n  params: {mass: 1}\n";

TEST(ExpressionErrors, EveryClassNamesPositionAndFix) {
  struct Case {
    std::string model, fragment;
  };
  const Case cases[] = {
      // unknown symbol, with the closest name
      {kHead + "  ode: {theta: omega, omega: tau - mas * sin(theta)}\n",
       "e.yaml:7:36: model.ode.omega: expected a state, control, parameter or definition, found 'mas' at character 7 "
       "of 'tau - mas * sin(theta)' (did you mean 'mass'?)"},
      // the column is the token's: past the opening quote of a quoted scalar; a scalar folded over
      // lines has no column per character, and the expression's start is given
      {kHead + "  ode: {theta: omega, omega: 'tau - mas'}\n",
       "e.yaml:7:37: model.ode.omega: expected a state, control, parameter or definition, found 'mas' at character 7"},
      {kHead + "  ode:\n    theta: omega\n    omega: tau -\n      mas\n",
       "e.yaml:9:12: model.ode.omega: expected a state, control, parameter or definition, found 'mas' at character 7 "
       "of 'tau - mas'"},
      // unknown function
      {kHead + "  ode: {theta: omega, omega: sine(theta)}\n",
       "model.ode.omega: expected a function (sin, cos, tan, exp, log, sqrt, tanh, abs, atan2, min, max, clamp, "
       "smooth_clamp), found 'sine' at character 1 of 'sine(theta)' (did you mean 'sin'?)"},
      // wrong arity
      {kHead + "  ode: {theta: omega, omega: atan2(theta)}\n",
       "model.ode.omega: expected atan2 with 2 arguments, found 'atan2(theta)' at character 1 of 'atan2(theta)' "
       "(found 1: atan2(y, x), the angle of (x, y))"},
      // a function without its call
      {kHead + "  ode: {theta: omega, omega: sin * theta}\n", "expected a call sin(...), found 'sin' at character 1"},
      // division by a literal zero, and by a constant that is zero
      {kHead + "  ode: {theta: omega, omega: tau / 0}\n",
       "model.ode.omega: expected a denominator that is not the constant 0, found '0' at character 7 of 'tau / 0'"},
      {kHead + "  ode: {theta: omega, omega: tau / (mass - 1)}\n",
       "expected a denominator that is not the constant 0, found '(mass - 1)' at character 7"},
      // definition cycle
      {kHead + "  defs: {a: b + 1, b: 2 * a}\n  ode: {theta: omega, omega: a}\n",
       "e.yaml:7:27: model.defs.b: expected definitions that do not refer to themselves, found 'a' at character 5 "
       "of '2 * a' (the cycle a -> b -> a)"},
      {kHead + "  defs: {a: a + 1}\n  ode: {theta: omega, omega: a}\n", "(the cycle a -> a)"},
      // syntax
      {kHead + "  ode: {theta: omega, omega: (tau + 1}\n", "expected ')' closing the parenthesis, found the end"},
      {kHead + "  ode: {theta: omega, omega: tau +}\n", "expected a number, a name or '(', found the end"},
      {kHead + "  ode: {theta: omega, omega: \"tau $ 2\"}\n",
       "e.yaml:7:35: model.ode.omega: expected a number, a name, an operator (+ - * / ^) or a parenthesis, found "
       "'$' at character 5"},
      {kHead + "  ode: {theta: omega, omega: tau tau}\n",
       "expected an operator or the end of the expression, found 'tau' at character 5"},
      {kHead + "  ode: {theta: omega, omega: 1e}\n", "expected a number with digits after its exponent, found '1e'"},
      {kHead + "  ode: {theta: omega, omega: ''}\n", "expected an expression, found the end at character 1"},
      // a constant that is not finite
      {kHead + "  ode: {theta: omega, omega: log(mass - 1)}\n",
       "expected a call on constants whose value is finite, found 'log(mass - 1)'"},
      {kHead + "  ode: {theta: omega, omega: 1e308 + 1e308}\n",
       "expected constants whose sum and difference are finite, found '+' at character 7"},
      // the ode's keys
      {kHead + "  ode: {theta: omega}\n", "model.ode.omega: expected an expression for every state"},
      {kHead + "  ode: {theta: omega, omega: tau, omgea: 1}\n", "(did you mean 'omega'?)"},
      {kHead + "  ode: {theta: omega, omega: [1]}\n", "model.ode.omega: expected an expression"},
      {kHead, "model: expected either ode (x' = f(x, u)) or next (x+ = f(x, u)), found neither"},
      {kHead + "  ode: {theta: omega, omega: tau}\n  next: {theta: omega, omega: tau}\n", "found both"},
      // names
      {"  type: expression\n  states: [theta, omega]\n  controls: [theta]\n  ode: {theta: omega, omega: 1}\n",
       "model.controls: expected names used once across states, controls, params and defs, found 'theta' in both "
       "states and controls"},
      {"  type: expression\n  states: [theta, sin]\n  ode: {theta: sin, sin: 1}\n",
       "expected names that are not a function or constant of the expression language, found 'sin'"},
      {kHead + "  ode: {theta: omega, omega: tau}\n  nq: 2\n", "model.nq: expected an integer in [0, 1]"},
      {kHead + "  ode: {theta: omega, omega: tau}\n  planar_position: [theta, omgea]\n",
       "model.planar_position[1]: expected the name of a state, found 'omgea' (did you mean 'omega'?)"},
      {kHead + "  ode: {theta: omega, omega: tau}\n  od: 1\n",
       "model.od: expected one of type, states, controls, params, defs, ode, next, nq or planar_position, found "
       "unknown "
       "key 'od' (did you mean 'ode'?)"},
      {kHead + "  ode: {theta: omega, omega: tau}\n", "loaded"},
  };
  for (const Case& c : cases) {
    const std::string msg = load_error(c.model);
    EXPECT_NE(msg.find(c.fragment), std::string::npos) << "model:\n" << c.model << "message: " << msg;
  }
}

// The model fits kExprMaxRegisters live values or is refused, and the refusal says so.
TEST(ExpressionErrors, TooManyLiveValues) {
  std::vector<std::string> many;
  ExprSymbols s;
  for (int i = 0; i < kExprMaxRegisters + 1; ++i) {
    std::string name = "x";
    name.append(std::to_string(i));
    s.states.push_back(name);
    many.push_back(std::string("sin(").append(name).append(")"));
  }
  try {
    compile(many, s);
    ADD_FAILURE() << "compiled";
  } catch (const ProblemError& e) {
    EXPECT_NE(std::string(e.what()).find("at most 64 intermediate values"), std::string::npos) << e.what();
  }
  many.pop_back();
  s.states.pop_back();
  EXPECT_EQ(compile(many, s).registers, kExprMaxRegisters);
}

TEST(ExpressionModel, PlantParametersOfAnExpressionModel) {
  const std::string text = R"(
name: plant
model:
  type: expression
  states: [theta, omega]
  controls: [tau]
  params: {mass: 1, length: 1}
  ode: {theta: omega, omega: (tau - mass * 9.81 * length * sin(theta)) / (mass * length^2)}
horizon: {N: 5, dt: 0.1}
x0: [0, 0]
mpc: {plant: {params: {mass: 1.2}}}
)";
  const Problem p = load_problem_from_string(text);
  ASSERT_TRUE(p.mpc.plant_model);
  ASSERT_EQ(p.mpc.plant_params.size(), 1u);
  EXPECT_EQ(p.mpc.plant_params[0].model_value, std::vector<double>{1.0});
  EXPECT_EQ(p.mpc.plant_params[0].plant_value, std::vector<double>{1.2});
  auto d = p.mpc.plant_model->make_data();
  const double x[2] = {0, 0}, u[1] = {1.2};
  double f[2];
  p.mpc.plant_model->dynamics(*d, x, u, f);
  EXPECT_DOUBLE_EQ(f[1], 1.0);
  try {
    load_problem_from_string(text, "p.yaml", ".", {"mpc.plant.params={mas: 2}"});
    ADD_FAILURE() << "loaded";
  } catch (const ProblemError& e) {
    EXPECT_NE(std::string(e.what()).find("mpc.plant.params.mas: expected a parameter of the expression model, "
                                         "found 'mas' (did you mean 'mass'?)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace knot::problems
