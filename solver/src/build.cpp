// Compiled with knot_solver's flags, so KNOT_COMPILED_ISA here is what its kernels saw.
#include "knot/solver/build.hpp"

#ifndef KNOT_ARCH_STATED
#define KNOT_ARCH_STATED "unknown"
#endif

namespace knot::solver {

const char* build_arch() { return KNOT_ARCH_STATED; }
const char* build_isa() { return KNOT_COMPILED_ISA; }

}  // namespace knot::solver
