// libFuzzer target for the problem-file loader: load_problem_from_string (and describe() of what
// loads) on arbitrary bytes. ProblemError is the only exception the loader may throw at bad
// input; anything else escaping, a crash, a sanitizer report, a leak or a hang is a finding.
//
// Input: optional leading lines "--set key.path=value" (at most 4) become overrides; the rest is
// the problem file. Relative paths in it resolve against fuzz/files (KNOT_FUZZ_FILES), which holds
// what the corpus refers to: robots/arm.urdf, reference tables and a parent for `extends`; so the
// URDF, table and extends readers run on every input that names them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "input.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"

namespace {

const std::filesystem::path kFiles = KNOT_FUZZ_FILES;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const knot::fuzz::ProblemInput in = knot::fuzz::split_input(data, size);
  try {
    const knot::problems::Problem problem =
        knot::problems::load_problem_from_string(in.text, "<fuzz>", kFiles, in.overrides);
    const std::string description = knot::problems::describe(problem);
    if (description.empty()) std::abort();  // describe() always names the problem
  } catch (const knot::problems::ProblemError&) {
  }
  return 0;
}
