// knot::linalg alone: a Cholesky factor on one thread, checked entry by entry.
#include <cmath>
#include <cstdio>

#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/group.hpp"

int main() {
  // A = L L' with L = [2 0; 1 3], column-major.
  double A[4] = {4, 2, 2, 10};
  knot::linalg::SerialGroup g;
  const int info = knot::linalg::potrf(g, 2, A, 2);
  const bool ok = info == 0 && A[0] == 2 && A[1] == 1 && A[3] == 3;
  std::printf("linalg consumer: potrf info %d, L = [%g 0; %g %g]: %s\n", info, A[0], A[1], A[3], ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
