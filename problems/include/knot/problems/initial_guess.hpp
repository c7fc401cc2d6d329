// A trajectory to start the solver from: the primal iterate, and optionally the multipliers, slacks
// and barrier parameter of an earlier solve (a warm start). Read from a solution.yaml or a
// trajectory.csv that `knot solve --out` wrote, by the problem file's `initial_guess:` key or the
// CLI's --initial-guess.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace knot::problems {

struct Problem;

struct InitialGuess {
  std::string source;                   // the file it came from; empty when built in C++
  std::vector<double> x, u;             // (N+1) nx and N nu values, or both empty when none
  std::vector<double> lambda, z, s, y;  // optional, empty when not given: lambda (N+1) nx; z and s one per
                                        // inequality row, y one per equality row (Solution's layout)
  double mu = 0;                        // barrier parameter; 0 = not given

  bool empty() const { return x.empty(); }
};

// Reads the guess for `problem` from a solution.yaml or a trajectory.csv as `knot solve --out` writes
// them (docs/problem-format.md, "initial_guess"); a .csv name, or a first line without ':', means CSV.
// Sizes and names are checked against the problem: x has N+1 rows of nx, u N rows of nu, lambda
// N+1 rows of nx, z and s one value per inequality row and y one per equality row over the knots
// (the rows of the constraint terms active at each knot), mu > 0. A CSV's columns are found by
// header name (every state and control name must be one; other columns are ignored), one row per
// knot; only the last row's control cells may be empty. Every error is a ProblemError naming the
// file, line, key or column, what was expected and what was found.
InitialGuess read_initial_guess(const std::filesystem::path& file, const Problem& problem);

}  // namespace knot::problems
