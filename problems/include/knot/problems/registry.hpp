// Models by name: the problem file's `model.type`.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "knot/problems/model.hpp"
#include "knot/problems/params.hpp"

namespace knot::problems {

struct ModelInfo {
  std::string type;         // "cartpole"
  std::string description;  // one line: states, controls, source of the parameters
};

std::vector<ModelInfo> model_types();
// Builds a model from its parameters; unknown types and bad parameters throw ProblemError.
// `key_path` names the type in errors ("model.type").
std::shared_ptr<const Model> make_model(std::string_view type, const ParamReader& params,
                                        const std::string& key_path = "model.type");

}  // namespace knot::problems
