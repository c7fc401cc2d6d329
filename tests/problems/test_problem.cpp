// Problem::validate on problems built in C++: a complete problem passes, and each mistake a C++
// caller can make is named by its key path.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>

#include "knot/problems/error.hpp"
#include "knot/problems/problem.hpp"
#include "knot/problems/registry.hpp"

namespace {

using namespace knot::problems;

Problem cartpole() {
  Problem p;
  p.name = "cxx";
  p.model = make_model("cartpole", ParamMap("model.params"));
  p.horizon = {20, 0.05, IntegratorType::Rk4};
  p.x0 = {0, 3, 0, 0};
  p.costs.push_back(std::make_shared<StateCost>(TermInfo{"x", StageSet::All, false}, 4, std::vector<double>(16, 0.0),
                                                Reference::constant({0, 0, 0, 0})));
  p.costs.push_back(std::make_shared<ControlCost>(TermInfo{"u", StageSet::Running, true}, 1, std::vector<double>{1},
                                                  Reference::constant({0})));
  p.constraints.push_back(std::make_shared<ControlBox>(TermInfo{"box", StageSet::Running, false}, 1,
                                                       std::vector<double>{-1}, std::vector<double>{1}));
  return p;
}

std::string key_of_error(const Problem& p) {
  try {
    p.validate();
  } catch (const ProblemError& e) {
    return e.key_path();
  }
  return "(valid)";
}

TEST(Problem, CompleteProblemIsValid) {
  EXPECT_EQ(key_of_error(cartpole()), "(valid)");
  Problem named = cartpole();
  named.state_names = {"a", "b", "c", "d"};
  named.control_names = {"f"};
  EXPECT_EQ(key_of_error(named), "(valid)");
  Problem guessed = cartpole();
  guessed.initial_guess.x.assign(21 * 4, 0.0);
  guessed.initial_guess.u.assign(20, 0.0);
  EXPECT_EQ(key_of_error(guessed), "(valid)");
}

TEST(Problem, EachMistakeIsNamed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::pair<std::function<void(Problem&)>, std::string>> cases = {
      {[](Problem& p) { p.model = nullptr; }, "model"},
      {[](Problem& p) { p.horizon.N = 0; }, "horizon.N"},
      {[](Problem& p) { p.horizon.dt = 0; }, "horizon.dt"},
      {[&](Problem& p) { p.horizon.dt = nan; }, "horizon.dt"},
      {[](Problem& p) {
         p.x0 = {0, 0, 0};
       },
       "x0"},
      {[&](Problem& p) { p.x0[2] = nan; }, "x0[2]"},
      {[](Problem& p) { p.state_names = {"a"}; }, "state_names"},
      {[](Problem& p) {
         p.control_names = {"a", "b"};
       },
       "control_names"},
      {[](Problem& p) { p.costs.push_back(nullptr); }, "costs[2]"},
      {[](Problem& p) {
         p.costs.push_back(std::make_shared<ControlCost>(TermInfo{"t", StageSet::Terminal, false}, 1,
                                                         std::vector<double>{1}, Reference::constant({0})));
       },
       "costs[2].stage"},
      {[](Problem& p) { p.constraints.push_back(nullptr); }, "constraints[1]"},
      {[](Problem& p) {
         p.constraints.push_back(std::make_shared<ControlBox>(TermInfo{"t", StageSet::Terminal, false}, 1,
                                                              std::vector<double>{-1}, std::vector<double>{1}));
       },
       "constraints[1].stage"},
      {[](Problem& p) { p.solver.max_iter = 0; }, "solver.max_iter"},
      {[](Problem& p) { p.mpc.duration = -1; }, "mpc.duration"},
      {[](Problem& p) {
         p.mpc.disturbances = {Disturbance{1, {0, 1}}};
       },
       "mpc.disturbances[0].state_kick"},
      {[](Problem& p) {
         p.initial_guess.x.assign(20 * 4, 0.0);  // N rows, not N+1
         p.initial_guess.u.assign(20, 0.0);
       },
       "initial_guess.x"},
      {[](Problem& p) {
         p.initial_guess.x.assign(21 * 4, 0.0);
         p.initial_guess.u.assign(21, 0.0);
       },
       "initial_guess.u"},
      {[](Problem& p) {
         p.initial_guess.x.assign(21 * 4, 0.0);
         p.initial_guess.u.assign(20, 0.0);
         p.initial_guess.lambda.assign(4, 0.0);
       },
       "initial_guess.lambda"},
  };
  for (const auto& [mutate, key] : cases) {
    Problem p = cartpole();
    mutate(p);
    EXPECT_EQ(key_of_error(p), key);
  }
}

TEST(Problem, SemiImplicitEulerNeedsPositionsAndVelocities) {
  Problem p = cartpole();
  p.horizon.integrator = IntegratorType::SemiImplicitEuler;
  EXPECT_EQ(key_of_error(p), "(valid)");  // cartpole has nq = 2
  p.model = make_model("unicycle", ParamMap("model.params"));
  p.x0 = {0, 0, 0};
  p.costs.clear();
  p.constraints.clear();
  EXPECT_EQ(key_of_error(p), "horizon.integrator");
}

TEST(Problem, ErrorsNameTheSource) {
  Problem p = cartpole();
  p.source = "from_cxx.yaml";
  p.horizon.N = -2;
  try {
    p.validate();
    FAIL();
  } catch (const ProblemError& e) {
    EXPECT_EQ(std::string(e.what()), "from_cxx.yaml: horizon.N: expected an integer >= 1, found -2");
  }
}

}  // namespace
