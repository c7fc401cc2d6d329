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

// Reads a solution.yaml or trajectory.csv for `problem`, checking names and sizes (ProblemError).
InitialGuess read_initial_guess(const std::filesystem::path& file, const Problem& problem);

}  // namespace knot::problems
