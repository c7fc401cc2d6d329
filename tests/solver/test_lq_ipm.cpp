// LqIpmSolver (box-constrained LQ by interior point) against independent references: the KKT
// conditions of the QP checked with dense Eigen matrices built from the data, the unconstrained LQ
// solution when the bounds are inactive, and the exact optimum of tiny problems found by enumerating
// active sets (each a dense equality-constrained KKT solve). Also state and one-sided bounds, every
// LQ backend, the statuses, malformed input, and no allocation in solve().
#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <tuple>

#include "alloc_counter.hpp"
#include "knot/solver/lq_ipm.hpp"
#include "test_lq_common.hpp"

namespace knot::test {
namespace {

using solver::LqBounds;
using solver::LqIpmOptions;
using solver::LqIpmSolution;
using solver::LqIpmSolver;
using solver::LqIpmStatus;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The tolerances the KKT check applies (the solver stops at tol = 1e-8 on each measure).
constexpr double kStatTol = 1e-7;   // stationarity, relative to max(1, |q|, |r|)
constexpr double kFeasTol = 1e-8;   // dynamics, and bound violation
constexpr double kCompTol = 1e-8;   // average (or, with complementarity_max, largest) z_i * distance to bound_i
constexpr double kRound = 1e-15;    // rounding in the measures themselves
constexpr double kActiveZ = 1e-4;   // a multiplier this large marks a bound as active

LqBounds box_u(int nx, int nu, int N, double half_width) {
  LqBounds b(nx, nu, N);
  std::fill(b.lbu.begin(), b.lbu.end(), -half_width);
  std::fill(b.ubu.begin(), b.ubu.end(), half_width);
  return b;
}

LqIpmOptions ipm_with(Linsys linsys) {
  LqIpmOptions o;
  o.lq.linsys = linsys;
  return o;
}

struct Kkt {
  double stationarity = kNaN;  // relative
  double feasibility = kNaN;   // dynamics and x_0
  double violation = kNaN;     // largest amount a bound is exceeded by
  double min_multiplier = kNaN;
  double complementarity = kNaN;      // average z_i * gap_i over the finite bounds
  double complementarity_max = kNaN;  // largest
  int active = 0;                     // bounds with z > kActiveZ
  bool ok(bool each_product = false) const {
    return stationarity < kStatTol && feasibility < kFeasTol && violation < kFeasTol && min_multiplier >= 0.0 &&
           (each_product ? complementarity_max : complementarity) < kCompTol + kRound;
  }
};

// Every bounded entry of the stacked primal vector (x_0..x_N, u_0..u_{N-1}) of DenseKkt, with its
// bounds and multipliers taken from the solution.
struct Bounded {
  int row;
  double lb, ub, zl, zu;
};

std::vector<Bounded> bounded_entries(const DenseKkt& s, const LqBounds& b, const LqIpmSolution* sol) {
  std::vector<Bounded> out;
  for (int k = 1; k <= s.N; ++k)
    for (int i = 0; i < s.nx; ++i) {
      const int j = k * s.nx + i;
      if (b.lbx[j] > -kInf || b.ubx[j] < kInf)
        out.push_back({s.ix(k) + i, b.lbx[j], b.ubx[j], sol ? sol->zl_x[j] : 0.0, sol ? sol->zu_x[j] : 0.0});
    }
  for (int k = 0; k < s.N; ++k)
    for (int i = 0; i < s.nu; ++i) {
      const int j = k * s.nu + i;
      if (b.lbu[j] > -kInf || b.ubu[j] < kInf)
        out.push_back({s.iu(k) + i, b.lbu[j], b.ubu[j], sol ? sol->zl_u[j] : 0.0, sol ? sol->zu_u[j] : 0.0});
    }
  return out;
}

// The KKT conditions of the box-constrained QP from the dense matrices: the rows of K w - rhs for the
// primal unknowns are the gradient of lq.hpp's Lagrangian, to which the bounds add -zl + zu.
Kkt kkt_check(const LqData& d, const LqBounds& b, const LqIpmSolution& sol) {
  const DenseKkt s = dense_kkt(d);
  const Vec w = pack(s, sol);
  Vec res = s.K * w - s.rhs;
  Kkt out;
  out.violation = 0.0;
  out.min_multiplier = kInf;
  out.complementarity_max = 0.0;
  double sum = 0.0;
  int count = 0;
  for (const Bounded& e : bounded_entries(s, b, &sol)) {
    res(e.row) += -e.zl + e.zu;
    const double v = w(e.row);
    out.violation = std::max({out.violation, e.lb - v, v - e.ub});
    for (const auto& [z, gap] : {std::pair{e.zl, v - e.lb}, std::pair{e.zu, e.ub - v}}) {
      if (!std::isfinite(gap)) {
        if (z != 0.0) out.min_multiplier = -1.0;  // a multiplier on an absent bound
        continue;
      }
      out.min_multiplier = std::min(out.min_multiplier, z);
      out.complementarity_max = std::max(out.complementarity_max, std::abs(z * gap));
      sum += std::abs(z * gap);
      ++count;
      out.active += z > kActiveZ ? 1 : 0;
    }
  }
  out.complementarity = count > 0 ? sum / count : 0.0;
  if (out.min_multiplier == kInf) out.min_multiplier = 0.0;
  const double scale = std::max({1.0, s.rhs.head(s.nz()).cwiseAbs().maxCoeff()});
  out.stationarity = res.head(s.nz()).cwiseAbs().maxCoeff() / scale;
  out.feasibility = res.tail(s.size() - s.nz()).cwiseAbs().maxCoeff();
  if (!w.allFinite()) out.stationarity = kNaN;
  return out;
}

// 1/2 z'Hz + g'z of the stacked primal vector.
double objective(const DenseKkt& s, const Vec& w) {
  const Vec z = w.head(s.nz());
  return 0.5 * z.dot(s.K.topLeftCorner(s.nz(), s.nz()) * z) - s.rhs.head(s.nz()).dot(z);
}

// Entries of u where the unconstrained optimum leaves [-half, half].
int unconstrained_violations(const LqData& d, double half) {
  LqSolver s(d.nx, d.nu, d.N, with(Linsys::Riccati));
  LqSolution sol(d.nx, d.nu, d.N);
  EXPECT_EQ(s.solve(d, sol), LqStatus::Solved);
  int n = 0;
  for (const double u : sol.u) n += std::abs(u) > half ? 1 : 0;
  return n;
}

LqIpmSolution solve_ipm(const LqData& d, const LqBounds& b, LqIpmStatus* status, const LqIpmOptions& o = {},
                        int* iterations = nullptr) {
  LqIpmSolver s(d.nx, d.nu, d.N, o);
  LqIpmSolution sol(d.nx, d.nu, d.N);
  for (auto* v : {&sol.x, &sol.u, &sol.lambda, &sol.zl_u, &sol.zu_u, &sol.zl_x, &sol.zu_x})
    std::fill(v->begin(), v->end(), kNaN);
  *status = s.solve(d, b, sol);
  if (iterations != nullptr) *iterations = s.stats().iterations;
  return sol;
}

TEST(LqIpm, KktConditionsOnRandomBoxConstrainedProblems) {
  Rng rng(71);
  // (21, 3) and (18, 9): state (and control) sizes not compiled in, on the run-time-size kernels.
  const LqSize sizes[] = {{1, 1, 1},   {1, 1, 30},  {2, 1, 3},   {3, 2, 10}, {4, 1, 50}, {5, 5, 30},
                          {7, 3, 12},  {12, 4, 20}, {14, 7, 16}, {28, 7, 6}, {21, 3, 8}, {18, 9, 6}};
  int violated_total = 0;
  for (const LqSize& z : sizes) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    const LqBounds b = box_u(z.nx, z.nu, z.N, 0.5);
    const int violated = unconstrained_violations(d, 0.5);
    if (z.N * z.nu >= 10) {
      EXPECT_GT(violated, 0);  // the bounds matter
    }
    violated_total += violated;
    for (const bool each_product : {false, true}) {
      SCOPED_TRACE(each_product ? "complementarity_max" : "average complementarity");
      LqIpmOptions o;
      o.complementarity_max = each_product;
      LqIpmStatus st;
      int iters = 0;
      const LqIpmSolution sol = solve_ipm(d, b, &st, o, &iters);
      ASSERT_EQ(st, LqIpmStatus::Solved);
      EXPECT_LE(iters, 20);
      const Kkt k = kkt_check(d, b, sol);
      EXPECT_TRUE(k.ok(each_product)) << "stationarity " << k.stationarity << " feasibility " << k.feasibility
                                      << " violation " << k.violation << " min z " << k.min_multiplier
                                      << " complementarity " << k.complementarity << " max "
                                      << k.complementarity_max;
      if (violated > 0) {
        EXPECT_GT(k.active, 0);
      }
    }
  }
  EXPECT_GT(violated_total, 20);
}

// The check above rejects a wrong answer: a perturbed primal entry, multiplier or costate fails it.
TEST(LqIpm, PerturbedSolutionFailsTheKktCheck) {
  Rng rng(72);
  const LqData d = random_lq(rng, 4, 2, 12);
  const LqBounds b = box_u(4, 2, 12, 0.5);
  LqIpmStatus st;
  LqIpmSolution sol = solve_ipm(d, b, &st);
  ASSERT_EQ(st, LqIpmStatus::Solved);
  ASSERT_TRUE(kkt_check(d, b, sol).ok());
  int active = -1;
  for (int j = 0; j < 24 && active < 0; ++j)
    if (sol.zl_u[j] > kActiveZ || sol.zu_u[j] > kActiveZ) active = j;
  ASSERT_GE(active, 0);
  double* entries[] = {&sol.u[3], &sol.x[9], &sol.lambda[17], sol.zl_u[active] > kActiveZ ? &sol.zl_u[active] : &sol.zu_u[active]};
  for (double* entry : entries) {
    const double saved = *entry;
    *entry += 1e-6 * std::max(1.0, std::abs(saved));
    EXPECT_FALSE(kkt_check(d, b, sol).ok());
    *entry = saved;
  }
  // A multiplier of the wrong sign, and a variable pushed past its bound.
  const double z = sol.zl_u[0];
  sol.zl_u[0] = -1e-3;
  EXPECT_FALSE(kkt_check(d, b, sol).ok());
  sol.zl_u[0] = z;
  sol.u[active] *= 1.0 + 1e-6;
  EXPECT_FALSE(kkt_check(d, b, sol).ok());
}

// Bounds far away change nothing: the unconstrained LQ solution (Riccati) is the answer.
TEST(LqIpm, InactiveBoundsGiveTheUnconstrainedSolution) {
  Rng rng(73);
  for (const LqSize& z : {LqSize{1, 1, 1}, LqSize{4, 1, 50}, LqSize{12, 4, 20}, LqSize{14, 7, 10}}) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    LqBounds b = box_u(z.nx, z.nu, z.N, 1e6);
    for (int j = z.nx; j < (z.N + 1) * z.nx; ++j) {
      b.lbx[j] = -1e6;
      b.ubx[j] = 1e6;
    }
    LqSolver lq(z.nx, z.nu, z.N, with(Linsys::Riccati));
    LqSolution ref(z.nx, z.nu, z.N);
    ASSERT_EQ(lq.solve(d, ref), LqStatus::Solved);
    LqIpmStatus st;
    const LqIpmSolution sol = solve_ipm(d, b, &st);
    ASSERT_EQ(st, LqIpmStatus::Solved);
    LqSolution got(z.nx, z.nu, z.N);
    got.x = sol.x;
    got.u = sol.u;
    got.lambda = sol.lambda;
    EXPECT_LT(solution_error(got, ref), 1e-9);
    // No bounds at all: one Newton step.
    LqIpmSolver s(z.nx, z.nu, z.N);
    LqIpmSolution free(z.nx, z.nu, z.N);
    ASSERT_EQ(s.solve(d, LqBounds(z.nx, z.nu, z.N), free), LqIpmStatus::Solved);
    EXPECT_EQ(s.stats().iterations, 1);
    EXPECT_EQ(s.stats().bounds, 0);
    got.x = free.x;
    got.u = free.u;
    got.lambda = free.lambda;
    EXPECT_LT(solution_error(got, ref), 1e-9);
  }
}

// The exact optimum of a tiny problem: each bounded variable free, at its lower or at its upper bound
// (3^n active sets), each an equality-constrained QP solved densely; the optimum is the one that is
// feasible with multipliers of the right sign (unique for a strictly convex QP).
struct Enumerated {
  Vec w;
  std::vector<Bounded> bounds;  // with the optimum's multipliers
  double objective = kNaN;
  int active = 0;
  int candidates = 0;  // active sets that passed (exactly one expected)
};

Enumerated enumerate_active_sets(const LqData& d, const LqBounds& b) {
  const DenseKkt s = dense_kkt(d);
  const std::vector<Bounded> e = bounded_entries(s, b, nullptr);
  const int n = static_cast<int>(e.size());
  int sets = 1;
  for (int i = 0; i < n; ++i) sets *= 3;
  Enumerated best;
  std::vector<int> state(n);
  for (int code = 0; code < sets; ++code) {
    int c = code, na = 0;
    for (int i = 0; i < n; ++i) {
      state[i] = c % 3;  // 0 free, 1 lower, 2 upper
      c /= 3;
      na += state[i] != 0 ? 1 : 0;
    }
    bool absent = false;
    for (int i = 0; i < n; ++i)
      absent = absent || (state[i] == 1 && !std::isfinite(e[i].lb)) || (state[i] == 2 && !std::isfinite(e[i].ub));
    if (absent) continue;
    Mat K = Mat::Zero(s.size() + na, s.size() + na);
    Vec rhs = Vec::Zero(s.size() + na);
    K.topLeftCorner(s.size(), s.size()) = s.K;
    rhs.head(s.size()) = s.rhs;
    for (int i = 0, a = 0; i < n; ++i) {
      if (state[i] == 0) continue;
      // Row v = bound; its multiplier nu enters stationarity as +nu, i.e. nu = zu - zl.
      K(s.size() + a, e[i].row) = 1.0;
      K(e[i].row, s.size() + a) = 1.0;
      rhs(s.size() + a) = state[i] == 1 ? e[i].lb : e[i].ub;
      ++a;
    }
    const Vec w = K.fullPivLu().solve(rhs);
    bool ok = (K * w - rhs).cwiseAbs().maxCoeff() < 1e-10;
    for (int i = 0, a = 0; i < n && ok; ++i) {
      const double v = w(e[i].row);
      if (state[i] == 0) ok = v >= e[i].lb - 1e-12 && v <= e[i].ub + 1e-12;
      if (state[i] == 1) ok = w(s.size() + a) <= 1e-12;  // zl = -nu >= 0
      if (state[i] == 2) ok = w(s.size() + a) >= -1e-12;  // zu = nu >= 0
      if (state[i] != 0) ++a;
    }
    if (!ok) continue;
    ++best.candidates;
    best.w = w.head(s.size());
    best.bounds = e;
    for (int i = 0, a = 0; i < n; ++i) {
      best.bounds[i].zl = state[i] == 1 ? -w(s.size() + a) : 0.0;
      best.bounds[i].zu = state[i] == 2 ? w(s.size() + a) : 0.0;
      if (state[i] != 0) ++a;
    }
    best.objective = objective(s, best.w);
    best.active = na;
  }
  return best;
}

TEST(LqIpm, MatchesActiveSetEnumerationOnTinyProblems) {
  Rng rng(74);
  struct Case {
    LqSize size;
    bool state_bounds;
  };
  int active_total = 0;
  for (const Case& c : {Case{{1, 1, 6}, false}, Case{{2, 1, 8}, false}, Case{{3, 2, 4}, false},
                        Case{{1, 2, 5}, false}, Case{{2, 1, 4}, true}, Case{{3, 1, 4}, true}}) {
    const LqSize z = c.size;
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N << " x bounds "
                                    << c.state_bounds);
    LqData d = random_lq(rng, z.nx, z.nu, z.N);
    for (double& v : d.r) v *= 3.0;  // push the unconstrained controls out of the box
    LqBounds b = box_u(z.nx, z.nu, z.N, 0.5);
    if (c.state_bounds) {
      // Unconstrained trajectory's state 0, clipped from above inside its range; the lower bound of
      // the same entry is absent.
      LqSolver lq(z.nx, z.nu, z.N, with(Linsys::Riccati));
      LqSolution free(z.nx, z.nu, z.N);
      for (double& v : b.lbu) v = -2.0;
      for (double& v : b.ubu) v = 2.0;
      ASSERT_EQ(lq.solve(d, free), LqStatus::Solved);
      for (int k = 1; k <= z.N; ++k) b.ubx_k(k)[0] = free.x_k(k)[0] - 0.2;
    }
    const Enumerated ref = enumerate_active_sets(d, b);
    ASSERT_EQ(ref.candidates, 1);
    active_total += ref.active;

    LqIpmOptions o;
    o.tol = 1e-10;
    o.complementarity_max = true;
    LqIpmStatus st;
    const LqIpmSolution sol = solve_ipm(d, b, &st, o);
    ASSERT_EQ(st, LqIpmStatus::Solved);
    const DenseKkt s = dense_kkt(d);
    const Vec w = pack(s, sol);
    EXPECT_LT(std::abs(objective(s, w) - ref.objective), 1e-9 * std::max(1.0, std::abs(ref.objective)));
    EXPECT_LT(rel_err(w.head(s.nz()), ref.w.head(s.nz())), 1e-7);
    EXPECT_TRUE(kkt_check(d, b, sol).ok(true));
    // The same active set: where the optimum's multiplier is clearly positive, the interior point's
    // agrees and its variable sits on the bound (z * gap <= tol = 1e-10 gives gap <= 1e-7).
    const std::vector<Bounded> got = bounded_entries(s, b, &sol);
    ASSERT_EQ(got.size(), ref.bounds.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      for (const auto& [zref, zgot, bound] : {std::tuple{ref.bounds[i].zl, got[i].zl, got[i].lb},
                                              std::tuple{ref.bounds[i].zu, got[i].zu, got[i].ub}}) {
        if (zref > 1e-3) {
          EXPECT_NEAR(zgot, zref, 1e-6 * std::max(1.0, zref)) << "bound " << i;
          EXPECT_LT(std::abs(w(got[i].row) - bound), 1e-7) << "bound " << i;
        } else {
          EXPECT_LT(zgot, 1e-6) << "bound " << i;
        }
      }
    }
  }
  EXPECT_GT(active_total, 5);
}

// State bounds, one-sided and absent bounds mixed: still a KKT point, with state bounds active.
TEST(LqIpm, StateBoundsAndMixedInfiniteBounds) {
  Rng rng(75);
  for (const LqSize& z : {LqSize{2, 1, 10}, LqSize{4, 2, 30}, LqSize{12, 4, 20}}) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    LqSolver lq(z.nx, z.nu, z.N, with(Linsys::Riccati));
    LqSolution free(z.nx, z.nu, z.N);
    ASSERT_EQ(lq.solve(d, free), LqStatus::Solved);
    LqBounds b(z.nx, z.nu, z.N);
    for (int k = 0; k < z.N; ++k) {
      b.lbu_k(k)[0] = -0.5;  // u_0: lower bound only; the other controls: upper only at odd k
      for (int i = 1; i < z.nu; ++i)
        if (k % 2 == 1) b.ubu_k(k)[i] = 0.3;
    }
    int state_cut = 0;
    for (int k = 2; k <= z.N; ++k) {  // x_k[0] <= its free value - 0.1 at some knots, x_k[1] >= ...
      if (k % 3 == 0) {
        b.ubx_k(k)[0] = free.x_k(k)[0] - 0.1;
        ++state_cut;
      }
      if (z.nx > 1 && k % 4 == 1) b.lbx_k(k)[1] = free.x_k(k)[1] + 0.1;
      if (z.nx > 2 && k % 5 == 0) {
        b.lbx_k(k)[2] = -3.0;
        b.ubx_k(k)[2] = 3.0;
      }
    }
    ASSERT_GT(state_cut, 0);
    LqIpmStatus st;
    const LqIpmSolution sol = solve_ipm(d, b, &st);
    ASSERT_EQ(st, LqIpmStatus::Solved);
    const Kkt k = kkt_check(d, b, sol);
    EXPECT_TRUE(k.ok()) << "stationarity " << k.stationarity << " feasibility " << k.feasibility << " violation "
                        << k.violation << " min z " << k.min_multiplier << " complementarity " << k.complementarity;
    int state_active = 0;
    for (const double zx : sol.zu_x) state_active += zx > kActiveZ ? 1 : 0;
    for (const double zx : sol.zl_x) state_active += zx > kActiveZ ? 1 : 0;
    EXPECT_GT(state_active, 0);
    for (int i = 0; i < z.nx; ++i) EXPECT_EQ(sol.zl_x[i] + sol.zu_x[i], 0.0);  // x_0 carries none
  }
}

// Bdsv and kkt_ldlt through the same iteration: the same answer as Riccati.
TEST(LqIpm, EveryBackendGivesTheSameSolution) {
  Rng rng(76);
  const LqData d = random_lq(rng, 6, 3, 15);
  const LqBounds b = box_u(6, 3, 15, 0.5);
  LqIpmStatus st;
  const LqIpmSolution ref = solve_ipm(d, b, &st, ipm_with(Linsys::Riccati));
  ASSERT_EQ(st, LqIpmStatus::Solved);
  for (const Linsys linsys : {Linsys::Bdsv, Linsys::KktLdlt}) {
    SCOPED_TRACE(solver::to_string(linsys));
    const LqIpmSolution sol = solve_ipm(d, b, &st, ipm_with(linsys));
    ASSERT_EQ(st, LqIpmStatus::Solved);
    EXPECT_TRUE(kkt_check(d, b, sol).ok());
    const auto v = [](const std::vector<double>& x) { return Eigen::Map<const Vec>(x.data(), static_cast<Eigen::Index>(x.size())); };
    EXPECT_LT(rel_err(v(sol.u), v(ref.u)), 1e-6);
    EXPECT_LT(rel_err(v(sol.x), v(ref.x)), 1e-6);
  }
}

// Bdsv near convergence, where z/s reaches 1e10 and more on the bounded controls: its stage blocks
// stay unregularized (their scale is the median of the diagonal, not the barrier entries), the
// Newton systems stay exact (the last one Solved, not MaxIterations of the refinement) and the
// iteration follows Riccati's. With the largest diagonal entry as the scale these problems stopped
// NotPositiveDefinite or short of stationarity (checked when the median scale was introduced).
TEST(LqIpm, BdsvNewtonSystemsStayExactNearConvergence) {
  Rng rng(79);
  for (const LqSize z : {LqSize{12, 4, 50}, LqSize{14, 7, 40}}) {
    for (int rep = 0; rep < 2; ++rep) {
      SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N << " rep " << rep);
      const LqData d = random_lq(rng, z.nx, z.nu, z.N);
      const LqBounds b = box_u(z.nx, z.nu, z.N, 0.5);
      LqIpmSolver ric(z.nx, z.nu, z.N, ipm_with(Linsys::Riccati)), bd(z.nx, z.nu, z.N, ipm_with(Linsys::Bdsv));
      LqIpmSolution ref(z.nx, z.nu, z.N), sol(z.nx, z.nu, z.N);
      ASSERT_EQ(ric.solve(d, b, ref), LqIpmStatus::Solved);
      const LqIpmStatus st = bd.solve(d, b, sol);
      ASSERT_EQ(st, LqIpmStatus::Solved) << to_string(st);
      EXPECT_EQ(bd.stats().lq_status, LqStatus::Solved);
      EXPECT_LE(std::abs(bd.stats().iterations - ric.stats().iterations), 1);
      EXPECT_GT(bd.stats().max_complementarity, 0.0);
      EXPECT_TRUE(kkt_check(d, b, sol).ok());
      const auto v = [](const std::vector<double>& x) { return Eigen::Map<const Vec>(x.data(), static_cast<Eigen::Index>(x.size())); };
      EXPECT_LT(rel_err(v(sol.u), v(ref.u)), 1e-7);
    }
  }
}

// A stage cost the barrier terms cannot make convex: a status, no exception.
TEST(LqIpm, NonConvexProblemIsNotPositiveDefinite) {
  Rng rng(77);
  LqData d = random_lq(rng, 4, 2, 10, Cost::TerminalOnly);
  put(-50.0 * Mat::Identity(2, 2), d.R_k(5));
  LqIpmSolver s(4, 2, 10);
  LqIpmSolution sol(4, 2, 10);
  LqIpmStatus st = LqIpmStatus::Solved;
  EXPECT_NO_THROW(st = s.solve(d, box_u(4, 2, 10, 0.5), sol));
  EXPECT_EQ(st, LqIpmStatus::NotPositiveDefinite);
  EXPECT_EQ(s.stats().lq_status, LqStatus::NotPositiveDefinite);
  EXPECT_EQ(s.stats().failed_stage, 5);
}

TEST(LqIpm, NonFiniteDataIsReported) {
  Rng rng(78);
  const LqData clean = random_lq(rng, 5, 2, 8);
  const LqBounds b = box_u(5, 2, 8, 0.5);
  for (int which = 0; which < 4; ++which) {
    LqData d = clean;
    (which == 0 ? d.R[3] : which == 1 ? d.c[7] : which == 2 ? d.q[4] : d.A[11]) = kNaN;
    LqIpmSolver s(5, 2, 8);
    LqIpmSolution sol(5, 2, 8);
    LqIpmStatus st = LqIpmStatus::Solved;
    EXPECT_NO_THROW(st = s.solve(d, b, sol));
    EXPECT_EQ(st, LqIpmStatus::NonFinite) << which;
  }
  LqIpmSolver s(5, 2, 8);
  LqIpmSolution sol(5, 2, 8);
  EXPECT_EQ(s.solve(clean, b, sol), LqIpmStatus::Solved);
}

// The default stop is HPIPM SPEED_ABS's (lq_ipm.hpp): the first iterate whose average product
// s_i z_i (and residuals) pass tol. Checked against the independent KKT measures of kkt_check: the
// answer passes on the average, and the iterate one step earlier (max_iter one lower) does not, so
// the stop neither overshoots nor fires early. On some problems the largest product is still above
// tol when the average stops it; the rule on the largest product (complementarity_max) then takes
// more iterations, which shows the two rules differ and the default is the average.
TEST(LqIpm, StopsAtTheFirstIterateWhoseMeanComplementarityPasses) {
  Rng rng(83);
  const LqSize sizes[] = {{4, 1, 50}, {12, 4, 20}, {14, 7, 16}, {21, 3, 8}, {5, 5, 30}, {7, 3, 12}};
  int mean_only = 0;  // stops on the average with the largest product above tol
  for (const LqSize& z : sizes) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    const LqBounds b = box_u(z.nx, z.nu, z.N, 0.5);
    LqIpmStatus st;
    int iters = 0;
    const LqIpmSolution sol = solve_ipm(d, b, &st, {}, &iters);
    ASSERT_EQ(st, LqIpmStatus::Solved);
    const Kkt k = kkt_check(d, b, sol);
    EXPECT_TRUE(k.ok(false)) << "complementarity " << k.complementarity;
    ASSERT_GE(iters, 2);

    LqIpmOptions early;
    early.max_iter = iters - 1;
    int iters_early = 0;
    const LqIpmSolution before = solve_ipm(d, b, &st, early, &iters_early);
    EXPECT_EQ(st, LqIpmStatus::MaxIterations);
    EXPECT_FALSE(kkt_check(d, b, before).ok(false));

    LqIpmOptions each;
    each.complementarity_max = true;
    int iters_max = 0;
    const LqIpmSolution sol_max = solve_ipm(d, b, &st, each, &iters_max);
    ASSERT_EQ(st, LqIpmStatus::Solved);
    EXPECT_GE(iters_max, iters);
    if (k.complementarity_max > kCompTol) {
      ++mean_only;
      EXPECT_GT(iters_max, iters);
    }
  }
  EXPECT_GT(mean_only, 0);
}

TEST(LqIpm, IterationLimitIsReported) {
  Rng rng(79);
  const LqData d = random_lq(rng, 4, 1, 30);
  LqIpmOptions o;
  o.max_iter = 2;
  LqIpmStatus st;
  int iters = 0;
  const LqIpmSolution sol = solve_ipm(d, box_u(4, 1, 30, 0.5), &st, o, &iters);
  EXPECT_EQ(st, LqIpmStatus::MaxIterations);
  EXPECT_EQ(iters, 2);
  EXPECT_FALSE(kkt_check(d, box_u(4, 1, 30, 0.5), sol).ok());
}

TEST(LqIpm, MalformedInputThrows) {
  Rng rng(80);
  const LqData d = random_lq(rng, 3, 2, 5);
  LqIpmSolver s(3, 2, 5);
  LqIpmSolution sol(3, 2, 5);
  LqBounds b = box_u(3, 2, 5, 0.5);
  EXPECT_NO_THROW(s.solve(d, b, sol));
  b.lbu[4] = 0.7;  // lower > upper
  EXPECT_THROW(s.solve(d, b, sol), std::invalid_argument);
  b = box_u(3, 2, 5, 0.5);
  b.ubx[7] = kNaN;
  EXPECT_THROW(s.solve(d, b, sol), std::invalid_argument);
  b = box_u(3, 2, 5, 0.5);
  b.lbx[0] = 5.0;  // x_0's bounds are ignored: x_0 is fixed
  EXPECT_NO_THROW(s.solve(d, b, sol));
  EXPECT_THROW(s.solve(d, box_u(3, 2, 4, 0.5), sol), std::invalid_argument);
  LqIpmSolution wrong(3, 2, 6);
  EXPECT_THROW(s.solve(d, box_u(3, 2, 5, 0.5), wrong), std::invalid_argument);
  EXPECT_THROW(LqIpmSolver(0, 2, 5), std::invalid_argument);
  LqIpmOptions o;
  o.tol = 0.0;
  EXPECT_NE(o.validate().find("tol"), std::string::npos);
  EXPECT_THROW(LqIpmSolver(3, 2, 5, o), std::invalid_argument);
  o = {};
  o.tau_min = 1.0;
  EXPECT_THROW(LqIpmSolver(3, 2, 5, o), std::invalid_argument);
  EXPECT_TRUE(LqIpmOptions{}.validate().empty());
}

// Workspace grows linearly in N.
TEST(LqIpm, BytesAllocatedGrowLinearlyInN) {
  const std::size_t b1 = LqIpmSolver(12, 4, 50).bytes_allocated(), b2 = LqIpmSolver(12, 4, 100).bytes_allocated(),
                    b4 = LqIpmSolver(12, 4, 200).bytes_allocated();
  EXPECT_GT(b1, 0u);
  const double slope1 = static_cast<double>(b2 - b1) / 50, slope2 = static_cast<double>(b4 - b2) / 100;
  EXPECT_NEAR(slope1, slope2, 0.02 * slope2);
}

TEST(LqIpm, SolveAllocatesNothing) {
  EXPECT_GE(allocations_during([] {
              std::vector<double> v(100);
              v[3] = 1.0;
            }),
            1);
  Rng rng(81);
  for (const Linsys linsys : {Linsys::Riccati, Linsys::Bdsv, Linsys::KktLdlt}) {
    SCOPED_TRACE(solver::to_string(linsys));
    const LqData d = random_lq(rng, 6, 2, 20);
    LqBounds b = box_u(6, 2, 20, 0.5);
    b.ubx_k(7)[1] = 10.0;
    LqIpmSolver s(6, 2, 20, ipm_with(linsys));
    LqIpmSolution sol(6, 2, 20);
    LqIpmStatus st = LqIpmStatus::NonFinite;
    EXPECT_EQ(allocations_during([&] {
                for (int rep = 0; rep < 3; ++rep) st = s.solve(d, b, sol);
              }),
              0);
    EXPECT_EQ(st, LqIpmStatus::Solved);
  }
}

// The interior point reuses Riccati's stage transposes from its second factorization on
// (LqOptions::reuse_dynamics, on by default): bitwise the iterates and multipliers of the same solver
// forming them at every factorization, on fixed and run-time sizes, twice in a row on one solver
// (the second run starts from other data's A and B). That the transposes really are reused is
// LqRiccati.ReusedDynamicsGiveTheBitsOfAFreshSolve's negative control.
TEST(LqIpm, ReusedTransposesChangeNoBit) {
  Rng rng(77);
  for (const LqSize& z : {LqSize{14, 7, 16}, LqSize{21, 3, 8}, LqSize{12, 4, 20}}) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    LqIpmOptions off;
    off.lq.reuse_dynamics = false;
    ASSERT_TRUE(LqIpmOptions{}.lq.reuse_dynamics);
    LqIpmSolver reuse(z.nx, z.nu, z.N), fresh(z.nx, z.nu, z.N, off);
    for (int rep = 0; rep < 2; ++rep) {
      const LqData d = random_lq(rng, z.nx, z.nu, z.N);
      const LqBounds b = box_u(z.nx, z.nu, z.N, 0.5);
      LqIpmSolution x(z.nx, z.nu, z.N), y(z.nx, z.nu, z.N);
      ASSERT_EQ(reuse.solve(d, b, x), LqIpmStatus::Solved);
      ASSERT_EQ(fresh.solve(d, b, y), LqIpmStatus::Solved);
      EXPECT_GT(reuse.stats().iterations, 1);
      EXPECT_EQ(reuse.stats().iterations, fresh.stats().iterations);
      EXPECT_EQ(x.x, y.x);
      EXPECT_EQ(x.u, y.u);
      EXPECT_EQ(x.lambda, y.lambda);
      EXPECT_EQ(x.zl_u, y.zl_u);
      EXPECT_EQ(x.zu_u, y.zu_u);
    }
  }
}

}  // namespace
}  // namespace knot::test
