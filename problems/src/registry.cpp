#include "knot/problems/registry.hpp"

#include <algorithm>
#include <sstream>

#include "knot/problems/error.hpp"
#include "knot/problems/expression.hpp"
#include "knot/problems/model_adapter.hpp"
#include "knot/problems/models/acrobot.hpp"
#include "knot/problems/models/car.hpp"
#include "knot/problems/models/cartpole.hpp"
#include "knot/problems/models/chain_of_masses.hpp"
#include "knot/problems/models/double_integrator.hpp"
#include "knot/problems/models/linear.hpp"
#include "knot/problems/models/manipulator.hpp"
#include "knot/problems/models/pendulum.hpp"
#include "knot/problems/models/quadrotor.hpp"
#include "knot/problems/models/unicycle.hpp"
#include "text.hpp"

namespace knot::problems {

// The definitions of model_adapter.hpp's explicit instantiation declarations.
template class ModelAdapter<models::Acrobot>;
template class ModelAdapter<models::Car>;
template class ModelAdapter<models::Cartpole>;
template class ModelAdapter<models::ChainOfMasses>;
template class ModelAdapter<models::DoubleIntegrator>;
template class ModelAdapter<models::Linear>;
template class ModelAdapter<models::Pendulum>;
template class ModelAdapter<models::Quadrotor>;
template class ModelAdapter<models::Unicycle>;

namespace {

using models::Acrobot;
using models::Car;
using models::Cartpole;
using models::ChainOfMasses;
using models::DoubleIntegrator;
using models::Linear;
using models::Pendulum;
using models::Quadrotor;
using models::Unicycle;

// A physical constant that must be strictly positive (a mass, a length, an inertia).
double positive(const ParamReader& p, std::string_view key, double fallback) {
  const double v = p.number(key, fallback);
  if (!(v > 0)) p.fail(key, "a number > 0", text::format_number(v));
  return v;
}

double nonnegative(const ParamReader& p, std::string_view key, double fallback) { return p.number(key, fallback, 0.0); }

template <class M>
std::shared_ptr<const Model> adapt(M model, std::shared_ptr<const void> storage = nullptr) {
  return std::make_shared<ModelAdapter<M>>(std::move(model), std::move(storage));
}

std::shared_ptr<const Model> make_double_integrator(const ParamReader& p) {
  DoubleIntegrator m;
  m.params.dim = p.integer("dim", m.params.dim, 1, 1 << 16);
  return adapt(m);
}

std::shared_ptr<const Model> make_pendulum(const ParamReader& p) {
  Pendulum m;
  auto& q = m.params;
  q.mass = positive(p, "mass", q.mass);
  q.length = positive(p, "length", q.length);
  q.gravity = nonnegative(p, "gravity", q.gravity);
  q.damping = nonnegative(p, "damping", q.damping);
  return adapt(m);
}

std::shared_ptr<const Model> make_cartpole(const ParamReader& p) {
  Cartpole m;
  auto& q = m.params;
  q.cart_mass = positive(p, "cart_mass", q.cart_mass);
  q.pole_mass = positive(p, "pole_mass", q.pole_mass);
  q.length = positive(p, "length", q.length);
  q.gravity = nonnegative(p, "gravity", q.gravity);
  return adapt(m);
}

std::shared_ptr<const Model> make_acrobot(const ParamReader& p) {
  Acrobot m;
  auto& q = m.params;
  q.m1 = positive(p, "m1", q.m1);
  q.m2 = positive(p, "m2", q.m2);
  q.l1 = positive(p, "l1", q.l1);
  q.l2 = positive(p, "l2", q.l2);
  q.lc1 = nonnegative(p, "lc1", q.lc1);
  q.lc2 = nonnegative(p, "lc2", q.lc2);
  q.Ic1 = nonnegative(p, "Ic1", q.Ic1);
  q.Ic2 = positive(p, "Ic2", q.Ic2);  // with lc2 = 0 the elbow's inertia would vanish
  q.b1 = nonnegative(p, "b1", q.b1);
  q.b2 = nonnegative(p, "b2", q.b2);
  q.gravity = nonnegative(p, "gravity", q.gravity);
  return adapt(m);
}

std::shared_ptr<const Model> make_quadrotor(const ParamReader& p) {
  Quadrotor m;
  auto& q = m.params;
  q.mass = positive(p, "mass", q.mass);
  q.arm_length = positive(p, "arm_length", q.arm_length);
  const std::vector<double> inertia = p.vector("inertia", {q.inertia[0], q.inertia[1], q.inertia[2]}, 3);
  for (int i = 0; i < 3; ++i) {
    if (!(inertia[i] > 0))
      p.fail("inertia", "3 numbers > 0 (Ixx, Iyy, Izz)",
             text::format_number(inertia[i]).append(" at index ").append(std::to_string(i)));
    q.inertia[i] = inertia[i];
  }
  q.kM = p.number("kM", q.kM);
  q.gravity = nonnegative(p, "gravity", q.gravity);
  return adapt(m);
}

std::shared_ptr<const Model> make_unicycle(const ParamReader&) { return adapt(Unicycle{}); }

std::shared_ptr<const Model> make_car(const ParamReader& p) {
  Car m;
  m.params.wheelbase = positive(p, "wheelbase", m.params.wheelbase);
  return adapt(m);
}

std::shared_ptr<const Model> make_chain_of_masses(const ParamReader& p) {
  ChainOfMasses m;
  auto& q = m.params;
  q.masses = p.integer("masses", q.masses, 3, 10000);
  q.mass = positive(p, "mass", q.mass);
  q.stiffness = positive(p, "stiffness", q.stiffness);
  q.rest_length = nonnegative(p, "rest_length", q.rest_length);
  q.gravity = nonnegative(p, "gravity", q.gravity);
  return adapt(m);
}

std::shared_ptr<const Model> make_linear(const ParamReader& p) {
  constexpr int kMaxDim = 100000;
  struct Storage {
    std::vector<double> A, B, c;
  };
  auto s = std::make_shared<Storage>();
  Linear m;
  auto& q = m.params;
  // nx and nu default to the shapes of A and B as written; matrix() then checks every row.
  for (const char* key : {"A", "B"})
    if (p.shape(key)[0] == 0 && !p.has(key[0] == 'A' ? "nx" : "nu"))
      p.fail(key, "a matrix written as a list of rows", p.has(key) ? "something else" : "nothing (the key is required)");
  q.nx = p.integer("nx", p.shape("A")[0], 1, kMaxDim);
  q.nu = p.integer("nu", p.shape("B")[1], 1, kMaxDim);
  s->A = p.matrix("A", q.nx, q.nx);
  s->B = p.matrix("B", q.nx, q.nu);
  s->c = p.vector("c", std::vector<double>(q.nx, 0.0), q.nx);
  q.discrete = p.boolean("discrete", false);
  q.A = s->A.data();
  q.B = s->B.data();
  q.c = s->c.data();
  return adapt(m, s);
}

struct Entry {
  const char* type;
  const char* description;
  std::shared_ptr<const Model> (*make)(const ParamReader&);
};

const Entry kEntries[] = {
    {"double_integrator", "x = [p; v] (dim each), u = a (dim); params dim", make_double_integrator},
    {"pendulum", "x = [theta (0 down), omega], u = [tau]; params mass, length, gravity, damping", make_pendulum},
    {"cartpole", "x = [p, theta (0 up), v, omega], u = [F]; acados pendulum on cart", make_cartpole},
    {"acrobot", "x = [theta1, theta2, theta1dot, theta2dot], u = [elbow tau]; Drake/Spong parameters", make_acrobot},
    {"quadrotor", "x = [pos, roll/pitch/yaw, vel, body rates] (12), u = 4 rotor thrusts; Drake parameters",
     make_quadrotor},
    {"unicycle", "x = [px, py, theta], u = [v, omega]", make_unicycle},
    {"car", "kinematic bicycle: x = [px, py, theta, v], u = [a, delta]; params wheelbase", make_car},
    {"chain_of_masses", "acados chain-mass benchmark: masses M, last mass velocity-controlled, u (3)",
     make_chain_of_masses},
    {"linear", "f = A x + B u + c, continuous or discrete; params nx, nu, A, B, c, discrete", make_linear},
    {"manipulator",
     "fixed-base arm or tree of arms from a URDF: x = [q; qd], u = joint efforts; params urdf, gravity, ee_frame",
     make_manipulator},
};

}  // namespace

std::vector<ModelInfo> model_types() {
  std::vector<ModelInfo> out;
  for (const Entry& e : kEntries) out.push_back({e.type, e.description});
  return out;
}

std::shared_ptr<const Model> make_model(std::string_view type, const ParamReader& params, const std::string& key_path) {
  for (const Entry& e : kEntries)
    if (type == e.type) return e.make(params);

  std::string known;
  const Entry* closest = nullptr;
  std::size_t best = std::string_view::npos;
  for (const Entry& e : kEntries) {
    known.append(known.empty() ? "" : ", ").append(e.type);
    const std::size_t d = text::edit_distance(type, e.type);
    if (d < best) {
      best = d;
      closest = &e;
    }
  }
  // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "literal" + std::string.
  std::string expected = "a model type (one of: ";
  expected.append(known).append(")");
  std::string found = "'";
  found.append(type).append("'");
  std::string hint = "did you mean '";
  hint.append(closest->type).append("'?");
  throw ProblemError(SourceLocation{}, key_path, std::move(expected), std::move(found), std::move(hint));
}

std::shared_ptr<const Model> with_parameters(const Model& model, const std::vector<ModelParameter>& changes) {
  const std::vector<ModelParameter> current = model.parameters();
  std::vector<std::string> known;
  for (const ModelParameter& q : current) known.push_back(q.name);
  const auto unknown = [&](const std::string& name) {
    const std::string near = text::closest(name, known);
    std::string expected = "a parameter of model '";
    expected.append(model.type()).append("'");
    throw ProblemError(SourceLocation{}, "model.params." + name, std::move(expected), "'" + name + "'",
                       near.empty() ? "" : "did you mean '" + near + "'?");
  };
  if (model.type() == "expression") {
    std::vector<std::string> names;
    std::vector<double> values;
    for (const ModelParameter& c : changes) {  // names are checked where the symbols are
      if (c.values.size() != 1)
        throw ProblemError(SourceLocation{}, "model.params." + c.name, "one number",
                           std::to_string(c.values.size()) + " values");
      names.push_back(c.name);
      values.push_back(c.values[0]);
    }
    return expression_with_parameters(model, names, values);
  }
  if (model.type() == "linear" || model.type() == "manipulator" ||
      std::none_of(std::begin(kEntries), std::end(kEntries), [&](const Entry& e) { return model.type() == e.type; }))
    throw ProblemError(SourceLocation{}, "model.type",
                       "a model rebuilt from its parameters (a built-in type other than linear and manipulator, or "
                       "an expression model)",
                       "'" + std::string(model.type()) + "'");
  for (const ModelParameter& c : changes)
    if (std::find(known.begin(), known.end(), c.name) == known.end()) unknown(c.name);
  ParamMap params("model.params");
  for (const ModelParameter& q : current) {
    const ModelParameter* value = &q;
    for (const ModelParameter& c : changes)
      if (c.name == q.name) value = &c;
    if (value != &q && value->values.size() != q.values.size())
      throw ProblemError(SourceLocation{}, "model.params." + q.name,
                         std::to_string(q.values.size()) + (q.values.size() == 1 ? " number" : " numbers"),
                         std::to_string(value->values.size()) + (value->values.size() == 1 ? " value" : " values"));
    if (!q.text.empty() && q.values.empty())
      params.set(q.name, value->text);
    else if (q.values.size() == 1)
      params.set(q.name, value->values[0]);
    else
      params.set(q.name, value->values);
  }
  return make_model(model.type(), params);
}

}  // namespace knot::problems
