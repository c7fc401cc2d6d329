// The device path's Schur step (knot/solver/device/schur.hpp) against the dense KKT reference and
// LqSolver's Schur backends: random convex LQs on bdsv and pcg (both preconditioners), every group
// size bitwise alike, regularized singular stages and their refinement, the fallbacks (direct,
// Riccati), an inexact tolerance, non-finite data, float.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "device_lq_common.hpp"
#include "knot/linalg/threaded_group.hpp"
#include "knot/solver/device/schur.hpp"

namespace knot::test {
namespace {

using linalg::SerialGroup;
using solver::device::DeviceLqResult;
using solver::device::DeviceLqStatus;
using solver::device::schur_scratch_size;
using solver::device::schur_solve;
using solver::device::SchurOptions;
using solver::device::SchurStats;

// The tolerances of test_lq_schur.cpp, which the host backends meet on the same problems: bdsv and a
// regularized stage refined to rounding 1e-9 and 1e-10 relative against the dense solve; pcg to its
// r'P^-1 r < 1e-20 gamma'P^-1 gamma, 1e-8.
constexpr double kSolTol = 1e-9;
constexpr double kPcgSolTol = 1e-8;
constexpr double kRegSolTol = 1e-10;

enum class Method { Bdsv, PcgStair, PcgJacobi };

const char* name(Method m) { return m == Method::Bdsv ? "bdsv" : m == Method::PcgStair ? "pcg stair" : "pcg jacobi"; }

SchurOptions device_options(Method m) {
  SchurOptions o;
  o.pcg = m != Method::Bdsv;
  o.stair = m != Method::PcgJacobi;
  return o;
}

// The host backend with the same options.
LqOptions host_options(const SchurOptions& d) {
  LqOptions o = with(d.pcg ? Linsys::Pcg : Linsys::Bdsv);
  o.preconditioner = d.stair ? solver::Preconditioner::Stair : solver::Preconditioner::BlockJacobi;
  o.pcg_rel_tol = d.pcg_rel_tol;
  o.pcg_max_iters = d.pcg_max_iters;
  o.pcg_warm_start = d.pcg_warm_start;
  o.schur_reg = d.schur_reg;
  o.max_refinement = d.max_refinement;
  o.refine_tol = d.refine_tol;
  o.pcg_direct_fallback = d.pcg_direct_fallback;
  o.riccati_fallback = d.riccati_fallback;
  o.inexact_rollout = d.inexact_rollout;
  return o;
}

template <class T>
struct Outcome {
  DeviceLqResult result;
  SchurStats stats;
};

// schur_solve on a SerialGroup (threads 0) or a ThreadedGroup; every member's result and stats must
// be the same, and those are returned.
template <class T>
Outcome<T> run(DeviceLq<T>& p, const SchurOptions& o, int threads, T tolerance = T(-1)) {
  if (threads == 0) {
    SerialGroup g;
    Outcome<T> r;
    r.result = schur_solve(g, p.lq, p.out, p.scratch.data(), o, tolerance, r.stats);
    return r;
  }
  std::vector<Outcome<T>> each(threads);
  linalg::run_threaded(threads, [&](linalg::ThreadedGroup& g) {
    Outcome<T>& r = each[g.rank()];
    r.result = schur_solve(g, p.lq, p.out, p.scratch.data(), o, tolerance, r.stats);
  });
  for (int r = 1; r < threads; ++r) {
    EXPECT_EQ(each[r].result.status, each[0].result.status) << "rank " << r;
    EXPECT_EQ(each[r].result.failed_stage, each[0].result.failed_stage) << "rank " << r;
    EXPECT_EQ(each[r].stats.pcg_iterations, each[0].stats.pcg_iterations) << "rank " << r;
    EXPECT_EQ(each[r].stats.refinement_steps, each[0].stats.refinement_steps) << "rank " << r;
    EXPECT_EQ(each[r].stats.kkt_residual, each[0].stats.kkt_residual) << "rank " << r;
  }
  return each[0];
}

template <class T = double>
std::size_t scratch_for(const LqData& d, const SchurOptions& o) {
  return schur_scratch_size<T>(d.nx, d.nu, d.N, o);
}

LqSolution reference(const LqData& d) {
  const DenseKkt kkt = dense_kkt(d);
  return unpack(kkt, dense_solve(kkt));
}

solver::LqStats host_solve(const LqData& d, const LqOptions& o, LqStatus* status, double tolerance = -1) {
  LqSolver s(d.nx, d.nu, d.N, o);
  if (tolerance >= 0) s.set_tolerance(tolerance);
  LqSolution sol = poisoned_solution(d.nx, d.nu, d.N);
  *status = s.solve(d, sol);
  return s.stats();
}

TEST(DeviceSchur, MatchesTheDenseKktOnRandomConvexProblems) {
  Rng rng(201);
  for (const Method m : {Method::Bdsv, Method::PcgStair, Method::PcgJacobi}) {
    for (const LqSize& z : kLqSizes) {
      SCOPED_TRACE(testing::Message() << name(m) << " nx " << z.nx << " nu " << z.nu << " N " << z.N);
      const LqData d = random_lq(rng, z.nx, z.nu, z.N);
      const SchurOptions o = device_options(m);
      DeviceLq<double> p(d, scratch_for(d, o));
      const Outcome<double> r = run(p, o, 0);
      ASSERT_EQ(r.result.status, DeviceLqStatus::Solved);
      EXPECT_FALSE(r.stats.riccati_fallback);
      EXPECT_EQ(r.stats.regularized_stages, 0);
      EXPECT_LT(solution_error(p.solution(), reference(d)), m == Method::Bdsv ? kSolTol : kPcgSolTol);
      if (m != Method::Bdsv && z.N * z.nx > 1) {
        EXPECT_GT(r.stats.pcg_iterations + int(r.stats.direct_fallback), 0);
      }
      // The host backend's verdict on the same problem.
      LqStatus host;
      host_solve(d, host_options(o), &host);
      EXPECT_EQ(host, LqStatus::Solved);
    }
  }
}

// The check above can fail: the same solve on data with one entry of A moved by 1e-6 misses the
// reference by more than the tolerance.
TEST(DeviceSchur, AnswerOfOtherDataFailsTheCheck) {
  Rng rng(202);
  const LqData d = random_lq(rng, 6, 3, 12);
  LqData moved = d;
  moved.A[40] += 1e-6;
  for (const Method m : {Method::Bdsv, Method::PcgStair}) {
    const SchurOptions o = device_options(m);
    DeviceLq<double> p(moved, scratch_for(d, o));
    ASSERT_EQ(run(p, o, 0).result.status, DeviceLqStatus::Solved);
    EXPECT_GT(solution_error(p.solution(), reference(d)), kPcgSolTol) << name(m);
  }
}

TEST(DeviceSchur, EveryGroupSizeGivesTheSameBits) {
  Rng rng(203);
  for (const Method m : {Method::Bdsv, Method::PcgStair, Method::PcgJacobi}) {
    for (const LqSize& z : {LqSize{4, 1, 20}, LqSize{14, 7, 64}, LqSize{3, 2, 1}, LqSize{12, 4, 30}}) {
      const LqData d = random_lq(rng, z.nx, z.nu, z.N);
      const SchurOptions o = device_options(m);
      DeviceLq<double> serial(d, scratch_for(d, o));
      const Outcome<double> want = run(serial, o, 0);
      ASSERT_EQ(want.result.status, DeviceLqStatus::Solved);
      for (const int threads : {1, 2, 3, 7, 32}) {
        SCOPED_TRACE(testing::Message() << name(m) << " nx " << z.nx << " N " << z.N << " threads " << threads);
        DeviceLq<double> p(d, scratch_for(d, o));
        const Outcome<double> got = run(p, o, threads);
        ASSERT_EQ(got.result.status, DeviceLqStatus::Solved);
        EXPECT_EQ(got.stats.pcg_iterations, want.stats.pcg_iterations);
        EXPECT_EQ(got.stats.refinement_steps, want.stats.refinement_steps);
        EXPECT_TRUE(bitwise_equal(p.step, serial.step));
      }
    }
  }
}

// Singular stage costs (no state weight, a terminal cost only): the stages are regularized as on the
// host (the same count) and refined to the unregularized answer, on every group size.
TEST(DeviceSchur, SingularStagesAreRegularizedAndRefined) {
  Rng rng(204);
  for (const Method m : {Method::Bdsv, Method::PcgStair}) {
    for (const Cost cost : {Cost::ZeroStateWeights, Cost::TerminalOnly}) {
      for (const LqSize& z : {LqSize{4, 1, 50}, LqSize{7, 3, 20}, LqSize{12, 4, 30}, LqSize{1, 1, 10}}) {
        SCOPED_TRACE(testing::Message() << name(m) << " cost " << static_cast<int>(cost) << " nx " << z.nx);
        const LqData d = random_lq(rng, z.nx, z.nu, z.N, cost);
        const SchurOptions o = device_options(m);
        LqStatus host;
        const solver::LqStats hs = host_solve(d, host_options(o), &host);
        ASSERT_EQ(host, LqStatus::Solved);
        for (const int threads : {0, 3}) {
          DeviceLq<double> p(d, scratch_for(d, o));
          const Outcome<double> r = run(p, o, threads);
          ASSERT_EQ(r.result.status, DeviceLqStatus::Solved);
          EXPECT_FALSE(r.stats.riccati_fallback);
          EXPECT_EQ(r.stats.regularized_stages, hs.regularized_stages);
          EXPECT_GT(r.stats.regularized_stages, 0);
          EXPECT_GT(r.stats.refinement_steps, 0);
          EXPECT_LT(r.stats.kkt_residual, 1e-10);
          EXPECT_LT(solution_error(p.solution(), reference(d)), kRegSolTol);
        }
      }
    }
  }
}

// Without refinement the regularized answer is not solved (MaxIterations, and far from the
// reference): the refinement is what makes it exact. With the Riccati fallback it is Riccati's.
TEST(DeviceSchur, RegularizedAnswerWithoutRefinementIsNotSolved) {
  Rng rng(205);
  const LqData d = random_lq(rng, 6, 2, 20, Cost::TerminalOnly);
  SchurOptions o = device_options(Method::Bdsv);
  o.max_refinement = 0;
  o.riccati_fallback = false;
  DeviceLq<double> p(d, scratch_for(d, o));
  Outcome<double> r = run(p, o, 0);
  EXPECT_EQ(r.result.status, DeviceLqStatus::MaxIterations);
  EXPECT_GT(r.stats.regularized_stages, 0);
  EXPECT_GT(solution_error(p.solution(), reference(d)), kRegSolTol);
  o.riccati_fallback = true;
  DeviceLq<double> q(d, scratch_for(d, o));
  r = run(q, o, 2);
  EXPECT_EQ(r.result.status, DeviceLqStatus::Solved);
  EXPECT_TRUE(r.stats.riccati_fallback);
  EXPECT_LT(solution_error(q.solution(), reference(d)), kSolTol);
}

// An indefinite stage block: with the Riccati fallback, Riccati's verdict for every curvature (both
// occur in the sweep); without it, NotPositiveDefinite at that stage.
TEST(DeviceSchur, IndefiniteStageBlockGetsRiccatisVerdict) {
  Rng rng(206);
  const LqData base = random_lq(rng, 4, 2, 10);
  int solved = 0, not_pd = 0;
  for (const double c : {0.05, 0.3, 1.0, 3.0, 1e3}) {
    LqData d = base;
    put(-c * Mat::Identity(2, 2), d.R_k(6));
    LqStatus ref;
    host_solve(d, with(Linsys::Riccati), &ref);
    solved += ref == LqStatus::Solved;
    not_pd += ref == LqStatus::NotPositiveDefinite;
    for (const Method m : {Method::Bdsv, Method::PcgStair}) {
      SCOPED_TRACE(testing::Message() << name(m) << " c " << c);
      SchurOptions o = device_options(m);
      DeviceLq<double> p(d, scratch_for(d, o));
      const Outcome<double> r = run(p, o, 3);
      EXPECT_EQ(r.result.status, ref == LqStatus::Solved ? DeviceLqStatus::Solved : DeviceLqStatus::NotPositiveDefinite);
      EXPECT_TRUE(r.stats.riccati_fallback);
      if (ref == LqStatus::Solved) {
        EXPECT_LT(solution_error(p.solution(), reference(d)), kSolTol);
      }
      o.riccati_fallback = false;
      DeviceLq<double> q(d, scratch_for(d, o));
      const Outcome<double> off = run(q, o, 0);
      EXPECT_EQ(off.result.status, DeviceLqStatus::NotPositiveDefinite);
      EXPECT_EQ(off.result.failed_stage, 6);
      EXPECT_FALSE(off.stats.riccati_fallback);
    }
  }
  EXPECT_GT(solved, 0);
  EXPECT_GT(not_pd, 0);
}

// pcg out of iterations: MaxIterations without the direct fallback, an exact answer with it.
TEST(DeviceSchur, PcgIterationLimitIsAStatusOrTheDirectFallback) {
  Rng rng(207);
  const LqData d = random_lq(rng, 6, 2, 20);
  SchurOptions o = device_options(Method::PcgStair);
  o.pcg_max_iters = 2;
  o.pcg_direct_fallback = false;
  o.riccati_fallback = false;
  DeviceLq<double> p(d, scratch_for(d, o));
  Outcome<double> r = run(p, o, 0);
  EXPECT_EQ(r.result.status, DeviceLqStatus::MaxIterations);
  EXPECT_FALSE(r.stats.direct_fallback);
  EXPECT_GT(r.stats.kkt_residual, 1e-6);
  o.pcg_direct_fallback = true;
  DeviceLq<double> q(d, scratch_for(d, o));
  r = run(q, o, 3);
  EXPECT_EQ(r.result.status, DeviceLqStatus::Solved);
  EXPECT_TRUE(r.stats.direct_fallback);
  EXPECT_LT(solution_error(q.solution(), reference(d)), kSolTol);
}

// A tolerance above rounding (the SQP's inexact step): the residual is within it and, rolled out,
// the dynamics rows hold to rounding; the exact solve (negative tolerance) is far tighter.
TEST(DeviceSchur, InexactToleranceBoundsTheResidualAndKeepsTheDynamicsExact) {
  Rng rng(208);
  const LqData d = random_lq(rng, 6, 2, 40);
  for (const Method m : {Method::Bdsv, Method::PcgStair}) {
    SCOPED_TRACE(name(m));
    const SchurOptions o = device_options(m);
    DeviceLq<double> p(d, scratch_for(d, o));
    const Outcome<double> r = run(p, o, 2, 1e-3);
    ASSERT_EQ(r.result.status, DeviceLqStatus::Solved);
    EXPECT_EQ(r.stats.kkt_tolerance, 1e-3);
    const solver::LqResidual res = solver::lq_kkt_residual(d, p.solution());
    EXPECT_LE(std::max(res.stationarity, res.feasibility), 1e-3);
    EXPECT_LT(res.feasibility, 1e-12);
    LqStatus host;
    host_solve(d, host_options(o), &host, 1e-3);
    EXPECT_EQ(host, LqStatus::Solved);
    DeviceLq<double> exact(d, scratch_for(d, o));
    const Outcome<double> e = run(exact, o, 0);
    ASSERT_EQ(e.result.status, DeviceLqStatus::Solved);
    EXPECT_LT(e.stats.kkt_residual, 1e-11);
  }
}

TEST(DeviceSchur, NonFiniteDataIsNonFinite) {
  Rng rng(209);
  const LqData clean = random_lq(rng, 5, 2, 8);
  for (const Method m : {Method::Bdsv, Method::PcgStair}) {
    for (const int at : {0, 1, 2, 3}) {
      LqData d = clean;
      double* entry = at == 0 ? &d.q[13] : at == 1 ? &d.R[3] : at == 2 ? &d.c[7] : &d.x_init[1];
      *entry = kNaN;
      SCOPED_TRACE(testing::Message() << name(m) << " case " << at);
      const SchurOptions o = device_options(m);
      DeviceLq<double> p(d, scratch_for(d, o));
      EXPECT_EQ(run(p, o, at % 2 == 0 ? 0 : 3).result.status, DeviceLqStatus::NonFinite);
    }
    const SchurOptions o = device_options(m);
    DeviceLq<double> p(clean, scratch_for(clean, o));
    EXPECT_EQ(run(p, o, 0).result.status, DeviceLqStatus::Solved);  // negative control
  }
}

// In float (the GPU's other precision). Both methods are held to a normwise backward error in the
// dense KKT system of 8 float eps (the KKT check accepts every row at a few eps of its magnitudes;
// measured 0.1-0.5 eps for bdsv, 0.8-4 for pcg). bdsv, a direct solve, is also held to its forward
// error: float's rounding amplified by the conditioning that the double solve's error against the
// reference measures, times 8 for the spread, never tighter than 64 float eps (test_device_riccati's
// rule). pcg's stop leaves a backward error that the whole KKT conditioning amplifies (1e-4 at
// nx = 12), so its forward error is only bounded by 1e-3. Negative control: one entry moved by 1e4
// float eps fails the backward bound.
TEST(DeviceSchur, FloatMatchesToFloatRounding) {
  constexpr double kEps = std::numeric_limits<double>::epsilon();
  constexpr double kEpsF = std::numeric_limits<float>::epsilon();
  Rng rng(210);
  for (const Method m : {Method::Bdsv, Method::PcgStair}) {
    for (const LqSize& z : {LqSize{4, 1, 20}, LqSize{12, 4, 30}, LqSize{14, 7, 64}}) {
      SCOPED_TRACE(testing::Message() << name(m) << " nx " << z.nx);
      const LqData d = random_lq(rng, z.nx, z.nu, z.N);
      const DenseKkt kkt = dense_kkt(d);
      const LqSolution ref = unpack(kkt, dense_solve(kkt));
      const SchurOptions o = device_options(m);
      DeviceLq<float> pf(d, scratch_for<float>(d, o));
      ASSERT_EQ(run(pf, o, 0).result.status, DeviceLqStatus::Solved);
      const LqSolution sol = pf.solution();
      const double err = solution_error(sol, ref);
      EXPECT_LT(backward_error(kkt, pack(kkt, sol)), 8 * kEpsF);
      EXPECT_GT(err, 10 * kEps);  // it really ran in float
      if (m == Method::Bdsv) {
        DeviceLq<double> pd(d, scratch_for(d, o));
        ASSERT_EQ(run(pd, o, 0).result.status, DeviceLqStatus::Solved);
        EXPECT_LT(err, std::max(64.0, 8.0 * solution_error(pd.solution(), ref) / kEps) * kEpsF);
      } else {
        EXPECT_LT(err, 1e-3);
      }
      LqSolution wrong = sol;
      wrong.u[3] += 1e4 * kEpsF * std::max(1.0, std::abs(wrong.u[3]));
      EXPECT_GT(backward_error(kkt, pack(kkt, wrong)), 8 * kEpsF);
    }
  }
}

}  // namespace
}  // namespace knot::test
