#include "knot/problems/error.hpp"

namespace knot::problems {
namespace {

std::string format(const SourceLocation& at, const std::string& key, const std::string& expected,
                   const std::string& found, const std::string& hint) {
  // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on chains of operator+.
  std::string m = at.file.empty() ? "<problem>" : at.file;
  if (at.line > 0) m.append(":").append(std::to_string(at.line)).append(":").append(std::to_string(at.column));
  m.append(": ").append(key.empty() ? "<document>" : key);
  m.append(": expected ").append(expected).append(", found ").append(found);
  if (!hint.empty()) m.append(" (").append(hint).append(")");
  return m;
}

}  // namespace

ProblemError::ProblemError(SourceLocation where, std::string key_path, std::string expected, std::string found,
                           std::string hint)
    : std::runtime_error(format(where, key_path, expected, found, hint)),
      where_(std::move(where)),
      key_path_(std::move(key_path)),
      expected_(std::move(expected)),
      found_(std::move(found)) {}

}  // namespace knot::problems
