// The YAML problem-file loader: read -> resolve `extends` -> apply --set overrides -> validate and
// build. Every key is read here (or in loader_terms.cpp for costs and constraints) and nowhere else.
#include "knot/problems/loader.hpp"

#include <algorithm>
#include <climits>
#include <new>
#include <optional>
#include <stdexcept>

#include "knot/problems/registry.hpp"
#include "loader_terms.hpp"
#include "settings_check.hpp"
#include "yaml_reader.hpp"

namespace knot::problems {
namespace {

namespace fs = std::filesystem;
using yaml::MapReader;
using yaml::Node;
using yaml::Range;
using yaml::Source;
using yaml::Where;

// A horizon longer than this is taken for a typo rather than a problem to allocate for.
constexpr long long kMaxKnots = 1'000'000;
// A time step outside this is a typo or a unit slip (microseconds written as seconds), and its
// extremes would make N dt, 1/dt or dt^2 overflow or vanish; it also keeps subnormals out.
const Range kDtRange = Range::closed(1e-9, 1e6);
// Deeper `extends` chains are surely a mistake (cycles are reported separately).
constexpr std::size_t kMaxExtendsDepth = 32;

const std::vector<std::string> kTopKeys = {"name",   "description", "extends",       "model", "horizon",
                                           "x0",     "state_names", "control_names", "costs", "constraints",
                                           "solver", "mpc",         "initial_guess"};

// --- key paths ("costs[1].weights") ------------------------------------------------------------

struct Step {
  std::string key;  // a mapping key, or empty for an index
  std::size_t index = 0;
};

std::optional<std::vector<Step>> parse_key_path(std::string_view text) {
  std::vector<Step> steps;
  std::size_t i = 0;
  auto name_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  };
  while (true) {
    const std::size_t start = i;
    while (i < text.size() && name_char(text[i])) ++i;
    if (i == start) return std::nullopt;
    steps.push_back({std::string(text.substr(start, i - start)), 0});
    while (i < text.size() && text[i] == '[') {
      const std::size_t close = text.find(']', i);
      if (close == std::string_view::npos) return std::nullopt;
      long long index = 0;
      if (!yaml::parse_integer(text.substr(i + 1, close - i - 1), index) || index < 0) return std::nullopt;
      steps.push_back({std::string(), static_cast<std::size_t>(index)});
      i = close + 1;
    }
    if (i == text.size()) return steps;
    if (text[i] != '.') return std::nullopt;
    ++i;
  }
}

std::string join_path(const std::string& path, const Step& s) {
  if (s.key.empty()) return yaml::index_path(path, s.index);
  return path.empty() ? s.key : path + "." + s.key;
}

const Node* lookup(const Node& root, std::string_view dotted) {
  const auto steps = parse_key_path(dotted);
  if (!steps) return nullptr;
  const Node* cur = &root;
  for (const Step& s : *steps) {
    if (!s.key.empty()) {
      const yaml::Entry* e = cur->is_map() ? cur->find(s.key) : nullptr;
      if (!e) return nullptr;
      cur = &e->value;
    } else {
      if (!cur->is_sequence() || s.index >= cur->items.size()) return nullptr;
      cur = &cur->items[s.index];
    }
  }
  return cur;
}

// --- extends -----------------------------------------------------------------------------------

struct Chain {
  std::vector<std::string> ids;    // canonical paths, for cycle detection
  std::vector<std::string> names;  // as shown in messages
};

std::string identity(const fs::path& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal().string() : c.string();
}

Node resolve_extends(Node doc, Chain& chain) {
  if (!doc.is_map()) return doc;
  const auto it =
      std::find_if(doc.entries.begin(), doc.entries.end(), [](const yaml::Entry& e) { return e.key == "extends"; });
  if (it == doc.entries.end()) return doc;
  const yaml::Entry ext = std::move(*it);
  doc.entries.erase(it);

  const Node& v = ext.value;
  const std::string text = yaml::to_string(v, "extends");
  if (text.empty()) yaml::fail(v, "extends", "a path to a parent problem file");
  fs::path parent(text);
  if (parent.is_relative() && v.at.source) parent = v.at.source->dir / parent;
  parent = parent.lexically_normal();
  const std::string id = identity(parent);
  if (std::find(chain.ids.begin(), chain.ids.end(), id) != chain.ids.end()) {
    std::string cycle;
    for (const std::string& n : chain.names) cycle += n + " -> ";
    yaml::fail(v, "extends", "a chain of parent files without a cycle", cycle + parent.string());
  }
  if (chain.ids.size() >= kMaxExtendsDepth)
    yaml::fail(v, "extends", "at most " + std::to_string(kMaxExtendsDepth) + " levels of extends", "a deeper chain");
  const std::string contents = yaml::read_file(parent, v.at, "extends");
  const auto source = std::make_shared<const Source>(Source{parent.string(), parent.parent_path()});
  Node base = yaml::parse(contents, source);
  if (!base.is_map()) yaml::fail(base, "", "a mapping of problem keys in the parent file", yaml::found(base));

  chain.ids.push_back(id);
  chain.names.push_back(parent.string());
  base = resolve_extends(std::move(base), chain);
  chain.ids.pop_back();
  chain.names.pop_back();
  yaml::merge_into(base, std::move(doc));
  return base;
}

// --- overrides ---------------------------------------------------------------------------------

// "key.path=value": the value is parsed as YAML and replaces (or adds) the node at the path.
// Errors name the override itself as the file.
void apply_override(Node& root, const std::string& text, const fs::path& dir) {
  const auto source = std::make_shared<const Source>(Source{"--set " + text, dir});
  const Where at{source, 0, 0};
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos) throw ProblemError(at.location(), "", "key.path=value", yaml::quote(text));
  std::string key = text.substr(0, eq);
  while (!key.empty() && key.back() == ' ') key.pop_back();
  while (!key.empty() && key.front() == ' ') key.erase(0, 1);
  const auto steps = parse_key_path(key);
  if (!steps) throw ProblemError(at.location(), key, "a key path like horizon.N or costs[1].weights", yaml::quote(key));
  if ((*steps)[0].key == "extends")
    throw ProblemError(at.location(), key, "a key --set can change (extends is resolved before overrides)", "extends");

  Node value;
  try {
    value = yaml::parse(std::string_view(text).substr(eq + 1), source);
  } catch (const ProblemError& e) {
    // A position inside the value text would read as a line of the override; name the key instead.
    throw ProblemError(at.location(), key, "a YAML value", e.found());
  }
  yaml::relocate(value, at);

  Node* cur = &root;
  std::string path;
  for (const Step& s : *steps) {
    if (!s.key.empty()) {
      if (cur->is_null()) {
        cur->kind = Node::Kind::Map;
        cur->at = at;
      }
      if (!cur->is_map())
        throw ProblemError(at.location(), join_path(path, s), "a mapping at " + (path.empty() ? "the top" : path),
                           yaml::found(*cur));
      yaml::Entry* e = cur->find(s.key);
      if (!e) {
        cur->entries.push_back(yaml::Entry{s.key, at, Node{}});
        e = &cur->entries.back();
        e->value.at = at;
      }
      cur = &e->value;
    } else {
      if (!cur->is_sequence())
        throw ProblemError(at.location(), join_path(path, s), "a list at " + path, yaml::found(*cur));
      if (s.index >= cur->items.size())
        throw ProblemError(at.location(), join_path(path, s),
                           "an index below " + std::to_string(cur->items.size()) + " (the length of " + path + ")",
                           std::to_string(s.index));
      cur = &cur->items[s.index];
    }
    path = join_path(path, s);
  }
  *cur = std::move(value);
}

// --- sections ----------------------------------------------------------------------------------

std::shared_ptr<const Model> read_model(const MapReader& top) {
  const std::vector<std::string> types = [] {
    std::vector<std::string> t;
    for (const ModelInfo& m : model_types()) t.push_back(m.type);
    return t;
  }();
  const std::string expected_type = "one of " + yaml::join_alternatives(types);
  const Node& node = top.require("model", "a mapping with type and params");
  const MapReader m(&node, "model", node.at);
  m.allow_only({"type", "params"});
  const Node& type_node = m.require("type", expected_type);
  const std::string type = yaml::to_string(type_node, "model.type");
  if (std::find(types.begin(), types.end(), type) == types.end()) {
    const std::string s = yaml::closest(type, types);
    yaml::fail(type_node, "model.type", expected_type, yaml::quote(type), s.empty() ? "" : "did you mean '" + s + "'?");
  }
  const MapReader params(m.find("params"), "model.params", type_node.at);
  std::shared_ptr<const Model> model;
  try {
    model = make_model(type, params, "model.type");
  } catch (const ProblemError& e) {
    if (!e.where().file.empty() || e.where().line != 0) throw;
    // The factory knew no position (its own checks, not a read through `params`).
    throw ProblemError(type_node.at.location(), e.key_path(), e.expected(), e.found());
  } catch (const std::invalid_argument& e) {
    yaml::fail(type_node, "model.type", "parameters the model accepts", e.what());
  }
  if (!model) yaml::fail(type_node, "model.type", "a model", "none built");
  params.finish();
  if (model->nx() < 1 || model->nu() < 0)
    yaml::fail(type_node, "model.type", "a model with nx >= 1 and nu >= 0",
               "nx " + std::to_string(model->nx()) + ", nu " + std::to_string(model->nu()));
  return model;
}

Horizon read_horizon(const MapReader& top, const Model& model) {
  const Node& node = top.require("horizon", "a mapping with N, dt and integrator");
  const MapReader h(&node, "horizon", node.at);
  h.allow_only({"N", "dt", "integrator"});
  Horizon out;
  out.N = static_cast<int>(yaml::to_integer(h.require("N", "an integer >= 1"), "horizon.N", 1, kMaxKnots));
  out.dt = yaml::to_number(h.require("dt", kDtRange.describe() + " (seconds)"), "horizon.dt", kDtRange);
  if (const Node* n = h.find("integrator")) {
    std::vector<std::string> names;
    for (std::string_view s : integrator_names()) names.emplace_back(s);
    const std::string name = yaml::to_string(*n, "horizon.integrator");
    const auto type = parse_integrator(name);
    if (!type) {
      const std::string s = yaml::closest(name, names);
      yaml::fail(*n, "horizon.integrator", "one of " + yaml::join_alternatives(names), yaml::quote(name),
                 s.empty() ? "" : "did you mean '" + s + "'?");
    }
    if (*type == IntegratorType::SemiImplicitEuler && model.nq() == 0)
      yaml::fail(*n, "horizon.integrator",
                 "an integrator the model supports (semi_implicit_euler needs a model with positions and velocities)",
                 "semi_implicit_euler with model '" + std::string(model.type()) + "'");
    out.integrator = *type;
  }
  return out;
}

std::vector<std::string> read_names(const MapReader& top, const char* key, std::size_t size, const char* size_name,
                                    std::vector<std::string> fallback) {
  const Node* n = top.find(key);
  if (!n) return fallback;
  return yaml::to_names(*n, key, size, size_name);
}

// Reports a failed SolverSettings/MpcSettings check at the field's position.
[[noreturn]] void settings_error(const MapReader& r, const Node* section, const detail::SettingIssue& issue) {
  const Node* n = section ? lookup(*section, issue.field) : nullptr;
  throw ProblemError(n ? n->at.location() : r.where().location(), r.key_path(issue.field), issue.expected,
                     n ? yaml::found(*n) : issue.found);
}

SolverSettings read_solver(const MapReader& top) {
  const Node* node = top.find("solver");
  const MapReader r(node, "solver", top.where());
  r.allow_only({"max_iter", "time_limit", "tol_stationarity", "tol_feasibility", "tol_complementarity", "linsys",
                "hessian", "globalization", "pcg_tol", "pcg_max_iter", "regularization", "mu_init", "verbose",
                "memory_limit"});
  SolverSettings s;
  const auto number = [&](const char* key, double& v) {
    if (const Node* n = r.find(key)) v = yaml::to_number(*n, r.key_path(key));
  };
  const auto integer = [&](const char* key, int& v) {
    if (const Node* n = r.find(key)) v = static_cast<int>(yaml::to_integer(*n, r.key_path(key), INT_MIN, INT_MAX));
  };
  const auto text = [&](const char* key, std::string& v) {
    if (const Node* n = r.find(key)) v = yaml::to_string(*n, r.key_path(key));
  };
  integer("max_iter", s.max_iter);
  number("time_limit", s.time_limit);
  number("tol_stationarity", s.tol_stationarity);
  number("tol_feasibility", s.tol_feasibility);
  number("tol_complementarity", s.tol_complementarity);
  text("linsys", s.linsys);
  text("hessian", s.hessian);
  text("globalization", s.globalization);
  number("pcg_tol", s.pcg_tol);
  integer("pcg_max_iter", s.pcg_max_iter);
  number("regularization", s.regularization);
  number("mu_init", s.mu_init);
  if (const Node* n = r.find("verbose")) s.verbose = yaml::to_bool(*n, r.key_path("verbose"));
  number("memory_limit", s.memory_limit);
  if (const auto issue = detail::check(s)) settings_error(r, node, *issue);
  return s;
}

MpcSettings read_mpc(const MapReader& top, int nx) {
  const Node* node = top.find("mpc");
  const MapReader r(node, "mpc", top.where());
  r.allow_only(
      {"control_rate", "duration", "iterations_per_step", "plant_params_scale", "disturbances", "noise_std", "seed"});
  MpcSettings s;
  const auto number = [&](const char* key, double& v) {
    if (const Node* n = r.find(key)) v = yaml::to_number(*n, r.key_path(key));
  };
  number("control_rate", s.control_rate);
  number("duration", s.duration);
  if (const Node* n = r.find("iterations_per_step"))
    s.iterations_per_step = static_cast<int>(yaml::to_integer(*n, r.key_path("iterations_per_step"), INT_MIN, INT_MAX));
  if (const Node* n = r.find("plant_params_scale"))
    s.plant_params_scale = yaml::to_vector(*n, r.key_path("plant_params_scale"), 0);
  if (const Node* n = r.find("disturbances"); n && !n->is_null()) {
    const std::string path = r.key_path("disturbances");
    if (!n->is_sequence()) yaml::fail(*n, path, "a list of {time, state_kick}");
    for (std::size_t i = 0; i < n->items.size(); ++i) {
      const MapReader d(&n->items[i], yaml::index_path(path, i), n->items[i].at);
      d.allow_only({"time", "state_kick"});
      Disturbance dist;
      dist.time = yaml::to_number(d.require("time", "a number >= 0 (seconds)"), d.key_path("time"));
      dist.state_kick = yaml::to_vector(d.require("state_kick", "a list of " + std::to_string(nx) + " numbers (nx)"),
                                        d.key_path("state_kick"), static_cast<std::size_t>(nx), {}, false, "nx");
      s.disturbances.push_back(std::move(dist));
    }
  }
  number("noise_std", s.noise_std);
  if (const Node* n = r.find("seed"))
    s.seed = static_cast<std::uint64_t>(yaml::to_integer(*n, r.key_path("seed"), 0, LLONG_MAX));
  if (const auto issue = detail::check(s)) settings_error(r, node, *issue);
  return s;
}

Problem build(const Node& root, const std::string& source) {
  if (root.is_null()) yaml::fail(root, "", "a mapping of problem keys", "an empty document");
  const MapReader top(&root, "", root.at);
  top.allow_only(kTopKeys);

  Problem p;
  p.source = source;
  p.name = yaml::to_name(top.require("name", "a string"), "name");
  if (const Node* n = top.find("description"); n && !n->is_null()) p.description = yaml::to_string(*n, "description");
  p.model = read_model(top);
  const int nx = p.model->nx(), nu = p.model->nu();
  p.horizon = read_horizon(top, *p.model);
  p.x0 = yaml::to_vector(top.require("x0", "a list of " + std::to_string(nx) + " numbers (nx)"), "x0",
                         static_cast<std::size_t>(nx), {}, false, "nx");
  p.state_names = read_names(top, "state_names", static_cast<std::size_t>(nx), "nx", p.model->state_names());
  p.control_names = read_names(top, "control_names", static_cast<std::size_t>(nu), "nu", p.model->control_names());
  p.costs = detail::read_costs(top.find("costs"), p.model);
  p.constraints = detail::read_constraints(top.find("constraints"), p.model);
  p.solver = read_solver(top);
  p.mpc = read_mpc(top, nx);
  p.validate();
  // Last: the guess is checked against the problem's sizes, names and constraint rows.
  if (const Node* n = top.find("initial_guess"); n && !n->is_null())
    p.initial_guess = read_initial_guess(yaml::resolve_file(*n, "initial_guess"), p);
  return p;
}

Problem load(Node root, Chain chain, const std::string& source, const fs::path& dir,
             const std::vector<std::string>& overrides) {
  root = resolve_extends(std::move(root), chain);
  for (const std::string& o : overrides) apply_override(root, o, dir);
  return build(root, source);
}

// Loading allocates in proportion to the file (weights keep their form, nothing is n x n unless
// written so), so running out of memory means a file too large for the machine: reported as an
// error that names it, never a bare std::bad_alloc.
template <class Name, class Load>
Problem allocation_boundary(const Name& name, Load&& load_it) {
  try {
    return load_it();
  } catch (const std::bad_alloc&) {
    throw ProblemError(SourceLocation{fs::path(name).string(), 0, 0}, "", "a problem file that fits in memory",
                       "an allocation that failed while loading it (std::bad_alloc)");
  }
}

}  // namespace

Problem load_problem(const fs::path& file, const std::vector<std::string>& overrides) {
  return allocation_boundary(file, [&] {
    const auto source = std::make_shared<const Source>(Source{file.string(), file.parent_path()});
    const std::string text = yaml::read_file(file, Where{source, 0, 0}, "");
    Chain chain{{identity(file)}, {file.string()}};
    return load(yaml::parse(text, source), std::move(chain), file.string(), source->dir, overrides);
  });
}

Problem load_problem_from_string(std::string_view text, const std::string& name, const fs::path& base_dir,
                                 const std::vector<std::string>& overrides) {
  return allocation_boundary(name, [&] {
    const auto source = std::make_shared<const Source>(Source{name, base_dir});
    Chain chain{{name}, {name}};
    return load(yaml::parse(text, source), std::move(chain), name, base_dir, overrides);
  });
}

}  // namespace knot::problems
