#include "knot/problems/model.hpp"

namespace knot::problems {
namespace {

// Appended rather than "x" + std::to_string(i): GCC 12 warns (-Wrestrict, a false positive) there.
std::string indexed(const char* prefix, int i) {
  std::string s = prefix;
  s += std::to_string(i);
  return s;
}

}  // namespace

std::vector<std::string> Model::state_names() const {
  std::vector<std::string> names;
  for (int i = 0; i < nx(); ++i) names.push_back(indexed("x", i));
  return names;
}

std::vector<std::string> Model::control_names() const {
  std::vector<std::string> names;
  for (int i = 0; i < nu(); ++i) names.push_back(indexed("u", i));
  return names;
}

}  // namespace knot::problems
