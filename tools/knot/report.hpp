// What the knot command's JSON files say about the problem itself, in one shape for stats.json
// (knot solve --out) and summary.json (knot mpc --out), so tools/plot.py reads both alike.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "knot/problems/problem.hpp"

namespace knot::cli {

// {"name", "source", "model", "nx", "nu", "N", "dt", "integrator", "state_names", "control_names",
//  "bounds": {"x_lower", "x_upper", "u_lower", "u_upper"}}: the bounds combine every state_box and
// control_box term (the tightest per entry); an unbounded entry is null (JSON has no infinity).
nlohmann::json problem_json(const problems::Problem& problem);

// A double as JSON: a number when finite, null otherwise.
nlohmann::json json_number(double v);

// The problem's state and control names (the model's defaults when the Problem has none), as every
// output file names its columns.
std::vector<std::string> state_names(const problems::Problem& problem);
std::vector<std::string> control_names(const problems::Problem& problem);

// A CSV field: as it is, or double-quoted (quotes doubled) when it holds a comma, quote or newline.
std::string csv_field(std::string_view text);
// %.17g: a double written so that reading it back gives the same double.
std::string csv_number(double v);

}  // namespace knot::cli
