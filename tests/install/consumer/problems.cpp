// knot::problems: a problem file read from a string (the loader, yaml-cpp and the model registry).
#include <cstdio>

#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"

int main() {
  const char* text = "name: consumer\nmodel: {type: cartpole}\nhorizon: {N: 10, dt: 0.05}\nx0: [0, 3, 0, 0]\n";
  const knot::problems::Problem p = knot::problems::load_problem_from_string(text, "consumer.yaml", ".");
  const bool ok = p.name == "consumer" && p.nx() == 4 && p.nu() == 1 && p.horizon.N == 10;
  bool rejects = false;
  try {
    knot::problems::load_problem_from_string("name: 42\n", "bad.yaml", ".");
  } catch (const knot::problems::ProblemError&) {
    rejects = true;
  }
  std::printf("problems consumer: %s nx %d nu %d, bad file rejected %d: %s\n", p.name.c_str(), p.nx(), p.nu(), rejects,
              ok && rejects ? "ok" : "WRONG");
  return ok && rejects ? 0 : 1;
}
