// read_initial_guess(): solution.yaml and trajectory.csv as `knot solve --out` writes them
// (docs/problem-format.md and the issue-12 formats), read back bitwise; every refused input with
// its message; the `initial_guess:` key and the guess describe() prints; reference tables read from
// a trajectory.csv.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "knot/problems/error.hpp"
#include "knot/problems/initial_guess.hpp"
#include "knot/problems/loader.hpp"
#include "scratch_dir.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using knot::problems::describe;
using knot::problems::InitialGuess;
using knot::problems::load_problem;
using knot::problems::load_problem_from_string;
using knot::problems::Problem;
using knot::problems::ProblemError;
using knot::problems::read_initial_guess;
using knot::test::bitwise_equal;
using knot::test::scratch_dir;
using knot::test::write_scratch_file;

#define EXPECT_CONTAINS(text, fragment) \
  EXPECT_NE(std::string(text).find(fragment), std::string::npos) << "  in: " << (text) << "\n  missing: " << (fragment)

// N = 3; a control box gives 2 inequality rows at knots 0..2 (6 in all), a terminal state equality
// 4 equality rows at knot 3.
const std::string kCartpole = R"(name: guess_test
model: {type: cartpole}
horizon: {N: 3, dt: 0.05}
x0: [0, 3.14, 0, 0]
costs:
  - {type: state, weights: 1}
  - {type: control, weights: 0.1}
constraints:
  - {type: control_box, lower: [-80], upper: [80]}
  - {type: state_equality, target: [0, 0, 0, 0]}
)";
constexpr std::size_t kN = 3, kNx = 4, kNu = 1, kIneq = 6, kEq = 4;

Problem cartpole() { return load_problem_from_string(kCartpole, "guess_test.yaml", scratch_dir()); }

std::string g17(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string row(const std::vector<double>& v, std::size_t from, std::size_t n) {
  std::string out = "[";
  for (std::size_t i = 0; i < n; ++i) out += (i ? ", " : "") + g17(v[from + i]);
  return out + "]";
}

std::string rows(const std::vector<double>& v, std::size_t count, std::size_t n) {
  std::string out = "[";
  for (std::size_t r = 0; r < count; ++r) out += (r ? ", " : "") + row(v, r * n, n);
  return out + "]";
}

// Values that a lossy printer would change: thirds, tiny and huge magnitudes, a negative zero.
std::vector<double> awkward(std::size_t n, double seed) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double k = static_cast<double>(i) + seed;
    v[i] = i % 5 == 0   ? k / 3.0
           : i % 5 == 1 ? -k * 1e-300
           : i % 5 == 2 ? k * 1e300 / 7
           : i % 5 == 3 ? -0.0
                        : std::sqrt(k);
  }
  return v;
}

InitialGuess full_guess() {
  InitialGuess g;
  g.x = awkward((kN + 1) * kNx, 1);
  g.u = awkward(kN * kNu, 2);
  g.lambda = awkward((kN + 1) * kNx, 3);
  g.z = awkward(kIneq, 4);
  g.s = awkward(kIneq, 5);
  g.y = awkward(kEq, 6);
  g.mu = 1.0 / 3e9;
  return g;
}

// solution.yaml in the exact form `knot solve --out` writes it.
std::string solution_yaml(const InitialGuess& g, std::string (*num)(double) = g17) {
  auto list = [&](const std::vector<double>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + num(v[i]);
    return out + "]";
  };
  auto matrix = [&](const std::vector<double>& v, std::size_t n) {
    std::string out = "[";
    for (std::size_t r = 0; r * n < v.size(); ++r)
      out += (r ? ", " : "") + list(std::vector<double>(v.begin() + r * n, v.begin() + (r + 1) * n));
    return out + "]";
  };
  return "# Written by knot solve: the optimum of guess_test, readable as an initial guess\n"
         "# (knot solve FILE --initial-guess solution.yaml, or `initial_guess: solution.yaml` in a problem file).\n"
         "knot_solution: 1\nproblem: guess_test\nstatus: solved\niterations: 12\ncost: 1.2345\nN: 3\ndt: 0.05\n"
         "state_names: [p, theta, v, omega]\ncontrol_names: [F]\n"
         "x: " +
         matrix(g.x, kNx) + "\nu: " + matrix(g.u, kNu) + "\nlambda: " + matrix(g.lambda, kNx) + "\nz: " + list(g.z) +
         "\ns: " + list(g.s) + "\ny: " + list(g.y) + "\nmu: " + num(g.mu) + "\n";
}

// trajectory.csv in the exact form `knot solve --out` writes it (the last row's controls empty).
std::string trajectory_csv(const InitialGuess& g) {
  std::string out = "knot,time,p,theta,v,omega,F\n";
  for (std::size_t k = 0; k <= kN; ++k) {
    out += std::to_string(k) + "," + g17(static_cast<double>(k) * 0.05);
    // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "," + std::string.
    for (std::size_t i = 0; i < kNx; ++i) out.append(",").append(g17(g.x[k * kNx + i]));
    out.append(",").append(k < kN ? g17(g.u[k]) : std::string()).append("\n");
  }
  return out;
}

std::string error_of(const std::string& name, const std::string& text) {
  const std::string file = write_scratch_file(name, text);
  try {
    read_initial_guess(file, cartpole());
  } catch (const ProblemError& e) {
    return e.what();
  }
  ADD_FAILURE() << name << " was read:\n" << text;
  return {};
}

// --- round trips -------------------------------------------------------------------------------

TEST(InitialGuess, SolutionYamlReadsBackBitwise) {
  const InitialGuess want = full_guess();
  const std::string file = write_scratch_file("solution.yaml", solution_yaml(want));
  const InitialGuess got = read_initial_guess(file, cartpole());
  EXPECT_EQ(got.source, file);
  EXPECT_TRUE(bitwise_equal(got.x, want.x));
  EXPECT_TRUE(bitwise_equal(got.u, want.u));
  EXPECT_TRUE(bitwise_equal(got.lambda, want.lambda));
  EXPECT_TRUE(bitwise_equal(got.z, want.z));
  EXPECT_TRUE(bitwise_equal(got.s, want.s));
  EXPECT_TRUE(bitwise_equal(got.y, want.y));
  EXPECT_TRUE(bitwise_equal({got.mu}, {want.mu}));
}

// Negative control: the same comparison catches a file printed with 15 digits (1/3 and the
// square roots then read back one or more ulps away).
TEST(InitialGuess, TheBitwiseCheckCatchesALossyFile) {
  const InitialGuess want = full_guess();
  const auto g15 = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    return std::string(buf);
  };
  const std::string file = write_scratch_file("lossy.yaml", solution_yaml(want, g15));
  const InitialGuess got = read_initial_guess(file, cartpole());
  ASSERT_EQ(got.x.size(), want.x.size());
  EXPECT_FALSE(bitwise_equal(got.x, want.x));
  EXPECT_FALSE(bitwise_equal({got.mu}, {want.mu}));
}

TEST(InitialGuess, PrimalOnlySolutionYaml) {
  const InitialGuess want = full_guess();
  // A failed solve's informational fields, an empty lambda and mu 0 read as "not given".
  const std::string text = "status: max_iterations\ncost: .nan\nx: " + rows(want.x, kN + 1, kNx) +
                           "\nu: " + rows(want.u, kN, kNu) + "\nlambda: []\nmu: 0\n";
  const InitialGuess got = read_initial_guess(write_scratch_file("primal.yml", text), cartpole());
  EXPECT_TRUE(bitwise_equal(got.x, want.x));
  EXPECT_TRUE(bitwise_equal(got.u, want.u));
  EXPECT_TRUE(got.lambda.empty() && got.z.empty() && got.s.empty() && got.y.empty());
  EXPECT_EQ(got.mu, 0.0);
}

TEST(InitialGuess, TrajectoryCsvReadsBackBitwise) {
  const InitialGuess want = full_guess();
  const std::string file = write_scratch_file("trajectory.csv", trajectory_csv(want));
  const InitialGuess got = read_initial_guess(file, cartpole());
  EXPECT_TRUE(bitwise_equal(got.x, want.x));
  EXPECT_TRUE(bitwise_equal(got.u, want.u));
  EXPECT_TRUE(got.lambda.empty() && got.z.empty() && got.mu == 0.0);
}

// Columns are found by name: another order and extra columns (a frame position) change nothing.
TEST(InitialGuess, CsvColumnsAreSelectedByName) {
  const InitialGuess want = full_guess();
  std::string text = "F,omega,extra.x,v,theta,p\n";
  for (std::size_t k = 0; k <= kN; ++k) {
    text += (k < kN ? g17(want.u[k]) : "") + "," + g17(want.x[k * kNx + 3]) + ",hello," + g17(want.x[k * kNx + 2]) +
            "," + g17(want.x[k * kNx + 1]) + "," + g17(want.x[k * kNx]) + "\n";
  }
  // No .csv extension: the content (no ':' on the first line) says CSV.
  const InitialGuess got = read_initial_guess(write_scratch_file("shuffled.txt", text), cartpole());
  EXPECT_TRUE(bitwise_equal(got.x, want.x));
  EXPECT_TRUE(bitwise_equal(got.u, want.u));
}

// --- refused CSV files -------------------------------------------------------------------------

std::string csv_with(int line, const std::string& replacement) {
  std::string text = trajectory_csv(full_guess()), out;
  int no = 1;
  for (std::size_t pos = 0; pos < text.size(); ++no) {
    const std::size_t end = text.find('\n', pos);
    out += (no == line ? replacement : text.substr(pos, end - pos)) + "\n";
    pos = end + 1;
  }
  return out;
}

TEST(InitialGuess, CsvErrorsNameFileLineColumnExpectedAndFound) {
  const std::string dir = scratch_dir().string() + "/";
  // One knot short: 3 data rows for N = 3.
  std::string text = trajectory_csv(full_guess());
  text.erase(text.rfind('\n', text.size() - 2) + 1);
  EXPECT_CONTAINS(error_of("short.csv", text),
                  dir + "short.csv:4:1: <document>: expected 4 data rows (one per knot 0..3), found 3");
  EXPECT_CONTAINS(error_of("long.csv", trajectory_csv(full_guess()) + "4,0.2,0,0,0,0,\n"),
                  dir + "long.csv:6:1: <document>: expected 4 data rows (one per knot 0..3), found 5");
  EXPECT_CONTAINS(error_of("no_state.csv", csv_with(1, "knot,time,p,th,v,omega,F")),
                  dir +
                      "no_state.csv:1:1: theta: expected a column named 'theta' (state 1 of the problem), found "
                      "the columns knot, time, p, th, v, omega, F");
  EXPECT_CONTAINS(error_of("no_control.csv", csv_with(1, "knot,time,p,theta,v,omega,G")),
                  "no_control.csv:1:1: F: expected a column named 'F' (control 0 of the problem)");
  EXPECT_CONTAINS(error_of("word.csv", csv_with(3, "1,0.05,0,zero,0,0,1")),
                  "word.csv:3:10: theta: expected a finite number, found 'zero'");
  EXPECT_CONTAINS(error_of("nan.csv", csv_with(3, "1,0.05,0,0,nan,0,1")),
                  "nan.csv:3:12: v: expected a finite number, found 'nan'");
  EXPECT_CONTAINS(error_of("yaml_nan.csv", csv_with(2, "0,0,.nan,0,0,0,1")),
                  "yaml_nan.csv:2:5: p: expected a finite number, found '.nan'");
  EXPECT_CONTAINS(error_of("ragged.csv", csv_with(4, "2,0.1,0,0,0,0")),
                  "ragged.csv:4:1: <document>: expected 7 cells (as many as the header on line 1), found 6");
  EXPECT_CONTAINS(error_of("empty_state.csv", csv_with(5, "3,0.15,0,,0,0,")),
                  "empty_state.csv:5:10: theta: expected a number (only the last row's controls may be empty), "
                  "found an empty cell");
  EXPECT_CONTAINS(error_of("empty_control.csv", csv_with(3, "1,0.05,0,0,0,0,")),
                  "empty_control.csv:3:16: F: expected a number (only the last row's controls may be empty)");
  EXPECT_CONTAINS(error_of("empty.csv", ""), "empty.csv: <document>: expected a header row naming the states");
  // Negative control: the unchanged file reads.
  EXPECT_NO_THROW(read_initial_guess(write_scratch_file("fine.csv", csv_with(3, "1,0.05,0,0,0,0,1")), cartpole()));
}

// --- refused solution.yaml files ---------------------------------------------------------------

std::string yaml_with(const std::string& key, const std::string& value) {
  std::string text = solution_yaml(full_guess());
  const std::size_t at = text.find("\n" + key + ": ") + 1;
  const std::size_t end = text.find('\n', at);
  return text.replace(at, end - at, key + ": " + value);
}

TEST(InitialGuess, YamlErrorsNameFileLineKeyExpectedAndFound) {
  const std::string dir = scratch_dir().string() + "/";
  EXPECT_CONTAINS(error_of("x_rows.yaml", yaml_with("x", "[[0, 0, 0, 0], [0, 0, 0, 0]]")),
                  dir + "x_rows.yaml:12:4: x: expected 4 rows (knots 0..3), found 2 rows");
  EXPECT_CONTAINS(error_of("x_row.yaml", yaml_with("x", "[[0, 0, 0, 0], [0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]")),
                  "x_row.yaml:12:19: x[1]: expected a list of 4 numbers (nx), found a list of 3 items");
  EXPECT_CONTAINS(error_of("u_word.yaml", yaml_with("u", "[[1], [two], [3]]")),
                  "u_word.yaml:13:11: u[1][0]: expected a finite number, found 'two'");
  EXPECT_CONTAINS(error_of("u_nan.yaml", yaml_with("u", "[[1], [.nan], [3]]")),
                  "u_nan.yaml:13:11: u[1][0]: expected a finite number, found .nan");
  EXPECT_CONTAINS(error_of("u_rows.yaml", yaml_with("u", "[[1], [2], [3], [4]]")),
                  "u_rows.yaml:13:4: u: expected 3 rows (knots 0..2), found 4 rows");
  EXPECT_CONTAINS(error_of("names.yaml", yaml_with("state_names", "[p, th, v, omega]")),
                  "names.yaml:10:18: state_names[1]: expected 'theta' (the problem's state_names in order: the "
                  "guess is for another problem?), found 'th'");
  EXPECT_CONTAINS(error_of("names_count.yaml", yaml_with("state_names", "[p, theta, v]")),
                  "names_count.yaml:10:14: state_names: expected a list of 4 names (nx)");
  EXPECT_CONTAINS(error_of("controls.yaml", yaml_with("control_names", "[G]")),
                  "controls.yaml:11:17: control_names[0]: expected 'F'");
  EXPECT_CONTAINS(error_of("N.yaml", yaml_with("N", "4")),
                  "N.yaml:8:4: N: expected 3 (the problem's horizon.N), found 4");
  EXPECT_CONTAINS(error_of("lambda.yaml", yaml_with("lambda", "[[0, 0, 0, 0]]")),
                  "lambda.yaml:14:9: lambda: expected 4 rows (knots 0..3), found 1 row");
  EXPECT_CONTAINS(error_of("z.yaml", yaml_with("z", "[1, 2]")),
                  "z.yaml:15:4: z: expected a list of 6 numbers (one per inequality row of the problem), found 2 "
                  "numbers");
  EXPECT_CONTAINS(error_of("s.yaml", yaml_with("s", "[]")), "s.yaml:16:4: s: expected a list of 6 numbers");
  EXPECT_CONTAINS(error_of("y.yaml", yaml_with("y", "[1, 2, 3, 4, 5]")),
                  "y.yaml:17:4: y: expected a list of 4 numbers (one per equality row of the problem), found 5");
  EXPECT_CONTAINS(error_of("mu.yaml", yaml_with("mu", "-1e-9")),
                  "mu.yaml:18:5: mu: expected a number >= 0, found -1e-9");
  EXPECT_CONTAINS(error_of("version.yaml", yaml_with("knot_solution", "2")),
                  "version.yaml:3:16: knot_solution: expected an integer in [1, 1], found 2");
  EXPECT_CONTAINS(error_of("unknown.yaml", solution_yaml(full_guess()) + "lamda: []\n"),
                  "unknown.yaml:19:1: lamda: expected one of");
  EXPECT_CONTAINS(error_of("no_x.yaml", "u: [[1], [2], [3]]\n"), "no_x.yaml:1:1: x: expected 4 rows");
  EXPECT_CONTAINS(error_of("list.yaml", "- 1\n"), "list.yaml:1:1: <document>: expected a solution.yaml mapping");
  EXPECT_CONTAINS(error_of("missing_dir/none.yaml", ""), "initial_guess: expected an existing file");
  // Negative control: the file these were edited from reads.
  EXPECT_NO_THROW(read_initial_guess(write_scratch_file("good.yaml", yaml_with("mu", "1e-9")), cartpole()));
}

// A problem without inequality rows takes an empty z and s, as `knot solve` writes them (`z: []`).
TEST(InitialGuess, EmptyDualsForAProblemWithoutConstraints) {
  const Problem p = load_problem_from_string(
      "name: free\nmodel: {type: pendulum}\nhorizon: {N: 2, dt: 0.1}\nx0: [0, 0]\n", "free.yaml", scratch_dir());
  const std::string text = "x: [[0, 0], [1, 2], [3, 4]]\nu: [[5], [6]]\nz: []\ns: []\ny: []\nmu: 0.1\n";
  const InitialGuess g = read_initial_guess(write_scratch_file("free_solution.yaml", text), p);
  EXPECT_EQ(g.x, (std::vector<double>{0, 0, 1, 2, 3, 4}));
  EXPECT_EQ(g.u, (std::vector<double>{5, 6}));
  EXPECT_TRUE(g.z.empty() && g.s.empty() && g.y.empty());
  EXPECT_EQ(g.mu, 0.1);
  try {
    read_initial_guess(write_scratch_file("free_z.yaml", "x: [[0, 0], [1, 2], [3, 4]]\nu: [[5], [6]]\nz: [1]\n"), p);
    ADD_FAILURE() << "a z for a problem without inequality rows was read";
  } catch (const ProblemError& e) {
    EXPECT_CONTAINS(e.what(), "free_z.yaml:3:4: z: expected a list of 0 numbers");
  }
}

// --- the initial_guess key ---------------------------------------------------------------------

TEST(InitialGuess, ProblemFileKeyResolvesAgainstTheProblemFile) {
  const fs::path dir = scratch_dir() / "key";
  fs::create_directories(dir / "runs");
  const InitialGuess want = full_guess();
  write_scratch_file("key/runs/solution.yaml", solution_yaml(want));
  write_scratch_file("key/runs/trajectory.csv", trajectory_csv(want));
  const std::string problem = write_scratch_file("key/problem.yaml", kCartpole + "initial_guess: runs/solution.yaml\n");
  const Problem p = load_problem(problem);
  EXPECT_EQ(p.initial_guess.source, (dir / "runs" / "solution.yaml").string());
  EXPECT_TRUE(bitwise_equal(p.initial_guess.x, want.x));
  EXPECT_TRUE(bitwise_equal(p.initial_guess.y, want.y));
  EXPECT_CONTAINS(describe(p), "guess        " + (dir / "runs" / "solution.yaml").string() +
                                   ": x, u, lambda, z, s, y, mu 3.333333333333333e-10\n");

  // --set: a relative path resolves against the problem file's folder, as reference files do.
  const Problem q = load_problem(problem, {"initial_guess=runs/trajectory.csv"});
  EXPECT_EQ(q.initial_guess.source, (dir / "runs" / "trajectory.csv").string());
  EXPECT_TRUE(bitwise_equal(q.initial_guess.u, want.u));
  EXPECT_TRUE(q.initial_guess.lambda.empty());

  // extends: the parent's relative path is the parent's.
  write_scratch_file("key/runs/child.yaml", "extends: ../problem.yaml\nname: child\n");
  EXPECT_TRUE(bitwise_equal(load_problem(dir / "runs" / "child.yaml").initial_guess.x, want.x));

  // Without the key the guess is empty, and describe says the default is used.
  const Problem none = load_problem_from_string(kCartpole, "none.yaml", dir);
  EXPECT_TRUE(none.initial_guess.empty());
  EXPECT_CONTAINS(describe(none), "guess        default (x_k = x0, u_k = 0)\n");
}

TEST(InitialGuess, ProblemFileKeyErrors) {
  const fs::path dir = scratch_dir() / "key_errors";
  fs::create_directories(dir);
  const std::string problem = write_scratch_file("key_errors/problem.yaml", kCartpole + "initial_guess: nope.yaml\n");
  try {
    load_problem(problem);
    ADD_FAILURE() << "a missing initial_guess file was accepted";
  } catch (const ProblemError& e) {
    EXPECT_CONTAINS(e.what(), problem + ":11:16: initial_guess: expected an existing file, found 'nope.yaml'");
  }
  // An error inside the guess names the guess's own file.
  write_scratch_file("key_errors/bad.csv", csv_with(1, "knot,time,p,theta,v,w,F"));
  try {
    load_problem(problem, {"initial_guess=bad.csv"});
    ADD_FAILURE() << "a guess without an omega column was accepted";
  } catch (const ProblemError& e) {
    EXPECT_CONTAINS(e.what(), (dir / "bad.csv").string() + ":1:1: omega: expected a column named 'omega'");
  }
}

// --- reference tables from a trajectory.csv ----------------------------------------------------

Problem tracking_problem(const std::string& file, const std::string& columns) {
  // kCartpole already has `costs:`; replace it with the tracking costs.
  std::string text = kCartpole;
  text.erase(text.find("costs:"), text.find("constraints:") - text.find("costs:"));
  text += "costs:\n  - {name: track, type: state, weights: 1, reference: {file: " + file + ", columns: " + columns +
          "}}\n  - {name: effort, type: control, weights: 1, reference: {file: " + file + ", columns: [F]}}\n";
  return load_problem_from_string(text, "tracking.yaml", scratch_dir());
}

TEST(ReferenceTable, ReadsATrajectoryCsvByHeaderName) {
  const InitialGuess g = full_guess();
  write_scratch_file("ref_trajectory.csv", trajectory_csv(g));
  const Problem p = tracking_problem("ref_trajectory.csv", "[p, theta, 4, omega]");
  const auto* x = p.costs[0]->reference();
  ASSERT_EQ(x->rows(), 4);  // every knot: the state columns are full
  for (int k = 0; k < 4; ++k)
    EXPECT_TRUE(bitwise_equal(std::vector<double>(x->at(k).begin(), x->at(k).end()),
                              std::vector<double>(g.x.begin() + k * 4, g.x.begin() + k * 4 + 4)))
        << "knot " << k;
  // The control column ends at the terminal knot's empty cell: 3 rows, the last held after.
  const auto* u = p.costs[1]->reference();
  ASSERT_EQ(u->rows(), 3);
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(bitwise_equal({u->at(k)[0]}, {g.u[static_cast<std::size_t>(k)]}));
  EXPECT_TRUE(bitwise_equal({u->at(5)[0]}, {g.u[2]}));
}

TEST(ReferenceTable, EmptyCellsAndNamesErrors) {
  const std::string dir = scratch_dir().string() + "/";
  auto err = [&](const std::string& file, const std::string& columns) {
    try {
      tracking_problem(file, columns);
    } catch (const ProblemError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << file << " " << columns << " loaded";
    return std::string();
  };
  // An empty control cell before the last row.
  write_scratch_file("ref_gap.csv", "knot,time,p,theta,v,omega,F\n0,0,1,2,3,4,5\n1,0.05,1,2,3,4,\n2,0.1,1,2,3,4,5\n");
  EXPECT_CONTAINS(err("ref_gap.csv", "[p, theta, v, omega]"),
                  dir +
                      "ref_gap.csv:3:16: costs[1].reference.file: expected a number in column 'F' (empty cells "
                      "only in the last rows, where the table then ends), found an empty cell");
  // An empty cell in the first row leaves no row.
  write_scratch_file("ref_first.csv", "p,theta,v,omega,F\n,2,3,4,5\n");
  EXPECT_CONTAINS(
      err("ref_first.csv", "[p, theta, v, omega]"),
      "ref_first.csv:2:1: costs[0].reference.file: expected a number in column 'p' (the table's first row)");
  write_scratch_file("ref_names.csv", "p,theta,v,omega,F\n1,2,3,4,5\n");
  EXPECT_CONTAINS(err("ref_names.csv", "[p, teta, v, omega]"),
                  "tracking.yaml:9:90: costs[0].reference.columns[1]: expected a column index or a name in the header "
                  "of " +
                      dir + "ref_names.csv, found 'teta' (did you mean 'theta'?)");
  EXPECT_CONTAINS(err("ref_names.csv", "[p, theta, v, 5]"),
                  "costs[0].reference.columns[3]: expected a column index below 5 (the table's width), found 5");
  write_scratch_file("ref_headerless.csv", "1,2,3,4,5\n");
  EXPECT_CONTAINS(
      err("ref_headerless.csv", "[0, 1, 2, 3]"),
      "costs[1].reference.columns[0]: expected a column index (" + dir + "ref_headerless.csv has no header row");
  // A word in a selected column is refused; in another column it is ignored.
  write_scratch_file("ref_word.csv", "p,theta,v,omega,F,status\n1,2,3,4,5,solved\n1,2,x,4,5,solved\n");
  EXPECT_CONTAINS(err("ref_word.csv", "[p, theta, v, omega]"),
                  "ref_word.csv:3:5: costs[0].reference.file: expected a finite number in column 'v', found 'x'");
  // Negative control: the same table without the gap loads.
  write_scratch_file("ref_nogap.csv", "knot,time,p,theta,v,omega,F\n0,0,1,2,3,4,5\n1,0.05,1,2,3,4,6\n");
  EXPECT_EQ(tracking_problem("ref_nogap.csv", "[p, theta, v, omega]").costs[1]->reference()->rows(), 2);
}

}  // namespace
