// The device Riccati step in CUDA blocks (riccati_device.cu) against the same header run on the CPU
// by a SerialGroup: double to 1e-12 relative and float to float rounding (not bitwise: nvcc contracts
// a * b + c into fused multiply-adds, the host build does not); bitwise alike for every block size
// (one code path, so one contraction); resolve bitwise a fresh solve; an indefinite stage reported at
// its stage.
//
// Without a usable GPU the device tests skip with one line saying why; the launcher's size check runs
// everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "knot/linalg/cuda/device.hpp"
#include "knot/solver/device/riccati.hpp"
#include "riccati_device.hpp"
#include "test_util.hpp"

namespace knot::test {
namespace {

using solver::device::DeviceLqResult;
using solver::device::DeviceLqStatus;
using solver::device::LqView;
using solver::device::StepView;

const linalg::cuda::DeviceInfo& gpu() {
  static const linalg::cuda::DeviceInfo info = linalg::cuda::query_device();
  return info;
}

// A random LQ with positive definite stage blocks [Q S'; S R] and Q_N, dynamics near I/2 (the
// generator of test_lq_common.hpp, here without knot::solver), written into an LqView's layout.
template <class T>
void random_problem(Rng& rng, int nx, int nu, int N, T* base) {
  const LqView<T> v = LqView<T>::carve(nx, nu, N, base);
  const auto put = [](const Mat& m, T* dst) {
    for (int j = 0; j < m.cols(); ++j)
      for (int i = 0; i < m.rows(); ++i) dst[i + j * m.rows()] = static_cast<T>(m(i, j));
  };
  for (int k = 0; k < N; ++k) {
    put(0.5 * Mat::Identity(nx, nx) + rng.matrix(nx, nx) / (2.0 * std::sqrt(nx)), v.A_k(k));
    put(rng.matrix(nx, nu), v.B_k(k));
    put(rng.vector(nx), v.c_k(k));
    put(rng.vector(nu), v.r_k(k));
    const Mat G = rng.spd(nx + nu, 0.5);
    put(G.topLeftCorner(nx, nx), v.Q_k(k));
    put(G.bottomLeftCorner(nu, nx), v.S_k(k));
    put(G.bottomRightCorner(nu, nu), v.R_k(k));
  }
  for (int k = 0; k <= N; ++k) put(rng.vector(nx), v.q_k(k));
  put(rng.spd(nx, 0.5), v.Q_k(N));
  put(rng.vector(nx), v.x_init);
}

template <class T>
std::vector<T> random_batch(Rng& rng, int nx, int nu, int N, int batch) {
  std::vector<T> data(LqView<T>::size(nx, nu, N) * batch);
  for (int p = 0; p < batch; ++p) random_problem(rng, nx, nu, N, data.data() + p * LqView<T>::size(nx, nu, N));
  return data;
}

// The same batch solved on the CPU by a SerialGroup, problem after problem.
template <class T>
std::vector<T> solve_on_host(int nx, int nu, int N, int batch, std::vector<T> data, std::vector<DeviceLqResult>& r) {
  std::vector<T> step(StepView<T>::size(nx, nu, N) * batch),
      scratch(solver::device::riccati_scratch_size<T>(nx, nu, N));
  r.assign(batch, {});
  for (int p = 0; p < batch; ++p) {
    linalg::SerialGroup g;
    const auto lq = LqView<T>::carve(nx, nu, N, data.data() + p * LqView<T>::size(nx, nu, N));
    const auto out = StepView<T>::carve(nx, nu, N, step.data() + p * StepView<T>::size(nx, nu, N));
    r[p] = solver::device::riccati_solve(g, lq, out, scratch.data());
  }
  return step;
}

// max |a - b| / max(1, max |b|).
template <class T>
double relative_error(const std::vector<T>& a, const std::vector<T>& b) {
  double d = 0, s = 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::abs(double(a[i]) - double(b[i])));
    s = std::max(s, std::abs(double(b[i])));
  }
  return std::isfinite(d) ? d / s : std::numeric_limits<double>::quiet_NaN();
}

struct Size {
  int nx, nu, N;
};
const Size kSizes[] = {{4, 1, 20}, {14, 7, 64}, {3, 2, 1}, {12, 4, 30}};
// The warp recursion's shapes (nu <= 4, 8, 16 with nx <= 16), its largest stage, and one that does
// not fit a warp (nx 20: riccati_step takes riccati_solve).
const Size kWarpSizes[] = {{4, 1, 20}, {14, 7, 64}, {3, 2, 1}, {12, 4, 30}, {10, 9, 12}, {16, 16, 10}, {20, 3, 8}};
constexpr int kBatch = 6;
// Block sizes: one warp, a partial warp, several warps (the kernel uses 191 registers a thread, so
// 256 is about the most a block may have).
const int kThreads[] = {32, 33, 96, 256};

template <class T>
void check_against_host(double tol, bool warp = false) {
  Rng rng(201);
  const auto sizes = warp ? std::vector<Size>(std::begin(kWarpSizes), std::end(kWarpSizes))
                          : std::vector<Size>(std::begin(kSizes), std::end(kSizes));
  for (const Size& z : sizes) {
    const std::vector<T> data = random_batch<T>(rng, z.nx, z.nu, z.N, kBatch);
    std::vector<DeviceLqResult> host_r;
    const std::vector<T> host = solve_on_host(z.nx, z.nu, z.N, kBatch, data, host_r);
    std::vector<T> first;
    for (const int threads : kThreads) {
      SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N << " threads " << threads);
      std::vector<T> step;
      std::vector<DeviceLqResult> r;
      ASSERT_EQ(riccati_on_device<T>(z.nx, z.nu, z.N, kBatch, threads, warp, data, {}, step, r), "");
      for (int p = 0; p < kBatch; ++p) {
        ASSERT_EQ(host_r[p].status, DeviceLqStatus::Solved);
        EXPECT_EQ(r[p].status, DeviceLqStatus::Solved) << "problem " << p;
      }
      EXPECT_LT(relative_error(step, host), tol);
      if (first.empty()) {
        first = step;
      } else {
        EXPECT_EQ(std::memcmp(step.data(), first.data(), step.size() * sizeof(T)), 0);
      }
    }
  }
}

TEST(GpuRiccati, DoubleMatchesTheHostAndEveryBlockSize) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  // The host test holds the serial solve within 2e-15 of LqSolver; contraction moves each product by
  // at most an ulp, amplified by the same conditioning.
  check_against_host<double>(1e-12);
}

TEST(GpuRiccati, FloatMatchesTheHostToFloatRounding) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  // Both float solves sit within 10 float eps of the exact answer on these problems (the host test
  // measures 9 at worst, 14/7/64); 1e-4 is about 800 float eps.
  check_against_host<float>(1e-4);
}

// The warp recursion (riccati_warp.cuh) orders its sums differently from riccati_solve: the same
// bounds against the host's serial solve, and bitwise alike for every block size (each output has
// one writer, in an order that does not depend on the block size).
TEST(GpuRiccati, WarpMatchesTheHostAndEveryBlockSize) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  check_against_host<double>(1e-12, true);
}

TEST(GpuRiccati, WarpFloatMatchesTheHostToFloatRounding) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  check_against_host<float>(1e-4, true);
}

// Negative control for the comparison above: the warp solve of a problem whose A_k moved by 1e-9 in
// one entry is caught at the 1e-12 bound.
TEST(GpuRiccati, WarpComparisonCatchesAPerturbedProblem) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  Rng rng(204);
  const int nx = 14, nu = 7, N = 64;
  const std::vector<double> data = random_batch<double>(rng, nx, nu, N, kBatch);
  std::vector<DeviceLqResult> host_r, r;
  const std::vector<double> host = solve_on_host(nx, nu, N, kBatch, data, host_r);
  std::vector<double> moved = data, step;
  LqView<double>::carve(nx, nu, N, moved.data()).A_k(3)[5] += 1e-9;
  ASSERT_EQ(riccati_on_device<double>(nx, nu, N, kBatch, 64, true, moved, {}, step, r), "");
  EXPECT_GT(relative_error(step, host), 1e-12);
}

// Non-finite data: NonFinite on both paths, whether the NaN reaches a pivot (R) or only the
// vectors (q), and the other problems of the batch untouched.
TEST(GpuRiccati, WarpReportsNonFiniteData) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  Rng rng(205);
  const int nx = 14, nu = 7, N = 16;
  std::vector<double> data = random_batch<double>(rng, nx, nu, N, kBatch);
  const std::size_t per = LqView<double>::size(nx, nu, N);
  LqView<double>::carve(nx, nu, N, data.data() + 1 * per).R_k(4)[0] = std::numeric_limits<double>::quiet_NaN();
  LqView<double>::carve(nx, nu, N, data.data() + 2 * per).q_k(7)[3] = std::numeric_limits<double>::quiet_NaN();
  std::vector<DeviceLqResult> host_r;
  const std::vector<double> host = solve_on_host(nx, nu, N, kBatch, data, host_r);
  for (const bool warp : {false, true}) {
    SCOPED_TRACE(warp ? "warp" : "block");
    std::vector<double> step;
    std::vector<DeviceLqResult> r;
    ASSERT_EQ(riccati_on_device<double>(nx, nu, N, kBatch, 64, warp, data, {}, step, r), "");
    for (int p = 0; p < kBatch; ++p) {
      EXPECT_EQ(r[p].status, host_r[p].status) << p;
      EXPECT_EQ(r[p].status, p == 1 || p == 2 ? DeviceLqStatus::NonFinite : DeviceLqStatus::Solved) << p;
    }
    const std::size_t sp = StepView<double>::size(nx, nu, N);
    for (const int p : {0, 3, 4, 5}) {
      const std::vector<double> a(step.begin() + p * sp, step.begin() + (p + 1) * sp),
          b(host.begin() + p * sp, host.begin() + (p + 1) * sp);
      EXPECT_LT(relative_error(a, b), 1e-12) << p;
    }
  }
}

TEST(GpuRiccati, ResolveEqualsAFreshSolve) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  Rng rng(202);
  const int nx = 12, nu = 4, N = 30;
  const std::vector<double> d1 = random_batch<double>(rng, nx, nu, N, kBatch);
  std::vector<double> d2 = d1;
  const std::vector<double> other = random_batch<double>(rng, nx, nu, N, kBatch);
  for (int p = 0; p < kBatch; ++p) {  // new c, q, r, x_init
    const std::size_t at = p * LqView<double>::size(nx, nu, N);
    const auto a = LqView<double>::carve(nx, nu, N, d2.data() + at);
    const auto b = LqView<const double>::carve(nx, nu, N, other.data() + at);
    std::copy(b.c, b.c + std::size_t(N) * nx, a.c);
    std::copy(b.q, b.q + (std::size_t(N) + 1) * nx, a.q);
    std::copy(b.r, b.r + std::size_t(N) * nu, a.r);
    std::copy(b.x_init, b.x_init + nx, a.x_init);
  }
  std::vector<double> fresh, resolved;
  std::vector<DeviceLqResult> r1, r2;
  ASSERT_EQ(riccati_on_device<double>(nx, nu, N, kBatch, 64, false, d2, {}, fresh, r1), "");
  ASSERT_EQ(riccati_on_device<double>(nx, nu, N, kBatch, 64, false, d1, d2, resolved, r2), "");
  for (int p = 0; p < kBatch; ++p) {
    EXPECT_EQ(r1[p].status, DeviceLqStatus::Solved);
    EXPECT_EQ(r2[p].status, DeviceLqStatus::Solved);
  }
  EXPECT_EQ(std::memcmp(fresh.data(), resolved.data(), fresh.size() * sizeof(double)), 0);
}

// R_k = -1e3 I at stage bad[p] of problem p (-1: left convex).
constexpr int kIndefNx = 4, kIndefNu = 2, kIndefN = 10, kBad[kBatch] = {0, 5, 9, -1, 3, -1};

std::vector<double> indefinite_batch() {
  Rng rng(203);
  const int nx = kIndefNx, nu = kIndefNu, N = kIndefN;
  std::vector<double> data = random_batch<double>(rng, nx, nu, N, kBatch);
  for (int p = 0; p < kBatch; ++p) {
    if (kBad[p] < 0) continue;
    double* R = LqView<double>::carve(nx, nu, N, data.data() + p * LqView<double>::size(nx, nu, N)).R_k(kBad[p]);
    for (int i = 0; i < nu * nu; ++i) R[i] = i % (nu + 1) == 0 ? -1e3 : 0.0;
  }
  return data;
}

// The batch of the next test on the CPU: the data do fail where they are meant to (runs everywhere).
TEST(GpuRiccati, IndefiniteBatchFailsOnTheHost) {
  std::vector<DeviceLqResult> r;
  solve_on_host(kIndefNx, kIndefNu, kIndefN, kBatch, indefinite_batch(), r);
  for (int p = 0; p < kBatch; ++p) {
    EXPECT_EQ(r[p].status, kBad[p] < 0 ? DeviceLqStatus::Solved : DeviceLqStatus::NotPositiveDefinite) << p;
    EXPECT_EQ(r[p].failed_stage, kBad[p]) << p;
  }
}

TEST(GpuRiccati, IndefiniteStageIsReportedAtItsStage) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  const int* bad = kBad;
  for (const bool warp : {false, true}) {
    SCOPED_TRACE(warp ? "warp" : "block");
    std::vector<double> step;
    std::vector<DeviceLqResult> r;
    ASSERT_EQ(riccati_on_device<double>(kIndefNx, kIndefNu, kIndefN, kBatch, 64, warp, indefinite_batch(), {}, step, r),
              "");
    for (int p = 0; p < kBatch; ++p) {
      EXPECT_EQ(r[p].status, bad[p] < 0 ? DeviceLqStatus::Solved : DeviceLqStatus::NotPositiveDefinite) << p;
      EXPECT_EQ(r[p].failed_stage, bad[p]) << p;
    }
  }
}

TEST(GpuRiccati, LauncherRejectsMismatchedSizes) {
  std::vector<double> step;
  std::vector<DeviceLqResult> r;
  EXPECT_NE(riccati_on_device<double>(4, 1, 20, 2, 32, false, std::vector<double>(7), {}, step, r), "");
}

}  // namespace
}  // namespace knot::test
