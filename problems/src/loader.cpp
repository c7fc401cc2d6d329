// The YAML problem-file loader: read -> resolve `extends` -> apply --set overrides -> validate and
// build. Every key is read here (or in loader_terms.cpp for costs and constraints) and nowhere else.
#include "knot/problems/loader.hpp"

#include <algorithm>
#include <climits>
#include <new>
#include <optional>
#include <stdexcept>

#include "knot/problems/registry.hpp"
#include "text.hpp"
#include "loader_expression.hpp"
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
    t.emplace_back("expression");
    return t;
  }();
  const std::string expected_type = "one of " + yaml::join_alternatives(types);
  const Node& node = top.require("model", "a mapping with type and params");
  // A model written as expressions has keys of its own (loader_expression.cpp).
  if (const yaml::Entry* t = node.is_map() ? node.find("type") : nullptr;
      t && t->value.is_scalar() && t->value.text == "expression")
    return detail::read_expression_model(node);
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

// A settings section's optional scalar keys: each read into its field when present, the field's
// default kept otherwise (range checks are the section's check()).
struct OptionalKeys {
  const MapReader& r;
  void number(const char* key, double& v) const {
    if (const Node* n = r.find(key)) v = yaml::to_number(*n, r.key_path(key));
  }
  void integer(const char* key, int& v) const {
    if (const Node* n = r.find(key)) v = static_cast<int>(yaml::to_integer(*n, r.key_path(key), INT_MIN, INT_MAX));
  }
  void text(const char* key, std::string& v) const {
    if (const Node* n = r.find(key)) v = yaml::to_string(*n, r.key_path(key));
  }
};

SolverSettings read_solver(const MapReader& top) {
  const Node* node = top.find("solver");
  const MapReader r(node, "solver", top.where());
  r.allow_only({"max_iter", "time_limit", "tol_stationarity", "tol_feasibility", "tol_complementarity", "linsys",
                "hessian", "globalization", "pcg_tol", "pcg_max_iter", "lq_forcing", "regularization", "mu_init", "verbose",
                "memory_limit", "threads"});
  SolverSettings s;
  const OptionalKeys keys{r};
  keys.integer("max_iter", s.max_iter);
  keys.number("time_limit", s.time_limit);
  keys.number("tol_stationarity", s.tol_stationarity);
  keys.number("tol_feasibility", s.tol_feasibility);
  keys.number("tol_complementarity", s.tol_complementarity);
  keys.text("linsys", s.linsys);
  keys.text("hessian", s.hessian);
  keys.text("globalization", s.globalization);
  keys.number("pcg_tol", s.pcg_tol);
  keys.integer("pcg_max_iter", s.pcg_max_iter);
  keys.number("lq_forcing", s.lq_forcing);
  keys.number("regularization", s.regularization);
  keys.number("mu_init", s.mu_init);
  if (const Node* n = r.find("verbose")) s.verbose = yaml::to_bool(*n, r.key_path("verbose"));
  keys.number("memory_limit", s.memory_limit);
  keys.integer("threads", s.threads);
  if (const auto issue = detail::check(s)) settings_error(r, node, *issue);
  return s;
}

// Forwards to a ParamReader and keeps the value of every number or list a factory read (its
// default when absent), so `knot check` can print a plant parameter beside the model's.
class RecordingReader final : public ParamReader {
 public:
  explicit RecordingReader(const ParamReader& inner) : inner_(inner) {}
  std::vector<std::pair<std::string, std::vector<double>>> values;

  bool has(std::string_view key) const override { return inner_.has(key); }
  double number(std::string_view key, double fallback, double lo, double hi) const override {
    const double v = inner_.number(key, fallback, lo, hi);
    keep(key, {v});
    return v;
  }
  int integer(std::string_view key, int fallback, int lo, int hi) const override {
    const int v = inner_.integer(key, fallback, lo, hi);
    keep(key, {static_cast<double>(v)});
    return v;
  }
  bool boolean(std::string_view key, bool fallback) const override { return inner_.boolean(key, fallback); }
  std::vector<double> vector(std::string_view key, std::vector<double> fallback, std::size_t size) const override {
    std::vector<double> v = inner_.vector(key, std::move(fallback), size);
    keep(key, v);
    return v;
  }
  std::vector<double> matrix(std::string_view key, int rows, int cols) const override {
    return inner_.matrix(key, rows, cols);
  }
  std::array<int, 2> shape(std::string_view key) const override { return inner_.shape(key); }
  std::string string(std::string_view key, std::string fallback) const override {
    return inner_.string(key, std::move(fallback));
  }
  std::string path(std::string_view key) const override { return inner_.path(key); }
  [[noreturn]] void fail(std::string_view key, std::string expected, std::string found) const override {
    inner_.fail(key, std::move(expected), std::move(found));
    throw std::logic_error("ParamReader::fail returned");
  }

  const std::vector<double>* find(std::string_view key) const {
    for (const auto& [k, v] : values)
      if (k == key) return &v;
    return nullptr;
  }

 private:
  void keep(std::string_view key, std::vector<double> v) const {
    auto& self = const_cast<RecordingReader&>(*this);
    self.values.emplace_back(std::string(key), std::move(v));
  }
  const ParamReader& inner_;
};

std::shared_ptr<const Model> build_model(std::string_view type, const ParamReader& params, const Node& type_node) {
  try {
    return make_model(type, params, "model.type");
  } catch (const ProblemError& e) {
    if (!e.where().file.empty() || e.where().line != 0) throw;
    throw ProblemError(type_node.at.location(), e.key_path(), e.expected(), e.found());
  } catch (const std::invalid_argument& e) {
    yaml::fail(type_node, "model.type", "parameters the model accepts", e.what());
  }
}

// mpc.plant: {integrator, substeps, params}. params are merged onto model.params and the model is
// built again for the plant, so a parameter the model does not know is reported as model.params
// would report it (position, did-you-mean).
void read_plant(const MapReader& mpc, const MapReader& top, const Model& model, MpcSettings& s) {
  const Node* node = mpc.find("plant");
  if (!node || node->is_null()) return;
  const MapReader r(node, mpc.key_path("plant"), node->at);
  r.allow_only({"integrator", "substeps", "params"});
  if (const Node* n = r.find("integrator")) {
    std::vector<std::string> names;
    for (std::string_view t : integrator_names()) names.emplace_back(t);
    const std::string name = yaml::to_string(*n, r.key_path("integrator"));
    const auto type = parse_integrator(name);
    if (!type) {
      const std::string near = yaml::closest(name, names);
      yaml::fail(*n, r.key_path("integrator"), "one of " + yaml::join_alternatives(names), yaml::quote(name),
                 near.empty() ? "" : "did you mean '" + near + "'?");
    }
    if (*type == IntegratorType::SemiImplicitEuler && model.nq() == 0)
      yaml::fail(*n, r.key_path("integrator"),
                 "an integrator the model supports (semi_implicit_euler needs a model with positions and velocities)",
                 "semi_implicit_euler with model '" + std::string(model.type()) + "'");
    s.plant_integrator = *type;
  }
  if (const Node* n = r.find("substeps"))
    s.plant_substeps = static_cast<int>(yaml::to_integer(*n, r.key_path("substeps"), 1, 100000));
  const Node* params = r.find("params");
  if (!params || params->is_null()) return;
  const std::string path = r.key_path("params");
  if (!params->is_map()) yaml::fail(*params, path, "a mapping of model parameters");
  if (params->entries.empty()) return;

  const Node& model_node = *top.find("model");
  const yaml::Entry* type_entry = model_node.find("type");
  const yaml::Entry* model_params = model_node.find("params");
  Node merged = model_params ? model_params->value : Node{};
  if (!merged.is_map()) {
    merged = Node{};
    merged.kind = Node::Kind::Map;
    merged.at = params->at;
  }
  yaml::merge_into(merged, Node(*params));
  const std::string type(model.type());
  if (type == "expression") {
    // The model mapping again with the merged parameters: an unknown name is reported as in
    // model.params, and every expression is compiled with the plant's values.
    Node plant_node = model_node;
    if (yaml::Entry* e = plant_node.find("params"))
      e->value = merged;
    else
      plant_node.entries.push_back(yaml::Entry{"params", params->at, merged});
    for (const yaml::Entry& e : params->entries)
      if (!model_params || !model_params->value.is_map() || !model_params->value.find(e.key)) {
        std::vector<std::string> names;
        if (model_params && model_params->value.is_map())
          for (const yaml::Entry& k : model_params->value.entries) names.push_back(k.key);
        const std::string near = yaml::closest(e.key, names);
        throw ProblemError(e.key_at.location(), path + "." + e.key, "a parameter of the expression model",
                           yaml::quote(e.key), near.empty() ? "" : "did you mean '" + near + "'?");
      }
    s.plant_model = detail::read_expression_model(plant_node);
    const ExprSymbols* ms = expression_symbols(model);
    const ExprSymbols* ps = expression_symbols(*s.plant_model);
    for (const yaml::Entry& e : params->entries) {
      PlantParam pp;
      pp.name = e.key;
      for (const ExprParam& q : ms->params)
        if (q.name == e.key) pp.model_value = {q.value};
      for (const ExprParam& q : ps->params)
        if (q.name == e.key) pp.plant_value = {q.value};
      s.plant_params.push_back(std::move(pp));
    }
    return;
  }
  const MapReader plant_reader(&merged, path, params->at);
  RecordingReader plant_values(plant_reader);
  s.plant_model = build_model(type, plant_values, type_entry->value);
  plant_reader.finish();
  if (!s.plant_model || s.plant_model->nx() != model.nx() || s.plant_model->nu() != model.nu())
    yaml::fail(*params, path, "parameters that keep the model's nx and nu", "a plant of another size");

  const MapReader model_reader(model_params ? &model_params->value : nullptr, "model.params", type_entry->value.at);
  RecordingReader model_values(model_reader);
  build_model(type, model_values, type_entry->value);
  for (const yaml::Entry& e : params->entries) {
    PlantParam pp;
    pp.name = e.key;
    if (const auto* v = model_values.find(e.key)) pp.model_value = *v;
    if (const auto* v = plant_values.find(e.key)) pp.plant_value = *v;
    s.plant_params.push_back(std::move(pp));
  }
}

// A noise sigma: one number for every state, or a list of nx.
std::vector<double> read_noise(const MapReader& r, const char* key, int nx) {
  const Node* n = r.find(key);
  if (!n || n->is_null()) return {};
  const std::string path = r.key_path(key);
  if (n->is_sequence()) return yaml::to_vector(*n, path, static_cast<std::size_t>(nx), Range::nonnegative(), false, "nx");
  if (!n->is_scalar()) yaml::fail(*n, path, "a number >= 0 or a list of " + std::to_string(nx) + " numbers (nx)");
  const double sigma = yaml::to_number(*n, path, Range::nonnegative());
  if (sigma == 0) return {};
  return std::vector<double>(static_cast<std::size_t>(nx), sigma);
}

// mpc.reference: {cost, file, columns, time_column}.
MpcReference read_mpc_reference(const MapReader& mpc, const Problem& p) {
  const Node& node = *mpc.find("reference");
  const std::string path = mpc.key_path("reference");
  if (!node.is_map()) yaml::fail(node, path, "a mapping {cost, file, columns, time_column}");
  const MapReader r(&node, path, node.at);
  r.allow_only({"cost", "file", "columns", "time_column"});
  std::vector<std::string> names;
  for (const auto& c : p.costs)
    if (c->reference()) names.push_back(c->info().name);
  const std::string expected =
      names.empty() ? "the name of a cost with a reference (this problem has none)"
                    : "the name of a cost with a reference: " + yaml::join_alternatives(names);
  const Node& cost_node = r.require("cost", expected);
  MpcReference out;
  out.cost = yaml::to_string(cost_node, r.key_path("cost"));
  const CostTerm* term = nullptr;
  for (const auto& c : p.costs)
    if (c->reference() && c->info().name == out.cost) term = c.get();
  if (!term) {
    const std::string near = yaml::closest(out.cost, names);
    yaml::fail(cost_node, r.key_path("cost"), expected, yaml::quote(out.cost),
               near.empty() ? "" : "did you mean '" + near + "'?");
  }
  out.dim = term->reference()->dim;
  const Node& file_node = r.require("file", "a path to a table of numbers (CSV)");
  const std::filesystem::path file = yaml::resolve_file(file_node, r.key_path("file"));
  out.source = file.string();
  const detail::NumberTable t = detail::read_number_table(file, file_node, r.key_path("file"));
  const long long width = static_cast<long long>(t.rows[0].size());
  long long time_column = -1;
  const Node* tc = r.find("time_column");
  if (tc) time_column = yaml::to_integer(*tc, r.key_path("time_column"), 0, width - 1);
  std::vector<long long> columns;
  if (const Node* cols = r.find("columns")) {
    if (!cols->is_sequence() || cols->items.size() != static_cast<std::size_t>(out.dim))
      yaml::fail(*cols, r.key_path("columns"), "a list of " + std::to_string(out.dim) + " column indices");
    for (std::size_t i = 0; i < cols->items.size(); ++i)
      columns.push_back(yaml::to_integer(cols->items[i], yaml::index_path(r.key_path("columns"), i), 0, width - 1));
  } else {
    for (long long c = 0; c < width; ++c)
      if (c != time_column) columns.push_back(c);
    if (columns.size() != static_cast<std::size_t>(out.dim))
      yaml::fail(file_node, r.key_path("file"),
                 "a table of " + std::to_string(out.dim) + " value columns, or `columns:` to pick them",
                 std::to_string(columns.size()) + " in " + file.string());
  }
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    for (long long c : columns) out.values.push_back(t.rows[i][static_cast<std::size_t>(c)]);
    if (time_column >= 0) {
      const double time = t.rows[i][static_cast<std::size_t>(time_column)];
      if (i > 0 && !(time > out.times.back()))
        throw ProblemError(SourceLocation{file.string(), t.lines[i], 1}, r.key_path("time_column"),
                           "times that increase row by row", yaml::quote(text::format_number(time)) + " after " +
                                                                 text::format_number(out.times.back()));
      out.times.push_back(time);
    }
  }
  return out;
}

MpcSettings read_mpc(const MapReader& top, const Problem& p) {
  const int nx = p.nx();
  const Node* node = top.find("mpc");
  const MapReader r(node, "mpc", top.where());
  r.allow_only({"mode", "iterations_per_step", "time_limit", "control_rate", "duration", "steps", "warm_start",
                "plant", "process_noise", "measurement_noise", "disturbances", "seed", "reference"});
  MpcSettings s;
  const OptionalKeys keys{r};
  keys.text("mode", s.mode);
  keys.integer("iterations_per_step", s.iterations_per_step);
  keys.number("time_limit", s.time_limit);
  keys.number("control_rate", s.control_rate);
  // A null duration or steps reads as absent, so `--set mpc.steps=null` lets a duration through.
  const Node* duration = r.find("duration");
  if (duration && !duration->is_null()) s.duration = yaml::to_number(*duration, r.key_path("duration"));
  if (const Node* n = r.find("steps"); n && !n->is_null()) {
    if (duration && !duration->is_null())
      yaml::fail(*n, r.key_path("steps"), "either mpc.duration or mpc.steps", "both mpc.duration and mpc.steps");
    s.steps = static_cast<int>(yaml::to_integer(*n, r.key_path("steps"), 1, 1000000000));
  }
  keys.text("warm_start", s.warm_start);
  read_plant(r, top, *p.model, s);
  s.process_noise = read_noise(r, "process_noise", nx);
  s.measurement_noise = read_noise(r, "measurement_noise", nx);
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
  if (const Node* n = r.find("seed"))
    s.seed = static_cast<std::uint64_t>(yaml::to_integer(*n, r.key_path("seed"), 0, LLONG_MAX));
  if (const Node* n = r.find("reference"); n && !n->is_null()) s.references.push_back(read_mpc_reference(r, p));
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
  p.mpc = read_mpc(top, p);
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
