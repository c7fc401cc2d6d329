// Private to the loader: the `costs` and `constraints` sections of a problem file.
#pragma once

#include <memory>
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

}  // namespace knot::problems::detail
