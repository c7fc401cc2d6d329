// The CUDA engine as knot._cuda hands it to knot._knot: BatchOptions::cuda_engine in a PyCapsule.
//
// The two modules each link their own copy of knot::solver, and the factory takes and returns that
// library's types. The capsule's name therefore carries the layout of what crosses (the compiled
// problem, the options, the result rows) and the compiler, so that a knot._cuda from another build
// is refused by name rather than misread.
#pragma once

#include <string>

#include "knot/solver/batch.hpp"
#include "knot/solver/device/problem.hpp"
#include "knot/solver/device/sqp.hpp"

namespace knot::python {

inline const char* engine_capsule_name() {
  static const std::string name =
      "knot.BatchEngineFactory/" + std::to_string(sizeof(solver::device::BatchProblemData)) + "." +
      std::to_string(sizeof(solver::device::DeviceOptions)) + "." + std::to_string(sizeof(solver::device::DeviceResult)) +
      "." + std::to_string(sizeof(solver::IterationStats)) + "." + std::to_string(sizeof(solver::BatchOptions)) + "/" +
      __VERSION__;
  return name.c_str();
}

}  // namespace knot::python
