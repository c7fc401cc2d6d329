// Private: the checks behind SolverSettings::validate and MpcSettings::validate, structured so the
// loader can report the offending field at its position in the problem file.
#pragma once

#include <optional>
#include <string>

#include "knot/problems/settings.hpp"

namespace knot::problems::detail {

struct SettingIssue {
  std::string field;  // "max_iter", "disturbances[1].time"
  std::string expected;
  std::string found;
};

std::optional<SettingIssue> check(const SolverSettings& s);
std::optional<SettingIssue> check(const MpcSettings& s);

// The names the string-valued solver fields accept.
inline const char* const kMpcModeNames[] = {"rti", "sqp"};
inline const char* const kWarmStartNames[] = {"shift", "hold"};
inline const char* const kLinsysNames[] = {"auto", "pcg", "bdsv", "riccati", "kkt_ldlt"};
inline const char* const kHessianNames[] = {"gauss_newton", "exact", "auto"};
inline const char* const kGlobalizationNames[] = {"filter", "merit", "none"};

}  // namespace knot::problems::detail
