// Part of test_build: KNOT_COMPILED_ISA for the compiler's default instruction set (this file's
// -march is reset in tests/solver/CMakeLists.txt).
#include "knot/solver/build.hpp"

const char* baseline_isa() { return KNOT_COMPILED_ISA; }
