// Prints Knot's inverse dynamics, mass matrix and RNEA derivatives of a URDF at a few fixed states,
// for crosscheck.py to compare with Pinocchio (EE_FRAME only names a frame where the tree branches). Output, one record per line:
//   joints <names...>
//   state q... | qd... | qdd...
//   tau ... / M ... / dtau_dq ... / dtau_dqd ...   (matrices column-major)
#include <cstdio>
#include <exception>
#include <memory>

#include "knot/problems/robot/dynamics.hpp"
#include "knot/problems/robot/urdf.hpp"

namespace robot = knot::problems::robot;

namespace {

void print(const char* tag, const double* v, int count) {
  std::printf("%s", tag);
  for (int k = 0; k < count; ++k) std::printf(" %.17g", v[k]);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: knot_dump_dynamics FILE.urdf [EE_FRAME]\n");
    return 2;
  }
  try {
    const robot::RobotModel m = robot::load_urdf(argv[1], argc == 3 ? argv[2] : "");
    const int n = m.data.n;
    std::printf("joints");
    for (const auto& name : m.joint_names) std::printf(" %s", name.c_str());
    std::printf("\n");
    auto w = std::make_unique<robot::Workspace<double>>();
    double q[robot::kMaxJoints], qd[robot::kMaxJoints], qdd[robot::kMaxJoints], tau[robot::kMaxJoints];
    double M[robot::kMaxJoints * robot::kMaxJoints], dq[robot::kMaxJoints * robot::kMaxJoints],
        dqd[robot::kMaxJoints * robot::kMaxJoints];
    for (int s = 0; s < 4; ++s) {
      for (int i = 0; i < n; ++i) {
        q[i] = 0.01 * (1 + s) + 0.013 * i * (s % 2 == 0 ? 1 : -1);
        qd[i] = 0.4 * s - 0.3 + 0.17 * i;
        qdd[i] = 0.5 - 0.21 * i * s;
      }
      robot::rnea(m.data, q, qd, qdd, tau, *w);
      robot::mass_matrix(m.data, q, M, n, *w);
      robot::rnea_derivatives(m.data, q, qd, qdd, static_cast<double*>(nullptr), dq, dqd, n, *w);
      std::printf("state");
      for (const double* v : {q, qd, qdd})
        for (int i = 0; i < n; ++i) std::printf(" %.17g", v[i]);
      std::printf("\n");
      print("tau", tau, n);
      print("M", M, n * n);
      print("dtau_dq", dq, n * n);
      print("dtau_dqd", dqd, n * n);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
