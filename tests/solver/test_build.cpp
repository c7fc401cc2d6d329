// knot_solver's instruction set: the library gets the vector extensions KNOT_ARCH promises (the tile
// kernels need AVX: docs/linalg.md), and the solver tests are compiled with the same flags, so the
// kernels they instantiate are the library's (tests/solver/CMakeLists.txt).
#include <gtest/gtest.h>

#include <string>

#include "knot/linalg/dense/gemm_tile.hpp"
#include "knot/solver/build.hpp"

// build_baseline_probe.cpp, compiled for the compiler's default instruction set.
const char* baseline_isa();

namespace {

using knot::solver::build_arch;
using knot::solver::build_isa;

bool has(const std::string& list, const std::string& word) { return (" " + list + " ").find(" " + word + " ") != std::string::npos; }

TEST(Build, TestsAreCompiledLikeTheSolver) {
  EXPECT_STREQ(build_isa(), KNOT_COMPILED_ISA);
#if defined(__GNUC__) || defined(__clang__)
  EXPECT_EQ(KNOT_GEMM_TILE_SIMD, 1);  // the vector-extension kernels, not the plain loop
#endif
}

TEST(Build, StatedArchitectureGivesAvx2) {
  const std::string arch = build_arch();
  EXPECT_EQ(arch, KNOT_TEST_ARCH);  // what CMake configured
  if (arch == "x86-64-v3" || arch == "x86-64-v4") {
    EXPECT_TRUE(has(build_isa(), "avx2") && has(build_isa(), "fma")) << build_isa();
  }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (arch == "native" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_TRUE(has(build_isa(), "avx2")) << build_isa();
  }
#endif
}

// Negative control: the same macro test in a file compiled for the baseline finds no AVX2 there, so
// a library built without KNOT_ARCH's flags would fail the test above.
TEST(Build, BaselineBuildLacksAvx2) {
#if defined(__x86_64__)
  EXPECT_FALSE(has(baseline_isa(), "avx2")) << baseline_isa();
  EXPECT_STREQ(baseline_isa(), "sse2");
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

}  // namespace
