// How the memory checks of Solver and solve_with_ipopt word a size (internal to solver/).
#pragma once

#include <cstdio>
#include <iterator>
#include <string>

#include "knot/problems/problem.hpp"

namespace knot::solver::detail {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Three digits in the largest binary unit that keeps the number >= 1: "8 GiB", "56.5 GiB",
// "14.1 TiB", "1 MiB".
inline std::string bytes_text(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = bytes;
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) v /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g %s", v, units[u]);
  return buf;
}

// "N = 20, nx = 4, nu = 1"
inline std::string sizes_text(const problems::Problem& p) {
  return "N = " + std::to_string(p.horizon.N) + ", nx = " + std::to_string(p.nx()) + ", nu = " + std::to_string(p.nu());
}

}  // namespace knot::solver::detail
