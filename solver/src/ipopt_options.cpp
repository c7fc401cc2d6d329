// IpoptOptions validation and status messages: built with or without IPOPT.
#include <cmath>
#include <sstream>

#include "knot/solver/ipopt.hpp"

namespace knot::solver {

std::string IpoptOptions::validate() const {
  std::ostringstream out;
  if (!(std::isfinite(tol) && tol > 0))
    out << "tol must be a finite number > 0, found " << tol;
  else if (!(std::isfinite(constr_viol_tol) && constr_viol_tol > 0))
    out << "constr_viol_tol must be a finite number > 0, found " << constr_viol_tol;
  else if (max_iter < 0)
    out << "max_iter must be >= 0, found " << max_iter;
  else if (!(std::isfinite(mu_init) && mu_init > 0))
    out << "mu_init must be a finite number > 0, found " << mu_init;
  else if (!(std::isfinite(bound_relax_factor) && bound_relax_factor >= 0))
    out << "bound_relax_factor must be a finite number >= 0, found " << bound_relax_factor;
  else if (print_level < 0 || print_level > 12)
    out << "print_level must be in [0, 12], found " << print_level;
  else if (!(std::isfinite(time_limit) && time_limit >= 0))
    out << "time_limit must be a finite number >= 0, found " << time_limit;
  else if (hessian != IpoptHessian::FiniteDifference && hessian != IpoptHessian::GaussNewton &&
           hessian != IpoptHessian::LimitedMemory)
    out << "hessian must be FiniteDifference, GaussNewton or LimitedMemory, found " << static_cast<int>(hessian);
  else if (limited_memory_history < 1)
    out << "limited_memory_history must be >= 1, found " << limited_memory_history;
  else if (!(std::isfinite(memory_limit) && memory_limit > 0))
    out << "memory_limit must be a finite number of GiB > 0, found " << memory_limit;
  return out.str();
}

const char* to_string(IpoptStatus status) {
  switch (status) {
    case IpoptStatus::Solved:
      return "solved: IPOPT converged to its tolerance";
    case IpoptStatus::SolvedToAcceptableLevel:
      return "solved to an acceptable level: IPOPT stopped at its acceptable tolerance";
    case IpoptStatus::MaxIterations:
      return "the iteration limit was reached";
    case IpoptStatus::TimeLimit:
      return "the time limit was reached";
    case IpoptStatus::Infeasible:
      return "IPOPT converged to a point of local infeasibility";
    case IpoptStatus::SearchDirectionTooSmall:
      return "IPOPT's search direction became too small to make progress";
    case IpoptStatus::Diverging:
      return "the iterates diverged";
    case IpoptStatus::RestorationFailed:
      return "IPOPT's feasibility restoration failed";
    case IpoptStatus::StepComputationFailed:
      return "IPOPT could not compute a step";
    case IpoptStatus::EvaluationError:
      return "the NLP could not be evaluated (integrator failure or a non-finite value)";
    case IpoptStatus::InvalidProblem:
      return "IPOPT rejected the problem or an option";
    case IpoptStatus::NotAvailable:
      return "IPOPT not available: Knot was built without it (install coinor-libipopt-dev and reconfigure)";
    case IpoptStatus::InternalError:
      return "IPOPT failed internally";
  }
  return "unknown status";
}

}  // namespace knot::solver
