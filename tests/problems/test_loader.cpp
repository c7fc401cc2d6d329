// The YAML loader: what a problem file turns into (weights, references, stages, bounds, model
// parameters), `extends`, --set overrides, describe(), and robustness against hostile documents.
// Message formats per error are covered file by file in test_schema.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "alloc_counter.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"
#include "knot/problems/registry.hpp"
#include "test_util.hpp"
#include "source_tree.hpp"

namespace {

namespace fs = std::filesystem;
using knot::problems::BoxBounds;
using knot::problems::ConstraintKind;
using knot::problems::ConstraintTerm;
using knot::problems::CostBlocks;
using knot::problems::CostTerm;
using knot::problems::describe;
using knot::problems::IntegratorType;
using knot::problems::load_problem;
using knot::problems::load_problem_from_string;
using knot::problems::MpcSettings;
using knot::problems::ParamMap;
using knot::problems::Problem;
using knot::problems::ProblemError;
using knot::problems::SolverSettings;
using knot::problems::StagePoint;
using knot::problems::StageSet;
using knot::problems::Weight;
using knot::test::Mat;
using knot::test::rel_err;
using knot::test::Rng;
using knot::test::Vec;

const fs::path kSchema = knot::source_tree::schema_dir();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Exact arithmetic on the weights (they are copied, not computed), so comparisons are to rounding.
constexpr double kTol = 1e-14;

Problem from_string(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  return load_problem_from_string(yaml, "test.yaml", kSchema / "valid", sets);
}

// The message of the ProblemError that loading throws; fails the test when it loads.
std::string error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    from_string(yaml, sets);
  } catch (const ProblemError& e) {
    return e.what();
  }
  ADD_FAILURE() << "loaded:\n" << yaml;
  return {};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
#define EXPECT_CONTAINS(text, part)              \
  do {                                           \
    const std::string text_ = (text);            \
    EXPECT_TRUE(contains(text_, part)) << text_; \
  } while (0)

const std::string kCartpole = R"(
name: p
model: {type: cartpole}
horizon: {N: 20, dt: 0.05}
x0: [0, 3, 0, 0]
)";

// Hessian, gradient and value of a state or control cost at (x, u), read through the public API.
struct Quadratic {
  Mat H;
  Vec g;
  double value = 0;
};
Quadratic evaluate(const Problem& p, const CostTerm& c, int k, const Vec& x, const Vec& u, double dt = 1.0) {
  const bool on_state = !c.uses_control();
  const int n = on_state ? p.nx() : p.nu();
  Quadratic q{Mat::Zero(n, n), Vec::Zero(n), 0};
  Vec u_prev = Vec::Zero(p.nu());
  auto data = p.model->make_data();
  StagePoint pt;
  pt.k = k;
  pt.N = p.horizon.N;
  pt.dt = dt;
  pt.x = x.data();
  pt.u = u.data();
  pt.u_prev = u_prev.data();
  pt.data = data.get();
  CostBlocks b;
  (on_state ? b.Hxx : b.Huu) = q.H.data();
  (on_state ? b.gx : b.gu) = q.g.data();
  q.value = c.accumulate(pt, b);
  return q;
}

// --- defaults and values -----------------------------------------------------------------------

TEST(Loader, MinimalProblemTakesTheDocumentedDefaults) {
  const Problem p = from_string(kCartpole);
  EXPECT_EQ(p.name, "p");
  EXPECT_EQ(p.source, "test.yaml");
  EXPECT_EQ(p.description, "");
  EXPECT_EQ(p.nx(), 4);
  EXPECT_EQ(p.nu(), 1);
  EXPECT_EQ(p.horizon.N, 20);
  EXPECT_EQ(p.horizon.dt, 0.05);
  EXPECT_EQ(p.horizon.integrator, IntegratorType::Rk4);
  EXPECT_EQ(p.x0, (std::vector<double>{0, 3, 0, 0}));
  EXPECT_EQ(p.state_names, p.model->state_names());
  EXPECT_EQ(p.control_names, p.model->control_names());
  EXPECT_TRUE(p.costs.empty());
  EXPECT_TRUE(p.constraints.empty());
  const SolverSettings s;
  EXPECT_EQ(p.solver.max_iter, s.max_iter);
  EXPECT_EQ(p.solver.linsys, s.linsys);
  EXPECT_EQ(p.solver.tol_stationarity, s.tol_stationarity);
  EXPECT_EQ(p.solver.memory_limit, 8);  // GiB, as documented
  const MpcSettings m;
  EXPECT_EQ(p.mpc.duration, m.duration);
  EXPECT_EQ(p.mpc.seed, m.seed);
  EXPECT_TRUE(p.mpc.disturbances.empty());
}

TEST(Loader, EverySettingIsReadByItsName) {
  const Problem p = from_string(kCartpole + R"(
solver: {max_iter: 7, time_limit: 0.5, tol_stationarity: 1e-5, tol_feasibility: 2e-5, tol_complementarity: 3e-5,
         linsys: kkt_ldlt, hessian: exact, globalization: none, pcg_tol: 1e-9, pcg_max_iter: 50,
         lq_forcing: 0.01, regularization: 1e-6, mu_init: 0.5, verbose: true, memory_limit: 0.25}
mpc: {mode: sqp, iterations_per_step: 3, time_limit: 0.004, control_rate: 100, duration: 2.5, warm_start: hold,
      plant: {integrator: euler, substeps: 4, params: {pole_mass: 0.12}},
      process_noise: [0.1, 0.2, 0.3, 0.4], measurement_noise: 0.02,
      disturbances: [{time: 0.5, state_kick: [0, 0.1, 0, 0]}, {time: 1, state_kick: [1, 0, 0, 0]}],
      seed: 12345678901}
)");
  const SolverSettings& s = p.solver;
  EXPECT_EQ(s.max_iter, 7);
  EXPECT_EQ(s.time_limit, 0.5);
  EXPECT_EQ(s.tol_stationarity, 1e-5);
  EXPECT_EQ(s.tol_feasibility, 2e-5);
  EXPECT_EQ(s.tol_complementarity, 3e-5);
  EXPECT_EQ(s.linsys, "kkt_ldlt");
  EXPECT_EQ(s.hessian, "exact");
  EXPECT_EQ(s.globalization, "none");
  EXPECT_EQ(s.pcg_tol, 1e-9);
  EXPECT_EQ(s.pcg_max_iter, 50);
  EXPECT_EQ(s.lq_forcing, 0.01);
  EXPECT_EQ(s.regularization, 1e-6);
  EXPECT_EQ(s.mu_init, 0.5);
  EXPECT_TRUE(s.verbose);
  EXPECT_EQ(s.memory_limit, 0.25);
  const MpcSettings& m = p.mpc;
  EXPECT_EQ(m.control_rate, 100);
  EXPECT_EQ(m.duration, 2.5);
  EXPECT_EQ(m.iterations_per_step, 3);
  EXPECT_EQ(m.mode, "sqp");
  EXPECT_EQ(m.time_limit, 0.004);
  EXPECT_EQ(m.warm_start, "hold");
  EXPECT_EQ(m.plant_integrator, knot::problems::IntegratorType::Euler);
  EXPECT_EQ(m.plant_substeps, 4);
  ASSERT_NE(m.plant_model, nullptr);
  EXPECT_NE(m.plant_model, p.model);
  ASSERT_EQ(m.plant_params.size(), 1u);
  EXPECT_EQ(m.plant_params[0].name, "pole_mass");
  EXPECT_EQ(m.plant_params[0].plant_value, (std::vector<double>{0.12}));
  EXPECT_EQ(m.process_noise, (std::vector<double>{0.1, 0.2, 0.3, 0.4}));
  EXPECT_EQ(m.measurement_noise, (std::vector<double>{0.02, 0.02, 0.02, 0.02}));
  ASSERT_EQ(m.disturbances.size(), 2u);
  EXPECT_EQ(m.disturbances[0].time, 0.5);
  EXPECT_EQ(m.disturbances[0].state_kick, (std::vector<double>{0, 0.1, 0, 0}));
  EXPECT_EQ(m.disturbances[1].state_kick, (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(m.seed, 12345678901ull);
}

// plant.params are merged onto model.params for the plant alone: the controller's model keeps its
// values, the plant's dynamics differ, and each override is kept with both values (a default the
// file never wrote included).
TEST(Loader, PlantParamsOverrideOnlyThePlant) {
  const Problem p = from_string(R"(
name: p
model: {type: cartpole, params: {pole_mass: 0.1, length: 0.8}}
horizon: {N: 20, dt: 0.05}
x0: [0, 3, 0, 0]
mpc: {plant: {params: {length: 1.0, gravity: 9.0}}}
)");
  ASSERT_NE(p.mpc.plant_model, nullptr);
  ASSERT_EQ(p.mpc.plant_params.size(), 2u);
  EXPECT_EQ(p.mpc.plant_params[0].name, "length");
  EXPECT_EQ(p.mpc.plant_params[0].model_value, (std::vector<double>{0.8}));
  EXPECT_EQ(p.mpc.plant_params[0].plant_value, (std::vector<double>{1.0}));
  EXPECT_EQ(p.mpc.plant_params[1].name, "gravity");
  EXPECT_EQ(p.mpc.plant_params[1].model_value, (std::vector<double>{9.81}));  // the model's default
  EXPECT_EQ(p.mpc.plant_params[1].plant_value, (std::vector<double>{9.0}));
  const double x[4] = {0, 0.5, 0, 0}, u[1] = {0};
  double f_model[4], f_plant[4];
  auto dm = p.model->make_data();
  auto dp = p.mpc.plant_model->make_data();
  p.model->dynamics(*dm, x, u, f_model);
  p.mpc.plant_model->dynamics(*dp, x, u, f_plant);
  EXPECT_NE(f_model[3], f_plant[3]);  // the pole's angular acceleration depends on length and gravity
  // Without plant.params the plant is the model itself.
  EXPECT_EQ(from_string(kCartpole).mpc.plant_model, nullptr);
  EXPECT_TRUE(contains(describe(p), "params length 0.8 -> 1, gravity 9.81 -> 9\n"));
}

TEST(Loader, NumbersFollowTheYamlCoreSchema) {
  const Problem p = from_string(R"(
name: p
model: {type: cartpole}
horizon: {N: +20, dt: 5e-2}
x0: [-.5, +1., 1E1, 0.25e+1]
)");
  EXPECT_EQ(p.horizon.N, 20);
  EXPECT_EQ(p.horizon.dt, 0.05);
  EXPECT_EQ(p.x0, (std::vector<double>{-0.5, 1.0, 10.0, 2.5}));
  // Words strtod would take are not YAML numbers.
  for (const char* word : {"inf", "nan", "0x10", "1_000", "1e", "--1"})
    EXPECT_TRUE(contains(error_of(kCartpole + "solver: {time_limit: " + word + "}"), "solver.time_limit: expected"))
        << word;
}

// --- costs -------------------------------------------------------------------------------------

TEST(Loader, WeightFormsBecomeTheExpectedMatrix) {
  const Problem p = from_string(kCartpole + R"(
costs:
  - {type: state, weights: 2.5}
  - {type: state, weights: [1, 2, 3, 4], reference: [0.1, 0.2, 0.3, 0.4]}
  - type: state
    weights:
      - [4, 1, 0, 0]
      - [1, 3, 0, 0.5]
      - [0, 0, 2, 0]
      - [0, 0.5, 0, 1]
  - {type: control, weights: [0.7], reference: [2]}
)");
  ASSERT_EQ(p.costs.size(), 4u);
  Mat full(4, 4);
  full << 4, 1, 0, 0, 1, 3, 0, 0.5, 0, 0, 2, 0, 0, 0.5, 0, 1;
  const std::vector<Mat> W = {2.5 * Mat::Identity(4, 4), Vec(Vec::LinSpaced(4, 1, 4)).asDiagonal(), full,
                              Mat::Constant(1, 1, 0.7)};
  const std::vector<Vec> ref = {Vec::Zero(4), (Vec(4) << 0.1, 0.2, 0.3, 0.4).finished(), Vec::Zero(4),
                                Vec::Constant(1, 2.0)};
  Rng rng(7);
  const Vec x = rng.vector(4), u = rng.vector(1);
  for (std::size_t i = 0; i < p.costs.size(); ++i) {
    const Quadratic q = evaluate(p, *p.costs[i], 0, x, u);
    const Vec r = (p.costs[i]->uses_control() ? u : x) - ref[i];
    EXPECT_LE(rel_err(q.H, W[i]), kTol) << "cost " << i;
    EXPECT_LE(rel_err(q.g, W[i] * r), kTol) << "cost " << i;
    EXPECT_NEAR(q.value, 0.5 * r.dot(W[i] * r), kTol * std::max(1.0, q.value)) << "cost " << i;
  }
  // Each weight keeps the form it was written in.
  const Weight::Form forms[] = {Weight::Form::Scalar, Weight::Form::Diagonal, Weight::Form::Dense,
                                Weight::Form::Diagonal};
  for (std::size_t i = 0; i < p.costs.size(); ++i) {
    ASSERT_NE(p.costs[i]->weight(), nullptr);
    EXPECT_EQ(p.costs[i]->weight()->form(), forms[i]) << "cost " << i;
  }
  EXPECT_EQ(p.costs[0]->weight()->values(), (std::vector<double>{2.5}));
  // Negative control: one perturbed weight fails the same comparison.
  Mat wrong = full;
  wrong(1, 3) += 1e-6;
  EXPECT_GT(rel_err(evaluate(p, *p.costs[2], 0, x, u).H, wrong), kTol);
}

TEST(Loader, StagesNamesAndDtScaling) {
  const Problem p = from_string(kCartpole + R"(
costs:
  - {type: state, weights: 1}
  - {type: control, weights: 1}
  - {type: control_rate, weights: 1}
  - {name: end, type: state, weights: 1, stage: terminal}
  - {name: scaled, type: control, weights: 2, scale_by_dt: true, stage: all}
constraints:
  - {type: control_box, lower: [-1], upper: [1]}
  - {type: state_box, indices: [0], upper: [1]}
  - {type: state_equality, indices: [1], target: [0]}
  - {type: state_equality, target: [0, 0, 0, 0], stage: running}
)");
  const std::vector<std::pair<std::string, StageSet>> costs = {{"state_0", StageSet::All},
                                                               {"control_1", StageSet::Running},
                                                               {"control_rate_2", StageSet::Running},
                                                               {"end", StageSet::Terminal},
                                                               {"scaled", StageSet::All}};
  ASSERT_EQ(p.costs.size(), costs.size());
  for (std::size_t i = 0; i < costs.size(); ++i) {
    EXPECT_EQ(p.costs[i]->info().name, costs[i].first);
    EXPECT_EQ(p.costs[i]->info().stages, costs[i].second) << costs[i].first;
    EXPECT_EQ(p.costs[i]->info().scale_by_dt, costs[i].first == "scaled");
  }
  const std::vector<std::pair<std::string, StageSet>> constraints = {{"control_box_0", StageSet::Running},
                                                                     {"state_box_1", StageSet::All},
                                                                     {"state_equality_2", StageSet::Terminal},
                                                                     {"state_equality_3", StageSet::Running}};
  ASSERT_EQ(p.constraints.size(), constraints.size());
  for (std::size_t i = 0; i < constraints.size(); ++i) {
    EXPECT_EQ(p.constraints[i]->info().name, constraints[i].first);
    EXPECT_EQ(p.constraints[i]->info().stages, constraints[i].second) << constraints[i].first;
  }
  EXPECT_EQ(p.constraints[2]->kind(), ConstraintKind::Equality);
  EXPECT_EQ(p.constraints[3]->dim(), 4);

  // scale_by_dt multiplies the Hessian by dt; without it dt does not enter.
  const Vec x = Vec::Zero(4), u = Vec::Constant(1, 1.0);
  EXPECT_LE(rel_err(evaluate(p, *p.costs[4], 0, x, u, 0.1).H, Mat::Constant(1, 1, 0.2)), kTol);
  EXPECT_LE(rel_err(evaluate(p, *p.costs[1], 0, x, u, 0.1).H, Mat::Constant(1, 1, 1.0)), kTol);
}

TEST(Loader, ReferencesFromTablesOneRowPerKnot) {
  const Problem p = load_problem(kSchema / "valid" / "cartpole.yaml");
  // refs/cartpole_ref.csv: a comment, a header, comments after rows and a blank line, 4 rows.
  const auto* track = p.costs[0]->reference();
  ASSERT_NE(track, nullptr);
  ASSERT_EQ(track->dim, 4);
  ASSERT_EQ(track->rows(), 4);
  const std::vector<std::vector<double>> rows = {{0, 3, 0, 0}, {0.1, 2, 0.5, 1}, {0.2, 1, 0.5, 1}, {0.3, 0, 0, 0}};
  for (int k = 0; k < 4; ++k) {
    const auto row = track->at(k);
    EXPECT_EQ(std::vector<double>(row.begin(), row.end()), rows[static_cast<std::size_t>(k)]) << "knot " << k;
  }
  // The last row is held beyond the table.
  const auto held = track->at(17);
  EXPECT_EQ(std::vector<double>(held.begin(), held.end()), rows[3]);
  // refs/wide.txt, whitespace separated, column 5 picked.
  const auto* force = p.costs[1]->reference();
  ASSERT_NE(force, nullptr);
  ASSERT_EQ(force->rows(), 3);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(force->at(k)[0], k + 1.0);
  // Negative control: consecutive rows differ, so a reader stuck on row 0 would fail above.
  EXPECT_NE(track->at(1)[1], track->at(0)[1]);
}

TEST(Loader, ReferenceColumnsAreChosenInTheirOrder) {
  const Problem p = from_string(kCartpole + R"(
costs:
  - {type: state, weights: 1, reference: {file: ../refs/wide.txt, columns: [5, 1, 2, 0]}}
)");
  const auto* r = p.costs[0]->reference();
  ASSERT_EQ(r->rows(), 3);
  const auto row = r->at(1);
  EXPECT_EQ(std::vector<double>(row.begin(), row.end()), (std::vector<double>{2, 1, 2.0, 0.05}));
}

// --- constraints -------------------------------------------------------------------------------

TEST(Loader, BoxesCarryTheirBounds) {
  const Problem p = load_problem(kSchema / "valid" / "cartpole.yaml");
  ASSERT_EQ(p.constraints.size(), 2u);
  const BoxBounds* force = p.constraints[0]->box();
  ASSERT_NE(force, nullptr);
  EXPECT_TRUE(force->on_control);
  EXPECT_EQ(force->lower, (std::vector<double>{-kInf}));
  EXPECT_EQ(force->upper, (std::vector<double>{80}));
  EXPECT_EQ(p.constraints[0]->dim(), 1);  // the infinite bound adds no row
  const BoxBounds* rail = p.constraints[1]->box();
  ASSERT_NE(rail, nullptr);
  EXPECT_FALSE(rail->on_control);
  EXPECT_EQ(rail->index, (std::vector<int>{0}));
  EXPECT_EQ(rail->lower, (std::vector<double>{-1}));
  EXPECT_EQ(rail->upper, (std::vector<double>{1}));
}

TEST(Loader, ObstacleAndEqualityEvaluateWithTheFileValues) {
  const Problem p = load_problem(kSchema / "valid" / "unicycle.yaml");
  const ConstraintTerm& rock = *p.constraints[0];
  EXPECT_EQ(rock.type(), "circle_obstacle");
  const std::vector<double> x = {1.5, -0.3, 0.2}, u = {0.5, 0.1};
  StagePoint pt;
  pt.N = p.horizon.N;
  pt.dt = p.horizon.dt;
  pt.x = x.data();
  pt.u = u.data();
  auto data = p.model->make_data();
  pt.data = data.get();
  double g = 0;
  rock.evaluate(pt, &g);
  // center [2, 0.1], radius 0.5: g = r^2 - |p - c|^2.
  const double expected = 0.25 - ((1.5 - 2) * (1.5 - 2) + (-0.3 - 0.1) * (-0.3 - 0.1));
  EXPECT_NEAR(g, expected, 1e-15);
  EXPECT_GT(std::abs(g - (0.25 - (1.5 * 1.5 + 0.3 * 0.3))), 1e-3);  // a center at the origin would differ

  const Problem q = load_problem(kSchema / "valid" / "double_integrator.yaml");
  const ConstraintTerm& rest = *q.constraints[1];
  const std::vector<double> xq = {1, 2, 3, 4};
  pt.x = xq.data();
  pt.u = nullptr;
  auto dq = q.model->make_data();
  pt.data = dq.get();
  std::vector<double> h(2);
  rest.evaluate(pt, h.data());
  EXPECT_EQ(h, (std::vector<double>{3, 4}));  // x[2] - 0, x[3] - 0
}

TEST(Loader, ManipulatorEndEffectorTermsAndModelLimits) {
  const Problem p = load_problem(kSchema / "valid" / "manipulator.yaml");
  const auto* kin = p.model->kinematics();
  ASSERT_NE(kin, nullptr);
  // The reach cost is 1/2 |p_fore(x) + R offset - ref|^2 with identity weights: compare with the
  // kinematics directly.
  const std::vector<double> x = {0.3, -0.4, 0.1, 0.2};
  auto data = p.model->make_data();
  std::array<double, 3> pos{};
  kin->frame_position(*data, x.data(), *kin->frame_index("fore"), {0, 0, 0.4}, pos.data(), nullptr);
  const std::array<double, 3> ref = {0.3, 0, 0.5};
  double expected = 0;
  for (int i = 0; i < 3; ++i) expected += 0.5 * (pos[i] - ref[i]) * (pos[i] - ref[i]);
  StagePoint pt;
  pt.N = p.horizon.N;
  pt.dt = p.horizon.dt;
  pt.x = x.data();
  pt.data = data.get();
  EXPECT_NEAR(p.costs[0]->value(pt), expected, 1e-14 * std::max(1.0, expected));
  // Negative control: the same point on the other link gives another value.
  kin->frame_position(*data, x.data(), *kin->frame_index("upper"), {0, 0, 0.4}, pos.data(), nullptr);
  double other = 0;
  for (int i = 0; i < 3; ++i) other += 0.5 * (pos[i] - ref[i]) * (pos[i] - ref[i]);
  EXPECT_GT(std::abs(other - expected), 1e-6);

  // model_limits: the URDF's position and velocity limits on x, effort limits on u.
  ASSERT_GE(p.constraints.size(), 2u);
  const BoxBounds* xs = p.constraints[0]->box();
  const BoxBounds* us = p.constraints[1]->box();
  ASSERT_TRUE(xs && us);
  EXPECT_EQ(p.constraints[0]->info().name, "limits_state");
  EXPECT_EQ(p.constraints[0]->info().stages, StageSet::All);
  EXPECT_EQ(xs->index, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(xs->lower, (std::vector<double>{-2, -2.5, -3, -4}));
  EXPECT_EQ(xs->upper, (std::vector<double>{2, 2.5, 3, 4}));
  EXPECT_EQ(p.constraints[1]->info().name, "limits_control");
  EXPECT_EQ(p.constraints[1]->info().stages, StageSet::Running);
  EXPECT_EQ(us->lower, (std::vector<double>{-10, -5}));
  EXPECT_EQ(us->upper, (std::vector<double>{10, 5}));
}

TEST(Loader, ModelLimitsGroupsCanBeDeselected) {
  const std::string head = R"(
name: p
model: {type: manipulator, params: {urdf: ../two_link.urdf}}
horizon: {N: 10, dt: 0.02}
x0: [0, 0, 0, 0]
)";
  const Problem p = from_string(head + "constraints: [{type: model_limits, velocity: false, effort: false}]\n");
  ASSERT_EQ(p.constraints.size(), 1u);
  EXPECT_EQ(p.constraints[0]->box()->index, (std::vector<int>{0, 1}));
  const Problem q = from_string(head + "constraints: [{type: model_limits, position: false, velocity: false}]\n");
  ASSERT_EQ(q.constraints.size(), 1u);
  EXPECT_TRUE(q.constraints[0]->box()->on_control);
  EXPECT_CONTAINS(error_of(head + "constraints: [{type: model_limits, stage: terminal}]\n"),
                  "constraints[0].stage: expected all or running");
  // Only states: a terminal stage is fine.
  const Problem t = from_string(head + "constraints: [{type: model_limits, effort: false, stage: terminal}]\n");
  EXPECT_EQ(t.constraints[0]->info().stages, StageSet::Terminal);
}

// --- model parameters through the YAML ParamReader ---------------------------------------------

TEST(Loader, ModelParametersReachTheFactory) {
  // linear: integers, a row-major matrix in the file, a vector and a boolean.
  const Problem p = load_problem(kSchema / "valid" / "linear.yaml");
  EXPECT_TRUE(p.model->discrete_time());
  const std::vector<double> x = {0.7, -1.3}, u = {0.4};
  auto data = p.model->make_data();
  std::vector<double> f(2);
  p.model->dynamics(*data, x.data(), u.data(), f.data());
  Mat A(2, 2), B(2, 1);
  A << 1, 0.1, 0, 1;
  B << 0.005, 0.1;
  const Vec expected = A * Eigen::Map<const Vec>(x.data(), 2) + B * Eigen::Map<const Vec>(u.data(), 1);
  EXPECT_LE(rel_err(Eigen::Map<const Vec>(f.data(), 2), expected), 1e-15);
  // Negative control: the transposed A (a column-major misreading) gives another answer.
  const Vec transposed = A.transpose() * Eigen::Map<const Vec>(x.data(), 2) + B * Eigen::Map<const Vec>(u.data(), 1);
  EXPECT_GT(rel_err(Eigen::Map<const Vec>(f.data(), 2), transposed), 1e-3);

  // pendulum: the same numbers through ParamMap give the same dynamics.
  const Problem q = from_string(R"(
name: q
model: {type: pendulum, params: {mass: 2.0, length: 0.7, damping: 0.3}}
horizon: {N: 5, dt: 0.1}
x0: [0, 0]
)");
  ParamMap pm("model.params");
  pm.set("mass", 2.0).set("length", 0.7).set("damping", 0.3);
  const auto direct = knot::problems::make_model("pendulum", pm);
  const std::vector<double> xp = {0.4, -0.2}, up = {0.1};
  std::vector<double> f1(2), f2(2);
  auto d1 = q.model->make_data();
  auto d2 = direct->make_data();
  q.model->dynamics(*d1, xp.data(), up.data(), f1.data());
  direct->dynamics(*d2, xp.data(), up.data(), f2.data());
  EXPECT_EQ(f1, f2);
  ParamMap other("model.params");
  other.set("mass", 2.0).set("length", 0.5).set("damping", 0.3);
  std::vector<double> f3(2);
  auto d3 = knot::problems::make_model("pendulum", other)->make_data();
  knot::problems::make_model("pendulum", other)->dynamics(*d3, xp.data(), up.data(), f3.data());
  EXPECT_NE(f1, f3);
}

TEST(Loader, ModelParameterErrorsNameTheKey) {
  const std::string head = "name: p\nhorizon: {N: 5, dt: 0.1}\nx0: [0, 0]\n";
  EXPECT_CONTAINS(error_of(head + "model: {type: pendulum, params: {mass: 1, lenght: 2}}\n"),
                  "test.yaml:4:43: model.params.lenght: expected one of mass, length, gravity or damping, found "
                  "unknown key 'lenght' (did you mean 'length'?)");
  EXPECT_CONTAINS(error_of(head + "model: {type: pendulum, params: {mass: [1]}}\n"),
                  "test.yaml:4:40: model.params.mass: expected a finite number, found a list of 1 item");
  EXPECT_CONTAINS(error_of(head + "model: {type: pendulum, params: [1, 2]}\n"),
                  "test.yaml:4:33: model.params: expected a mapping, found a list of 2 items");
  EXPECT_CONTAINS(error_of(head + "model: {type: double_integrator, params: {dim: 1.5}}\n"),
                  "model.params.dim: expected an integer in [1, 65536], found 1.5");
  EXPECT_CONTAINS(error_of(head + "model: {type: linear, params: {nx: 2, nu: 1, A: [[1, 0], [0]], B: [[0], [1]]}}\n"),
                  "model.params.A[1]: expected a row of 2 numbers, found a list of 1 item");
  EXPECT_CONTAINS(error_of(head + "model: {type: manipulator, params: {urdf: nowhere.urdf}}\n"),
                  "model.params.urdf: expected an existing file, found 'nowhere.urdf'");
}

// --- extends -----------------------------------------------------------------------------------

TEST(Loader, ExtendsMergesMapsAndReplacesLists) {
  const Problem p = load_problem(kSchema / "valid" / "child.yaml");
  EXPECT_EQ(p.name, "child_of_mid");                     // child
  EXPECT_EQ(p.description, "the grandparent");           // base
  EXPECT_EQ(p.horizon.N, 40);                            // child
  EXPECT_EQ(p.horizon.dt, 0.025);                        // mid
  EXPECT_EQ(p.horizon.integrator, IntegratorType::Rk4);  // base
  EXPECT_EQ(p.solver.max_iter, 60);                      // mid, merged into base's solver map
  EXPECT_EQ(p.solver.linsys, "pcg");                     // base
  ASSERT_EQ(p.costs.size(), 1u);                         // the child's list replaces base's two
  EXPECT_EQ(p.costs[0]->info().name, "only");
  ASSERT_EQ(p.constraints.size(), 1u);  // base
  EXPECT_EQ(p.constraints[0]->info().name, "force_limit");
  EXPECT_EQ(p.source, (kSchema / "valid" / "child.yaml").string());

  // model.params merged across files: base's masses with mid's length.
  ParamMap pm("model.params");
  pm.set("cart_mass", 1.0).set("pole_mass", 0.1).set("length", 0.8);
  ParamMap wrong("model.params");
  wrong.set("cart_mass", 1.0).set("pole_mass", 0.1).set("length", 0.5);
  const std::vector<double> x = {0.1, 0.5, -0.2, 0.3}, u = {1.5};
  auto f = [&](const knot::problems::Model& m) {
    std::vector<double> out(4);
    auto d = m.make_data();
    m.dynamics(*d, x.data(), u.data(), out.data());
    return out;
  };
  EXPECT_EQ(f(*p.model), f(*knot::problems::make_model("cartpole", pm)));
  EXPECT_NE(f(*p.model), f(*knot::problems::make_model("cartpole", wrong)));
}

TEST(Loader, ExtendsFromAStringResolvesAgainstBaseDirAndNullDropsAKey) {
  const Problem p = from_string("extends: ../extends/base.yaml\nname: s\nconstraints: ~\nsolver:\n");
  EXPECT_EQ(p.name, "s");
  EXPECT_TRUE(p.constraints.empty());
  EXPECT_EQ(p.solver.max_iter, SolverSettings{}.max_iter);
  EXPECT_EQ(p.costs.size(), 2u);
}

TEST(Loader, InheritedPathsResolveNextToTheirOwnFile) {
  // extends/nested/parent.yaml names ../../refs/wide.txt; from valid/ that path would leave the
  // schema directory and not exist.
  const Problem p = from_string("extends: ../extends/nested/parent.yaml\nname: s\n");
  ASSERT_EQ(p.costs.size(), 1u);
  EXPECT_EQ(p.costs[0]->reference()->rows(), 3);
  EXPECT_CONTAINS(
      error_of(kCartpole + "costs: [{type: control, weights: 1, reference: {file: ../../refs/wide.txt}}]\n"),
      "costs[0].reference.file: expected an existing file");
}

TEST(Loader, ExtendsErrorsNameTheRightFile) {
  try {
    load_problem(kSchema / "invalid" / "extends_parent_error.yaml");
    FAIL();
  } catch (const ProblemError& e) {
    EXPECT_EQ(fs::path(e.where().file).filename(), "bad_parent.yaml");
    EXPECT_EQ(e.where().line, 4);
    EXPECT_EQ(e.key_path(), "horizon.dt");
  }
  const std::string cycle = error_of("extends: ../extends/cycle_a.yaml\nname: s\n");
  EXPECT_TRUE(contains(cycle, "cycle_b.yaml:1:10: extends: expected a chain of parent files without a cycle")) << cycle;
  EXPECT_TRUE(contains(cycle, "cycle_a.yaml -> ")) << cycle;
  EXPECT_CONTAINS(error_of("extends: ../extends/nope.yaml\nname: s\n"),
                  "test.yaml:1:10: extends: expected an existing file");
  EXPECT_CONTAINS(error_of("extends: [a.yaml]\nname: s\n"), "test.yaml:1:10: extends: expected a string");
}

// --- overrides ---------------------------------------------------------------------------------

TEST(Loader, OverridesReplaceAddAndIndex) {
  const fs::path file = kSchema / "valid" / "double_integrator.yaml";
  const Problem p = load_problem(file, {"horizon.N=128", "x0=[0, 3.14, 0, 0]", "costs[1].weights=[1, 2]",
                                        "solver.max_iter=7", "mpc.seed=42", "constraints[0].upper[1]=.inf"});
  EXPECT_EQ(p.horizon.N, 128);
  EXPECT_EQ(p.x0, (std::vector<double>{0, 3.14, 0, 0}));
  const Vec x = Vec::Zero(4), u = Vec::Zero(2);
  EXPECT_LE(rel_err(evaluate(p, *p.costs[1], 0, x, u).H, Mat(Vec((Vec(2) << 1, 2).finished()).asDiagonal())), kTol);
  EXPECT_EQ(p.solver.max_iter, 7);  // the file has no solver section: --set adds it
  EXPECT_EQ(p.mpc.seed, 42u);
  EXPECT_EQ(p.constraints[0]->box()->upper, (std::vector<double>{1, kInf}));
  // Untouched keys keep the file's values.
  EXPECT_EQ(p.horizon.dt, 0.1);
  EXPECT_EQ(p.costs.size(), 3u);
}

TEST(Loader, OverridesApplyAfterExtends) {
  const Problem p = load_problem(kSchema / "valid" / "child.yaml", {"horizon.dt=0.5", "solver.linsys=bdsv"});
  EXPECT_EQ(p.horizon.dt, 0.5);
  EXPECT_EQ(p.horizon.N, 40);
  EXPECT_EQ(p.solver.linsys, "bdsv");
  EXPECT_EQ(p.solver.max_iter, 60);
}

TEST(Loader, OverrideErrorsNameTheOverride) {
  const auto err = [](const std::string& set) {
    try {
      load_problem(kSchema / "valid" / "double_integrator.yaml", {set});
    } catch (const ProblemError& e) {
      EXPECT_EQ(e.where().file, "--set " + set);
      EXPECT_EQ(e.where().line, 0);
      return std::string(e.what());
    }
    ADD_FAILURE() << set << " was accepted";
    return std::string();
  };
  EXPECT_EQ(err("horizon.M=3"),
            "--set horizon.M=3: horizon.M: expected one of N, dt or integrator, found unknown key "
            "'M' (did you mean 'N'?)");
  EXPECT_EQ(err("horizon.dt=-1"), "--set horizon.dt=-1: horizon.dt: expected a number in [1e-09, 1e+06], found -1");
  EXPECT_CONTAINS(err("costs[7].weights=1"), "costs[7]: expected an index below 3 (the length of costs), found 7");
  EXPECT_CONTAINS(err("x0.a=1"), "x0.a: expected a mapping at x0, found a list of 4 items");
  EXPECT_CONTAINS(err("horizon[0]=1"), "horizon[0]: expected a list at horizon, found a mapping");
  EXPECT_CONTAINS(err("horizon.N"), "expected key.path=value");
  EXPECT_CONTAINS(err("costs[x].weights=1"), "expected a key path like horizon.N or costs[1].weights");
  EXPECT_EQ(err("x0=[1, 2"), "--set x0=[1, 2: x0: expected a YAML value, found end of sequence flow not found");
  EXPECT_CONTAINS(err("extends=other.yaml"), "extends: expected a key --set can change");
  EXPECT_CONTAINS(err("solver.max_iter=0"), "solver.max_iter: expected an integer >= 1, found 0");
}

// --- describe ----------------------------------------------------------------------------------

TEST(Loader, DescribeShowsTheResolvedProblem) {
  const std::string d = describe(load_problem(kSchema / "valid" / "cartpole.yaml"));
  for (const char* line :
       {"problem      cartpole_track\n", "model        cartpole (nx 4, nu 1, nq 2)\n",
        "states       p, theta, v, omega\n", "controls     F\n",
        "horizon      N 20, dt 0.05 s, T 1 s, integrator semi_implicit_euler\n", "x0           [0, 3.14159, 0, 0]\n",
        "costs        3\n",
        "  [0] track: state, stages all, scale_by_dt false, weights diag [100, 100, 0.1, 0.1], reference 4 rows",
        "  [1] force: control, stages running, scale_by_dt false, weights diag [0.01], reference 3 rows",
        "  [2] terminal: state, stages terminal, scale_by_dt false, weights 1000 I, reference [0, 0, 0, 0]\n",
        "constraints  2\n", "  [0] force_limit: control_box, inequality, 1 row, stages running, u[0] in [-inf, 80]\n",
        "  [1] rail: state_box, inequality, 2 rows, stages all, x[0] in [-1, 1]\n", "solver       max_iter 100,",
        ", verbose false, memory_limit 8 GiB, threads 1\n", "mpc          mode rti, iterations_per_step 1, control_rate 20 Hz (1/dt), control period 0.05 s\n",
        "             duration 5 s (100 steps), warm_start shift, seed 1\n",
        "             plant: rk4, 10 substeps per period, the model's parameters\n"})
    EXPECT_TRUE(contains(d, line)) << "missing: " << line << "\nin:\n" << d;
  // A full weight matrix is reported as such.
  const std::string full = describe(load_problem(kSchema / "valid" / "linear.yaml"));
  EXPECT_TRUE(contains(full, "weights full 2x2, diag [2, 1]")) << full;
}

TEST(Loader, DescribePrintsTheModelParameters) {
  // The defaults, and a value the file (here an override) changed.
  const std::string cartpole = "name: c\nmodel: {type: cartpole}\nhorizon: {N: 3, dt: 0.05}\nx0: [0, 3, 0, 0]\n";
  EXPECT_CONTAINS(describe(from_string(cartpole)),
                  "\nparams       cart_mass 1, pole_mass 0.1, length 0.8, gravity 9.81\n");
  const Problem changed = from_string(cartpole, {"model.params.pole_mass=0.12"});
  EXPECT_CONTAINS(describe(changed), "params       cart_mass 1, pole_mass 0.12, length 0.8, gravity 9.81\n");

  const fs::path configs = knot::source_tree::configs_dir();
  const std::string arm = describe(load_problem(configs / "iiwa14_reach.yaml"));
  EXPECT_CONTAINS(arm, "params       urdf " + (configs / "robots" / "iiwa14_iiwa_grid.urdf").string() +
                           ", gravity [0, 0, 0], ee_frame iiwa_link_7\n");
  EXPECT_CONTAINS(arm,
                  "track: end_effector, stages all, scale_by_dt false, weights diag [1, 1, 1], frame iiwa_link_7 "
                  "(the model's end effector)");
  // A constraint names its frame too, and a frame other than the default is not marked as it.
  const std::string height =
      describe(load_problem(configs / "iiwa14_reach.yaml",
                            {"constraints=[{name: floor, type: end_effector_height, frame: iiwa_link_5, min: 0}]"}));
  EXPECT_CONTAINS(height, "  [0] floor: end_effector_height, inequality, 1 row, stages all, frame iiwa_link_5\n");
  const std::string quad = describe(load_problem(configs / "quadrotor_to_point.yaml"));
  EXPECT_CONTAINS(
      quad, "params       mass 0.775, arm_length 0.15, inertia [0.0015, 0.0025, 0.0035], kM 0.0245, gravity 9.81\n");
}

// --- sizes ------------------------------------------------------------------------------------

// A double integrator of dimension 65536 (nx 131072) with a scalar state weight and a diagonal
// control weight: loading and describing it allocate in proportion to the file, never an n x n
// weight (32 GiB for the control weight alone).
TEST(Loader, LargeWeightsKeepTheirFormAndSize) {
  const int dim = 1 << 16;
  std::string zeros = "0", ones = "1";
  for (int i = 1; i < 2 * dim; ++i) zeros += ", 0";
  for (int i = 1; i < dim; ++i) ones += i == 5 ? ", 3" : ", 1";
  const std::string yaml = "name: big\nmodel: {type: double_integrator, params: {dim: " + std::to_string(dim) +
                           "}}\nhorizon: {N: 4, dt: 0.1}\nx0: [" + zeros +
                           "]\ncosts:\n  - {type: state, weights: 2}\n  - {type: control, weights: [" + ones + "]}\n";
  Problem p;
  std::string d;
  const std::size_t largest = knot::test::largest_allocation_during([&] {
    p = from_string(yaml);
    d = describe(p);
  });
  // The largest arrays are the text, its parsed list and x0 (tens of bytes per entry of x0); an
  // n x n weight would be n^2 doubles.
  EXPECT_LT(largest, std::size_t{64} << 20);
  ASSERT_EQ(p.costs.size(), 2u);
  EXPECT_EQ(p.costs[0]->weight()->form(), Weight::Form::Scalar);
  EXPECT_EQ(p.costs[0]->weight()->values().size(), 1u);
  EXPECT_EQ(p.costs[1]->weight()->form(), Weight::Form::Diagonal);
  EXPECT_EQ(p.costs[1]->weight()->values().size(), static_cast<std::size_t>(dim));
  EXPECT_CONTAINS(d, "weights 2 I");
  EXPECT_CONTAINS(d, "weights diag [1, 1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, ... (65536 in all)]");
  // Negative control: the measure sees an allocation of that size.
  EXPECT_GE(knot::test::largest_allocation_during([&] { std::vector<double> big(std::size_t{1} << 24, 1.0); }),
            std::size_t{128} << 20);
}

// A bad entry of a diagonal weight is reported at its position, whatever the dimension.
TEST(Loader, DiagonalWeightEntriesAreCheckedWhereTheyAre) {
  EXPECT_EQ(error_of(kCartpole + "costs: [{type: state, weights: [1, 2, -3, 4]}]\n"),
            "test.yaml:6:39: costs[0].weights[2]: expected a number >= 0, found -3");
  EXPECT_EQ(error_of(kCartpole + "costs: [{type: state, weights: [1, .nan, 3, 4]}]\n"),
            "test.yaml:6:36: costs[0].weights[1]: expected a number >= 0, found .nan");
}

// Running out of memory while loading is a ProblemError naming the file, at every allocation.
TEST(Loader, AllocationFailureNamesTheFile) {
  const std::string yaml = kCartpole + "costs: [{type: state, weights: [1, 2, 3, 4]}, {type: control, weights: 1}]\n";
  const std::string name = "test.yaml";
  const fs::path dir = kSchema / "valid";
  const auto load = [&] { load_problem_from_string(yaml, name, dir); };
  load();  // first-use statics (the model registry) out of the count
  const long total = knot::test::allocations_during(load);
  ASSERT_GT(total, 10);
  int reported = 0;
  for (long k = 0; k < total; k += 1 + total / 64) {
    try {
      const bool reached = knot::test::failing_allocation(k, load);
      ADD_FAILURE() << "allocation " << k << (reached ? " failed and the load succeeded" : " was never made");
    } catch (const ProblemError& e) {
      EXPECT_EQ(std::string(e.what()),
                "test.yaml: <document>: expected a problem file that fits in memory, found an allocation that failed "
                "while loading it (std::bad_alloc)");
      ++reported;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "allocation " << k << ": " << e.what();
    }
  }
  EXPECT_GE(reported, 10);
  // Negative control: without an injected failure it loads.
  EXPECT_FALSE(knot::test::failing_allocation(total, load));
}

// --- hostile documents -------------------------------------------------------------------------

TEST(Loader, AliasExpansionIsBounded) {
  // Ten aliases per level, seven levels: 10^7 nodes once expanded, far over the limit.
  std::string bomb = "a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i <= 7; ++i) {
    // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on chains of operator+.
    const std::string id = std::to_string(i), prev = std::to_string(i - 1);
    bomb.append("a").append(id).append(": &a").append(id).append(" [");
    for (int j = 0; j < 10; ++j) bomb.append(j ? ", *a" : "*a").append(prev);
    bomb.append("]\n");
  }
  EXPECT_CONTAINS(error_of(bomb), "expected a document of at most 500000 nodes");
  // Nesting beyond the limit is refused before any recursion gets deep.
  EXPECT_CONTAINS(error_of("name: " + std::string(100, '[') + std::string(100, ']') + "\n"),
                  "expected nesting at most 64 levels deep");
}

TEST(Loader, OddBytesAreAnError) {
  EXPECT_THROW(from_string("? [complex, key]\n: 1\n"), ProblemError);
  EXPECT_THROW(from_string(": 1\n"), ProblemError);
}

// --- what is wrong with the text, at its position ------------------------------------------------

const std::string kRest = "model: {type: cartpole}\nhorizon: {N: 20, dt: 0.05}\nx0: [0, 3, 0, 0]\n";

// A file that differs from a loading one only in the bytes under test: the positive control.
TEST(Loader, TextChecksPassValidText) {
  EXPECT_EQ(from_string("name: 'it''s'\n" + kRest).name, "it's");
  EXPECT_EQ(from_string("name: \"say \\\"hi\\\" \\\\\"\n" + kRest).name, "say \"hi\" \\");
  EXPECT_EQ(from_string("name: \"multi\n  line\"\n" + kRest).name, "multi line");
  EXPECT_EQ(from_string("name: !!str 'tagged'\n" + kRest).name, "tagged");
  // Two-, three- and four-byte UTF-8, a BOM, tabs and CRLF line ends.
  EXPECT_EQ(from_string("\xef\xbb\xbfname: \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\xa4\x96\r\n" + kRest).name,
            "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\xa4\x96");
  EXPECT_EQ(from_string("name: p\t# tab before a comment\n" + kRest).name, "p");
  EXPECT_EQ(from_string("description: \"d\"\r\n# CRLF\r\nname: 'p q'\r\n" + kRest).name, "p q");
  EXPECT_EQ(from_string("name: '42'\n" + kRest).name, "42");
  EXPECT_EQ(from_string("name: \"true\"\n" + kRest).name, "true");
  // Invalid UTF-8 in a comment is outside every value, so it is not reported.
  EXPECT_EQ(from_string("name: p  # \xff\n" + kRest).name, "p");
}

TEST(Loader, UnterminatedStringIsNamedWithWhereItStarts) {
  // Not "missing key model": yaml-cpp would take the rest of the file for the string.
  EXPECT_CONTAINS(error_of("name: \"abc\n" + kRest),
                  "test.yaml:1:7: name: expected a closing \" for the double-quoted string, found an unterminated "
                  "string starting at line 1 column 7");
  EXPECT_CONTAINS(error_of("name: p\n" + kRest + "costs: [{name: 'track, type: state, weights: 1}]\n"),
                  "test.yaml:5:16: costs[0].name: expected a closing ' for the single-quoted string, found an "
                  "unterminated string starting at line 5 column 16");
  // An escaped quote does not close a string, and a backslash ends the text here.
  EXPECT_CONTAINS(error_of("name: \"abc\\\"\n" + kRest), "test.yaml:1:7: name: expected a closing \"");
  EXPECT_CONTAINS(error_of("name: 'it''s\n" + kRest), "test.yaml:1:7: name: expected a closing '");
  EXPECT_CONTAINS(error_of("name: &a !!str \"abc\n" + kRest), "unterminated string starting at line 1 column 7");
  // After a byte-order mark, columns count from the first character after it.
  EXPECT_CONTAINS(error_of("\xef\xbb\xbfname: \"abc\n" + kRest), "test.yaml:1:7: name: expected a closing \"");
  EXPECT_CONTAINS(error_of("\xef\xbb\xbfname: a\xffq\n" + kRest), "test.yaml:1:8: name: expected valid UTF-8 text");
}

TEST(Loader, NulAndControlBytesAreNamedAtTheirPosition) {
  // Not "unknown escape": yaml-cpp reads a NUL as the start of one.
  EXPECT_CONTAINS(error_of(std::string("name: p\0q\n", 10) + kRest),
                  "test.yaml:1:8: <document>: expected text without NUL bytes, found a NUL byte");
  EXPECT_CONTAINS(error_of(kRest + std::string("name: \"p\0\"\n", 11)),
                  "test.yaml:4:9: <document>: expected text without NUL bytes, found a NUL byte");
  EXPECT_CONTAINS(error_of("name: p\x04q\n" + kRest),
                  "test.yaml:1:8: <document>: expected printable text, found the control character 0x04");
  EXPECT_CONTAINS(error_of("name: p\n" + kRest + "\x7f"),
                  "test.yaml:5:1: <document>: expected printable text, found the control character 0x7f");
  EXPECT_CONTAINS(error_of("\xff\xfen\0a\0m\0e\0"), "test.yaml:1:1: <document>: expected UTF-8 text, found a UTF-16 "
                                                   "byte-order mark");
}

TEST(Loader, InvalidUtf8IsNamedAtItsByte) {
  EXPECT_CONTAINS(error_of("name: p\xffq\n" + kRest),
                  "test.yaml:1:8: name: expected valid UTF-8 text, found the byte 0xff, which is not UTF-8 there");
  // A truncated sequence, an overlong form and a surrogate, in a list and a nested key.
  EXPECT_CONTAINS(error_of("name: p\n" + kRest + "state_names: [a, \"bc\xc3\", c, d]\n"),
                  "test.yaml:5:21: state_names[1]: expected valid UTF-8 text, found the byte 0xc3");
  EXPECT_CONTAINS(error_of("name: \xc0\xaf\n" + kRest), "test.yaml:1:7: name: expected valid UTF-8 text, found the byte 0xc0");
  EXPECT_CONTAINS(error_of("name: p\n" + kRest + "costs:\n  - {name: x\xed\xa0\x80, type: control, weights: 1}\n"),
                  "test.yaml:6:13: costs[0].name: expected valid UTF-8 text, found the byte 0xed");
  // In a key: the path is the mapping's.
  EXPECT_CONTAINS(error_of("name: p\n" + kRest + "solver: {max_\xfeiter: 3}\n"),
                  "test.yaml:5:14: solver: expected valid UTF-8 text, found the byte 0xfe");
}

TEST(Loader, NamesAreStrings) {
  EXPECT_CONTAINS(error_of("name: 42\n" + kRest),
                  "test.yaml:1:7: name: expected a name (a string), found the number 42 (quote it to use it as a name)");
  EXPECT_CONTAINS(error_of("name: -1.5e3\n" + kRest), "name: expected a name (a string), found the number -1.5e3");
  EXPECT_CONTAINS(error_of("name: .inf\n" + kRest), "name: expected a name (a string), found the number .inf");
  EXPECT_CONTAINS(error_of("name: False\n" + kRest), "name: expected a name (a string), found the boolean False");
  EXPECT_CONTAINS(error_of("name: p\n" + kRest + "control_names: [7]\n"),
                  "test.yaml:5:17: control_names[0]: expected a name (a string), found the number 7");
  EXPECT_CONTAINS(error_of("name: p\n" + kRest + "constraints: [{name: 3, type: control_box, lower: [-1], upper: [1]}]\n"),
                  "test.yaml:5:22: constraints[0].name: expected a name (a string), found the number 3");
  EXPECT_CONTAINS(error_of("name: \"a\\tb\"\n" + kRest),
                  "test.yaml:1:7: name: expected a name without control characters, found 'a?b' (character 9 at byte 1)");
  EXPECT_CONTAINS(error_of("name: ''\n" + kRest), "test.yaml:1:7: name: expected a non-empty name, found the string ''");
}

TEST(Loader, DtIsANormalNumberInItsRange) {
  const std::string head = "name: p\nmodel: {type: cartpole}\nx0: [0, 3, 0, 0]\nhorizon: {N: 20, dt: ";
  // The bounds themselves load (the positive control)...
  EXPECT_EQ(from_string(head + "1e-9}\n").horizon.dt, 1e-9);
  EXPECT_EQ(from_string(head + "1e6}\n").horizon.dt, 1e6);
  // ...and what lies beyond them does not: subnormal, tiny, huge, non-finite, negative.
  for (const char* bad : {"1e-320", "4.9e-324", "9.9e-10", "1.000001e6", "1e308", "-0.05", "0"})
    EXPECT_CONTAINS(error_of(head + bad + "}\n"), "test.yaml:4:22: horizon.dt: expected a number in [1e-09, 1e+06], found " +
                                                      std::string(bad));
  EXPECT_CONTAINS(error_of(head + ".inf}\n"), "horizon.dt: expected a number in [1e-09, 1e+06], found .inf");
  EXPECT_CONTAINS(error_of(head + ".nan}\n"), "horizon.dt: expected a number in [1e-09, 1e+06], found .nan");
  EXPECT_CONTAINS(error_of(head + "1e-320}\n", {"horizon.dt=1e400"}), "horizon.dt: expected a number in [1e-09, 1e+06]");
  EXPECT_CONTAINS(error_of(head + "0.05}\n", {"horizon.dt=1e-320"}),
                  "--set horizon.dt=1e-320: horizon.dt: expected a number in [1e-09, 1e+06], found 1e-320");
}

TEST(Loader, DuplicateKeysInNestedMapsNameTheirPath) {
  EXPECT_CONTAINS(error_of("name: p\nhorizon: {N: 1, N: 2}\n"),
                  "test.yaml:2:17: horizon.N: expected each key once per mapping, found a duplicate of the key");
}

TEST(Loader, MissingFileIsAProblemError) {
  try {
    load_problem(kSchema / "no_such_problem.yaml");
    FAIL();
  } catch (const ProblemError& e) {
    EXPECT_TRUE(contains(e.what(), "expected an existing file")) << e.what();
  }
  // A directory is not a problem file.
  EXPECT_THROW(load_problem(kSchema), ProblemError);
}

}  // namespace
