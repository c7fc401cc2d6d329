// GPU batched LU and Cholesky (lu_batched.cu, cholesky_batched.cu) against dense Eigen and against
// the CPU serial result of the same primitive (coop_lu.hpp, cholesky.hpp).
//
// Outputs are poisoned with NaN (pivots and statuses with -1) first, so an unwritten element shows.
// For 1 <= n <= 32 the default launch runs the register kernels (register_factor.cuh); they are
// compared with the cooperative kernels for every n in that range.
// Results must be bitwise identical across thread counts, rows_per_thread and tile widths (the group
// contract), agree with the CPU serial result to rounding (not bitwise: nvcc contracts a*b + c into
// fused multiply-adds, the host build does not) and with Eigen to a scale-aware tolerance, and have
// a normwise backward error ||A x - b|| / (max|a_ij| ||x|| + ||b||) <= 1e-12 in double.
//
// Without a usable GPU every test of the fixture `GpuFactor` skips with one line saying why; the
// tests of argument checking run everywhere.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "knot/linalg/cholesky.hpp"
#include "knot/linalg/coop_lu.hpp"
#include "knot/linalg/cuda/batched.hpp"
#include "knot/linalg/cuda/device.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;
namespace kc = knot::linalg::cuda;

namespace {

const kc::DeviceInfo& gpu() {
  static const kc::DeviceInfo info = kc::query_device();
  return info;
}

class GpuFactor : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  }
};

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

void require(const kc::Status& s) {
  if (!s.ok()) throw std::runtime_error(kc::to_string(s));
}

kc::Launch threads(int t, bool fixed = true) {
  kc::Launch l;
  l.threads = t;
  l.fixed_block_size = fixed;
  return l;
}

// A device copy of a host vector, freed on scope exit.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : n_(host.size()) {
    cuda_check(cudaMalloc(&ptr_, bytes()), "cudaMalloc");
    if (n_ > 0) cuda_check(cudaMemcpy(ptr_, host.data(), bytes(), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  DeviceArray(std::size_t n, T fill) : DeviceArray(std::vector<T>(n, fill)) {}
  ~DeviceArray() { cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() { return ptr_; }
  // Waits for the device first, so that an error inside a kernel fails the test here.
  std::vector<T> download() const {
    cuda_check(cudaDeviceSynchronize(), "kernel execution");
    std::vector<T> h(n_);
    if (n_ > 0) cuda_check(cudaMemcpy(h.data(), ptr_, bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return h;
  }

 private:
  std::size_t bytes() const { return (n_ > 0 ? n_ : 1) * sizeof(T); }
  T* ptr_ = nullptr;
  std::size_t n_;
};

template <class T>
std::vector<T> slice(const std::vector<T>& v, int p, long stride) {
  return std::vector<T>(v.begin() + p * stride, v.begin() + (p + 1) * stride);
}

template <class T>
void append(std::vector<T>& all, const std::vector<T>& one) {
  all.insert(all.end(), one.begin(), one.end());
}

Mat column(const std::vector<double>& v) { return to_mat(v, static_cast<int>(v.size()), 1); }

// Normwise backward error ||A x - b||_inf / (max|a_ij| ||x||_inf + ||b||_inf).
double backward_error(const Mat& a, const Vec& x, const Vec& b) {
  if (!x.allFinite()) return kNaN;
  const double den = a.cwiseAbs().maxCoeff() * x.cwiseAbs().maxCoeff() + b.cwiseAbs().maxCoeff();
  return (a * x - b).cwiseAbs().maxCoeff() / den;
}

// A batch of dense systems, column-major n x n back to back, with right-hand sides.
struct DenseBatch {
  int batch, n;
  std::vector<Mat> a;
  std::vector<Vec> b;
  std::vector<double> matrices() const {
    std::vector<double> all;
    for (const Mat& m : a) append(all, to_vec(m));
    return all;
  }
  std::vector<double> rhs() const {
    std::vector<double> all;
    for (const Vec& v : b) append(all, to_vec(v));
    return all;
  }
};

// Nonsymmetric: random, graded (columns scaled over 8 orders of magnitude) and ill-conditioned
// (a nearly dependent pair of columns), in turn.
DenseBatch general_batch(Rng& rng, int batch, int n) {
  DenseBatch d{batch, n, {}, {}};
  for (int p = 0; p < batch; ++p) {
    Mat m = rng.matrix(n, n);
    if (p % 3 == 1)
      for (int j = 0; j < n; ++j) m.col(j) *= std::pow(10.0, 8.0 * j / std::max(1, n - 1) - 4.0);
    if (p % 3 == 2 && n >= 2) m.col(n - 1) = m.col(0) + 1e-9 * rng.vector(n);
    d.a.push_back(m);
    d.b.push_back(rng.vector(n));
  }
  return d;
}

DenseBatch spd_batch(Rng& rng, int batch, int n) {
  DenseBatch d{batch, n, {}, {}};
  for (int p = 0; p < batch; ++p) {
    d.a.push_back(rng.spd(n, 0.1));
    d.b.push_back(rng.vector(n));
  }
  return d;
}

// ---- LU helpers ----

struct LuOut {
  std::vector<double> a, x;
  std::vector<int> piv, info;
};

// lu_solve_batched on the GPU (factor = true: lu_factor_batched then lu_substitute_batched).
LuOut run_lu_gpu(const DenseBatch& d, int rows, const kc::Launch& launch, bool two_calls = false) {
  const int n = d.n;
  DeviceArray<double> da(d.matrices()), db(d.rhs()), dx(poisoned(static_cast<std::size_t>(d.batch) * n));
  DeviceArray<int> dp(static_cast<std::size_t>(d.batch) * n, -1), di(d.batch, -1);
  if (two_calls) {
    require(kc::lu_factor_batched(d.batch, n, da.get(), dp.get(), di.get(), rows, launch));
    require(kc::lu_substitute_batched<double>(d.batch, n, da.get(), dp.get(), db.get(), dx.get(), rows, launch));
  } else {
    require(kc::lu_solve_batched<double>(d.batch, n, da.get(), dp.get(), db.get(), dx.get(), di.get(), rows, launch));
  }
  return {da.download(), dx.download(), dp.download(), di.download()};
}

// The CPU serial cooperative LU (one member holding every row) on one system.
constexpr CoopLuConfig kLuConfig = [] {
  CoopLuConfig c;
  c.layout = LuLayout::kColMajor;
  return c;
}();

LuOut run_lu_serial(const Mat& a, const Vec& b) {
  const int n = static_cast<int>(a.rows());
  const CoopLuDynamic<double, kLuConfig> lu(n, std::max(n, 1));
  std::vector<double> m = to_vec(a), x = to_vec(b), work(lu.workspace_size(), 0.0);
  std::vector<int> piv(n, -1);
  SerialGroup g;
  const int info = lu.solve(g, m.data(), kUnitStride, piv.data(), kUnitStride, x.data(), x.data(), kUnitStride,
                            work.data());
  return {m, x, piv, {info}};
}

void expect_lu_matches(const DenseBatch& d, const LuOut& r, const std::string& where) {
  const int n = d.n;
  for (int p = 0; p < d.batch; ++p) {
    const LuOut s = run_lu_serial(d.a[p], d.b[p]);
    const std::string at = where + " p=" + std::to_string(p);
    ASSERT_EQ(r.info[p], s.info[0]) << at;
    EXPECT_EQ(slice(r.piv, p, n), s.piv) << at;
    EXPECT_LT(rel_err(column(slice(r.a, p, static_cast<long>(n) * n)), column(s.a)), 1e-12) << at;
    const Vec x = column(slice(r.x, p, n));
    // The ill-conditioned ones (p % 3 == 2) amplify the rounding differences: backward error only.
    if (p % 3 != 2) {
      EXPECT_LT(rel_err(x, column(s.x)), 1e-9) << at;
    }
    EXPECT_LE(backward_error(d.a[p], x, d.b[p]), 1e-12) << at;
    if (p % 3 == 0) {  // the well-conditioned ones
      const Vec want = d.a[p].partialPivLu().solve(d.b[p]);
      EXPECT_LT(rel_err(x, want), 1e-10) << at;
    }
  }
}

// ---- Cholesky helpers ----

struct CholOut {
  std::vector<double> a, b;
  std::vector<int> info;
};

// The matrices with the triangle other than `uplo` poisoned with NaN: never read, never written.
std::vector<double> triangle_only(const DenseBatch& d, Uplo uplo) {
  std::vector<double> all = d.matrices();
  for (int p = 0; p < d.batch; ++p)
    for (int j = 0; j < d.n; ++j)
      for (int i = 0; i < d.n; ++i)
        if (uplo == Uplo::Lower ? i < j : i > j) all[static_cast<std::size_t>(p) * d.n * d.n + i + j * d.n] = kNaN;
  return all;
}

enum class CholCall { Posv, FactorThenSolve };

CholOut run_chol_gpu(const DenseBatch& d, const std::vector<double>& matrices, Uplo uplo, int tile,
                     const kc::Launch& launch, CholCall call = CholCall::Posv) {
  DeviceArray<double> da(matrices), db(d.rhs());
  DeviceArray<int> di(d.batch, -1);
  if (call == CholCall::Posv) {
    require(kc::cholesky_posv_batched(d.batch, d.n, da.get(), uplo, db.get(), di.get(), tile, launch));
  } else {
    require(kc::cholesky_factor_batched(d.batch, d.n, da.get(), uplo, di.get(), tile, launch));
    require(kc::cholesky_solve_batched<double>(d.batch, d.n, da.get(), uplo, db.get(), tile, launch));
  }
  return {da.download(), db.download(), di.download()};
}

CholOut run_chol_serial(const std::vector<double>& matrix, const Vec& b, int n, Uplo uplo) {
  std::vector<double> m = matrix, x = to_vec(b);
  SerialGroup g;
  const int info = uplo == Uplo::Lower
                       ? cholesky_posv<Uplo::Lower, Arrangement::ColMajor>(g, n, 1, m.data(), n, x.data(), n)
                       : cholesky_posv<Uplo::Upper, Arrangement::ColMajor>(g, n, 1, m.data(), n, x.data(), n);
  return {m, x, {info}};
}

const int kSizes[] = {1, 5, 8, 16, 21, 32};

}  // namespace

// ---- run everywhere -------------------------------------------------------------------------------

TEST(GpuFactorLaunchers, RejectBadArgumentsWithAStatus) {
  double d = 0;
  int i = 0;
  const auto code = [](const kc::Status& s) { return s.code; };
  using kc::StatusCode;
  constexpr StatusCode bad = StatusCode::InvalidArgument;
  EXPECT_EQ(code(kc::lu_solve_batched<double>(-1, 4, &d, &i, &d, &d, &i)), bad);               // batch < 0
  EXPECT_EQ(code(kc::lu_solve_batched<double>(1, -4, &d, &i, &d, &d, &i)), bad);               // n < 0
  EXPECT_EQ(code(kc::lu_solve_batched<double>(1, 4, &d, &i, &d, &d, &i, -1)), bad);            // rows_per_thread
  EXPECT_EQ(code(kc::lu_factor_batched<double>(1, 64, &d, &i, &i, 1)), bad);                   // 64 threads per system
  EXPECT_EQ(code(kc::lu_factor_batched<double>(1, 4, &d, &i, &i, 0, threads(40))), bad);       // 40 % 32
  EXPECT_EQ(code(kc::lu_factor_batched<double>(1, 4, &d, &i, &i, 0, threads(2000))), bad);     // > 1024
  EXPECT_EQ(code(kc::lu_factor_batched<double>(1, 4, nullptr, &i, &i)), bad);
  EXPECT_EQ(code(kc::lu_solve_batched<double>(1, 4, &d, &i, nullptr, &d, &i)), bad);
  EXPECT_EQ(code(kc::lu_substitute_batched<double>(1, 4, &d, nullptr, &d, &d)), bad);
  EXPECT_EQ(code(kc::lu_batched_size<double>(1, 4, 0, {}, nullptr)), bad);
  EXPECT_EQ(code(kc::cholesky_posv_batched<double>(1, 4, &d, Uplo::Lower, &d, &i, 3)), bad);    // tile 3
  EXPECT_EQ(code(kc::cholesky_posv_batched<double>(1, 4, &d, Uplo::Lower, &d, &i, 8, threads(40))), bad);
  EXPECT_EQ(code(kc::cholesky_posv_batched<double>(1, 4, &d, static_cast<Uplo>(7), &d, &i)), bad);
  EXPECT_EQ(code(kc::cholesky_posv_batched<double>(1, 4, &d, Uplo::Lower, nullptr, &i)), bad);
  EXPECT_EQ(code(kc::cholesky_factor_batched<double>(1, -1, &d, Uplo::Upper, &i)), bad);
  EXPECT_EQ(code(kc::cholesky_solve_batched<float>(1, 4, nullptr, Uplo::Lower, nullptr)), bad);
  EXPECT_EQ(code(kc::cholesky_batched_size<double>(1, 4, 0, {}, nullptr)), bad);
  // An empty batch is a no-op that needs no device at all.
  EXPECT_TRUE(kc::lu_solve_batched<double>(0, 8, nullptr, nullptr, nullptr, nullptr, nullptr).ok());
  EXPECT_TRUE(kc::lu_factor_batched<float>(0, 8, nullptr, nullptr, nullptr).ok());
  EXPECT_TRUE(kc::cholesky_posv_batched<double>(0, 8, nullptr, Uplo::Lower, nullptr, nullptr).ok());
  const kc::Status s = kc::lu_factor_batched<double>(1, 64, &d, &i, &i, 1);
  EXPECT_NE(kc::to_string(s).find("rows_per_thread"), std::string::npos) << kc::to_string(s);
}

TEST(GpuFactorLaunchers, WithoutAGpuReturnACudaErrorAndDoNotCrash) {
  if (gpu().usable) GTEST_SKIP() << "a GPU is present: covered by the GpuFactor tests";
  double d = 0;
  int i = 0;
  kc::LaunchSize size;
  EXPECT_EQ(kc::lu_batched_size<double>(4, 8, 0, {}, &size).code, kc::StatusCode::CudaError);
  EXPECT_EQ(kc::cholesky_batched_size<double>(4, 8, 0, {}, &size).code, kc::StatusCode::CudaError);
  // The pointers are never dereferenced: the launch itself fails.
  EXPECT_EQ(kc::lu_solve_batched<double>(1, 2, &d, &i, &d, &d, &i).code, kc::StatusCode::CudaError);
  EXPECT_EQ(kc::cholesky_posv_batched<double>(1, 2, &d, Uplo::Lower, &d, &i).code, kc::StatusCode::CudaError);
}

// ---- LU -------------------------------------------------------------------------------------------

TEST_F(GpuFactor, LuSolveMatchesSerialAndEigenBitwiseAcrossRowsAndThreads) {
  Rng rng(201);
  const int batch = 37;  // a partial last block
  for (int n : kSizes) {
    const DenseBatch d = general_batch(rng, batch, n);
    // The run-time-size kernel: bitwise the same for every rows_per_thread and block size.
    LuOut first;
    for (int rows : {0, 1, 2, 3, 5, n, n + 2}) {
      if (coop_lu_threads_per_system(n, std::max(rows, 1)) > 32) continue;
      for (int t : {32, 128}) {
        const LuOut r = run_lu_gpu(d, rows, threads(t, false));
        const std::string where = "n=" + std::to_string(n) + " rows=" + std::to_string(rows) + " t=" + std::to_string(t);
        if (first.x.empty()) {
          first = r;
          expect_lu_matches(d, r, where);
        }
        EXPECT_TRUE(bitwise_equal(r.a, first.a)) << where;
        EXPECT_TRUE(bitwise_equal(r.x, first.x)) << where;
        EXPECT_EQ(r.piv, first.piv) << where;
        EXPECT_EQ(r.info, first.info) << where;
      }
    }
    // The kernels compiled for n = 8, 16, 32 agree with the run-time-size one to rounding.
    const LuOut fixed = run_lu_gpu(d, 0, threads(128, true));
    expect_lu_matches(d, fixed, "fixed n=" + std::to_string(n));
    EXPECT_LT(rel_err(column(fixed.x), column(first.x)), 1e-9) << "n=" << n;
  }
}

TEST_F(GpuFactor, LuFactorThenSubstituteEqualsSolve) {
  Rng rng(202);
  for (int n : {8, 21, 32})
    for (bool fixed : {true, false}) {
      const DenseBatch d = general_batch(rng, 9, n);
      const LuOut one = run_lu_gpu(d, 0, threads(64, fixed));
      const LuOut two = run_lu_gpu(d, 0, threads(64, fixed), /*two_calls=*/true);
      EXPECT_TRUE(bitwise_equal(one.a, two.a)) << "n=" << n;
      EXPECT_TRUE(bitwise_equal(one.x, two.x)) << "n=" << n;
      EXPECT_EQ(one.piv, two.piv);
      EXPECT_EQ(one.info, two.info);
    }
}

TEST_F(GpuFactor, LuSingularSystemsGetTheirVerdictAndDoNotPoisonTheBatch) {
  Rng rng(203);
  for (int n : {8, 16, 21}) {
    DenseBatch d = general_batch(rng, 7, n);
    for (int p = 0; p < d.batch; ++p) d.a[p] = rng.matrix(n, n) + n * Mat::Identity(n, n);
    d.a[1].col(3).setZero();                   // singular at step 4 exactly
    d.a[3].setZero();                          // singular from step 1
    d.a[5](2, 2) = std::numeric_limits<double>::quiet_NaN();  // NaN input
    const LuOut r = run_lu_gpu(d, 0, threads(128));
    EXPECT_EQ(r.info[1], 4) << "n=" << n;
    EXPECT_EQ(r.info[3], 1) << "n=" << n;
    EXPECT_NE(r.info[5], 0) << "n=" << n;
    for (int p : {0, 2, 4, 6}) {
      EXPECT_EQ(r.info[p], 0) << "n=" << n << " p=" << p;
      const Vec x = column(slice(r.x, p, n));
      EXPECT_LE(backward_error(d.a[p], x, d.b[p]), 1e-12) << "n=" << n << " p=" << p;
    }
    for (int p = 0; p < d.batch; ++p) EXPECT_EQ(r.info[p], run_lu_serial(d.a[p], d.b[p]).info[0]) << "p=" << p;
  }
}

TEST_F(GpuFactor, LuInPlaceWhenStagingDoesNotFitAndWithAGivenWorkspace) {
  Rng rng(204);
  // n = 120, rows_per_thread 4 (30 threads, one 32-lane tile per system): in blocks of 256 threads
  // the 8 systems of 116 KiB each are far beyond one block's shared memory, so the tiles work in
  // place in global memory; in blocks of 32 the one system is staged. The same bits either way.
  const int n = 120, rows = 4;
  const DenseBatch d = general_batch(rng, 20, n);
  kc::LaunchSize big;
  require(kc::lu_batched_size<double>(d.batch, n, rows, threads(256), &big));
  EXPECT_TRUE(big.fits_shared);
  const LuOut in_place = run_lu_gpu(d, rows, threads(256));
  const LuOut staged = run_lu_gpu(d, rows, threads(32));
  expect_lu_matches(d, in_place, "in place");
  EXPECT_TRUE(bitwise_equal(in_place.a, staged.a));
  EXPECT_TRUE(bitwise_equal(in_place.x, staged.x));
  // The solver's workspace in global memory instead of shared memory: the same bits again.
  DeviceArray<double> work(big.workspace_bytes / sizeof(double), kNaN);
  kc::Launch l = threads(256);
  l.workspace = work.get();
  l.workspace_bytes = big.workspace_bytes;
  const LuOut with_ws = run_lu_gpu(d, rows, l);
  EXPECT_TRUE(bitwise_equal(in_place.x, with_ws.x));
  l.workspace_bytes = big.workspace_bytes - 1;
  DeviceArray<double> a(d.matrices()), x(d.rhs());
  DeviceArray<int> piv(static_cast<std::size_t>(d.batch) * n, -1);
  EXPECT_EQ(kc::lu_solve_batched<double>(d.batch, n, a.get(), piv.get(), x.get(), x.get(), nullptr, rows, l).code,
            kc::StatusCode::InvalidArgument);
}

TEST_F(GpuFactor, LuFloatSolvesToSinglePrecision) {
  Rng rng(205);
  const int n = 16, batch = 5;
  DenseBatch d = general_batch(rng, batch, n);
  std::vector<float> a, b;
  for (int p = 0; p < batch; ++p) {
    d.a[p] = rng.matrix(n, n) + n * Mat::Identity(n, n);
    for (double v : to_vec(d.a[p])) a.push_back(static_cast<float>(v));
    for (double v : to_vec(d.b[p])) b.push_back(static_cast<float>(v));
  }
  DeviceArray<float> da(a), db(b), dx(b.size(), std::numeric_limits<float>::quiet_NaN());
  DeviceArray<int> dp(a.size() / n, -1), di(batch, -1);
  require(kc::lu_solve_batched<float>(batch, n, da.get(), dp.get(), db.get(), dx.get(), di.get()));
  const std::vector<float> x = dx.download();
  const std::vector<int> info = di.download();
  for (int p = 0; p < batch; ++p) {
    EXPECT_EQ(info[p], 0);
    Vec xp(n);
    for (int i = 0; i < n; ++i) xp(i) = x[p * n + i];
    EXPECT_LT(rel_err(xp, d.a[p].partialPivLu().solve(d.b[p])), 1e-5) << "p=" << p;
  }
}

// ---- Cholesky -------------------------------------------------------------------------------------

TEST_F(GpuFactor, CholeskyPosvMatchesSerialAndEigenBitwiseAcrossTilesAndThreads) {
  Rng rng(211);
  const int batch = 37;
  for (int n : kSizes)
    for (Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      const DenseBatch d = spd_batch(rng, batch, n);
      const std::vector<double> in = triangle_only(d, uplo);
      const std::string u = uplo == Uplo::Lower ? " lower" : " upper";
      for (bool fixed : {true, false}) {
        CholOut first;
        // Tile 0 with fixed kernels is the register kernel (n <= 32): RegisterCholesky... below.
        for (int tile : {0, 1, 4, 32})
          for (int t : {32, 128}) {
            if (fixed && tile == 0) continue;
            const CholOut r = run_chol_gpu(d, in, uplo, tile, threads(t, fixed));
            const std::string where =
                "n=" + std::to_string(n) + u + " tile=" + std::to_string(tile) + " t=" + std::to_string(t);
            if (first.b.empty()) {
              first = r;
              for (int p = 0; p < batch; ++p) {
                const long nn = static_cast<long>(n) * n;
                const CholOut s = run_chol_serial(slice(in, p, nn), d.b[p], n, uplo);
                EXPECT_EQ(r.info[p], 0) << where;
                // The other triangle stays NaN: never written.
                const std::vector<double> got = slice(r.a, p, nn);
                for (int j = 0; j < n; ++j)
                  for (int i = 0; i < n; ++i)
                    if (uplo == Uplo::Lower ? i < j : i > j) {
                      EXPECT_TRUE(std::isnan(got[i + j * n])) << where;
                    }
                const Mat f = to_mat(got, n, n);
                const Mat sf = to_mat(s.a, n, n);
                const Mat eig_l = d.a[p].llt().matrixL();
                const Mat gl = uplo == Uplo::Lower ? Mat(f.triangularView<Eigen::Lower>())
                                                   : Mat(f.triangularView<Eigen::Upper>().transpose());
                const Mat sl = uplo == Uplo::Lower ? Mat(sf.triangularView<Eigen::Lower>())
                                                   : Mat(sf.triangularView<Eigen::Upper>().transpose());
                EXPECT_LT(rel_err(gl, sl), 1e-13) << where;
                EXPECT_LT(rel_err(gl, eig_l), 1e-12) << where;
                const Vec x = column(slice(r.b, p, n));
                EXPECT_LT(rel_err(x, column(s.b)), 1e-10) << where;
                EXPECT_LT(rel_err(x, d.a[p].llt().solve(d.b[p])), 1e-9) << where;
                EXPECT_LE(backward_error(d.a[p], x, d.b[p]), 1e-12) << where;
              }
            }
            EXPECT_TRUE(bitwise_equal(r.a, first.a)) << where;
            EXPECT_TRUE(bitwise_equal(r.b, first.b)) << where;
          }
      }
    }
}

TEST_F(GpuFactor, CholeskyFactorThenSolveEqualsPosv) {
  Rng rng(212);
  for (int n : {8, 21, 32})
    for (Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      const DenseBatch d = spd_batch(rng, 9, n);
      const auto in = triangle_only(d, uplo);
      const CholOut one = run_chol_gpu(d, in, uplo, 0, threads(64));
      const CholOut two = run_chol_gpu(d, in, uplo, 0, threads(64), CholCall::FactorThenSolve);
      EXPECT_TRUE(bitwise_equal(one.a, two.a)) << "n=" << n;
      EXPECT_TRUE(bitwise_equal(one.b, two.b)) << "n=" << n;
      EXPECT_EQ(one.info, two.info);
    }
}

TEST_F(GpuFactor, CholeskyPlantedMinorGivesItsOrderAndDoesNotPoisonTheBatch) {
  Rng rng(213);
  for (int n : {8, 16, 21})
    for (Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      DenseBatch d = spd_batch(rng, 6, n);
      // System 2: row and column k-1 copy row and column 0, so the leading minor of order k is
      // singular; one less on the diagonal makes it indefinite (pivot -1, not a rounding-level 0).
      const int k = n / 2 + 1;
      Mat& m = d.a[2];
      m.row(k - 1) = m.row(0);
      m.col(k - 1) = m.col(0);
      m(k - 1, k - 1) -= 1.0;
      d.a[4](0, 0) = -1.0;  // order 1
      const auto in = triangle_only(d, uplo);
      const CholOut r = run_chol_gpu(d, in, uplo, 0, threads(128));
      EXPECT_EQ(r.info[2], k) << "n=" << n;
      EXPECT_EQ(r.info[4], 1) << "n=" << n;
      for (int p : {2, 4}) EXPECT_TRUE(bitwise_equal(slice(r.b, p, n), to_vec(d.b[p]))) << "b unchanged, p=" << p;
      for (int p : {0, 1, 3, 5}) {
        EXPECT_EQ(r.info[p], 0);
        EXPECT_LE(backward_error(d.a[p], column(slice(r.b, p, n)), d.b[p]), 1e-12) << "n=" << n << " p=" << p;
      }
    }
}

TEST_F(GpuFactor, CholeskyFloatSolvesToSinglePrecision) {
  Rng rng(214);
  // n <= 32: the register kernel in float, both triangles.
  for (int n : {3, 8, 13, 32})
    for (Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      const int batch = 9;
      const DenseBatch d = spd_batch(rng, batch, n);
      std::vector<float> a, b;
      for (int p = 0; p < batch; ++p) {
        for (double v : to_vec(d.a[p])) a.push_back(static_cast<float>(v));
        for (double v : to_vec(d.b[p])) b.push_back(static_cast<float>(v));
      }
      DeviceArray<float> da(a), db(b);
      DeviceArray<int> di(batch, -1);
      require(kc::cholesky_posv_batched<float>(batch, n, da.get(), uplo, db.get(), di.get()));
      const std::vector<float> x = db.download();
      const std::vector<int> info = di.download();
      for (int p = 0; p < batch; ++p) {
        EXPECT_EQ(info[p], 0);
        Vec xp(n);
        for (int i = 0; i < n; ++i) xp(i) = x[p * n + i];
        EXPECT_LT(rel_err(xp, d.a[p].llt().solve(d.b[p])), 1e-3) << "n=" << n << " p=" << p;
      }
    }
}

// ---- register kernels (n <= 32, the default launch) ---------------------------------------------

namespace {

// The largest difference of two arrays relative to the largest |b_i|; NaN must sit in both or neither.
template <class T>
double max_rel_diff(const std::vector<T>& a, const std::vector<T>& b) {
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!std::isnan(a[i]) || !std::isnan(b[i])) scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::isnan(a[i]) || std::isnan(b[i])) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])) / std::max(scale, 1e-300));
  }
  return worst;
}

}  // namespace

TEST_F(GpuFactor, RegisterLuMatchesTheCooperativeKernelForEveryOrderUpTo32) {
  Rng rng(221);
  const int batch = 37;  // partial tiles and blocks
  int bitwise = 0;
  for (int n = 1; n <= 32; ++n) {
    DenseBatch d = general_batch(rng, batch, n);
    if (n >= 3) {
      d.a[4].col(1).setZero();                  // singular at step 2
      d.a[7](n - 1, 0) = std::numeric_limits<double>::quiet_NaN();
    }
    const std::string at = "n=" + std::to_string(n);
    const LuOut coop = run_lu_gpu(d, 0, threads(64, /*fixed=*/false));
    LuOut first;
    for (int t : {32, 96, 256}) {
      const LuOut r = run_lu_gpu(d, 0, threads(t, true));
      const std::string where = at + " t=" + std::to_string(t);
      if (first.x.empty()) {
        first = r;
        // Pivots and verdicts are decisions: exactly the cooperative kernel's; the numbers to rounding.
        ASSERT_EQ(r.info, coop.info) << where;
        EXPECT_EQ(r.piv, coop.piv) << where;
        EXPECT_LT(max_rel_diff(r.a, coop.a), 1e-12) << where;
        for (int p = 0; p < batch; ++p) {
          if (r.info[p] != 0 || p % 3 == 2) continue;
          const Vec x = column(slice(r.x, p, n));
          EXPECT_LE(backward_error(d.a[p], x, d.b[p]), 1e-12) << where << " p=" << p;
          EXPECT_LT(rel_err(x, column(slice(coop.x, p, n))), 1e-9) << where << " p=" << p;
          if (p % 3 == 0) {
            EXPECT_LT(rel_err(x, d.a[p].partialPivLu().solve(d.b[p])), 1e-10) << where;
          }
        }
        if (n >= 3) {
          EXPECT_EQ(r.info[4], 2) << where;
          EXPECT_NE(r.info[7], 0) << where;
        }
        bitwise += bitwise_equal(r.a, coop.a) && bitwise_equal(r.x, coop.x);
      }
      EXPECT_TRUE(bitwise_equal(r.a, first.a)) << where;
      EXPECT_TRUE(bitwise_equal(r.x, first.x)) << where;
      EXPECT_EQ(r.piv, first.piv) << where;
      EXPECT_EQ(r.info, first.info) << where;
    }
  }
  std::printf("[ register LU ] bitwise the cooperative kernel's factors and x for %d of 32 orders\n", bitwise);
  // The same operations in the same order, the updates as explicit fused multiply-adds: the same
  // bits as the cooperative kernel (measured on an H200), so batched.hpp's promise holds for both.
  EXPECT_EQ(bitwise, 32);
}

TEST_F(GpuFactor, RegisterCholeskyMatchesTheCooperativeKernelForEveryOrderUpTo32) {
  Rng rng(222);
  const int batch = 37;
  int bitwise = 0;
  for (int n = 1; n <= 32; ++n)
    for (Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      DenseBatch d = spd_batch(rng, batch, n);
      const int k = n / 2 + 1;  // system 5 fails at the leading minor of order k (see the planted test)
      if (n >= 2) {
        Mat& m = d.a[5];
        m.row(k - 1) = m.row(0);
        m.col(k - 1) = m.col(0);
        m(k - 1, k - 1) -= 1.0;
      }
      const auto in = triangle_only(d, uplo);
      const std::string at = "n=" + std::to_string(n) + (uplo == Uplo::Lower ? " lower" : " upper");
      const CholOut coop = run_chol_gpu(d, in, uplo, 0, threads(128, /*fixed=*/false));
      CholOut first;
      for (int t : {32, 96, 256})
        for (CholCall call : {CholCall::Posv, CholCall::FactorThenSolve}) {
          const CholOut r = run_chol_gpu(d, in, uplo, 0, threads(t, true), call);
          const std::string where = at + " t=" + std::to_string(t);
          if (first.b.empty()) {
            first = r;
            ASSERT_EQ(r.info, coop.info) << where;
            if (n >= 2) {
              EXPECT_EQ(r.info[5], k) << where;
            }
            EXPECT_LT(max_rel_diff(r.a, coop.a), 1e-13) << where;
            const long nn = static_cast<long>(n) * n;
            for (int p = 0; p < batch; ++p) {
              // The other triangle stays NaN; a failed system's columns from k - 1 on, and its b,
              // are as they came in.
              const std::vector<double> got = slice(r.a, p, nn), was = slice(in, p, nn);
              for (int j = 0; j < n; ++j)
                for (int i = 0; i < n; ++i) {
                  const bool other = uplo == Uplo::Lower ? i < j : i > j;
                  const int col = uplo == Uplo::Lower ? j : i;  // the column of L
                  if (other) {
                    EXPECT_TRUE(std::isnan(got[i + j * n])) << where;
                  } else if (r.info[p] != 0 && col >= r.info[p] - 1) {
                    EXPECT_EQ(got[i + j * n], was[i + j * n]) << where << " p=" << p;
                  }
                }
              const Vec x = column(slice(r.b, p, n));
              if (r.info[p] != 0) {
                EXPECT_TRUE(bitwise_equal(to_vec(x), to_vec(d.b[p]))) << where << " p=" << p;
                continue;
              }
              EXPECT_LE(backward_error(d.a[p], x, d.b[p]), 1e-12) << where << " p=" << p;
              EXPECT_LT(rel_err(x, column(slice(coop.b, p, n))), 1e-10) << where << " p=" << p;
              EXPECT_LT(rel_err(x, d.a[p].llt().solve(d.b[p])), 1e-9) << where << " p=" << p;
            }
            bitwise += bitwise_equal(r.a, coop.a) && bitwise_equal(r.b, coop.b);
          }
          EXPECT_TRUE(bitwise_equal(r.a, first.a)) << where;
          EXPECT_EQ(r.info, first.info) << where;
          // A failed system's solve after factor-then-solve runs on a partial factor: unspecified.
          for (int p = 0; p < batch; ++p)
            if (first.info[p] == 0) {
              EXPECT_TRUE(bitwise_equal(slice(r.b, p, n), slice(first.b, p, n))) << where << " p=" << p;
            }
        }
    }
  std::printf("[ register Cholesky ] bitwise the cooperative kernel's for %d of 64 cases\n", bitwise);
  EXPECT_EQ(bitwise, 64);
}
