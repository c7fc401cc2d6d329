// What the knot command's JSON files say about the problem itself, in one shape for stats.json
// (knot solve --out) and summary.json (knot mpc --out), so tools/plot.py reads both alike.
#pragma once

#include <nlohmann/json.hpp>

#include "knot/problems/problem.hpp"

namespace knot::cli {

// {"name", "source", "model", "nx", "nu", "N", "dt", "integrator", "state_names", "control_names",
//  "bounds": {"x_lower", "x_upper", "u_lower", "u_upper"}}: the bounds combine every state_box and
// control_box term (the tightest per entry); an unbounded entry is null (JSON has no infinity).
nlohmann::json problem_json(const problems::Problem& problem);

// A double as JSON: a number when finite, null otherwise.
nlohmann::json json_number(double v);

}  // namespace knot::cli
