// GPU batched linalg (knot::linalg_cuda) against dense Eigen and against the CPU serial primitives.
//
// Every GPU check runs for thread-block sizes {32, 64, 96, 128, 256}: outputs are poisoned with NaN
// first, results must be bitwise identical across thread counts (the group contract), agree with
// Eigen to a scale-aware tolerance, and agree with the CPU serial result to rounding. (Not bitwise:
// nvcc contracts a*b + c into fused multiply-adds, the host build does not.)
//
// Without a usable GPU every test of the fixture `Gpu` skips with one line saying why; the tests of
// argument checking and of the device query run everywhere.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

#include "knot/linalg/bdsv.hpp"
#include "knot/linalg/cuda/batched.hpp"
#include "knot/linalg/cuda/device.hpp"
#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/pcg.hpp"
#include "knot/linalg/precond.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;
namespace kc = knot::linalg::cuda;

namespace {

const int kThreads[] = {32, 64, 96, 128, 256};
struct Shape {
  int nb, bs;
};
// bs = 8 and 16 run the fixed-size double kernels of bdsv and pcg, the others the run-time-size ones.
const Shape kShapes[] = {{1, 1}, {1, 8}, {8, 5}, {8, 16}, {32, 3}, {32, 12}};

const kc::DeviceInfo& gpu() {
  static const kc::DeviceInfo info = kc::query_device();
  return info;
}

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  }
};

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// A launcher's Status must be ok; anything else fails the test with its message.
void require(const kc::Status& s) {
  if (!s.ok()) throw std::runtime_error(kc::to_string(s));
}

kc::Launch threads(int t) {
  kc::Launch l;
  l.threads = t;
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

// Problem p of a batch laid out back to back with `stride` elements each.
template <class T>
std::vector<T> slice(const std::vector<T>& v, int p, long stride) {
  return std::vector<T>(v.begin() + p * stride, v.begin() + (p + 1) * stride);
}

template <class T>
void append(std::vector<T>& all, const std::vector<T>& one) {
  all.insert(all.end(), one.begin(), one.end());
}

Mat column(const std::vector<double>& v) { return to_mat(v, static_cast<int>(v.size()), 1); }

// A batch of SPD block-tridiagonal systems with right-hand sides and dense solutions.
struct SpdBatch {
  int batch, nb, bs;
  std::vector<BlockTri> problems;
  std::vector<Vec> rhs, solution;
  std::vector<double> strips() const {
    std::vector<double> all;
    for (const auto& m : problems) append(all, m.strips);
    return all;
  }
  std::vector<double> padded_rhs() const {
    std::vector<double> all;
    for (const auto& b : rhs) append(all, padded(b, bs));
    return all;
  }
};

SpdBatch spd_batch(Rng& rng, int batch, int nb, int bs, bool with_dense = true) {
  SpdBatch b{batch, nb, bs, {}, {}, {}};
  for (int p = 0; p < batch; ++p) {
    b.problems.push_back(random_spd_blocktri(rng, nb, bs));
    b.rhs.push_back(rng.vector(nb * bs));
    b.solution.push_back(with_dense ? Vec(b.problems.back().dense().llt().solve(b.rhs.back())) : Vec());
  }
  return b;
}

// Makes diagonal block k of a problem negative definite.
void break_block(BlockTri& m, int k) {
  for (int y = 0; y < m.bs; ++y)
    for (int x = 0; x < m.bs; ++x) m.at(k, 1, y, x) = y == x ? -1.0 : 0.0;
}

}  // namespace

// ---- run everywhere -------------------------------------------------------------------------------

TEST(GpuDevice, QueryDescribesTheDeviceOrWhyThereIsNone) {
  const kc::DeviceInfo info = kc::query_device();
  const std::string text = kc::describe(info);
  std::printf("%s", text.c_str());
  EXPECT_FALSE(text.empty());
  if (info.usable) {
    EXPECT_TRUE(info.reason.empty());
    EXPECT_FALSE(info.name.empty());
    EXPECT_GT(info.multiprocessors, 0);
  } else {
    EXPECT_FALSE(info.reason.empty());
  }
  EXPECT_FALSE(kc::query_device(1 << 20).usable);  // a device that does not exist
}

TEST(GpuLaunchers, RejectBadArgumentsWithAStatus) {
  double d = 0;
  int i = 0;
  const auto code = [](const kc::Status& s) { return s.code; };
  using kc::StatusCode;
  EXPECT_EQ(code(kc::bdmv_batched(1, 1, 0, &d, &d, &d)), StatusCode::InvalidArgument);              // bs = 0
  EXPECT_EQ(code(kc::bdmv_batched(-1, 1, 1, &d, &d, &d)), StatusCode::InvalidArgument);             // batch < 0
  EXPECT_EQ(code(kc::bdmv_batched(1, 1, 1, &d, &d, &d, threads(2000))), StatusCode::InvalidArgument);
  EXPECT_EQ(code(kc::bdmv_batched<double>(1, 1, 1, nullptr, &d, &d)), StatusCode::InvalidArgument);
  EXPECT_EQ(code(kc::store_strips_batched(1, 1, 1, &d, &d, false, 1.0, threads(48))), StatusCode::InvalidArgument);
  EXPECT_EQ(code(kc::bdsv_batched<double>(1, 1, 1, nullptr, &d, &i)), StatusCode::InvalidArgument);
  EXPECT_EQ(code(kc::pcg_batched(1, 1, 1, &d, static_cast<double*>(nullptr), &d, &d, kc::Precond::Stair,
                                 PcgOptions<double>{}, &i, &i)),
            StatusCode::InvalidArgument);
  EXPECT_EQ(code(kc::pcg_batched(1, 1, 1, &d, &d, &d, &d, static_cast<kc::Precond>(7), PcgOptions<double>{}, &i, &i)),
            StatusCode::InvalidArgument);
  EXPECT_EQ(code(kc::potrf_batched(1, 4, &d, 4, &i, 3)), StatusCode::InvalidArgument);            // tile 3
  EXPECT_EQ(code(kc::potrf_batched(1, 4, &d, 3, &i)), StatusCode::InvalidArgument);               // lda < n
  EXPECT_EQ(code(kc::potrf_batched(1, 4, &d, 4, &i, 8, threads(40))), StatusCode::InvalidArgument);  // 40 % 32
  // An empty batch is a no-op that needs no device at all.
  EXPECT_TRUE(kc::bdmv_batched<double>(0, 4, 4, nullptr, nullptr, nullptr).ok());
  EXPECT_TRUE(kc::bdsv_batched<double>(0, 4, 4, nullptr, nullptr, nullptr).ok());
  const kc::Status bad = kc::bdmv_batched(1, 1, 0, &d, &d, &d);
  EXPECT_NE(kc::to_string(bad).find("bs"), std::string::npos) << kc::to_string(bad);
}

TEST(GpuLaunchers, WithoutAGpuReturnACudaErrorAndDoNotCrash) {
  if (gpu().usable) GTEST_SKIP() << "a GPU is present: covered by the Gpu tests";
  double d = 0;
  kc::LaunchSize size;
  const kc::Status st = kc::bdsv_batched_size<double>(4, 8, 8, {}, &size);
  EXPECT_EQ(st.code, kc::StatusCode::CudaError);
  EXPECT_NE(st.cuda_error, 0);
  EXPECT_NE(kc::to_string(st).find("CUDA error"), std::string::npos) << kc::to_string(st);
  // The pointers are never dereferenced: the launch itself fails.
  EXPECT_EQ(kc::bdmv_batched(1, 2, 2, &d, &d, &d).code, kc::StatusCode::CudaError);
}

// ---- strip movers -----------------------------------------------------------------------------------

TEST_F(Gpu, StripMoversMatchSerialAndLoadInvertsStore) {
  Rng rng(101);
  const int batch = 3;
  for (const auto& [nb, bs] : kShapes)
    for (bool tr : {false, true}) {
      const long blk = static_cast<long>(bs) * bs;
      const long per_problem = 3L * nb * blk;
      const std::vector<double> blocks = to_vec(rng.matrix(static_cast<int>(batch * per_problem), 1));
      // Reference: the serial store of every block into NaN-poisoned strips.
      std::vector<double> want = poisoned(batch * strips_size(nb, bs));
      SerialGroup g;
      for (int p = 0; p < batch; ++p)
        for (int br = 0; br < nb; ++br)
          for (int s = 0; s < 3; ++s) {
            double* strip = want.data() + p * strips_size(nb, bs) + strip_offset(br, bs);
            const double* src = blocks.data() + ((static_cast<long>(p) * nb + br) * 3 + s) * blk;
            if (tr)
              store_block<true>(g, bs, strip, static_cast<BandSlot>(s), src, -2.0);
            else
              store_block<false>(g, bs, strip, static_cast<BandSlot>(s), src, -2.0);
          }
      DeviceArray<double> dblocks(blocks);
      for (int t : kThreads) {
        DeviceArray<double> dstrips(poisoned(want.size()));
        require(kc::store_strips_batched(batch, nb, bs, dblocks.get(), dstrips.get(), tr, -2.0, threads(t)));
        EXPECT_TRUE(bitwise_equal(dstrips.download(), want)) << "nb=" << nb << " bs=" << bs << " tr=" << tr << " t=" << t;
        // Scales -2 and -1/2 are exact, so load after store gives the blocks back bit for bit.
        DeviceArray<double> back(poisoned(blocks.size()));
        require(kc::load_strips_batched(batch, nb, bs, dstrips.get(), back.get(), tr, -0.5, threads(t)));
        EXPECT_TRUE(bitwise_equal(back.download(), blocks)) << "nb=" << nb << " bs=" << bs << " tr=" << tr << " t=" << t;
      }
    }
}

// ---- bdmv ---------------------------------------------------------------------------------------------

TEST_F(Gpu, BdmvMatchesDenseProductAndSerial) {
  Rng rng(102);
  const int batch = 3;
  for (const auto& [nb, bs] : kShapes) {
    std::vector<double> strips, v, serial;
    std::vector<Vec> want;
    for (int p = 0; p < batch; ++p) {
      const BlockTri m = random_blocktri(rng, nb, bs);
      const Vec x = rng.vector(nb * bs);
      want.push_back(m.dense() * x);
      const auto vp = padded(x, bs);
      auto out = poisoned(vp.size());
      SerialGroup g;
      bdmv(g, nb, bs, out.data(), m.strips.data(), vp.data());
      append(strips, m.strips);
      append(v, vp);
      append(serial, out);
    }
    DeviceArray<double> dA(strips), dv(v);
    std::vector<double> first;
    for (int t : kThreads) {
      DeviceArray<double> dout(poisoned(v.size()));
      require(kc::bdmv_batched(batch, nb, bs, dA.get(), dv.get(), dout.get(), threads(t)));
      const auto got = dout.download();
      for (int p = 0; p < batch; ++p) {
        const auto gp = slice(got, p, padded_size(nb, bs));
        EXPECT_LT(rel_err(interior(gp, nb, bs), want[p]), 1e-13) << "nb=" << nb << " bs=" << bs << " t=" << t;
        EXPECT_LT(rel_err(interior(gp, nb, bs), interior(slice(serial, p, padded_size(nb, bs)), nb, bs)), 1e-14);
        for (int i = 0; i < bs; ++i) {  // the pads of the output are not written
          EXPECT_TRUE(std::isnan(gp[i]));
          EXPECT_TRUE(std::isnan(gp[(nb + 1) * bs + i]));
        }
      }
      if (first.empty()) first = got;
      EXPECT_TRUE(bitwise_equal(got, first)) << "t=" << t;
    }
  }
}

// ---- bdsv ---------------------------------------------------------------------------------------------

namespace {

struct BdsvOut {
  std::vector<double> strips, v;
  std::vector<int> fail;
};

BdsvOut run_bdsv_gpu(const SpdBatch& b, const std::vector<double>& strips, const kc::Launch& launch) {
  DeviceArray<double> ds(strips), dv(b.padded_rhs());
  DeviceArray<int> dfail(b.batch, -1);
  require(kc::bdsv_batched(b.batch, b.nb, b.bs, ds.get(), dv.get(), dfail.get(), launch));
  return {ds.download(), dv.download(), dfail.download()};
}

}  // namespace

TEST_F(Gpu, BdsvMatchesDenseSolveAndSerial) {
  Rng rng(103);
  const int batch = 3;
  for (const auto& [nb, bs] : kShapes) {
    const SpdBatch b = spd_batch(rng, batch, nb, bs);
    const auto strips = b.strips();
    // Serial reference on a copy of each problem.
    std::vector<double> ser_strips, ser_v;
    for (int p = 0; p < batch; ++p) {
      auto s = b.problems[p].strips;
      auto v = padded(b.rhs[p], bs);
      std::vector<double> scratch = poisoned(bdsv_scratch_size(bs));
      int fail = 0;
      SerialGroup g;
      bdsv<true>(g, nb, bs, s.data(), v.data(), scratch.data(), &fail);
      ASSERT_EQ(fail, 0);
      append(ser_strips, s);
      append(ser_v, v);
    }
    BdsvOut first;
    for (int t : kThreads) {
      const BdsvOut r = run_bdsv_gpu(b, strips, threads(t));
      for (int p = 0; p < batch; ++p) {
        EXPECT_EQ(r.fail[p], 0);
        const Vec x = interior(slice(r.v, p, padded_size(nb, bs)), nb, bs);
        EXPECT_LT(rel_err(x, b.solution[p]), 1e-10) << "nb=" << nb << " bs=" << bs << " t=" << t;
        EXPECT_LT(rel_err(x, interior(slice(ser_v, p, padded_size(nb, bs)), nb, bs)), 1e-12);
      }
      EXPECT_LT(rel_err(column(r.strips), column(ser_strips)), 1e-12) << "factor, nb=" << nb << " bs=" << bs;
      if (first.v.empty()) first = r;
      EXPECT_TRUE(bitwise_equal(r.strips, first.strips)) << "t=" << t;
      EXPECT_TRUE(bitwise_equal(r.v, first.v)) << "t=" << t;
    }
  }
}

TEST_F(Gpu, BdsvFlagsOnlyTheProblemThatIsNotPositiveDefinite) {
  Rng rng(104);
  const int nb = 6, bs = 4;
  SpdBatch b = spd_batch(rng, 3, nb, bs);
  break_block(b.problems[1], 3);
  const BdsvOut r = run_bdsv_gpu(b, b.strips(), threads(64));
  EXPECT_EQ(r.fail, (std::vector<int>{0, 1, 0}));
  for (int p : {0, 2})
    EXPECT_LT(rel_err(interior(slice(r.v, p, padded_size(nb, bs)), nb, bs), b.solution[p]), 1e-10);
}

TEST_F(Gpu, BdsvLargeBlocksAndAGivenWorkspace) {
  Rng rng(105);
  // bs = 128: large blocks, in place on the strips (bdsv needs bdsv_scratch_size(bs) = 0 scratch).
  for (const auto& [nb, bs] : {Shape{8, 16}, Shape{2, 128}}) {
    const SpdBatch b = spd_batch(rng, 2, nb, bs);
    kc::Launch launch = threads(128);
    kc::LaunchSize size;
    require(kc::bdsv_batched_size<double>(b.batch, nb, bs, launch, &size));
    EXPECT_EQ(size.workspace_bytes, sizeof(double) * b.batch * bdsv_scratch_size(bs));
    EXPECT_TRUE(size.fits_shared);
    const BdsvOut shared = run_bdsv_gpu(b, b.strips(), launch);
    DeviceArray<double> work(size.workspace_bytes / sizeof(double) + 1, kNaN);
    launch.workspace = work.get();
    launch.workspace_bytes = size.workspace_bytes + sizeof(double);
    const BdsvOut with_ws = run_bdsv_gpu(b, b.strips(), launch);
    for (int p = 0; p < b.batch; ++p)
      EXPECT_LT(rel_err(interior(slice(shared.v, p, padded_size(nb, bs)), nb, bs), b.solution[p]), 1e-10) << "bs=" << bs;
    EXPECT_TRUE(bitwise_equal(shared.strips, with_ws.strips));
    EXPECT_TRUE(bitwise_equal(shared.v, with_ws.v));
  }
}

// ---- pcg ----------------------------------------------------------------------------------------------

namespace {

struct PcgOut {
  std::vector<double> x, pinv;
  std::vector<int> iterations, outcome;
};

PcgOptions<double> tight() {
  PcgOptions<double> o;
  o.rel_tol = 1e-26;
  o.max_iters = 1000;
  return o;
}

PcgOut run_pcg_gpu(const SpdBatch& b, kc::Precond pre, const std::vector<double>& x0, const PcgOptions<double>& opt,
                   const kc::Launch& launch) {
  DeviceArray<double> ds(b.strips()), dg(b.padded_rhs()), dx(x0);
  DeviceArray<double> dp(poisoned(pre == kc::Precond::None ? 0 : b.batch * strips_size(b.nb, b.bs)));
  DeviceArray<int> dit(b.batch, -1), dout(b.batch, -1);
  require(kc::pcg_batched(b.batch, b.nb, b.bs, ds.get(), pre == kc::Precond::None ? nullptr : dp.get(), dg.get(), dx.get(),
                          pre, opt, dit.get(), dout.get(), launch));
  return {dx.download(), dp.download(), dit.download(), dout.download()};
}

// The serial CPU preconditioner and pcg of one problem.
PcgOut run_pcg_serial(const BlockTri& s, kc::Precond pre, const std::vector<double>& gamma, std::vector<double> x,
                      const PcgOptions<double>& opt) {
  SerialGroup g;
  std::vector<double> pinv = poisoned(pre == kc::Precond::None ? 0 : s.strips.size());
  std::vector<double> pscratch(precond_scratch_size(s.bs)), scratch = poisoned(pcg_scratch_size(s.nb, s.bs));
  int info = 0;
  if (pre == kc::Precond::BlockJacobi) info = precond_block_jacobi(g, s.nb, s.bs, s.strips.data(), pinv.data(), pscratch.data());
  if (pre == kc::Precond::Stair) info = precond_stair(g, s.nb, s.bs, s.strips.data(), pinv.data(), pscratch.data());
  if (info != 0) throw std::runtime_error("serial preconditioner failed");
  const PcgResult r = pcg(g, s.nb, s.bs, s.strips.data(), pre == kc::Precond::None ? nullptr : pinv.data(), gamma.data(),
                          x.data(), scratch.data(), opt);
  return {x, pinv, {r.iterations}, {r.converged ? 0 : 1}};
}

const kc::Precond kPreconds[] = {kc::Precond::None, kc::Precond::BlockJacobi, kc::Precond::Stair};

}  // namespace

TEST_F(Gpu, PcgMatchesDenseSolveAndSerialWithEveryPreconditioner) {
  Rng rng(106);
  const int batch = 3;
  for (const auto& [nb, bs] : kShapes) {
    const SpdBatch b = spd_batch(rng, batch, nb, bs);
    // Problem 1 starts from a non-trivial warm start; the others from zero.
    std::vector<double> x0;
    for (int p = 0; p < batch; ++p)
      append(x0, p == 1 ? padded(rng.vector(nb * bs), bs) : std::vector<double>(padded_size(nb, bs), 0.0));
    for (kc::Precond pre : kPreconds) {
      std::vector<PcgOut> serial;
      for (int p = 0; p < batch; ++p)
        serial.push_back(run_pcg_serial(b.problems[p], pre, padded(b.rhs[p], bs), slice(x0, p, padded_size(nb, bs)), tight()));
      PcgOut first;
      for (int t : kThreads) {
        const PcgOut r = run_pcg_gpu(b, pre, x0, tight(), threads(t));
        for (int p = 0; p < batch; ++p) {
          const std::string where = "nb=" + std::to_string(nb) + " bs=" + std::to_string(bs) + " pre=" +
                                    std::to_string(static_cast<int>(pre)) + " t=" + std::to_string(t) + " p=" + std::to_string(p);
          EXPECT_EQ(r.outcome[p], static_cast<int>(kc::PcgOutcome::Converged)) << where;
          // Rounding differs from the CPU (FMA), so the stopping test may fire an iteration or two apart.
          EXPECT_NEAR(r.iterations[p], serial[p].iterations[0], 3) << where;
          const Vec x = interior(slice(r.x, p, padded_size(nb, bs)), nb, bs);
          EXPECT_LT(rel_err(x, b.solution[p]), 1e-10) << where;
          EXPECT_LT(rel_err(x, interior(serial[p].x, nb, bs)), 1e-10) << where;
          if (pre != kc::Precond::None) {
            EXPECT_LT(rel_err(column(slice(r.pinv, p, strips_size(nb, bs))), column(serial[p].pinv)), 1e-12) << where;
          }
        }
        if (first.x.empty()) first = r;
        EXPECT_TRUE(bitwise_equal(r.x, first.x)) << "t=" << t;
        EXPECT_TRUE(bitwise_equal(r.pinv, first.pinv)) << "t=" << t;
        EXPECT_EQ(r.iterations, first.iterations) << "t=" << t;
      }
    }
  }
}

TEST_F(Gpu, PcgPreconditionerFailureIsPerProblemAndLeavesXUnchanged) {
  Rng rng(107);
  const int nb = 5, bs = 3;
  SpdBatch b = spd_batch(rng, 3, nb, bs);
  break_block(b.problems[2], 1);
  const std::vector<double> x0 = b.padded_rhs();  // any warm start
  for (kc::Precond pre : {kc::Precond::BlockJacobi, kc::Precond::Stair}) {
    const PcgOut r = run_pcg_gpu(b, pre, x0, tight(), threads(96));
    EXPECT_EQ(r.outcome, (std::vector<int>{0, 0, static_cast<int>(kc::PcgOutcome::PreconditionerFailed)}));
    EXPECT_EQ(r.iterations[2], 0);
    EXPECT_TRUE(bitwise_equal(slice(r.x, 2, padded_size(nb, bs)), slice(x0, 2, padded_size(nb, bs))));
    EXPECT_LT(rel_err(interior(slice(r.x, 0, padded_size(nb, bs)), nb, bs), b.solution[0]), 1e-10);
  }
}

TEST_F(Gpu, PcgNegativeControlTooFewIterationsIsNotConverged) {
  Rng rng(108);
  const int nb = 12, bs = 5;
  const SpdBatch b = spd_batch(rng, 2, nb, bs);
  PcgOptions<double> opt = tight();
  opt.max_iters = 2;
  const PcgOut r = run_pcg_gpu(b, kc::Precond::None, std::vector<double>(2 * padded_size(nb, bs), 0.0), opt, threads(64));
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ(r.outcome[p], static_cast<int>(kc::PcgOutcome::NotConverged));
    EXPECT_EQ(r.iterations[p], 2);
    EXPECT_GT(rel_err(interior(slice(r.x, p, padded_size(nb, bs)), nb, bs), b.solution[p]), 1e-6);
  }
}

TEST_F(Gpu, PcgScratchInWorkspaceWhenSharedMemoryIsTooSmall) {
  Rng rng(109);
  // nb = 256, bs = 32: 4 (nb+2) bs + nb bs doubles (about 330 KiB) exceed one block's shared memory.
  // Too large for a dense reference: checked against the serial CPU pcg and by its residual.
  const int nb = 256, bs = 32;
  const SpdBatch b = spd_batch(rng, 2, nb, bs, /*with_dense=*/false);
  const std::vector<double> x0(2 * padded_size(nb, bs), 0.0);
  PcgOptions<double> opt;
  opt.rel_tol = 1e-24;
  opt.max_iters = 500;
  kc::Launch launch = threads(256);
  kc::LaunchSize size;
  require(kc::pcg_batched_size<double>(2, nb, bs, kc::Precond::Stair, launch, &size));
  EXPECT_FALSE(size.fits_shared);
  {
    DeviceArray<double> ds(b.strips()), dp(b.strips()), dg(b.padded_rhs()), dx(x0);
    EXPECT_EQ(kc::pcg_batched(2, nb, bs, ds.get(), dp.get(), dg.get(), dx.get(), kc::Precond::Stair, opt, nullptr,
                              nullptr, launch)
                  .code,
              kc::StatusCode::NeedsWorkspace);
  }
  DeviceArray<double> work(size.workspace_bytes / sizeof(double), kNaN);
  launch.workspace = work.get();
  launch.workspace_bytes = size.workspace_bytes;
  const PcgOut r = run_pcg_gpu(b, kc::Precond::Stair, x0, opt, launch);
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ(r.outcome[p], 0);
    const auto xp = slice(r.x, p, padded_size(nb, bs));
    const PcgOut ser = run_pcg_serial(b.problems[p], kc::Precond::Stair, padded(b.rhs[p], bs),
                                      std::vector<double>(padded_size(nb, bs), 0.0), opt);
    EXPECT_LT(rel_err(interior(xp, nb, bs), interior(ser.x, nb, bs)), 1e-10);
    std::vector<double> sx(xp.size(), 0.0);
    SerialGroup g;
    bdmv(g, nb, bs, sx.data(), b.problems[p].strips.data(), xp.data());
    EXPECT_LT(rel_err(interior(sx, nb, bs), b.rhs[p]), 1e-9);
  }
}

TEST_F(Gpu, FixedAndRunTimeBlockSizeKernelsAgree) {
  Rng rng(113);
  const int nb = 4, batch = 2;
  for (int bs : {8, 16, 32, 64}) {
    const SpdBatch b = spd_batch(rng, batch, nb, bs);
    kc::Launch fixed = threads(128), runtime = threads(128);
    runtime.fixed_block_size = false;
    const BdsvOut f = run_bdsv_gpu(b, b.strips(), fixed), r = run_bdsv_gpu(b, b.strips(), runtime);
    EXPECT_LT(rel_err(column(f.v), column(r.v)), 1e-13) << "bdsv bs=" << bs;
    const std::vector<double> x0(batch * padded_size(nb, bs), 0.0);
    const PcgOut pf = run_pcg_gpu(b, kc::Precond::Stair, x0, tight(), fixed);
    const PcgOut pr = run_pcg_gpu(b, kc::Precond::Stair, x0, tight(), runtime);
    EXPECT_LT(rel_err(column(pf.x), column(pr.x)), 1e-12) << "pcg bs=" << bs;
    EXPECT_LT(rel_err(column(pf.pinv), column(pr.pinv)), 1e-13) << "pcg bs=" << bs;
    std::printf("bs=%d: fixed vs run-time kernels bitwise equal: bdsv %s, pcg %s\n", bs,
                bitwise_equal(f.v, r.v) ? "yes" : "no", bitwise_equal(pf.x, pr.x) ? "yes" : "no");
  }
}

TEST_F(Gpu, ThreadCountAboveTheKernelLimitIsAnInvalidArgument) {
  Rng rng(114);
  const SpdBatch b = spd_batch(rng, 1, 2, 4);
  DeviceArray<double> ds(b.strips()), dp(b.strips()), dg(b.padded_rhs()), dx(b.padded_rhs());
  const kc::Status st = kc::pcg_batched(1, 2, 4, ds.get(), dp.get(), dg.get(), dx.get(), kc::Precond::Stair,
                                        PcgOptions<double>{}, nullptr, nullptr, threads(512));
  EXPECT_EQ(st.code, kc::StatusCode::InvalidArgument) << kc::to_string(st);
  cuda_check(cudaDeviceSynchronize(), "after a rejected launch");
}

// ---- potrf --------------------------------------------------------------------------------------------

namespace {

struct PotrfConfig {
  int tile, threads;
};

std::vector<PotrfConfig> potrf_configs() {
  std::vector<PotrfConfig> c;
  for (int t : kThreads) c.push_back({0, t});
  for (int w : {1, 2, 4, 8, 16, 32}) c.push_back({w, 128});
  c.push_back({32, 32});
  c.push_back({4, 96});
  return c;
}

// Column-major n x n SPD matrices with leading dimension lda; the strict upper triangle and the
// rows past n are NaN, as potrf must neither read nor write them.
std::vector<double> potrf_batch(Rng& rng, int batch, int n, int lda, std::vector<Mat>* dense) {
  std::vector<double> a = poisoned(static_cast<std::size_t>(batch) * lda * n);
  for (int p = 0; p < batch; ++p) {
    const Mat m = rng.spd(n);
    dense->push_back(m);
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) a[static_cast<std::size_t>(p) * lda * n + j * lda + i] = m(i, j);
  }
  return a;
}

}  // namespace

TEST_F(Gpu, PotrfBlockAndTilesMatchEigenAndSerial) {
  Rng rng(110);
  const int batch = 37;  // not a multiple of any tile count: the last block is partly idle
  // n = 200 does not fit in shared memory: factored in place in global memory.
  for (int n : {1, 5, 16, 33, 64, 200}) {
    const int lda = n + 3;
    std::vector<Mat> dense;
    const std::vector<double> a = potrf_batch(rng, batch, n, lda, &dense);
    std::vector<double> serial = a;
    for (int p = 0; p < batch; ++p) {
      SerialGroup g;
      ASSERT_EQ(potrf(g, n, serial.data() + static_cast<std::size_t>(p) * lda * n, lda), 0);
    }
    std::vector<double> first;
    for (const PotrfConfig& c : potrf_configs()) {
      DeviceArray<double> da(a);
      DeviceArray<int> dinfo(batch, -1);
      require(kc::potrf_batched(batch, n, da.get(), lda, dinfo.get(), c.tile, threads(c.threads)));
      const auto got = da.download();
      const std::string where = "n=" + std::to_string(n) + " tile=" + std::to_string(c.tile) + " t=" + std::to_string(c.threads);
      EXPECT_EQ(dinfo.download(), std::vector<int>(batch, 0)) << where;
      double worst_eigen = 0, worst_serial = 0;
      bool untouched = true;
      for (int p = 0; p < batch; ++p) {
        const Mat want = dense[p].llt().matrixL();
        Mat l = Mat::Zero(n, n), ls = Mat::Zero(n, n);
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < lda; ++i) {
            const std::size_t k = static_cast<std::size_t>(p) * lda * n + j * lda + i;
            if (i >= j && i < n) {
              l(i, j) = got[k];
              ls(i, j) = serial[k];
            } else {
              untouched = untouched && std::isnan(got[k]);
            }
          }
        worst_eigen = std::max(worst_eigen, rel_err(l, want));
        worst_serial = std::max(worst_serial, rel_err(l, ls));
      }
      EXPECT_LT(worst_eigen, 1e-12) << where;
      EXPECT_LT(worst_serial, 1e-13) << where;
      EXPECT_TRUE(untouched) << where << ": an entry outside the lower triangle was written";
      if (first.empty()) first = got;
      EXPECT_TRUE(bitwise_equal(got, first)) << where;
    }
  }
}

TEST_F(Gpu, PotrfReportsTheFirstNonPositivePivotPerProblem) {
  Rng rng(111);
  const int batch = 5, n = 9, lda = 9;
  std::vector<Mat> dense;
  std::vector<double> a = potrf_batch(rng, batch, n, lda, &dense);
  a[2 * lda * n + 4 * lda + 4] = -1e3;  // problem 2: pivot 4 is negative
  a[4 * lda * n + 0] = 0.0;             // problem 4: pivot 0 is zero
  const std::vector<int> want = {0, 0, 5, 0, 1};
  for (const PotrfConfig& c : {PotrfConfig{0, 64}, PotrfConfig{8, 64}}) {
    DeviceArray<double> da(a);
    DeviceArray<int> dinfo(batch, -1);
    require(kc::potrf_batched(batch, n, da.get(), lda, dinfo.get(), c.tile, threads(c.threads)));
    EXPECT_EQ(dinfo.download(), want) << "tile=" << c.tile;
  }
}

// ---- float ------------------------------------------------------------------------------------------

TEST_F(Gpu, FloatLaunchersAgreeWithTheDoubleReference) {
  Rng rng(112);
  const int nb = 8, bs = 6, batch = 2;
  const SpdBatch b = spd_batch(rng, batch, nb, bs);
  auto to_float = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  auto worst = [&](const std::vector<float>& v) {
    double w = 0;
    for (int p = 0; p < batch; ++p) {
      Vec x(nb * bs);
      for (int i = 0; i < nb * bs; ++i) x(i) = v[p * padded_size(nb, bs) + bs + i];
      w = std::max(w, rel_err(x, b.solution[p]));
    }
    return w;
  };
  {
    DeviceArray<float> ds(to_float(b.strips())), dv(to_float(b.padded_rhs()));
    require(kc::bdsv_batched<float>(batch, nb, bs, ds.get(), dv.get(), nullptr));
    EXPECT_LT(worst(dv.download()), 1e-4);
  }
  {
    DeviceArray<float> ds(to_float(b.strips())), dp(batch * strips_size(nb, bs), 0.0f), dg(to_float(b.padded_rhs()));
    DeviceArray<float> dx(batch * padded_size(nb, bs), 0.0f);
    PcgOptions<float> opt;
    opt.rel_tol = 1e-10f;
    opt.max_iters = 200;
    require(kc::pcg_batched<float>(batch, nb, bs, ds.get(), dp.get(), dg.get(), dx.get(), kc::Precond::BlockJacobi, opt,
                                   nullptr, nullptr));
    EXPECT_LT(worst(dx.download()), 1e-4);
  }
}
