// knot check FILE [--set key=value]...: load and validate a problem file, print what it resolves to.
#include <cstdio>
#include <fmt/core.h>
#include <exception>

#include "commands.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"

namespace knot::cli {

int run_check(const CheckOptions& opt) {
  try {
    const problems::Problem problem = problems::load_problem(opt.file, opt.overrides);
    std::fputs(problems::describe(problem).c_str(), stdout);
    return 0;
  } catch (const problems::ProblemError& e) {
    // The message is the whole report: file:line:column: key: expected ..., found ...
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
}

}  // namespace knot::cli
