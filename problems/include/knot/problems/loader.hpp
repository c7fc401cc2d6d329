// The YAML problem-file loader: one place that reads a file into a Problem, validating every key.
// The format is documented key by key in docs/problem-format.md.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "knot/problems/problem.hpp"

namespace knot::problems {

// `overrides` are "key.path=value" strings (the CLI's --set), applied after `extends` is resolved;
// the value is parsed as YAML ("horizon.N=128", "x0=[0, 3.14, 0, 0]", "costs[0].weights=[1,1]").
Problem load_problem(const std::filesystem::path& file, const std::vector<std::string>& overrides = {});
// `name` stands in for the file name in errors; relative paths resolve against `base_dir`.
Problem load_problem_from_string(std::string_view yaml, const std::string& name = "<string>",
                                 const std::filesystem::path& base_dir = ".",
                                 const std::vector<std::string>& overrides = {});

// The resolved problem as `knot check` prints it: dimensions, names, integrator, every cost and
// constraint with its stages.
std::string describe(const Problem& problem);

}  // namespace knot::problems
