// How knot_solver was compiled: the instruction set its kernels were built for (KNOT_ARCH, chosen at
// configure time) and the extensions the compiler then enabled. `knot info` prints both, and a test
// checks the kernels' tests were compiled alike (docs/linalg.md: the tile kernels need AVX).
#pragma once

// The same list for the translation unit that expands it (so a test can compare its own flags).
#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
#define KNOT_COMPILED_ISA "avx512f avx2 fma"
#elif defined(__AVX2__) && defined(__FMA__)
#define KNOT_COMPILED_ISA "avx2 fma"
#elif defined(__AVX__)
#define KNOT_COMPILED_ISA "avx"
#elif defined(__SSE2__)
#define KNOT_COMPILED_ISA "sse2"
#elif defined(__ARM_NEON)
#define KNOT_COMPILED_ISA "neon"
#else
#define KNOT_COMPILED_ISA "none"
#endif

namespace knot::solver {

// The KNOT_ARCH the library was configured with ("x86-64-v3", "native"), or "compiler default".
const char* build_arch();
// KNOT_COMPILED_ISA as knot_solver was compiled: "avx512f avx2 fma", "avx2 fma", "avx", "sse2",
// "neon" or "none".
const char* build_isa();

}  // namespace knot::solver
