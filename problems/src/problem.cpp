#include "knot/problems/problem.hpp"

#include <charconv>
#include <cmath>

#include "knot/problems/error.hpp"
#include "settings_check.hpp"
#include "text.hpp"

namespace knot::problems {
namespace {

std::string at(const char* section, std::size_t i) { return std::string(section) + "[" + std::to_string(i) + "]"; }

}  // namespace

void Problem::validate() const {
  const SourceLocation where{source, 0, 0};
  const auto fail = [&](const std::string& key, const std::string& expected, const std::string& found) {
    throw ProblemError(where, key, expected, found);
  };
  if (!model) fail("model", "a model", "none");
  const int nx = model->nx(), nu = model->nu();
  if (nx < 1 || nu < 0)
    fail("model", "a model with nx >= 1 and nu >= 0", "nx " + std::to_string(nx) + ", nu " + std::to_string(nu));
  const std::size_t unx = static_cast<std::size_t>(nx), unu = static_cast<std::size_t>(nu);

  if (horizon.N < 1) fail("horizon.N", "an integer >= 1", std::to_string(horizon.N));
  if (!(std::isfinite(horizon.dt) && horizon.dt > 0)) fail("horizon.dt", "a finite number > 0", text::format_number(horizon.dt));
  if (horizon.integrator == IntegratorType::SemiImplicitEuler && model->nq() == 0)
    fail("horizon.integrator", "an integrator the model supports (semi_implicit_euler needs Model::nq > 0)",
         "semi_implicit_euler");

  if (x0.size() != unx) fail("x0", std::to_string(nx) + " values (nx)", std::to_string(x0.size()));
  for (std::size_t i = 0; i < x0.size(); ++i)
    if (!std::isfinite(x0[i])) fail(at("x0", i), "a finite number", text::format_number(x0[i]));
  // Empty name lists are allowed for problems built in C++; the model's names apply.
  if (!state_names.empty() && state_names.size() != unx)
    fail("state_names", std::to_string(nx) + " names (nx)", std::to_string(state_names.size()));
  if (!control_names.empty() && control_names.size() != unu)
    fail("control_names", std::to_string(nu) + " names (nu)", std::to_string(control_names.size()));

  for (std::size_t i = 0; i < costs.size(); ++i) {
    const CostTerm* c = costs[i].get();
    if (!c) fail(at("costs", i), "a cost term", "null");
    if (c->uses_control() && c->info().stages == StageSet::Terminal)
      fail(at("costs", i) + ".stage", "all or running (a control term has no control at the terminal knot)",
           "terminal");
    const std::string_view type = c->type();
    const int dim = type == "state" ? nx : type == "control" ? nu : type == "end_effector" ? 3 : -1;
    if (const Reference* r = c->reference(); r && dim >= 0 && (r->dim != dim || r->rows() < 1))
      fail(at("costs", i) + ".reference", "rows of " + std::to_string(dim) + " values",
           std::to_string(r->rows()) + " rows of " + std::to_string(r->dim));
  }
  for (std::size_t i = 0; i < constraints.size(); ++i) {
    const ConstraintTerm* c = constraints[i].get();
    if (!c) fail(at("constraints", i), "a constraint term", "null");
    if (c->uses_control() && c->info().stages == StageSet::Terminal)
      fail(at("constraints", i) + ".stage", "all or running (a control term has no control at the terminal knot)",
           "terminal");
  }

  // The guess's own sizes; z, s and y depend on the constraint rows, which the solver checks.
  if (!initial_guess.empty()) {
    const std::size_t knots = static_cast<std::size_t>(horizon.N) + 1;
    const auto sized = [&](const char* key, const std::vector<double>& v, std::size_t n, const char* what) {
      if (v.size() != n)
        fail(std::string("initial_guess.") + key, std::to_string(n) + " values (" + what + ")",
             std::to_string(v.size()));
    };
    sized("x", initial_guess.x, knots * unx, "(N+1) nx");
    sized("u", initial_guess.u, (knots - 1) * unu, "N nu");
    if (!initial_guess.lambda.empty()) sized("lambda", initial_guess.lambda, knots * unx, "(N+1) nx");
  }
  if (const auto issue = detail::check(solver)) fail("solver." + issue->field, issue->expected, issue->found);
  if (const auto issue = detail::check(mpc)) fail("mpc." + issue->field, issue->expected, issue->found);
  for (std::size_t i = 0; i < mpc.disturbances.size(); ++i)
    if (mpc.disturbances[i].state_kick.size() != unx)
      fail("mpc." + at("disturbances", i) + ".state_kick", std::to_string(nx) + " values (nx)",
           std::to_string(mpc.disturbances[i].state_kick.size()));
  for (const auto* noise : {&mpc.process_noise, &mpc.measurement_noise})
    if (!noise->empty() && noise->size() != unx)
      fail(noise == &mpc.process_noise ? "mpc.process_noise" : "mpc.measurement_noise",
           std::to_string(nx) + " values (nx)", std::to_string(noise->size()));
  if (mpc.plant_model && (mpc.plant_model->nx() != nx || mpc.plant_model->nu() != nu))
    fail("mpc.plant", "a plant model with nx " + std::to_string(nx) + " and nu " + std::to_string(nu),
         "nx " + std::to_string(mpc.plant_model->nx()) + ", nu " + std::to_string(mpc.plant_model->nu()));
  if (mpc.plant_integrator == IntegratorType::SemiImplicitEuler && (mpc.plant_model ? *mpc.plant_model : *model).nq() == 0)
    fail("mpc.plant.integrator", "an integrator the plant supports (semi_implicit_euler needs Model::nq > 0)",
         "semi_implicit_euler");
  for (const MpcReference& r : mpc.references) {
    const CostTerm* term = nullptr;
    for (const auto& c : costs)
      if (c && c->reference() && c->info().name == r.cost) term = c.get();
    if (!term) fail("mpc.reference.cost", "the name of a cost with a reference", "'" + r.cost + "'");
    if (term->reference()->dim != r.dim)
      fail("mpc.reference", "rows of " + std::to_string(term->reference()->dim) + " values (cost " + r.cost + ")",
           "rows of " + std::to_string(r.dim));
  }
}

std::string model_swap_refusal(const Problem& p, const Model& model) {
  const Model& old = *p.model;
  const auto shape = [](const Model& m) {
    return "'" + std::string(m.type()) + "' (nx " + std::to_string(m.nx()) + ", nu " + std::to_string(m.nu()) +
           ", nq " + std::to_string(m.nq()) + (m.discrete_time() ? ", discrete" : ", continuous") + ")";
  };
  if (model.type() != old.type() || model.nx() != old.nx() || model.nu() != old.nu() || model.nq() != old.nq() ||
      model.discrete_time() != old.discrete_time())
    return "a model like the problem's " + shape(old) + ", found " + shape(model);
  for (const auto& c : p.costs)
    if (c->frame() >= 0) return "cost '" + c->info().name + "' holds the problem's model (an end-effector term)";
  for (const auto& c : p.constraints)
    if (c->frame() >= 0) return "constraint '" + c->info().name + "' holds the problem's model (an end-effector term)";
  if (old.type() == "expression") {
    for (const auto& c : p.costs)
      if (c->type() == "residual")
        return "cost '" + c->info().name + "' reads the expression model's parameters as compiled constants";
    for (const auto& c : p.constraints)
      if (c->type() == "expression")
        return "constraint '" + c->info().name + "' reads the expression model's parameters as compiled constants";
  }
  return {};
}

}  // namespace knot::problems
