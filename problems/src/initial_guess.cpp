// read_initial_guess(): a solution.yaml or trajectory.csv, checked against the problem it is for.
#include "knot/problems/initial_guess.hpp"

#include <cctype>
#include <string_view>
#include <unordered_map>

#include "knot/problems/problem.hpp"
#include "table_cells.hpp"
#include "yaml_reader.hpp"

namespace knot::problems {
namespace {

namespace fs = std::filesystem;
using detail::Cell;
using detail::split_fields;
using yaml::MapReader;
using yaml::Node;

std::string count(std::size_t n, const char* noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

// Rows of each constraint kind over the knots, as the solver lays out Solution::z and ::y.
// The problem's names; a problem built in C++ may leave them to the model.
struct Names {
  std::vector<std::string> states, controls;
};

std::size_t constraint_rows(const Problem& p, ConstraintKind kind) {
  std::size_t rows = 0;
  const int N = p.horizon.N;
  for (int k = 0; k <= N; ++k)
    for (const auto& c : p.constraints)
      if (c->kind() == kind && c->active(k, N)) rows += static_cast<std::size_t>(c->dim());
  return rows;
}

// --- solution.yaml -----------------------------------------------------------------------------

// `rows` rows of `cols` numbers, appended row by row (knot-major, as InitialGuess stores them).
void read_rows(const Node& n, const std::string& path, std::size_t rows, std::size_t cols, const char* cols_name,
               const std::string& rows_text, std::vector<double>& out) {
  if (!n.is_sequence()) yaml::fail(n, path, rows_text + " of " + count(cols, "number") + " (" + cols_name + ")");
  if (n.items.size() != rows) yaml::fail(n, path, rows_text, count(n.items.size(), "row"));
  out.reserve(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    const std::vector<double> row = yaml::to_vector(n.items[i], yaml::index_path(path, i), cols, {}, false, cols_name);
    out.insert(out.end(), row.begin(), row.end());
  }
}

// A flat list of exactly `size` numbers (also when `size` is 0, which to_vector reads as "any").
std::vector<double> read_flat(const Node& n, const std::string& path, std::size_t size, const std::string& what) {
  const std::string expected = "a list of " + count(size, "number") + " (" + what + ")";
  if (n.is_null() && size == 0) return {};
  if (!n.is_sequence()) yaml::fail(n, path, expected);
  if (n.items.size() != size) yaml::fail(n, path, expected, count(n.items.size(), "number"));
  return yaml::to_vector(n, path, size);
}

// state_names / control_names, when given, must be the problem's, in its order.
void check_names(const MapReader& top, const char* key, const std::vector<std::string>& want, const char* size_name) {
  const Node* n = top.find(key);
  if (!n) return;
  const std::vector<std::string> got = yaml::to_names(*n, key, want.size(), size_name);
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i])
      yaml::fail(
          n->items[i], yaml::index_path(key, i),
          "'" + want[i] + "' (the problem's " + std::string(key) + " in order: the guess is for another problem?)",
          yaml::quote(got[i]));
}

InitialGuess read_yaml(const fs::path& file, const std::string& text, const Problem& p, const Names& names) {
  const auto source = std::make_shared<const yaml::Source>(yaml::Source{file.string(), file.parent_path()});
  const Node root = yaml::parse(text, source);
  if (!root.is_map()) yaml::fail(root, "", "a solution.yaml mapping (knot_solution, x, u, ...)", yaml::found(root));
  const MapReader top(&root, "", root.at);
  top.allow_only({"knot_solution", "problem", "status", "iterations", "cost", "N", "dt", "state_names", "control_names",
                  "x", "u", "lambda", "z", "s", "y", "mu"});
  const std::size_t N = static_cast<std::size_t>(p.horizon.N);
  const std::size_t nx = static_cast<std::size_t>(p.nx()), nu = static_cast<std::size_t>(p.nu());
  if (const Node* n = top.find("knot_solution")) yaml::to_integer(*n, "knot_solution", 1, 1);
  // Written for the reader's information: any scalar (a failed solve's cost may be .nan).
  for (const char* key : {"problem", "status", "iterations", "cost", "dt"})
    if (const Node* n = top.find(key)) yaml::to_string(*n, key);
  if (const Node* n = top.find("N")) {
    const long long got = yaml::to_integer(*n, "N", 0, 1LL << 40);
    if (got != p.horizon.N) yaml::fail(*n, "N", std::to_string(N) + " (the problem's horizon.N)", std::to_string(got));
  }
  check_names(top, "state_names", names.states, "nx");
  check_names(top, "control_names", names.controls, "nu");

  InitialGuess g;
  g.source = file.string();
  const std::string knots = count(N + 1, "row") + " (knots 0.." + std::to_string(N) + ")";
  read_rows(top.require("x", knots + " of nx numbers"), "x", N + 1, nx, "nx", knots, g.x);
  const std::string intervals = count(N, "row") + " (knots 0.." + std::to_string(N == 0 ? 0 : N - 1) + ")";
  read_rows(top.require("u", intervals + " of nu numbers"), "u", N, nu, "nu", intervals, g.u);
  // An empty lambda is "not given", like an absent one.
  if (const Node* n = top.find("lambda"); n && !(n->is_sequence() && n->items.empty()) && !n->is_null())
    read_rows(*n, "lambda", N + 1, nx, "nx", knots, g.lambda);
  const std::size_t ineq = constraint_rows(p, ConstraintKind::Inequality);
  const std::size_t eq = constraint_rows(p, ConstraintKind::Equality);
  if (const Node* n = top.find("z")) g.z = read_flat(*n, "z", ineq, "one per inequality row of the problem");
  if (const Node* n = top.find("s")) g.s = read_flat(*n, "s", ineq, "one per inequality row of the problem");
  if (const Node* n = top.find("y")) g.y = read_flat(*n, "y", eq, "one per equality row of the problem");
  // 0 is "not given" (a solve without inequality rows has no barrier parameter).
  if (const Node* n = top.find("mu")) g.mu = yaml::to_number(*n, "mu", yaml::Range::nonnegative());
  top.finish();
  return g;
}

// --- trajectory.csv ----------------------------------------------------------------------------

bool blank_or_comment(std::string_view line) {
  for (char c : line) {
    if (c == '#') return true;
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

InitialGuess read_csv(const fs::path& file, const std::string& text, const Problem& p, const Names& names) {
  const std::string name = file.string();
  const int N = p.horizon.N, nx = p.nx(), nu = p.nu();
  std::vector<std::pair<std::string_view, int>> lines;  // non-blank lines and their numbers
  for (std::size_t pos = 0, no = 1; pos < text.size(); ++no) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line(text.data() + pos, end - pos);
    if (!blank_or_comment(line)) lines.emplace_back(line, static_cast<int>(no));
    pos = end + 1;
  }
  if (lines.empty())
    throw ProblemError(SourceLocation{name, 0, 0}, "", "a header row naming the states and controls", "an empty file");

  const std::vector<Cell> header = split_fields(lines[0].first);
  const int header_line = lines[0].second;
  std::string columns;
  for (std::size_t i = 0; i < header.size() && i < 24; ++i) columns += (i ? ", " : "") + std::string(header[i].text);
  if (header.size() > 24) columns += ", ...";
  // Column index of each state, then each control.
  std::vector<std::size_t> index;
  // By hash: a model with 10^5 states would make a linear search per name quadratic.
  std::unordered_map<std::string_view, std::size_t> by_name;
  for (std::size_t c = header.size(); c-- > 0;) by_name[header[c].text] = c;  // the first of equal names
  auto find = [&](const std::string& want, const char* what, std::size_t i) {
    if (const auto it = by_name.find(want); it != by_name.end()) return index.push_back(it->second);
    throw ProblemError(SourceLocation{name, header_line, 1}, want,
                       "a column named '" + want + "' (" + what + " " + std::to_string(i) + " of the problem)",
                       "the columns " + columns);
  };
  for (int i = 0; i < nx; ++i) find(names.states[static_cast<std::size_t>(i)], "state", static_cast<std::size_t>(i));
  for (int i = 0; i < nu; ++i)
    find(names.controls[static_cast<std::size_t>(i)], "control", static_cast<std::size_t>(i));

  const std::size_t rows = lines.size() - 1;
  if (rows != static_cast<std::size_t>(N) + 1)
    throw ProblemError(SourceLocation{name, lines.back().second, 1}, "",
                       std::to_string(N + 1) + " data rows (one per knot 0.." + std::to_string(N) + ")",
                       std::to_string(rows));

  InitialGuess g;
  g.source = name;
  g.x.reserve(static_cast<std::size_t>(N + 1) * static_cast<std::size_t>(nx));
  g.u.reserve(static_cast<std::size_t>(N) * static_cast<std::size_t>(nu));
  for (std::size_t r = 0; r < rows; ++r) {
    const auto [line, no] = lines[r + 1];
    const std::vector<Cell> cells = split_fields(line);
    if (cells.size() != header.size())
      throw ProblemError(
          SourceLocation{name, no, 1}, "",
          count(header.size(), "cell") + " (as many as the header on line " + std::to_string(header_line) + ")",
          std::to_string(cells.size()));
    const bool last = r + 1 == rows;
    for (int j = 0; j < nx + nu; ++j) {
      const bool control = j >= nx;
      if (control && last) break;  // the terminal knot has no control
      const std::size_t c = index[static_cast<std::size_t>(j)];
      const Cell& cell = cells[c];
      const std::string column(header[c].text);
      if (cell.text.empty())
        throw ProblemError(SourceLocation{name, no, cell.column}, column,
                           "a number (only the last row's controls may be empty)", "an empty cell");
      const yaml::Number v = yaml::parse_number(cell.text);
      if (v.cls != yaml::NumberClass::Finite)
        throw ProblemError(SourceLocation{name, no, cell.column}, column, "a finite number", yaml::quote(cell.text));
      (control ? g.u : g.x).push_back(v.value);
    }
  }
  return g;
}

bool looks_like_csv(const fs::path& file, const std::string& text) {
  std::string ext = file.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".csv") return true;
  if (ext == ".yaml" || ext == ".yml") return false;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line(text.data() + pos, end - pos);
    if (!blank_or_comment(line)) return line.find(':') == std::string_view::npos;
    pos = end + 1;
  }
  return false;
}

}  // namespace

InitialGuess read_initial_guess(const fs::path& file, const Problem& problem) {
  if (!problem.model) throw ProblemError(SourceLocation{file.string(), 0, 0}, "", "a problem with a model", "none");
  const auto source = std::make_shared<const yaml::Source>(yaml::Source{file.string(), file.parent_path()});
  const std::string text = yaml::read_file(file, yaml::Where{source, 0, 0}, "initial_guess");
  Names names{problem.state_names, problem.control_names};
  if (names.states.size() != static_cast<std::size_t>(problem.nx())) names.states = problem.model->state_names();
  if (names.controls.size() != static_cast<std::size_t>(problem.nu())) names.controls = problem.model->control_names();
  return looks_like_csv(file, text) ? read_csv(file, text, problem, names) : read_yaml(file, text, problem, names);
}

}  // namespace knot::problems
