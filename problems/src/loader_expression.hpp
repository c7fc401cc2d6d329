// Private to the loader: `model: {type: expression, ...}` and the expressions of terms.
#pragma once

#include <memory>
#include <string>

#include "knot/problems/expression.hpp"
#include "knot/problems/expression_terms.hpp"
#include "knot/problems/model.hpp"
#include "yaml_reader.hpp"

namespace knot::problems::detail {

// The keys a `type: expression` model mapping may have.
const std::vector<std::string>& expression_model_keys();

// `model` is the model mapping (type: expression), already known to be a mapping.
std::shared_ptr<const Model> read_expression_model(const yaml::Node& model);

// One expression scalar at `path`, with its position.
ExprSource read_expression(const yaml::Node& node, const std::string& path);

// The term's `key`: one expression or a list of them, of the model's states and controls (and an
// expression model's parameters and definitions).
std::shared_ptr<const TermExpressions> read_term_expressions(const yaml::MapReader& term, const char* key,
                                                             const Model& model);

}  // namespace knot::problems::detail
