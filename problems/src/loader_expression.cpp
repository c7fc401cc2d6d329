#include "loader_expression.hpp"

#include <algorithm>

namespace knot::problems::detail {
namespace {

using yaml::MapReader;
using yaml::Node;

std::vector<std::string> read_name_list(const MapReader& m, const char* key, bool required) {
  const Node* n = required ? &m.require(key, "a list of names") : m.find(key);
  if (!n || n->is_null()) return {};
  return yaml::to_names(*n, m.key_path(key), 0);
}

}  // namespace

const std::vector<std::string>& expression_model_keys() {
  static const std::vector<std::string> keys = {"type", "states", "controls", "params",         "defs",
                                                "ode",  "next",   "nq",       "planar_position"};
  return keys;
}

ExprSource read_expression(const Node& node, const std::string& path) {
  // A number is an expression too (`omega: 0`).
  if (!node.is_scalar()) yaml::fail(node, path, "an expression (a string such as 'sin(theta) * omega')");
  return ExprSource{node.text, path, node.at.location(), node.text_shift};
}

std::shared_ptr<const Model> read_expression_model(const Node& node) {
  const MapReader m(&node, "model", node.at);
  m.allow_only(expression_model_keys());
  m.find("type");
  ExpressionModelSpec spec;
  ExprSymbols& s = spec.symbols;
  s.key_path = "model";
  s.at = node.at.location();
  s.states = read_name_list(m, "states", true);
  s.controls = read_name_list(m, "controls", false);
  if (const Node* p = m.find("params"); p && !p->is_null()) {
    if (!p->is_map()) yaml::fail(*p, "model.params", "a mapping of parameter names to numbers");
    for (const yaml::Entry& e : p->entries) {
      const std::string path = "model.params." + e.key;
      s.params.push_back({e.key, yaml::to_number(e.value, path), path, e.value.at.location()});
    }
  }
  if (const Node* d = m.find("defs"); d && !d->is_null()) {
    if (!d->is_map()) yaml::fail(*d, "model.defs", "a mapping of names to expressions");
    for (const yaml::Entry& e : d->entries) s.defs.push_back({e.key, read_expression(e.value, "model.defs." + e.key)});
  }
  const Node* ode = m.find("ode");
  const Node* next = m.find("next");
  if ((ode == nullptr) == (next == nullptr))
    yaml::fail(ode ? *next : node, "model", "either ode (x' = f(x, u)) or next (x+ = f(x, u))",
               ode ? "both" : "neither");
  spec.discrete = next != nullptr;
  const Node& rhs = ode ? *ode : *next;
  const std::string rhs_path = ode ? "model.ode" : "model.next";
  if (!rhs.is_map()) yaml::fail(rhs, rhs_path, "a mapping of every state to its expression");
  const MapReader r(&rhs, rhs_path, rhs.at);
  r.allow_only(s.states);
  for (const std::string& state : s.states)
    spec.rhs.push_back(read_expression(r.require(state, "an expression for every state"), r.key_path(state)));
  const int nx = static_cast<int>(s.states.size());
  if (const Node* q = m.find("nq")) spec.nq = static_cast<int>(yaml::to_integer(*q, "model.nq", 0, nx - 1));
  if (const Node* pp = m.find("planar_position"); pp && !pp->is_null()) {
    const std::vector<std::string> names = yaml::to_names(*pp, "model.planar_position", 2);
    std::array<int, 2> idx{};
    for (int k = 0; k < 2; ++k) {
      const auto it = std::find(s.states.begin(), s.states.end(), names[k]);
      if (it == s.states.end()) {
        const std::string near = yaml::closest(names[k], s.states);
        yaml::fail(pp->items[k], yaml::index_path("model.planar_position", k), "the name of a state",
                   yaml::quote(names[k]), near.empty() ? "" : "did you mean '" + near + "'?");
      }
      idx[k] = static_cast<int>(it - s.states.begin());
    }
    spec.planar_position = idx;
  }
  return make_expression_model(spec);
}

std::shared_ptr<const TermExpressions> read_term_expressions(const MapReader& term, const char* key,
                                                             const Model& model) {
  const std::string path = term.key_path(key);
  const Node& n = term.require(key, "an expression or a list of expressions");
  std::vector<ExprSource> outputs;
  if (n.is_sequence()) {
    if (n.items.empty()) yaml::fail(n, path, "a list of at least one expression");
    for (std::size_t i = 0; i < n.items.size(); ++i)
      outputs.push_back(read_expression(n.items[i], yaml::index_path(path, i)));
  } else {
    outputs.push_back(read_expression(n, path));
  }
  ExprSymbols symbols;
  if (const ExprSymbols* s = expression_symbols(model)) {
    symbols = *s;
  } else {
    symbols.states = model.state_names();
    symbols.controls = model.control_names();
  }
  symbols.at = term.where().location();
  symbols.key_path = term.path();
  return std::make_shared<const TermExpressions>(symbols, outputs);
}

}  // namespace knot::problems::detail
