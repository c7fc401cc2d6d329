// The model registry: the list of types, construction with defaults (equal to the template models'
// own defaults), parameters reaching the model, bad parameters named in errors, and unknown types
// answered with the list and the closest name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"
#include "knot/problems/model_adapter.hpp"
#include "knot/problems/models/acrobot.hpp"
#include "knot/problems/models/car.hpp"
#include "knot/problems/models/cartpole.hpp"
#include "knot/problems/models/chain_of_masses.hpp"
#include "knot/problems/models/double_integrator.hpp"
#include "knot/problems/models/pendulum.hpp"
#include "knot/problems/models/quadrotor.hpp"
#include "knot/problems/models/unicycle.hpp"
#include "knot/problems/registry.hpp"
#include "test_util.hpp"
#include "source_tree.hpp"

namespace knot::problems {
namespace {

using test::Rng;
using test::Vec;

const std::vector<std::string> kTypes = {"double_integrator", "pendulum", "cartpole",        "acrobot", "quadrotor",
                                         "unicycle",          "car",      "chain_of_masses", "linear",  "manipulator"};
// The types that need no parameters (linear needs its matrices, manipulator its URDF).
const std::vector<std::string> kDefaultable = {"double_integrator", "pendulum", "cartpole", "acrobot",
                                               "quadrotor",         "unicycle", "car",      "chain_of_masses"};

Vec eval(const Model& m, const Vec& x, const Vec& u) {
  auto data = m.make_data();
  Vec f = Vec::Constant(m.nx(), test::kNaN);
  m.dynamics(*data, x.data(), u.data(), f.data());
  return f;
}

// Requires make_model(type, params) to throw a ProblemError for `key`; returns it.
ProblemError error_of(const std::string& type, const ParamMap& params, const std::string& key) {
  try {
    make_model(type, params);
  } catch (const ProblemError& e) {
    EXPECT_EQ(e.key_path(), key) << type << ": " << e.what();
    return e;
  }
  ADD_FAILURE() << type << ": no ProblemError for " << key;
  return ProblemError({}, "", "", "");
}

TEST(Registry, ListsEveryTypeOnceWithADescription) {
  std::vector<std::string> listed;
  for (const ModelInfo& info : model_types()) {
    listed.push_back(info.type);
    EXPECT_FALSE(info.description.empty()) << info.type;
  }
  EXPECT_EQ(listed, kTypes);
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()).size(), listed.size());
}

TEST(Registry, DefaultsEqualTheModelsOwnDefaults) {
  // The factory with no parameters builds exactly the default-constructed template model.
  std::map<std::string, std::shared_ptr<const Model>> reference = {
      {"double_integrator", std::make_shared<ModelAdapter<models::DoubleIntegrator>>(models::DoubleIntegrator{})},
      {"pendulum", std::make_shared<ModelAdapter<models::Pendulum>>(models::Pendulum{})},
      {"cartpole", std::make_shared<ModelAdapter<models::Cartpole>>(models::Cartpole{})},
      {"acrobot", std::make_shared<ModelAdapter<models::Acrobot>>(models::Acrobot{})},
      {"quadrotor", std::make_shared<ModelAdapter<models::Quadrotor>>(models::Quadrotor{})},
      {"unicycle", std::make_shared<ModelAdapter<models::Unicycle>>(models::Unicycle{})},
      {"car", std::make_shared<ModelAdapter<models::Car>>(models::Car{})},
      {"chain_of_masses", std::make_shared<ModelAdapter<models::ChainOfMasses>>(models::ChainOfMasses{})},
  };
  Rng rng(31);
  for (const std::string& type : kDefaultable) {
    SCOPED_TRACE(type);
    const auto m = make_model(type, ParamMap("model.params"));
    ASSERT_NE(m, nullptr);
    const Model& ref = *reference.at(type);
    EXPECT_EQ(m->type(), type);
    EXPECT_EQ(m->nx(), ref.nx());
    EXPECT_EQ(m->nu(), ref.nu());
    EXPECT_EQ(m->nq(), ref.nq());
    const Vec x = rng.vector(m->nx()), u = rng.vector(m->nu());
    EXPECT_EQ(eval(*m, x, u), eval(ref, x, u));
  }
  // The defaults documented in the headers (spot checks of the values the factories fall back to).
  EXPECT_EQ(models::Cartpole{}.params.pole_mass, 0.1);
  EXPECT_EQ(models::Acrobot{}.params.Ic2, 0.33);
  EXPECT_EQ(models::Quadrotor{}.params.mass, 0.775);
  EXPECT_EQ(models::ChainOfMasses{}.params.rest_length, 0.033);
  EXPECT_EQ(make_model("chain_of_masses", ParamMap())->nx(), 21);
}

TEST(Registry, ParametersReachTheModel) {
  ParamMap di;
  di.set("dim", 3.0);
  EXPECT_EQ(make_model("double_integrator", di)->nx(), 6);
  ParamMap chain;
  chain.set("masses", 7.0);
  EXPECT_EQ(make_model("chain_of_masses", chain)->nx(), 3 * 6 + 3 * 5);

  // A heavier, longer pendulum: omega' = (tau - m g l sin(theta)) / (m l^2).
  ParamMap pend;
  pend.set("mass", 2.0).set("length", 0.5).set("gravity", 3.0).set("damping", 0.25);
  const Vec x = (Vec(2) << 0.7, -1.1).finished(), u = (Vec(1) << 0.4).finished();
  const double expected = (0.4 - 0.25 * -1.1 - 2.0 * 3.0 * 0.5 * std::sin(0.7)) / (2.0 * 0.25);
  EXPECT_NEAR(eval(*make_model("pendulum", pend), x, u)[1], expected, 1e-14);

  // Quadrotor inertia: a pure roll torque accelerates p by tau / Ixx.
  ParamMap quad;
  quad.set("inertia", std::vector<double>{0.01, 0.02, 0.03}).set("arm_length", 0.2);
  const Vec f = eval(*make_model("quadrotor", quad), Vec::Zero(12), (Vec(4) << 0, 1, 0, 0).finished());
  EXPECT_NEAR(f[9], 0.2 / 0.01, 1e-12);

  ParamMap car;
  car.set("wheelbase", 4.0);
  const Vec fc = eval(*make_model("car", car), (Vec(4) << 0, 0, 0, 2).finished(), (Vec(2) << 0, 0.3).finished());
  EXPECT_NEAR(fc[2], 2 * std::tan(0.3) / 4.0, 1e-15);
}

TEST(Registry, LinearOwnsItsMatrices) {
  Rng rng(32);
  const Eigen::MatrixXd A = rng.matrix(3, 3), B = rng.matrix(3, 2);
  const Vec c = rng.vector(3);
  std::shared_ptr<const Model> m;
  {
    ParamMap p("model.params");
    std::vector<double> a_rows, b_rows;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) a_rows.push_back(A(i, j));
      for (int j = 0; j < 2; ++j) b_rows.push_back(B(i, j));
    }
    p.set("nx", 3.0).set("nu", 2.0).set_matrix("A", 3, 3, a_rows).set_matrix("B", 3, 2, b_rows);
    p.set("c", std::vector<double>(c.data(), c.data() + 3)).set("discrete", std::string("true"));
    m = make_model("linear", p);
  }  // the parameters are gone; the model keeps its own copies
  const Vec x = rng.vector(3), u = rng.vector(2);
  EXPECT_LE(test::rel_err(eval(*m, x, u), Vec(A * x + B * u + c)), 1e-15);
  EXPECT_TRUE(m->discrete_time());
  EXPECT_EQ(m->type(), "linear");
}

TEST(Registry, BadParametersNameTheirKey) {
  auto with = [](const std::string& key, double v) {
    ParamMap p("model.params");
    p.set(key, v);
    return p;
  };
  error_of("pendulum", with("mass", -1.0), "model.params.mass");
  error_of("pendulum", with("length", 0.0), "model.params.length");
  error_of("pendulum", with("damping", -0.1), "model.params.damping");
  error_of("cartpole", with("pole_mass", -0.1), "model.params.pole_mass");
  error_of("cartpole", with("gravity", -9.81), "model.params.gravity");
  error_of("acrobot", with("m1", 0.0), "model.params.m1");
  error_of("acrobot", with("b2", -1.0), "model.params.b2");
  error_of("quadrotor", with("mass", -0.775), "model.params.mass");
  error_of("car", with("wheelbase", 0.0), "model.params.wheelbase");
  error_of("chain_of_masses", with("masses", 2.0), "model.params.masses");
  error_of("chain_of_masses", with("masses", 4.5), "model.params.masses");
  error_of("chain_of_masses", with("mass", -0.033), "model.params.mass");
  error_of("double_integrator", with("dim", 0.0), "model.params.dim");
  const ProblemError e = error_of("pendulum", with("mass", -1.0), "model.params.mass");
  EXPECT_EQ(e.expected(), "a number > 0");
  EXPECT_EQ(e.found(), "-1");

  // Wrong dimensions.
  ParamMap short_inertia("model.params");
  short_inertia.set("inertia", std::vector<double>{1, 2});
  error_of("quadrotor", short_inertia, "model.params.inertia");
  ParamMap negative_inertia("model.params");
  negative_inertia.set("inertia", std::vector<double>{0.1, -0.2, 0.3});
  EXPECT_EQ(error_of("quadrotor", negative_inertia, "model.params.inertia").found(), "-0.2 at index 1");

  auto linear = [] {
    ParamMap p("model.params");
    p.set("nx", 2.0).set("nu", 1.0).set_matrix("A", 2, 2, {1, 2, 3, 4}).set_matrix("B", 2, 1, {5, 6});
    return p;
  };
  EXPECT_NO_THROW(make_model("linear", linear()));  // the base case is valid: each error below is its own
  ParamMap no_matrices("model.params");
  error_of("linear", no_matrices, "model.params.A");
  // Without nx and nu the dimensions come from the shapes of A and B.
  ParamMap shapes_only("model.params");
  shapes_only.set_matrix("A", 3, 3, {1, 0, 0, 0, 1, 0, 0, 0, 1}).set_matrix("B", 3, 2, {1, 0, 0, 1, 0, 0});
  const auto inferred = make_model("linear", shapes_only);
  EXPECT_EQ(inferred->nx(), 3);
  EXPECT_EQ(inferred->nu(), 2);
  ParamMap ragged("model.params");
  ragged.set_matrix("A", 2, 2, {1, 0, 0, 1}).set_matrix("B", 3, 1, {1, 0, 0});
  error_of("linear", ragged, "model.params.B");
  ParamMap bad_a = linear();
  bad_a.set_matrix("A", 2, 3, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(error_of("linear", bad_a, "model.params.A").expected(), "a 2 x 2 matrix");
  ParamMap bad_b = linear();
  bad_b.set_matrix("B", 1, 2, {5, 6});
  error_of("linear", bad_b, "model.params.B");
  ParamMap bad_c = linear();
  bad_c.set("c", std::vector<double>{1, 2, 3});
  error_of("linear", bad_c, "model.params.c");
  ParamMap no_a("model.params");
  no_a.set("nx", 2.0).set("nu", 1.0);
  error_of("linear", no_a, "model.params.A");

  // The manipulator's factory is reached through the registry and needs its URDF.
  ParamMap no_urdf("model.params");
  const ProblemError m = error_of("manipulator", no_urdf, "model.params.urdf");
  EXPECT_NE(std::string(m.what()).find("urdf"), std::string::npos);
}

TEST(Registry, UnknownTypeListsTheKnownOnesAndSuggestsTheClosest) {
  try {
    make_model("cartpol", ParamMap());
    FAIL() << "no error";
  } catch (const ProblemError& e) {
    EXPECT_EQ(e.key_path(), "model.type");
    EXPECT_EQ(e.found(), "'cartpol'");
    for (const std::string& t : kTypes) EXPECT_NE(e.expected().find(t), std::string::npos) << t;
    EXPECT_NE(std::string(e.what()).find("did you mean 'cartpole'?"), std::string::npos) << e.what();
  }
  try {
    make_model("quadcopter", ParamMap(), "models[1].type");
    FAIL() << "no error";
  } catch (const ProblemError& e) {
    EXPECT_EQ(e.key_path(), "models[1].type");
    EXPECT_NE(std::string(e.what()).find("did you mean 'quadrotor'?"), std::string::npos) << e.what();
  }
  // Case matters: the names are exact.
  EXPECT_THROW(make_model("Pendulum", ParamMap()), ProblemError);
}

// with_parameters: unchanged parameters rebuild the same model bit for bit, a change equals the
// model built with that value (and differs from the old one: the negative control), and the
// factory's checks apply.
TEST(Registry, WithParametersRebuildsTheModel) {
  Rng rng(11);
  const auto same = [](const Vec& a, const Vec& b) {
    return test::bitwise_equal(std::vector<double>(a.begin(), a.end()), std::vector<double>(b.begin(), b.end()));
  };
  for (const std::string& type : kDefaultable) {
    const auto m = make_model(type, ParamMap());
    const auto again = with_parameters(*m, {});
    ASSERT_EQ(again->type(), type);
    for (int t = 0; t < 5; ++t) {
      const Vec x = rng.vector(m->nx()), u = rng.vector(m->nu());
      EXPECT_TRUE(same(eval(*m, x, u), eval(*again, x, u))) << type;
    }
  }
  const auto cartpole = make_model("cartpole", ParamMap());
  const auto heavy = with_parameters(*cartpole, {{"cart_mass", {2.5}}, {"length", {0.6}}});
  ParamMap direct;
  direct.set("cart_mass", 2.5).set("length", 0.6);
  const Vec x = rng.vector(4), u = rng.vector(1);
  EXPECT_TRUE(same(eval(*heavy, x, u), eval(*make_model("cartpole", direct), x, u)));
  EXPECT_FALSE(same(eval(*heavy, x, u), eval(*cartpole, x, u)));
  EXPECT_EQ(heavy->parameters()[1].values, std::vector<double>{0.1});  // pole_mass kept

  const auto quad = make_model("quadrotor", ParamMap());
  const auto roll = with_parameters(*quad, {{"inertia", {0.01, 0.02, 0.03}}});
  EXPECT_NEAR(eval(*roll, Vec::Zero(12), (Vec(4) << 0, 1, 0, 0).finished())[9],
              make_model("quadrotor", ParamMap())->parameters()[1].values[0] / 0.01, 1e-12);

  const auto key_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const ProblemError& e) {
      return e.key_path() + " | " + e.what();
    }
    return "no error";
  };
  EXPECT_EQ(key_of([&] { with_parameters(*cartpole, {{"cart_mas", {2.0}}}); }).rfind("model.params.cart_mas | ", 0), 0u);
  EXPECT_NE(key_of([&] { with_parameters(*cartpole, {{"cart_mas", {2.0}}}); }).find("did you mean 'cart_mass'"),
            std::string::npos);
  EXPECT_EQ(key_of([&] { with_parameters(*quad, {{"inertia", {0.01, 0.02}}}); }).rfind("model.params.inertia | ", 0), 0u);
  EXPECT_EQ(key_of([&] { with_parameters(*cartpole, {{"pole_mass", {-1.0}}}); }).rfind("model.params.pole_mass | ", 0),
            0u);
  ParamMap lin;
  lin.set_matrix("A", 1, 1, {1.0}).set_matrix("B", 1, 1, {1.0});
  EXPECT_EQ(key_of([&] { with_parameters(*make_model("linear", lin), {}); }).rfind("model.type | ", 0), 0u);
}

// An expression model compiled again with a new parameter value is the model the file gives with
// that value set (--set), bit for bit; an unknown name is named with the closest one.
TEST(Registry, WithParametersCompilesAnExpressionModelAgain) {
  const std::filesystem::path file = std::filesystem::path(knot::source_tree::test_data_dir()) / "expression" / "cartpole_swingup.yaml";
  const Problem p = load_problem(file);
  const Problem set = load_problem(file, {"model.params.pole_mass=0.3"});
  const auto changed = with_parameters(*p.model, {{"pole_mass", {0.3}}});
  Rng rng(12);
  for (int t = 0; t < 5; ++t) {
    const Vec x = rng.vector(4), u = rng.vector(1);
    const Vec f = eval(*changed, x, u), want = eval(*set.model, x, u), old = eval(*p.model, x, u);
    EXPECT_TRUE(test::bitwise_equal({f.begin(), f.end()}, {want.begin(), want.end()}));
    EXPECT_FALSE(test::bitwise_equal({f.begin(), f.end()}, {old.begin(), old.end()}));
  }
  try {
    with_parameters(*p.model, {{"polemass", {0.3}}});
    ADD_FAILURE() << "no error";
  } catch (const ProblemError& e) {
    EXPECT_EQ(e.key_path(), "model.params.polemass");
    EXPECT_NE(std::string(e.what()).find("did you mean 'pole_mass'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(with_parameters(*p.model, {{"pole_mass", {test::kNaN}}}), ProblemError);
}

}  // namespace
}  // namespace knot::problems
