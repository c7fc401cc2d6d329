// The device path's Riccati step (knot/solver/device/riccati.hpp) against LqSolver(Riccati) and the
// dense KKT reference: random LQs, every group size bitwise alike, resolve, the failure statuses,
// float.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <type_traits>

#include "knot/solver/device/riccati.hpp"
#include "device_lq_common.hpp"

namespace knot::test {
namespace {

using linalg::SerialGroup;
using solver::device::DeviceLqResult;
using solver::device::DeviceLqStatus;
using solver::device::LqView;
using solver::device::riccati_resolve;
using solver::device::riccati_scratch_size;
using solver::device::riccati_solve;
using solver::device::StepView;

constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr float kEpsF = std::numeric_limits<float>::epsilon();

enum class Call { Solve, Resolve };

// Runs riccati_solve or riccati_resolve on a SerialGroup (threads 0) or on a ThreadedGroup of that
// many members; every member's result must be the same, and that one is returned.
template <class T>
DeviceLqResult run(DeviceLq<T>& p, int threads, Call call = Call::Solve) {
  const auto body = [&](auto& g) {
    return call == Call::Solve ? riccati_solve(g, p.lq, p.out, p.scratch.data())
                               : riccati_resolve(g, p.lq, p.out, p.scratch.data());
  };
  if (threads == 0) {
    SerialGroup g;
    return body(g);
  }
  std::vector<DeviceLqResult> each(threads);
  linalg::run_threaded(threads, [&](linalg::ThreadedGroup& g) { each[g.rank()] = body(g); });
  for (int r = 1; r < threads; ++r) {
    EXPECT_EQ(each[r].status, each[0].status) << "rank " << r;
    EXPECT_EQ(each[r].failed_stage, each[0].failed_stage) << "rank " << r;
  }
  return each[0];
}

LqSolution solve_host(const LqData& d, LqStatus* status = nullptr, int* failed_stage = nullptr) {
  LqSolver s(d.nx, d.nu, d.N, with(Linsys::Riccati));
  LqSolution sol = poisoned_solution(d.nx, d.nu, d.N);
  const LqStatus st = s.solve(d, sol);
  if (status != nullptr) *status = st;
  if (failed_stage != nullptr) *failed_stage = s.stats().failed_stage;
  return sol;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (const double x : v) m = std::max(m, std::abs(x));
  return m;
}

// Rounding level of lq_kkt_residual's rows: each is a sum of at most 2 nx + nu + 1 products of a
// data entry and a solution entry, so its rounding error is about that many eps times the largest
// such product.
double kkt_rounding_level(const LqData& d, const LqSolution& s) {
  const double data = std::max({max_abs(d.A), max_abs(d.B), max_abs(d.Q), max_abs(d.R), max_abs(d.S), 1.0});
  const double sol = std::max(
      {max_abs(s.x), max_abs(s.u), max_abs(s.lambda), max_abs(d.c), max_abs(d.q), max_abs(d.r), max_abs(d.x_init)});
  return (2 * d.nx + d.nu + 1) * kEps * data * sol;
}

double kkt_residual(const LqData& d, const LqSolution& s) {
  const solver::LqResidual r = solver::lq_kkt_residual(d, s);
  return std::max(r.stationarity, r.feasibility);
}

// The sizes of the cross-checks: the brief's four, the smallest, and a few between.
const std::vector<LqSize> kSizes = {{4, 1, 20}, {14, 7, 64}, {3, 2, 1},  {12, 4, 30}, {1, 1, 1},
                                    {8, 1, 33}, {6, 3, 17},  {2, 7, 40}, {5, 5, 64}};

// Relative error of x, u, lambda against LqSolver(Riccati). The host runs the square-root recursion
// at most of these sizes (another order of operations), so the two agree to the conditioning of the
// recursion times eps, not bitwise; these well-scaled problems meet 1e-12 with room (the worst seen
// is 2e-15).
constexpr double kHostTol = 1e-12;
// Normwise backward error in the dense KKT system (as test_lq_riccati's check of the host recursion).
constexpr double kBackwardTol = 1e-13;
// lq_kkt_residual within kkt_rounding_level (a bound: these solves reach at most a tenth of it).
constexpr double kRoundingFactor = 1;

TEST(DeviceRiccati, MatchesLqSolverAndTheDenseKkt) {
  Rng rng(101);
  for (const LqSize& z : kSizes) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    LqStatus host_status;
    const LqSolution host = solve_host(d, &host_status);
    ASSERT_EQ(host_status, LqStatus::Solved);
    DeviceLq<double> p(d);
    const DeviceLqResult r = run(p, 0);
    ASSERT_EQ(r.status, DeviceLqStatus::Solved);
    EXPECT_EQ(r.failed_stage, -1);
    const LqSolution dev = p.solution();
    EXPECT_LT(solution_error(dev, host), kHostTol);
    const DenseKkt kkt = dense_kkt(d);
    EXPECT_LT(backward_error(kkt, pack(kkt, dev)), kBackwardTol);
    EXPECT_LT(kkt_residual(d, dev), kRoundingFactor * kkt_rounding_level(d, dev));
  }
}

// PSD costs (zero state weights, a terminal cost only): P_k semidefinite, which the recursion allows.
TEST(DeviceRiccati, MatchesLqSolverOnSemidefiniteCosts) {
  Rng rng(102);
  for (const Cost cost : {Cost::ZeroStateWeights, Cost::TerminalOnly}) {
    for (const LqSize& z : {LqSize{4, 1, 50}, LqSize{7, 3, 20}, LqSize{12, 4, 30}}) {
      SCOPED_TRACE(testing::Message() << "cost " << static_cast<int>(cost) << " nx " << z.nx << " N " << z.N);
      const LqData d = random_lq(rng, z.nx, z.nu, z.N, cost);
      const LqSolution host = solve_host(d);
      DeviceLq<double> p(d);
      ASSERT_EQ(run(p, 0).status, DeviceLqStatus::Solved);
      EXPECT_LT(solution_error(p.solution(), host), kHostTol);
      EXPECT_LT(kkt_residual(d, p.solution()), kRoundingFactor * kkt_rounding_level(d, p.solution()));
    }
  }
}

// The checks above can fail: one entry of a correct answer moved by 1e-9 relative breaks each.
TEST(DeviceRiccati, PerturbedAnswerFailsTheChecks) {
  Rng rng(103);
  const LqData d = random_lq(rng, 6, 3, 12);
  const LqSolution host = solve_host(d);
  DeviceLq<double> p(d);
  ASSERT_EQ(run(p, 0).status, DeviceLqStatus::Solved);
  LqSolution dev = p.solution();
  ASSERT_LT(solution_error(dev, host), kHostTol);
  for (double* entry : {&dev.u[4], &dev.x[20], &dev.lambda[30]}) {
    const double saved = *entry;
    *entry += 1e-9 * std::max(1.0, std::abs(saved));
    EXPECT_GT(solution_error(dev, host), kHostTol);
    EXPECT_GT(kkt_residual(d, dev), kRoundingFactor * kkt_rounding_level(d, dev));
    *entry = saved;
  }
}

// Every group size gives bitwise the serial group's x, u, lambda.
TEST(DeviceRiccati, EveryGroupSizeGivesTheSameBits) {
  Rng rng(104);
  for (const LqSize& z : {LqSize{4, 1, 20}, LqSize{14, 7, 64}, LqSize{3, 2, 1}, LqSize{12, 4, 30}}) {
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    DeviceLq<double> serial(d);
    ASSERT_EQ(run(serial, 0).status, DeviceLqStatus::Solved);
    for (const int threads : {1, 2, 3, 7, 32}) {
      SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N << " threads " << threads);
      DeviceLq<double> p(d);
      ASSERT_EQ(run(p, threads).status, DeviceLqStatus::Solved);
      EXPECT_TRUE(bitwise_equal(p.step, serial.step));
    }
  }
}

// New vectors on the stored factorization give the bits of a fresh solve of the new problem.
TEST(DeviceRiccati, ResolveEqualsAFreshSolve) {
  Rng rng(105);
  for (const LqSize& z : {LqSize{4, 1, 20}, LqSize{12, 4, 30}, LqSize{3, 2, 1}}) {
    const LqData d1 = random_lq(rng, z.nx, z.nu, z.N);
    LqData d2 = d1;
    const LqData other = random_lq(rng, z.nx, z.nu, z.N);
    d2.c = other.c;
    d2.q = other.q;
    d2.r = other.r;
    d2.x_init = other.x_init;
    for (const int threads : {0, 3}) {
      SCOPED_TRACE(testing::Message() << "nx " << z.nx << " N " << z.N << " threads " << threads);
      DeviceLq<double> fresh(d2);
      ASSERT_EQ(run(fresh, threads).status, DeviceLqStatus::Solved);
      DeviceLq<double> p(d1);
      ASSERT_EQ(run(p, threads).status, DeviceLqStatus::Solved);
      const std::vector<double> first = p.step;
      p.load(d2);
      ASSERT_EQ(run(p, threads, Call::Resolve).status, DeviceLqStatus::Solved);
      EXPECT_TRUE(bitwise_equal(p.step, fresh.step));
      EXPECT_FALSE(bitwise_equal(p.step, first));  // the vectors did change the answer
      // And the host's resolve agrees to rounding.
      LqSolver s(z.nx, z.nu, z.N, with(Linsys::Riccati));
      LqSolution host(z.nx, z.nu, z.N);
      ASSERT_EQ(s.solve(d1, host), LqStatus::Solved);
      ASSERT_EQ(s.resolve(d2, host), LqStatus::Solved);
      EXPECT_LT(solution_error(p.solution(), host), kHostTol);
    }
  }
}

// R_k + B_k'P_{k+1}B_k indefinite at one stage: NotPositiveDefinite at LqSolver's failed_stage, the
// step untouched; resolve on that scratch answers the same without solving.
TEST(DeviceRiccati, IndefiniteStageIsNotPositiveDefinite) {
  Rng rng(106);
  for (const int bad : {0, 5, 9}) {
    LqData d = random_lq(rng, 4, 2, 10, Cost::TerminalOnly);
    put(-50.0 * Mat::Identity(2, 2), d.R_k(bad));
    LqStatus host_status;
    int host_stage;
    solve_host(d, &host_status, &host_stage);
    ASSERT_EQ(host_status, LqStatus::NotPositiveDefinite);
    ASSERT_EQ(host_stage, bad);
    for (const int threads : {0, 2, 7}) {
      SCOPED_TRACE(testing::Message() << "bad " << bad << " threads " << threads);
      DeviceLq<double> p(d);
      const DeviceLqResult r = run(p, threads);
      EXPECT_EQ(r.status, DeviceLqStatus::NotPositiveDefinite);
      EXPECT_EQ(r.failed_stage, bad);
      for (const double v : p.step) EXPECT_TRUE(std::isnan(v));
      const DeviceLqResult again = run(p, threads, Call::Resolve);
      EXPECT_EQ(again.status, DeviceLqStatus::NotPositiveDefinite);
      EXPECT_EQ(again.failed_stage, bad);
      for (const double v : p.step) EXPECT_TRUE(std::isnan(v));
    }
  }
  // Negative control: the same problem with R_k left positive definite solves.
  LqData d = random_lq(rng, 4, 2, 10, Cost::TerminalOnly);
  DeviceLq<double> p(d);
  EXPECT_EQ(run(p, 0).status, DeviceLqStatus::Solved);
}

// A NaN in q or c or x_init reaches only the result; one in R stops the Cholesky on data that are not
// finite. Every one is NonFinite, as the host says; an Inf likewise.
TEST(DeviceRiccati, NonFiniteDataIsNonFinite) {
  Rng rng(107);
  const LqData clean = random_lq(rng, 5, 2, 8);
  const double inf = std::numeric_limits<double>::infinity();
  struct Poison {
    const char* what;
    double* (*at)(LqData&);
    double value;
  };
  const Poison cases[] = {
      {"q", [](LqData& d) { return &d.q[13]; }, kNaN},          {"q_N", [](LqData& d) { return d.q_k(d.N); }, kNaN},
      {"R", [](LqData& d) { return &d.R[3]; }, kNaN},           {"c", [](LqData& d) { return &d.c[7]; }, kNaN},
      {"x_init", [](LqData& d) { return &d.x_init[1]; }, kNaN}, {"A", [](LqData& d) { return &d.A[30]; }, inf},
  };
  for (const Poison& c : cases) {
    LqData d = clean;
    *c.at(d) = c.value;
    LqStatus host;
    solve_host(d, &host);
    EXPECT_EQ(host, LqStatus::NonFinite) << c.what;
    for (const int threads : {0, 3}) {
      DeviceLq<double> p(d);
      EXPECT_EQ(run(p, threads).status, DeviceLqStatus::NonFinite) << c.what << " threads " << threads;
    }
  }
  // A NaN in the new vectors of a resolve.
  DeviceLq<double> p(clean);
  ASSERT_EQ(run(p, 0).status, DeviceLqStatus::Solved);
  LqData d = clean;
  d.r[2] = kNaN;
  p.load(d);
  EXPECT_EQ(run(p, 0, Call::Resolve).status, DeviceLqStatus::NonFinite);
  p.load(clean);
  EXPECT_EQ(run(p, 0, Call::Resolve).status, DeviceLqStatus::Solved);
}

// T = float: against the double host solve. The float solve's error is its rounding (float eps)
// amplified by the problem's conditioning; the double device solve's error against the dense
// reference measures that amplification, so the float error is held to it, scaled to float eps
// (times 8 for the spread of rounding between runs), and never tighter than 64 float eps.
TEST(DeviceRiccati, FloatMatchesToFloatRounding) {
  Rng rng(108);
  for (const LqSize& z : {LqSize{4, 1, 20}, LqSize{14, 7, 64}, LqSize{3, 2, 1}, LqSize{12, 4, 30}}) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    const DenseKkt kkt = dense_kkt(d);
    const LqSolution ref = unpack(kkt, dense_solve(kkt));
    DeviceLq<double> pd(d);
    ASSERT_EQ(run(pd, 0).status, DeviceLqStatus::Solved);
    const double amplification = solution_error(pd.solution(), ref) / kEps;
    const double tol = std::max(64.0, 8.0 * amplification) * kEpsF;
    DeviceLq<float> pf(d);
    ASSERT_EQ(run(pf, 0).status, DeviceLqStatus::Solved);
    const double err = solution_error(pf.solution(), ref);
    EXPECT_LT(err, tol) << "amplification " << amplification;
    EXPECT_GT(err, 10 * kEps);  // it really ran in float
    DeviceLq<float> pt(d);
    ASSERT_EQ(run(pt, 3).status, DeviceLqStatus::Solved);
    EXPECT_EQ(std::memcmp(pt.step.data(), pf.step.data(), pf.step.size() * sizeof(float)), 0);
  }
}

// Negative control of the float tolerance: an answer off by 1e3 float eps fails it.
TEST(DeviceRiccati, FloatToleranceRejectsAWrongAnswer) {
  Rng rng(109);
  const LqData d = random_lq(rng, 4, 1, 20);
  const DenseKkt kkt = dense_kkt(d);
  const LqSolution ref = unpack(kkt, dense_solve(kkt));
  DeviceLq<double> pd(d);
  ASSERT_EQ(run(pd, 0).status, DeviceLqStatus::Solved);
  const double tol = std::max(64.0, 8.0 * solution_error(pd.solution(), ref) / kEps) * kEpsF;
  DeviceLq<float> pf(d);
  ASSERT_EQ(run(pf, 0).status, DeviceLqStatus::Solved);
  LqSolution wrong = pf.solution();
  wrong.u[3] += 1e3 * kEpsF * std::max(1.0, max_abs(ref.u));
  EXPECT_GT(solution_error(wrong, ref), tol);
}

TEST(DeviceRiccati, ScratchSizeCoversEveryArray) {
  // P, p: N+1 blocks and vectors; L, Y, kt: N; T, W, pc; N+1 flags; 2 state scalars.
  const int nx = 5, nu = 2, N = 7;
  EXPECT_EQ(riccati_scratch_size<double>(nx, nu, N),
            std::size_t((N + 1) * (nx * nx + nx) + N * (nu * nu + nx * nu + nu) + nx * nx + nx * nu + nx + N + 1 + 2));
  static_assert(riccati_scratch_size<float>(3, 1, 2) > 0, "constexpr");
}

}  // namespace
}  // namespace knot::test
