#include "loader_terms.hpp"
#include "table_cells.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

#include "knot/problems/error.hpp"
#include "loader_expression.hpp"
#include "yaml_reader.hpp"

namespace knot::problems::detail {
namespace {

using yaml::MapReader;
using yaml::Node;
using yaml::Range;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Relative tolerance of the symmetry and semidefiniteness checks on a full weight matrix: rounding
// of numbers as written, not a modelling slack.
constexpr double kMatrixTol = 1e-12;

std::string size_name_of(int dim, int nx, int nu) {
  if (dim == nx) return "nx";
  if (dim == nu) return "nu";
  return {};
}

std::vector<std::string> to_strings(std::initializer_list<const char*> words) {
  return std::vector<std::string>(words.begin(), words.end());
}

// The term's type, one of `types`, reported with a suggestion when misspelled.
std::string read_type(const MapReader& r, const std::vector<std::string>& types, const Node*& type_node) {
  const std::string expected = "one of " + yaml::join_alternatives(types);
  type_node = &r.require("type", expected);
  const std::string type = yaml::to_string(*type_node, r.key_path("type"));
  if (std::find(types.begin(), types.end(), type) == types.end()) {
    const std::string s = yaml::closest(type, types);
    yaml::fail(*type_node, r.key_path("type"), expected, yaml::quote(type),
               s.empty() ? std::string() : "did you mean '" + s + "'?");
  }
  return type;
}

std::string read_name(const MapReader& r, const std::string& type, std::size_t index, std::vector<std::string>& taken,
                      const char* section) {
  const Node* n = r.find("name");
  std::string name = n ? yaml::to_name(*n, r.key_path("name")) : type + "_" + std::to_string(index);
  const auto it = std::find(taken.begin(), taken.end(), name);
  if (it != taken.end()) {
    const Node& at = n ? *n : *r.find("type");
    yaml::fail(at, r.key_path("name"), std::string("a name unique among the ") + section, yaml::quote(name),
               "also the name of " + std::string(section) + "[" + std::to_string(it - taken.begin()) + "]");
  }
  taken.push_back(name);
  return name;
}

// `stage`: all | running | terminal. A term that reads the control has none at the terminal knot.
StageSet read_stage(const MapReader& r, StageSet fallback, bool uses_control) {
  const Node* n = r.find("stage");
  if (!n) return fallback;
  const std::string path = r.key_path("stage");
  const std::string s = yaml::to_string(*n, path);
  if (s == "all") return StageSet::All;
  if (s == "running") return StageSet::Running;
  if (s == "terminal") {
    if (uses_control)
      yaml::fail(*n, path, "all or running (a control term has no control at the terminal knot)", "terminal");
    return StageSet::Terminal;
  }
  const std::string hint = yaml::closest(s, to_strings({"all", "running", "terminal"}));
  yaml::fail(*n, path, "all, running or terminal", yaml::quote(s), hint.empty() ? "" : "did you mean '" + hint + "'?");
}

// `frame`: a frame of the model's kinematics by name; the model's default (a manipulator's
// ee_frame) when absent.
int read_frame(const MapReader& r, const Kinematics& kin) {
  const Node* n = r.find("frame");
  if (kin.frame_count() < 1) yaml::fail(n ? *n : *r.find("type"), r.key_path("frame"), "a model with frames", "none");
  if (!n) return kin.default_frame();
  const std::string name = yaml::to_string(*n, r.key_path("frame"));
  if (auto index = kin.frame_index(name)) return *index;
  std::vector<std::string> names;
  for (int i = 0; i < kin.frame_count(); ++i) names.push_back(kin.frame_name(i));
  const std::string s = yaml::closest(name, names);
  const std::string expected =
      names.size() <= 12 ? "a frame of the model (" + yaml::join_alternatives(names) + ")" : "a frame of the model";
  yaml::fail(*n, r.key_path("frame"), expected, yaml::quote(name), s.empty() ? "" : "did you mean '" + s + "'?");
}

std::array<double, 3> read_vec3(const MapReader& r, const char* key, std::array<double, 3> fallback) {
  const Node* n = r.find(key);
  if (!n) return fallback;
  const std::vector<double> v = yaml::to_vector(*n, r.key_path(key), 3);
  return {v[0], v[1], v[2]};
}

const Kinematics& require_kinematics(const Model& model, const Node& type_node, const std::string& path,
                                     const std::string& type) {
  if (const Kinematics* kin = model.kinematics()) return *kin;
  yaml::fail(type_node, path, "a term the model supports (" + type + " needs a model with kinematics)",
             "model '" + std::string(model.type()) + "'");
}

// --- weights -----------------------------------------------------------------------------------

// A number (times the identity), a list of dim numbers (the diagonal) or dim rows of dim numbers
// (dense, symmetric positive semidefinite), kept in that form. The Weight factory checks it; the
// symmetry is checked here first to name the offending entry.
Weight read_weights_checked(const Node& n, const std::string& path, int dim, std::string_view size_name) {
  const std::size_t d = static_cast<std::size_t>(dim);
  if (n.is_scalar()) return Weight::scalar(dim, yaml::to_number(n, path, Range::nonnegative()));
  const std::string dims = std::to_string(dim);
  const std::string expected = "a number >= 0, a list of " + dims + " numbers >= 0" +
                               (size_name.empty() ? "" : " (" + std::string(size_name) + ")") + " or " + dims +
                               " rows of " + dims + " numbers";
  if (!n.is_sequence() || n.items.empty()) yaml::fail(n, path, expected);
  if (!n.items[0].is_sequence()) {
    if (n.items.size() != d) yaml::fail(n, path, expected);
    return Weight::diagonal(yaml::to_vector(n, path, d, Range::nonnegative()));
  }
  std::vector<double> W = yaml::to_matrix(n, path, dim, dim);
  double scale = 1.0;
  for (double v : W) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = i + 1; j < d; ++j) {
      const double wij = W[i + j * d], wji = W[j + i * d];
      if (std::abs(wij - wji) > kMatrixTol * scale) {
        const std::string ij = yaml::index_path(yaml::index_path(path, i), j);
        yaml::fail(n.items[i].items[j], ij,
                   "a symmetric matrix (equal to " + yaml::index_path(yaml::index_path(path, j), i) + " = " +
                       yaml::format_number(wji) + ")",
                   yaml::format_number(wij));
      }
    }
  return Weight::dense(dim, std::move(W));
}

Weight read_weights(const Node& n, const std::string& path, int dim, std::string_view size_name) {
  try {
    return read_weights_checked(n, path, dim, size_name);
  } catch (const WeightError& e) {
    yaml::fail(n, path, e.expected(), e.found());
  }
}

// --- references --------------------------------------------------------------------------------


struct Table {
  std::string text;                                         // the file, which the cells view
  std::vector<std::string> header;                          // the header row's fields; empty when none
  std::unordered_map<std::string_view, long long> by_name;  // header field -> its first column
  std::vector<std::vector<Cell>> rows;                      // as written; numbers are read per selected column
  std::vector<int> lines;                                   // line of each row in the file
};

// Fields separated by commas or whitespace, one row per line; '#' starts a comment; one line with
// a field that is not a number is allowed before the first row (a header, as trajectory.csv has).
// Fields are kept as text, so columns nobody selects may hold anything (a status word).
// Fills `t` in place: its cells view t.text, which a move could relocate (short-string storage).
void read_table(const std::filesystem::path& file, const Node& file_node, const std::string& path, Table& t) {
  t.text = yaml::read_file(file, file_node.at, path);
  const std::string& text = t.text;
  const std::string name = file.string();
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
    bool blank = true;
    for (char c : line) blank = blank && is_space(c);
    if (blank) continue;
    std::vector<Cell> cells = split_fields(line);
    bool words = false;
    for (const Cell& c : cells)
      words = words || (!c.text.empty() && yaml::parse_number(c.text).cls == yaml::NumberClass::NotANumber);
    if (words && t.header.empty() && t.rows.empty()) {
      for (const Cell& c : cells) t.header.emplace_back(c.text);
      for (std::size_t c = cells.size(); c-- > 0;) t.by_name[cells[c].text] = static_cast<long long>(c);
      continue;
    }
    if (!t.rows.empty() && cells.size() != t.rows[0].size())
      throw ProblemError(
          SourceLocation{name, line_no, 1}, path,
          std::to_string(t.rows[0].size()) + " values per row (as on line " + std::to_string(t.lines[0]) + ")",
          std::to_string(cells.size()));
    t.rows.push_back(std::move(cells));
    t.lines.push_back(line_no);
  }
  if (t.rows.empty()) throw ProblemError(SourceLocation{name, 0, 0}, path, "at least one row of numbers", "none");
}

// One `columns` entry: a 0-based index, or a name from the table's header row.
long long read_column(const Node& n, const std::string& path, const Table& t, const std::string& file) {
  long long index = 0;
  if (n.is_scalar() && n.plain && yaml::parse_integer(n.text, index)) return yaml::to_integer(n, path, 0, INT_MAX);
  const std::string name = yaml::to_string(n, path);
  if (t.header.empty())
    yaml::fail(n, path, "a column index (" + file + " has no header row to name columns by)", yaml::quote(name));
  if (const auto it = t.by_name.find(name); it != t.by_name.end()) return it->second;
  const std::string s = yaml::closest(name, t.header);
  yaml::fail(n, path, "a column index or a name in the header of " + file, yaml::quote(name),
             s.empty() ? "" : "did you mean '" + s + "'?");
}

// A constant vector, or {file: table.csv, columns: [...]} with one row per knot from knot 0.
// Empty cells (trajectory.csv leaves the terminal knot's controls empty) may only end the table:
// the rows from the first one with an empty selected cell on are dropped when every one of them has
// one, and are an error otherwise.
Reference read_reference(const MapReader& r, int dim, std::string_view size_name) {
  const std::string path = r.key_path("reference");
  const Node* n = r.find("reference");
  if (!n) return Reference::constant(std::vector<double>(static_cast<std::size_t>(dim), 0.0));
  if (n->is_sequence())
    return Reference::constant(yaml::to_vector(*n, path, static_cast<std::size_t>(dim), {}, false, size_name));
  if (!n->is_map())
    yaml::fail(*n, path, "a list of " + std::to_string(dim) + " numbers or {file: table.csv, columns: [...]}");
  MapReader m(n, path, n->at);
  m.allow_only(to_strings({"file", "columns"}));
  const Node& file_node = m.require("file", "a path to a table of numbers (CSV)");
  const std::filesystem::path file = yaml::resolve_file(file_node, m.key_path("file"));
  const Node* cols = m.find("columns");
  if (cols && (!cols->is_sequence() || cols->items.size() != static_cast<std::size_t>(dim)))
    yaml::fail(*cols, m.key_path("columns"), "a list of " + std::to_string(dim) + " column indices or header names");
  Table t;
  read_table(file, file_node, m.key_path("file"), t);
  const std::size_t width = t.rows[0].size();
  std::vector<long long> columns;
  if (!cols) {
    if (width != static_cast<std::size_t>(dim))
      yaml::fail(file_node, m.key_path("file"),
                 "a table of " + std::to_string(dim) + " columns, or `columns:` to pick them",
                 std::to_string(width) + " columns in " + file.string());
    for (int i = 0; i < dim; ++i) columns.push_back(i);
  } else {
    for (std::size_t i = 0; i < cols->items.size(); ++i) {
      const std::string cpath = yaml::index_path(m.key_path("columns"), i);
      columns.push_back(read_column(cols->items[i], cpath, t, file.string()));
      if (columns[i] >= static_cast<long long>(width))
        yaml::fail(cols->items[i], cpath, "a column index below " + std::to_string(width) + " (the table's width)",
                   std::to_string(columns[i]));
    }
  }
  const auto column_name = [&](long long c) {
    const auto k = static_cast<std::size_t>(c);
    return k < t.header.size() ? "column '" + t.header[k] + "'" : "column " + std::to_string(c);
  };
  // The first row with an empty selected cell, and that cell.
  std::size_t end = t.rows.size();
  const Cell* first_empty = nullptr;
  long long first_empty_column = 0;
  for (std::size_t k = 0; k < t.rows.size(); ++k) {
    const Cell* empty = nullptr;
    long long empty_column = 0;
    for (long long c : columns)
      if (!empty && t.rows[k][static_cast<std::size_t>(c)].text.empty()) {
        empty = &t.rows[k][static_cast<std::size_t>(c)];
        empty_column = c;
      }
    if (empty && !first_empty) {
      end = k;
      first_empty = empty;
      first_empty_column = empty_column;
    }
    if (!empty && first_empty)
      throw ProblemError(SourceLocation{file.string(), t.lines[end], first_empty->column}, m.key_path("file"),
                         "a number in " + column_name(first_empty_column) +
                             " (empty cells only in the last rows, where the table then ends)",
                         "an empty cell");
  }
  if (end == 0)
    throw ProblemError(SourceLocation{file.string(), t.lines[0], first_empty->column}, m.key_path("file"),
                       "a number in " + column_name(first_empty_column) + " (the table's first row)", "an empty cell");
  std::vector<double> values;
  values.reserve(end * columns.size());
  for (std::size_t k = 0; k < end; ++k)
    for (long long c : columns) {
      const Cell& cell = t.rows[k][static_cast<std::size_t>(c)];
      const yaml::Number x = yaml::parse_number(cell.text);
      if (x.cls != yaml::NumberClass::Finite)
        throw ProblemError(SourceLocation{file.string(), t.lines[k], cell.column}, m.key_path("file"),
                           "a finite number in " + column_name(c), yaml::quote(cell.text));
      values.push_back(x.value);
    }
  return Reference::per_knot(dim, std::move(values));
}

// --- costs -------------------------------------------------------------------------------------

const std::vector<std::string> kCostTypes =
    to_strings({"state", "control", "end_effector", "control_rate", "residual"});

// type: residual, {residual: [expressions], weights, stage, scale_by_dt}.
std::shared_ptr<CostTerm> read_residual_cost(const MapReader& r, const Node& entry, const std::string& path,
                                             std::size_t index, const Model& model, std::vector<std::string>& names) {
  r.allow_only(to_strings({"name", "type", "residual", "weights", "stage", "scale_by_dt"}));
  TermInfo info;
  info.name = read_name(r, "residual", index, names, "costs");
  const auto res = read_term_expressions(r, "residual", model);
  info.stages = read_stage(r, res->uses_control() ? StageSet::Running : StageSet::All, res->uses_control());
  if (const Node* n = r.find("scale_by_dt")) info.scale_by_dt = yaml::to_bool(*n, r.key_path("scale_by_dt"));
  const int dim = res->dim();
  const std::string weights_expected =
      "weights: a number, a list of " + std::to_string(dim) + " numbers or " + std::to_string(dim) + " rows";
  Weight W = read_weights(r.require("weights", weights_expected), r.key_path("weights"), dim, "");
  try {
    return std::make_shared<ResidualCost>(info, res, std::move(W));
  } catch (const std::invalid_argument& e) {
    yaml::fail(entry, path, "a cost term the model supports", e.what());
  }
}

std::shared_ptr<CostTerm> read_cost(const Node& entry, const std::string& path, std::size_t index,
                                    const std::shared_ptr<const Model>& model, std::vector<std::string>& names) {
  const MapReader r(&entry, path, entry.at);
  const Node* type_node = nullptr;
  const std::string type = read_type(r, kCostTypes, type_node);
  if (type == "residual") return read_residual_cost(r, entry, path, index, *model, names);
  const bool state = type == "state", control = type == "control", ee = type == "end_effector";
  std::vector<std::string> known = to_strings({"name", "type", "weights", "stage", "scale_by_dt"});
  if (type != "control_rate") known.push_back("reference");
  if (ee) known.insert(known.end(), {"frame", "offset"});
  r.allow_only(known);

  const int nx = model->nx(), nu = model->nu();
  const bool uses_control = !state && !ee;
  TermInfo info;
  info.name = read_name(r, type, index, names, "costs");
  info.stages = read_stage(r, uses_control ? StageSet::Running : StageSet::All, uses_control);
  if (const Node* n = r.find("scale_by_dt")) info.scale_by_dt = yaml::to_bool(*n, r.key_path("scale_by_dt"));

  const int dim = state ? nx : ee ? 3 : nu;
  const std::string size_name = ee ? std::string() : size_name_of(dim, nx, nu);
  const Kinematics* kin = ee ? &require_kinematics(*model, *type_node, r.key_path("type"), type) : nullptr;
  const int frame = kin ? read_frame(r, *kin) : 0;
  const std::array<double, 3> offset = ee ? read_vec3(r, "offset", {0, 0, 0}) : std::array<double, 3>{};
  const std::string weights_expected =
      "weights: a number, a list of " + std::to_string(dim) + " numbers or " + std::to_string(dim) + " rows";
  Weight W = read_weights(r.require("weights", weights_expected), r.key_path("weights"), dim, size_name);

  try {
    if (type == "control_rate") return std::make_shared<ControlRateCost>(info, nu, std::move(W));
    Reference ref = read_reference(r, dim, size_name);
    if (state) return std::make_shared<StateCost>(info, nx, std::move(W), std::move(ref));
    if (control) return std::make_shared<ControlCost>(info, nu, std::move(W), std::move(ref));
    return std::make_shared<EndEffectorCost>(info, model, frame, offset, std::move(W), std::move(ref));
  } catch (const std::invalid_argument& e) {
    yaml::fail(entry, path, "a cost term the model supports", e.what());
  }
}

// --- constraints -------------------------------------------------------------------------------

const std::vector<std::string> kConstraintTypes =
    to_strings({"control_box", "state_box", "circle_obstacle", "end_effector_height", "end_effector_box",
                "state_equality", "model_limits", "expression"});

// lower and upper, `size` entries each, +-.inf allowed; at least one given; lower <= upper.
std::pair<std::vector<double>, std::vector<double>> read_bounds(const MapReader& r, std::size_t size,
                                                                std::string_view size_name) {
  const Node* lo = r.find("lower");
  const Node* hi = r.find("upper");
  if (!lo && !hi) throw ProblemError(r.where().location(), r.key_path("lower"), "lower and/or upper bounds", "neither");
  std::vector<double> lower(size, -kInf), upper(size, kInf);
  if (lo) lower = yaml::to_vector(*lo, r.key_path("lower"), size, {}, true, size_name);
  if (hi) upper = yaml::to_vector(*hi, r.key_path("upper"), size, {}, true, size_name);
  for (std::size_t i = 0; i < size; ++i) {
    if (lo && lower[i] == kInf)
      yaml::fail(lo->items[i], yaml::index_path(r.key_path("lower"), i), "a number or -.inf", ".inf");
    if (hi && upper[i] == -kInf)
      yaml::fail(hi->items[i], yaml::index_path(r.key_path("upper"), i), "a number or .inf", "-.inf");
    if (lower[i] > upper[i]) {
      const Node& at = hi ? hi->items[i] : lo->items[i];
      yaml::fail(at, yaml::index_path(r.key_path("upper"), i),
                 "upper >= lower (lower[" + std::to_string(i) + "] = " + yaml::format_number(lower[i]) + ")",
                 yaml::format_number(upper[i]));
    }
  }
  return {std::move(lower), std::move(upper)};
}

// `indices`: distinct state indices; all of them when absent.
std::vector<int> read_indices(const MapReader& r, int nx) {
  const Node* n = r.find("indices");
  std::vector<int> out;
  if (!n) {
    for (int i = 0; i < nx; ++i) out.push_back(i);
    return out;
  }
  const std::string path = r.key_path("indices");
  if (!n->is_sequence() || n->items.empty() || n->items.size() > static_cast<std::size_t>(nx))
    yaml::fail(*n, path, "a list of 1 to " + std::to_string(nx) + " distinct state indices");
  for (std::size_t i = 0; i < n->items.size(); ++i) {
    const int k = static_cast<int>(yaml::to_integer(n->items[i], yaml::index_path(path, i), 0, nx - 1));
    if (std::find(out.begin(), out.end(), k) != out.end())
      yaml::fail(n->items[i], yaml::index_path(path, i), "distinct state indices", std::to_string(k) + " again");
    out.push_back(k);
  }
  return out;
}

void read_model_limits(const MapReader& r, const Node& type_node, const std::string& name, const Model& model,
                       std::vector<std::shared_ptr<ConstraintTerm>>& out) {
  const bool position = r.find("position") ? yaml::to_bool(*r.find("position"), r.key_path("position")) : true;
  const bool velocity = r.find("velocity") ? yaml::to_bool(*r.find("velocity"), r.key_path("velocity")) : true;
  const bool effort = r.find("effort") ? yaml::to_bool(*r.find("effort"), r.key_path("effort")) : true;
  const ModelLimits lim = model.limits();
  const int nx = model.nx(), nu = model.nu(), nq = model.nq();
  const auto sized = [](const std::vector<double>& v, int n) { return v.size() == static_cast<std::size_t>(n); };
  const bool has_x = sized(lim.x_lower, nx) && sized(lim.x_upper, nx);
  const bool has_u = sized(lim.u_lower, nu) && sized(lim.u_upper, nu);

  // Positions are the first nq states; a model without that split has only "position" limits.
  std::vector<int> index;
  std::vector<double> lower, upper;
  for (int i = 0; has_x && i < nx; ++i) {
    const bool is_velocity = nq > 0 && i >= nq;
    if (!(is_velocity ? velocity : position)) continue;
    const double lo = lim.x_lower[static_cast<std::size_t>(i)], hi = lim.x_upper[static_cast<std::size_t>(i)];
    if (std::isfinite(lo) || std::isfinite(hi)) {
      index.push_back(i);
      lower.push_back(lo);
      upper.push_back(hi);
    }
  }
  bool control_term = false;
  for (int i = 0; effort && has_u && i < nu; ++i)
    control_term = control_term || std::isfinite(lim.u_lower[static_cast<std::size_t>(i)]) ||
                   std::isfinite(lim.u_upper[static_cast<std::size_t>(i)]);
  if (index.empty() && !control_term)
    yaml::fail(type_node, r.key_path("type"),
               "a model with limits for the selected groups (position, velocity, effort)",
               "model '" + std::string(model.type()) + "' declares none");

  const Node* stage_node = r.find("stage");
  const StageSet state_stage = read_stage(r, StageSet::All, false);
  const StageSet control_stage = stage_node ? read_stage(r, StageSet::Running, control_term) : StageSet::Running;
  if (!index.empty())
    out.push_back(std::make_shared<StateBox>(TermInfo{name + "_state", state_stage, false}, nx, std::move(index),
                                             std::move(lower), std::move(upper)));
  if (control_term)
    out.push_back(
        std::make_shared<ControlBox>(TermInfo{name + "_control", control_stage, false}, nu, lim.u_lower, lim.u_upper));
}

void read_constraint(const Node& entry, const std::string& path, std::size_t index,
                     const std::shared_ptr<const Model>& model, std::vector<std::string>& names,
                     std::vector<std::shared_ptr<ConstraintTerm>>& out) {
  const MapReader r(&entry, path, entry.at);
  const Node* type_node = nullptr;
  const std::string type = read_type(r, kConstraintTypes, type_node);
  std::vector<std::string> known = to_strings({"name", "type", "stage"});
  if (type == "control_box") known.insert(known.end(), {"lower", "upper"});
  if (type == "state_box") known.insert(known.end(), {"indices", "lower", "upper"});
  if (type == "circle_obstacle") known.insert(known.end(), {"center", "radius"});
  if (type == "end_effector_height") known.insert(known.end(), {"frame", "offset", "min"});
  if (type == "end_effector_box") known.insert(known.end(), {"frame", "offset", "lower", "upper"});
  if (type == "state_equality") known.insert(known.end(), {"indices", "target"});
  if (type == "model_limits") known.insert(known.end(), {"position", "velocity", "effort"});
  if (type == "expression") known.insert(known.end(), {"expression", "lower", "upper"});
  r.allow_only(known);

  const int nx = model->nx(), nu = model->nu();
  const std::string name = read_name(r, type, index, names, "constraints");
  if (type == "model_limits") return read_model_limits(r, *type_node, name, *model, out);
  if (type == "expression") {
    const auto g = read_term_expressions(r, "expression", *model);
    TermInfo info;
    info.name = name;
    info.stages = read_stage(r, g->uses_control() ? StageSet::Running : StageSet::All, g->uses_control());
    auto [lower, upper] = read_bounds(r, static_cast<std::size_t>(g->dim()), "");
    try {
      out.push_back(std::make_shared<ExpressionConstraint>(info, g, std::move(lower), std::move(upper)));
    } catch (const std::invalid_argument& e) {
      yaml::fail(entry, path, "a constraint term the model supports", e.what());
    }
    return;
  }

  const bool control = type == "control_box";
  TermInfo info;
  info.name = name;
  info.stages = read_stage(r,
                           control                    ? StageSet::Running
                           : type == "state_equality" ? StageSet::Terminal
                                                      : StageSet::All,
                           control);
  try {
    if (control) {
      auto [lower, upper] = read_bounds(r, static_cast<std::size_t>(nu), "nu");
      out.push_back(std::make_shared<ControlBox>(info, nu, std::move(lower), std::move(upper)));
    } else if (type == "state_box" || type == "state_equality") {
      std::vector<int> idx = read_indices(r, nx);
      const std::size_t m = idx.size();
      const std::string size_name = r.find("indices") ? "len(indices)" : "nx";
      if (type == "state_box") {
        auto [lower, upper] = read_bounds(r, m, size_name);
        out.push_back(std::make_shared<StateBox>(info, nx, std::move(idx), std::move(lower), std::move(upper)));
      } else {
        std::vector<double> target = yaml::to_vector(r.require("target", "a list of " + std::to_string(m) + " numbers"),
                                                     r.key_path("target"), m, {}, false, size_name);
        out.push_back(std::make_shared<StateEquality>(info, nx, std::move(idx), std::move(target)));
      }
    } else if (type == "circle_obstacle") {
      if (!model->planar_position())
        yaml::fail(*type_node, r.key_path("type"),
                   "a term the model supports (circle_obstacle needs a model with a planar position)",
                   "model '" + std::string(model->type()) + "'");
      const std::vector<double> c =
          yaml::to_vector(r.require("center", "a list of 2 numbers [x, y]"), r.key_path("center"), 2);
      const double radius =
          yaml::to_number(r.require("radius", "a number > 0"), r.key_path("radius"), Range::positive());
      out.push_back(std::make_shared<CircleObstacle>(info, *model, std::array<double, 2>{c[0], c[1]}, radius));
    } else {
      const Kinematics& kin = require_kinematics(*model, *type_node, r.key_path("type"), type);
      const int frame = read_frame(r, kin);
      const std::array<double, 3> offset = read_vec3(r, "offset", {0, 0, 0});
      if (type == "end_effector_height") {
        const double z_min = yaml::to_number(r.require("min", "a number (metres)"), r.key_path("min"));
        out.push_back(std::make_shared<EndEffectorHeight>(info, model, frame, offset, z_min));
      } else {
        auto [lower, upper] = read_bounds(r, 3, {});
        out.push_back(std::make_shared<EndEffectorBox>(info, model, frame, offset,
                                                       std::array<double, 3>{lower[0], lower[1], lower[2]},
                                                       std::array<double, 3>{upper[0], upper[1], upper[2]}));
      }
    }
  } catch (const std::invalid_argument& e) {
    yaml::fail(entry, path, "a constraint term the model supports", e.what());
  }
}

const Node* section_list(const Node* list, const char* section) {
  if (!list || list->is_null()) return nullptr;
  if (!list->is_sequence()) yaml::fail(*list, section, std::string("a list of ") + section + " terms");
  return list;
}

}  // namespace

std::vector<std::shared_ptr<CostTerm>> read_costs(const Node* list, const std::shared_ptr<const Model>& model) {
  std::vector<std::shared_ptr<CostTerm>> out;
  std::vector<std::string> names;
  if (const Node* l = section_list(list, "costs"))
    for (std::size_t i = 0; i < l->items.size(); ++i)
      out.push_back(read_cost(l->items[i], yaml::index_path("costs", i), i, model, names));
  return out;
}

std::vector<std::shared_ptr<ConstraintTerm>> read_constraints(const Node* list,
                                                              const std::shared_ptr<const Model>& model) {
  std::vector<std::shared_ptr<ConstraintTerm>> out;
  std::vector<std::string> names;
  if (const Node* l = section_list(list, "constraints"))
    for (std::size_t i = 0; i < l->items.size(); ++i)
      read_constraint(l->items[i], yaml::index_path("constraints", i), i, model, names, out);
  return out;
}


NumberTable read_number_table(const std::filesystem::path& file, const Node& file_node, const std::string& path) {
  Table t;
  read_table(file, file_node, path, t);
  NumberTable out;
  out.lines = t.lines;
  out.rows.reserve(t.rows.size());
  const std::string name = file.string();
  for (std::size_t k = 0; k < t.rows.size(); ++k) {
    std::vector<double>& row = out.rows.emplace_back();
    row.reserve(t.rows[k].size());
    for (std::size_t c = 0; c < t.rows[k].size(); ++c) {
      const Cell& cell = t.rows[k][c];
      const yaml::Number x = yaml::parse_number(cell.text);
      if (x.cls != yaml::NumberClass::Finite)
        throw ProblemError(SourceLocation{name, t.lines[k], cell.column}, path,
                           "a finite number in column " + std::to_string(c),
                           cell.text.empty() ? std::string("an empty cell") : yaml::quote(cell.text));
      row.push_back(x.value);
    }
  }
  return out;
}

}  // namespace knot::problems::detail
