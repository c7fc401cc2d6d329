// Serial manipulator from a URDF file (fixed base; revolute, prismatic and fixed joints).
// State x = [q; qd] (nq = number of moving joints), control u = joint efforts.
// Parameters: urdf (path), gravity (3-vector, m/s^2, default [0, 0, -9.81]), ee_frame (link name,
// default the last link of the chain).
#pragma once

#include <memory>

#include "knot/problems/model.hpp"
#include "knot/problems/params.hpp"

namespace knot::problems {

// The registry's factory for type "manipulator"; throws ProblemError on a bad file or parameter.
std::shared_ptr<const Model> make_manipulator(const ParamReader& params);

}  // namespace knot::problems
