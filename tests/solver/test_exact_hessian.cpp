// The SQP's exact Hessian in closed form (second-order forward mode through the integrator step,
// the terms' own curvature) against the central-difference Hessian it replaced: the same optimum
// to 1e-8 relative in no more iterations on the two configs that need an exact Hessian.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "test_sqp_common.hpp"

namespace knot::test {
namespace {

using solver::Hessian;
using solver::Solver;
using solver::Status;

// The model as is, but without its second-order evaluation: the solver falls back to differencing
// the Lagrangian gradient, the reference here.
class WithoutSecondOrder final : public problems::Model {
 public:
  explicit WithoutSecondOrder(std::shared_ptr<const problems::Model> m) : m_(std::move(m)) {}
  std::string_view type() const override { return m_->type(); }
  int nx() const override { return m_->nx(); }
  int nu() const override { return m_->nu(); }
  int nq() const override { return m_->nq(); }
  bool discrete_time() const override { return m_->discrete_time(); }
  std::vector<std::string> state_names() const override { return m_->state_names(); }
  std::vector<std::string> control_names() const override { return m_->control_names(); }
  std::unique_ptr<problems::ModelData> make_data() const override { return m_->make_data(); }
  void dynamics(problems::ModelData& d, const double* x, const double* u, double* f) const override {
    m_->dynamics(d, x, u, f);
  }
  void dynamics_jacobian(problems::ModelData& d, const double* x, const double* u, double* f, double* fx,
                         double* fu) const override {
    m_->dynamics_jacobian(d, x, u, f, fx, fu);
  }
  bool dynamics_chain(problems::ModelData& d, const double* x, const double* u, const double* S, double* f,
                      double* K) const override {
    return m_->dynamics_chain(d, x, u, S, f, K);
  }
  std::optional<std::array<int, 2>> planar_position() const override { return m_->planar_position(); }

 private:
  std::shared_ptr<const problems::Model> m_;
};

// A cost term as is, but without its closed-form curvature: with every term wrapped so, no knot has
// a closed-form Hessian (the terminal one, which has no dynamics, included).
class WithoutCurvature final : public problems::CostTerm {
 public:
  explicit WithoutCurvature(std::shared_ptr<problems::CostTerm> c) : CostTerm(c->info()), c_(std::move(c)) {}
  std::string_view type() const override { return c_->type(); }
  bool uses_control() const override { return c_->uses_control(); }
  bool couples_previous_control() const override { return c_->couples_previous_control(); }
  double value(const problems::StagePoint& p) const override { return c_->value(p); }
  double accumulate(const problems::StagePoint& p, const problems::CostBlocks& out) const override {
    return c_->accumulate(p, out);
  }

 private:
  std::shared_ptr<problems::CostTerm> c_;
};

struct Outcome {
  Status status;
  double cost;
  int iterations;
};

Outcome solve(const problems::Problem& p) {
  solver::SolverOptions o = sqp_options(p);
  o.hessian = Hessian::Exact;  // the configs' own default is auto, which mixes in Gauss-Newton steps
  Solver s(p, o);
  const Status st = s.solve();
  return {st, s.solution().cost, s.solution().iterations};
}

// The references: the differenced Hessian on every knot (what hessian: exact computed before), and
// on every knot but the terminal one (closed form there). The two differ only by the differences'
// error, ~1e-10 relative, and that alone moves the acrobot's count (106 and 117 iterations, the
// closed form 110): past ~100 globalized iterations the count is not determined more finely than
// that, so the closed form must take no more iterations than the larger of the two.
TEST(ExactHessian, ClosedFormSolvesTheConfigsAsTheDifferencedOneDoes) {
  for (const char* name : {"acrobot_swingup", "unicycle_obstacles"}) {
    SCOPED_TRACE(name);
    const problems::Problem p = load_config(name);
    problems::Problem interior = p;
    interior.model = std::make_shared<WithoutSecondOrder>(p.model);
    problems::Problem differenced = interior;
    for (auto& c : differenced.costs) c = std::make_shared<WithoutCurvature>(c);
    const Outcome closed = solve(p), all = solve(differenced), most = solve(interior);
    for (const Outcome* o : {&closed, &all, &most}) ASSERT_EQ(o->status, Status::Solved);
    EXPECT_NEAR(closed.cost, all.cost, 1e-8 * std::abs(all.cost));
    EXPECT_NEAR(closed.cost, most.cost, 1e-8 * std::abs(all.cost));
    EXPECT_LE(closed.iterations, std::max(all.iterations, most.iterations));
  }
}

// The manipulator's closed form (forward mode over its analytic first derivatives, the end
// effector's frame curvature) on the two iiwa14 configs, which keep Gauss-Newton by default: the
// differenced Hessian's optimum in no more iterations.
TEST(ExactHessian, ManipulatorClosedFormSolvesTheIiwaConfigsAsTheDifferencedOneDoes) {
  for (const char* name : {"iiwa14_reach", "iiwa14_gravity_limits"}) {
    SCOPED_TRACE(name);
    const problems::Problem p = load_config(name);
    problems::Problem differenced = p;
    differenced.model = std::make_shared<WithoutSecondOrder>(p.model);
    for (auto& c : differenced.costs) c = std::make_shared<WithoutCurvature>(c);
    Outcome out[2];
    for (int k = 0; k < 2; ++k) {
      solver::SolverOptions o = sqp_options(k == 0 ? p : differenced);
      o.hessian = Hessian::Exact;
      Solver s(k == 0 ? p : differenced, o);
      out[k] = {s.solve(), s.solution().cost, s.solution().iterations};
      ASSERT_EQ(out[k].status, Status::Solved);
    }
    EXPECT_NEAR(out[0].cost, out[1].cost, 1e-8 * std::abs(out[1].cost));
    EXPECT_LE(out[0].iterations, out[1].iterations);
  }
}

// Negative control for the comparison above: the Gauss-Newton Hessian reaches the acrobot's optimum
// neither in as few iterations nor (within max_iter) to 1e-8.
TEST(ExactHessian, ComparisonSeesADifferentHessian) {
  const problems::Problem p = load_config("acrobot_swingup");
  solver::SolverOptions o = sqp_options(p);
  o.hessian = Hessian::Exact;
  Solver exact(p, o);
  ASSERT_EQ(exact.solve(), Status::Solved);
  o.hessian = Hessian::GaussNewton;
  Solver gn(p, o);
  gn.solve();
  const bool same = std::abs(gn.solution().cost - exact.solution().cost) <= 1e-8 * std::abs(exact.solution().cost) &&
                    gn.solution().iterations <= exact.solution().iterations;
  EXPECT_FALSE(same);
}

}  // namespace
}  // namespace knot::test
