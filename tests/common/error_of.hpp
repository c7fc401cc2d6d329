// The message of the ProblemError that f throws (and its key path through `key`), or "no error".
#pragma once

#include <functional>
#include <string>

#include "knot/problems/error.hpp"

namespace knot::test {

inline std::string error_of(const std::function<void()>& f, std::string* key = nullptr) {
  try {
    f();
  } catch (const problems::ProblemError& e) {
    if (key != nullptr) *key = e.key_path();
    return e.what();
  }
  return "no error";
}

}  // namespace knot::test
