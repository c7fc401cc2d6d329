// Exact optima at the default settings (issue 14): the discrete Bryson-Denham problem at N = 100,
// 400 and 1600 to 1e-9 relative. The reference is independent of the solver: the double integrator
// with piecewise-constant control has the closed-form step x1+ = x1 + dt x2 + dt^2/2 u,
// x2+ = x2 + dt u, so every x1_k is affine in u and the problem is a dense convex QP in u. Active-set
// methods on it (Eigen) stop at a point whose wall multipliers are >= 0 and whose rows all hold: the
// KKT conditions, sufficient for a convex QP. The test checks both of them.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "knot/solver/solver.hpp"
#include "test_sqp_common.hpp"

namespace {

using namespace knot;
using knot::test::load_config;
using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;

constexpr double kWall = 1.0 / 9.0;

// Under AddressSanitizer the dense reference at N = 1600 alone takes minutes (unoptimized Eigen):
// the sanitized run checks N = 100 and 400.
constexpr int kLargestN = knot::test::kUnderSanitizer ? 400 : 1600;

struct Reference {
  double cost = 0;
  double min_wall_multiplier = 0;  // >= 0 at a true optimum
  double max_wall_violation = 0;   // <= 0 at a feasible point
  int active = 0;                  // wall rows at the optimum
};

// x1_k = c_k + G_k u for k = 0..N, and the terminal state's rows.
struct Affine {
  Mat G;  // (N + 1) x N: x1 per knot
  Vec c;
  Mat T;  // 2 x N: x_N
  Vec t;
};

Affine affine_states(int N, double dt) {
  Affine a{Mat::Zero(N + 1, N), Vec::Zero(N + 1), Mat::Zero(2, N), Vec::Zero(2)};
  Mat G2 = Mat::Zero(1, N);  // x2_k's dependence on u
  double c1 = 0, c2 = 1;     // x(0) = (0, 1)
  a.c(0) = c1;
  for (int k = 0; k < N; ++k) {
    // x1+ = x1 + dt x2 + dt^2/2 u_k, x2+ = x2 + dt u_k.
    Mat row = a.G.row(k) + dt * G2;
    row(0, k) += 0.5 * dt * dt;
    c1 = c1 + dt * c2;
    G2(0, k) += dt;
    a.G.row(k + 1) = row;
    a.c(k + 1) = c1;
  }
  a.T.row(0) = a.G.row(N);
  a.T.row(1) = G2;
  a.t << c1, c2;
  return a;
}

// min 1/2 dt |u|^2 s.t. x_N = (0, -1) and x1_k = wall for k in `active`: with the Hessian dt I,
// u = -E'nu / dt and (E E' / dt) nu = -e, one dense solve of the multipliers' size.
struct EqualityQp {
  Vec u, nu;  // nu: the terminal rows, then one per active wall row
};

EqualityQp solve_equality_qp(const Affine& a, double dt, const std::vector<int>& active, double wall) {
  const auto m = static_cast<Eigen::Index>(2 + active.size());
  Mat E(m, a.G.cols());
  Vec e(m);
  E.topRows(2) = a.T;
  e(0) = -a.t(0);
  e(1) = -1 - a.t(1);
  for (std::size_t i = 0; i < active.size(); ++i) {
    E.row(2 + static_cast<Eigen::Index>(i)) = a.G.row(active[i]);
    e(2 + static_cast<Eigen::Index>(i)) = wall - a.c(active[i]);
  }
  // Stationarity dt u + E' nu = 0 (nu of a wall row is its inequality multiplier z) and E u = e.
  EqualityQp q;
  // Rows of neighbouring knots at the wall are nearly dependent: a rank-revealing solve.
  q.nu = (E * E.transpose() / dt).completeOrthogonalDecomposition().solve(-e);
  q.u = -E.transpose() * q.nu / dt;
  return q;
}

// The exact optimum from a first active set: a primal-dual active-set iteration (Hintermueller,
// Ito and Kunisch 2002: a row stays while its multiplier is positive, joins while it is violated),
// then, where that cycles on these nearly dependent rows, the primal active-set method (Nocedal and
// Wright, algorithm 16.3: the most violated row joins, else the most negative multiplier leaves)
// from its set. It stops at a KKT point, which the test checks itself.
Reference solve_reference(int N, double dt, std::vector<int> active, double wall) {
  const Affine a = affine_states(N, dt);
  EqualityQp q;
  const auto kkt = [&] {
    return (a.G * q.u + a.c).maxCoeff() - wall <= 1e-12 &&
           (active.empty() || q.nu.tail(q.nu.size() - 2).minCoeff() >= -1e-12);
  };
  for (int pass = 0; pass < 50; ++pass) {
    q = solve_equality_qp(a, dt, active, wall);
    if (kkt()) break;
    const Vec x1 = a.G * q.u + a.c;
    std::vector<int> next;
    std::size_t j = 0;
    for (int k = 0; k <= N; ++k) {
      const bool was = j < active.size() && active[j] == k;
      const double z = was ? q.nu(2 + static_cast<Eigen::Index>(j)) : 0.0;
      if (was) ++j;
      if ((was && z > 0) || (!was && x1(k) > wall)) next.push_back(k);
    }
    active = next;
  }
  q = solve_equality_qp(a, dt, active, wall);
  for (int pass = 0; pass < 2 * N && !kkt(); ++pass) {
    const Vec x1 = a.G * q.u + a.c;
    Eigen::Index worst_row = 0;
    if ((x1.array() - wall).maxCoeff(&worst_row) > 1e-12) {
      active.insert(std::lower_bound(active.begin(), active.end(), static_cast<int>(worst_row)),
                    static_cast<int>(worst_row));
    } else {
      Eigen::Index worst_z = 0;
      q.nu.tail(q.nu.size() - 2).minCoeff(&worst_z);
      active.erase(active.begin() + worst_z);
    }
    q = solve_equality_qp(a, dt, active, wall);
  }
  Reference r;
  r.cost = 0.5 * dt * q.u.squaredNorm();
  r.min_wall_multiplier = active.empty() ? 0 : q.nu.tail(q.nu.size() - 2).minCoeff();
  r.max_wall_violation = (a.G * q.u + a.c).maxCoeff() - wall;
  r.active = static_cast<int>(active.size());
  return r;
}

TEST(SqpExactOptima, BrysonDenhamToOnePartInABillion) {
  for (const int N : {100, 400, 1600}) {
    if (N > kLargestN) continue;
    SCOPED_TRACE(N);
    const double dt = 1.0 / N;
    const problems::Problem p =
        load_config("bryson_denham", {"horizon.N=" + std::to_string(N), "horizon.dt=" + std::to_string(dt)});
    solver::Solver s(p);
    ASSERT_EQ(s.solve(), solver::Status::Solved) << s.solution().message();
    const solver::Solution& sol = s.solution();
    // The reference's first active set (a starting point only: its answer is checked as a KKT point):
    // the knots Knot puts within 1e-7 of the wall.
    std::vector<int> active;
    for (int k = 0; k <= N; ++k)
      if (sol.x[static_cast<std::size_t>(2 * k)] > kWall - 1e-7) active.push_back(k);
    const Reference ref = solve_reference(N, dt, active, kWall);
    EXPECT_GE(ref.min_wall_multiplier, -1e-12);  // the reference is a KKT point: its multipliers ...
    EXPECT_LE(ref.max_wall_violation, 1e-12);  // ... are >= 0 and every row holds
    const double rel = std::abs(sol.cost - ref.cost) / ref.cost;
    std::cout << "Bryson-Denham N = " << N << ": knot " << std::setprecision(15) << sol.cost << ", reference "
              << ref.cost << ", relative " << rel << ", " << sol.iterations << " iterations, " << ref.active
              << " rows active\n";
    EXPECT_LE(rel, 1e-9);
    // Negative control: the optimum with the wall moved by one part in 1e7 is resolved.
    const Reference moved = solve_reference(N, dt, active, kWall * (1 + 1e-7));
    EXPECT_GT(std::abs(sol.cost - moved.cost) / moved.cost, 1e-9);
  }
}

}  // namespace
