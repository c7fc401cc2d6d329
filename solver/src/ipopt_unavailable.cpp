// Stands in for ipopt_solve.cpp when Knot is built without IPOPT (solver/CMakeLists.txt): the same
// argument checks, then IpoptStatus::NotAvailable.
#include <stdexcept>
#include <string>

#include "knot/solver/ipopt.hpp"

namespace knot::solver {

bool ipopt_available() { return false; }

IpoptResult solve_with_ipopt(const problems::Problem& problem, const IpoptOptions& options,
                             const std::vector<double>* x_guess, const std::vector<double>* u_guess) {
  if (const std::string bad = options.validate(); !bad.empty()) throw std::invalid_argument("IpoptOptions: " + bad);
  problem.validate();
  const std::size_t N = static_cast<std::size_t>(problem.horizon.N);
  if (x_guess != nullptr && x_guess->size() != (N + 1) * problem.nx())
    throw std::invalid_argument("solve_with_ipopt: x_guess: expected " + std::to_string((N + 1) * problem.nx()) +
                                " values, found " + std::to_string(x_guess->size()));
  if (u_guess != nullptr && u_guess->size() != N * problem.nu())
    throw std::invalid_argument("solve_with_ipopt: u_guess: expected " + std::to_string(N * problem.nu()) +
                                " values, found " + std::to_string(u_guess->size()));
  IpoptResult result;
  result.status = IpoptStatus::NotAvailable;
  result.message = to_string(result.status);
  return result;
}

}  // namespace knot::solver
