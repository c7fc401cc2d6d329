// The detail of a MaxIterations message, shared by Solver and the device path so that both say the
// same words. When most steps were Gauss-Newton it names the exact Hessian, which converges where
// those steps stall (docs/solver.md, "Long horizons").
#pragma once

#include <cstddef>
#include <cstdio>

namespace knot::solver {

inline void format_max_iterations(char* out, std::size_t size, int iterations, int gauss_newton_steps) {
  if (2 * gauss_newton_steps > iterations)
    std::snprintf(out, size,
                  "%d iterations, %d of them Gauss-Newton steps (hessian: exact converges where they stall, as on long "
                  "horizons)",
                  iterations, gauss_newton_steps);
  else
    std::snprintf(out, size, "%d iterations", iterations);
}

}  // namespace knot::solver
