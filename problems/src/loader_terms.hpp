// Private to the loader: the `costs` and `constraints` sections of a problem file.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "knot/problems/constraint.hpp"
#include "knot/problems/cost.hpp"
#include "knot/problems/model.hpp"
#include "yaml_tree.hpp"

namespace knot::problems::detail {

// `list` is the section's value (nullptr or null when absent).
std::vector<std::shared_ptr<CostTerm>> read_costs(const yaml::Node* list, const std::shared_ptr<const Model>& model);
std::vector<std::shared_ptr<ConstraintTerm>> read_constraints(const yaml::Node* list,
                                                              const std::shared_ptr<const Model>& model);

// A table of numbers: one row per line, separated by commas or whitespace; '#' starts a comment;
// one header line with a field that is not a number is allowed before the first row. Every row has
// the first row's width and every cell is a finite number; errors name the file, line, column and `path`.
struct NumberTable {
  std::vector<std::vector<double>> rows;
  std::vector<int> lines;  // line of each row in the file
};
NumberTable read_number_table(const std::filesystem::path& file, const yaml::Node& file_node, const std::string& path);

}  // namespace knot::problems::detail
