// describe(): the resolved problem as `knot check` prints it.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "knot/problems/loader.hpp"
#include "text.hpp"

namespace knot::problems {
namespace {

// [a, b, c], cut short after `max` entries.
template <class Seq>
std::string list(const Seq& v, std::size_t max = 12) {
  std::string out = "[";
  std::size_t i = 0;
  for (const auto& x : v) {
    if (i == max) {
      out += ", ... (" + std::to_string(v.size()) + " in all)";
      break;
    }
    if (i++ > 0) out += ", ";
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(x)>>)
      out += text::format_number(static_cast<double>(x));
    else
      out += x;
  }
  return out + "]";
}

std::string names(const std::vector<std::string>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out.empty() ? "(none)" : out;
}

// A term's weight in the form it was given: "w I", "diag [...]" or "full n x n, diag [...]". Never
// expands a Scalar or Diagonal weight (a 65536-dimensional identity prints as one number).
std::string weights(const CostTerm& c) {
  const Weight* W = c.weight();
  if (W == nullptr) return "weights (none)";
  switch (W->form()) {
    case Weight::Form::Scalar:
      return "weights " + text::format_number(W->values()[0]) + " I";
    case Weight::Form::Diagonal:
      return "weights diag " + list(W->values());
    case Weight::Form::Dense:
      break;
  }
  const int n = W->dim();
  std::vector<double> diag;
  for (int i = 0; i < n; ++i) diag.push_back((*W)(i, i));
  return "weights full " + std::to_string(n) + "x" + std::to_string(n) + ", diag " + list(diag);
}

std::string reference(const Reference* r) {
  if (!r) return "no reference";
  if (r->rows() == 1) return "reference " + list(r->at(0));
  return "reference " + std::to_string(r->rows()) + " rows (knot 0 on; the last row held)";
}

std::string bounds(const BoxBounds& b) {
  std::string out;
  const std::size_t shown = std::min<std::size_t>(b.index.size(), 6);
  for (std::size_t i = 0; i < shown; ++i)
    out += std::string(i ? ", " : "") + (b.on_control ? "u[" : "x[") + std::to_string(b.index[i]) + "] in [" +
           text::format_number(b.lower[i]) + ", " + text::format_number(b.upper[i]) + "]";
  if (shown < b.index.size()) out += ", ... (" + std::to_string(b.index.size()) + " in all)";
  return out;
}

// The frame an end-effector term reads, and whether it is the model's default (ee_frame).
std::string frame(const Problem& p, int index) {
  const Kinematics* kin = p.model->kinematics();
  if (index < 0 || kin == nullptr) return {};
  return ", frame " + kin->frame_name(index) + (index == kin->default_frame() ? " (the model's end effector)" : "");
}

// "cart_mass 1, gravity [0, 0, -9.81], urdf robots/arm.urdf" as model.params would write them.
std::string parameters(const Model& m) {
  std::string out;
  for (const ModelParameter& q : m.parameters()) {
    out += (out.empty() ? "" : ", ") + q.name + " ";
    if (q.values.empty())
      out += q.text;
    else if (q.values.size() == 1)
      out += text::format_number(q.values[0]);
    else
      out += list(q.values);
  }
  return out;
}

std::string guess(const InitialGuess& g) {
  std::string out = g.source.empty() ? "(set in C++)" : g.source;
  out += ": x, u";
  if (!g.lambda.empty()) out += ", lambda";
  if (!g.z.empty()) out += ", z";
  if (!g.s.empty()) out += ", s";
  if (!g.y.empty()) out += ", y";
  if (g.mu > 0) out += ", mu " + text::format_number(g.mu);
  return out;
}

}  // namespace

std::string describe(const Problem& p) {
  std::ostringstream o;
  o << "problem      " << p.name << "\n";
  if (!p.description.empty()) o << "description  " << p.description << "\n";
  o << "source       " << (p.source.empty() ? "(built in C++)" : p.source) << "\n";
  if (!p.model) {
    o << "model        (none)\n";
    return o.str();
  }
  o << "model        " << p.model->type() << " (nx " << p.nx() << ", nu " << p.nu() << ", nq " << p.model->nq()
    << (p.model->discrete_time() ? ", discrete time" : "") << ")\n";
  if (const std::string params = parameters(*p.model); !params.empty()) o << "params       " << params << "\n";
  for (const std::string& w : p.model->warnings()) o << "warning      " << w << "\n";
  o << "states       " << names(p.state_names.empty() ? p.model->state_names() : p.state_names) << "\n";
  o << "controls     " << names(p.control_names.empty() ? p.model->control_names() : p.control_names) << "\n";
  const Horizon& h = p.horizon;
  o << "horizon      N " << h.N << ", dt " << text::format_number(h.dt) << " s, T " << text::format_number(h.N * h.dt) << " s, integrator "
    << to_string(h.integrator) << "\n";
  o << "x0           " << list(p.x0, 24) << "\n";
  o << "guess        " << (p.initial_guess.empty() ? "default (x_k = x0, u_k = 0)" : guess(p.initial_guess)) << "\n";

  o << "costs        " << p.costs.size() << "\n";
  for (std::size_t i = 0; i < p.costs.size(); ++i) {
    const CostTerm& c = *p.costs[i];
    o << "  [" << i << "] " << c.info().name << ": " << c.type() << ", stages " << to_string(c.info().stages)
      << ", scale_by_dt " << (c.info().scale_by_dt ? "true" : "false") << ", " << weights(c);
    o << frame(p, c.frame());
    if (c.type() != "control_rate") o << ", " << reference(c.reference());
    o << "\n";
  }
  o << "constraints  " << p.constraints.size() << "\n";
  for (std::size_t i = 0; i < p.constraints.size(); ++i) {
    const ConstraintTerm& c = *p.constraints[i];
    o << "  [" << i << "] " << c.info().name << ": " << c.type() << ", "
      << (c.kind() == ConstraintKind::Equality ? "equality" : "inequality") << ", " << c.dim()
      << (c.dim() == 1 ? " row" : " rows") << ", stages " << to_string(c.info().stages) << frame(p, c.frame());
    if (const BoxBounds* b = c.box()) o << ", " << bounds(*b);
    o << "\n";
  }

  const SolverSettings& s = p.solver;
  o << "solver       max_iter " << s.max_iter << ", time_limit " << text::format_number(s.time_limit) << " s, tol_stationarity "
    << text::format_number(s.tol_stationarity) << ", tol_feasibility " << text::format_number(s.tol_feasibility) << ", tol_complementarity "
    << text::format_number(s.tol_complementarity) << "\n             linsys " << s.linsys << ", hessian " << s.hessian
    << ", globalization " << s.globalization << ", pcg_tol " << text::format_number(s.pcg_tol) << ", pcg_max_iter " << s.pcg_max_iter
    << ", lq_forcing " << text::format_number(s.lq_forcing)
    << ", regularization " << text::format_number(s.regularization) << ", mu_init " << text::format_number(s.mu_init) << ", verbose "
    << (s.verbose ? "true" : "false") << ", memory_limit " << text::format_number(s.memory_limit) << " GiB, threads "
    << s.threads << "\n";
  const MpcSettings& m = p.mpc;
  const double period = mpc_period(m, p.horizon.dt);
  const auto value = [](const std::vector<double>& v) {
    return v.empty() ? std::string("?") : v.size() == 1 ? text::format_number(v[0]) : list(v);
  };
  o << "mpc          mode " << m.mode;
  if (m.mode == "rti") o << ", iterations_per_step " << m.iterations_per_step;
  else o << ", time_limit " << (m.time_limit > 0 ? text::format_number(m.time_limit) + " s" : "the control period");
  o << ", control_rate " << text::format_number(1.0 / period) << " Hz" << (m.control_rate > 0 ? "" : " (1/dt)")
    << ", control period " << text::format_number(period) << " s\n             ";
  if (m.steps > 0) o << "steps " << m.steps;
  else o << "duration " << text::format_number(m.duration) << " s";
  o << " (" << mpc_steps(m, p.horizon.dt) << " steps), warm_start " << m.warm_start << ", seed " << m.seed
    << "\n             plant: " << to_string(m.plant_integrator) << ", " << m.plant_substeps << " substeps per period, "
    << (m.plant_params.empty() ? "the model's parameters" : "params");
  for (std::size_t i = 0; i < m.plant_params.size(); ++i)
    o << (i == 0 ? " " : ", ") << m.plant_params[i].name << " " << value(m.plant_params[i].model_value) << " -> "
      << value(m.plant_params[i].plant_value);
  o << "\n             process_noise " << (m.process_noise.empty() ? "none" : list(m.process_noise))
    << ", measurement_noise " << (m.measurement_noise.empty() ? "none" : list(m.measurement_noise))
    << ", disturbances " << m.disturbances.size();
  for (const Disturbance& d : m.disturbances)
    o << "\n               at " << text::format_number(d.time) << " s: " << list(d.state_kick);
  o << "\n             reference: ";
  if (m.references.empty()) {
    std::string moving;
    for (const auto& c : p.costs)
      if (const Reference* r = c->reference(); r && r->rows() > 1)
        moving += (moving.empty() ? "" : ", ") + c->info().name + " (" + std::to_string(r->rows()) + " rows)";
    o << (moving.empty() ? "constant (no cost has one row per knot)"
                         : "the per-knot rows of " + moving + " move with time, row r at r dt");
  }
  for (const MpcReference& r : m.references)
    o << "cost " << r.cost << " from " << r.source << ", " << r.rows() << " rows"
      << (r.times.empty() ? ", row r at r dt" : ", times " + text::format_number(r.times.front()) + " .. " +
                                                     text::format_number(r.times.back()) + " s");
  o << "\n";
  return o.str();
}

}  // namespace knot::problems
