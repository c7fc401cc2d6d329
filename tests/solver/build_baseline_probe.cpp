// Part of test_build: KNOT_COMPILED_ISA and the tile kernels' path for the compiler's default
// instruction set (this file's -march is reset in tests/solver/CMakeLists.txt).
#include "knot/linalg/dense/gemm_tile.hpp"
#include "knot/solver/build.hpp"

const char* baseline_isa() { return KNOT_COMPILED_ISA; }
int baseline_tile_simd() { return KNOT_GEMM_TILE_SIMD; }
