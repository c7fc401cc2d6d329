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

// A model like `model` with the parameters `changes` given new values (names and value counts as
// parameters() lists them; the rest keep theirs), built afresh by its factory, so every check of
// the problem file applies. Models it can rebuild: the built-in types whose parameters() describe
// them wholly (all but linear and manipulator) and expression models. Throws ProblemError: an
// unknown name (model.params.<name>, with the closest one), a wrong number of values, a value the
// factory refuses, or a model it cannot rebuild (key model.type).
std::shared_ptr<const Model> with_parameters(const Model& model, const std::vector<ModelParameter>& changes);

}  // namespace knot::problems
