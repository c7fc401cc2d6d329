// The batched SQP on a GPU (CudaBatch, knot/solver/cuda/batch_cuda.hpp) against the same device-path
// driver on the CPU (DeviceSqp), per problem: status and cost to 1e-9 in double and 1e-4 in float, and the Schur LQ steps (bdsv, pcg) to the same status and cost; every block size gives
// bitwise the same results; a NaN initial state fails only its own problem; BatchSolver's backend
// cuda returns what its cpu device path returns.
//
// GPU and CPU agree to rounding, not bitwise: nvcc contracts a * b + c into fused multiply-adds, the
// host build does not, and the GPU's Riccati step orders its sums its own way. Without a usable GPU the device tests skip with one line saying why.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "knot/linalg/cuda/device.hpp"
#include "knot/problems/loader.hpp"
#include "knot/solver/batch.hpp"
#include "knot/solver/cuda/batch_cuda.hpp"
#include "knot/solver/device/device_sqp.hpp"
#include "source_tree.hpp"

namespace knot::test {
namespace {

namespace fs = std::filesystem;
using solver::Status;

const linalg::cuda::DeviceInfo& gpu() {
  static const linalg::cuda::DeviceInfo info = linalg::cuda::query_device();
  return info;
}

problems::Problem load(const std::string& name) {
  return problems::load_problem(fs::path(knot::source_tree::configs_dir()) / (name + ".yaml"));
}

// The file's options with what the device path needs (Gauss-Newton, Riccati).
solver::SolverOptions device_fit(const problems::Problem& p) {
  return solver::device::device_path_options(solver::from_settings(p.solver));
}

// B initial states: the file's, then x0 + 0.01 N(0, 1).
std::vector<std::vector<double>> starts(const problems::Problem& p, int B) {
  std::mt19937_64 rng(20261202);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<std::vector<double>> x0(static_cast<std::size_t>(B), p.x0);
  for (int i = 1; i < B; ++i)
    for (double& v : x0[static_cast<std::size_t>(i)]) v += 0.01 * n(rng);
  return x0;
}

struct GpuRun {
  std::unique_ptr<solver::cuda::CudaBatch> batch;
  std::string error;
};

// warp false: the LQ step by riccati_solve over the block instead of the warp recursion.
GpuRun run_gpu(const problems::Problem& p, const solver::SolverOptions& o, const std::vector<std::vector<double>>& x0,
            int threads, bool single, bool warp = true) {
  GpuRun r;
  const solver::device::BatchProblemData data = solver::device::compile_batch_problem(p);
  solver::device::DeviceOptions dopt = solver::device::device_options(o);
  dopt.warp_riccati = warp;
  const auto st = solver::cuda::CudaBatch::create(data, dopt, int(x0.size()), threads, single, &r.batch);
  if (!st.ok()) {
    r.error = linalg::cuda::to_string(st);
    return r;
  }
  for (std::size_t i = 0; i < x0.size(); ++i)
    for (std::size_t j = 0; j < x0[i].size(); ++j) {
      r.batch->slice(int(i))[data.problem.x0 + j] = x0[i][j];
      for (int k = 0; k <= p.horizon.N; ++k) r.batch->iterate(int(i))[std::size_t(k) * p.nx() + j] = x0[i][j];
    }
  const auto solved = r.batch->solve();
  if (!solved.ok()) r.error = linalg::cuda::to_string(solved);
  return r;
}

// The CPU device path from initial state x0 and the default guess it implies.
void solve_from(solver::device::DeviceSqp& cpu, const problems::Problem& p, const std::vector<double>& x0) {
  cpu.set_initial_state(x0);
  std::vector<double> x, u;
  problems::Problem pi = p;
  pi.x0 = x0;
  solver::default_initial_guess(pi, x, u);
  cpu.set_initial_guess(x, u);
  cpu.solve();
}

// B problems from starts(p, B) on the GPU (CudaBatch's default block) and each on the CPU device
// path with the same options: the same status and the cost to 1e-9, problem by problem.
GpuRun expect_gpu_matches_cpu(const problems::Problem& p, const solver::SolverOptions& o, int B) {
  const auto x0 = starts(p, B);
  GpuRun g = run_gpu(p, o, x0, 0, false);
  EXPECT_EQ(g.error, "");
  if (!g.error.empty()) return g;
  solver::device::DeviceSqp cpu(p, o);
  for (int i = 0; i < B; ++i) {
    solve_from(cpu, p, x0[std::size_t(i)]);
    const solver::device::DeviceResult& r = g.batch->result(i);
    EXPECT_EQ(r.status, cpu.result().status) << "problem " << i;
    EXPECT_NEAR(r.cost, cpu.result().cost, 1e-9 * std::max(1.0, std::abs(cpu.result().cost))) << "problem " << i;
  }
  return g;
}

// B problems solved with each block size of `threads` give bitwise the iterates and iteration counts
// of 32 threads.
void expect_block_sizes_bitwise(const problems::Problem& p, const solver::SolverOptions& o, int B,
                                std::initializer_list<int> threads) {
  const auto x0 = starts(p, B);
  const GpuRun ref = run_gpu(p, o, x0, 32, false);
  ASSERT_EQ(ref.error, "");
  for (int t : threads) {
    const GpuRun r = run_gpu(p, o, x0, t, false);
    ASSERT_EQ(r.error, "") << t;
    for (int i = 0; i < B; ++i) {
      const std::size_t n = ref.batch->iterate_size();
      EXPECT_EQ(std::vector<double>(r.batch->iterate(i), r.batch->iterate(i) + n),
                std::vector<double>(ref.batch->iterate(i), ref.batch->iterate(i) + n))
          << t << " threads, problem " << i;
      EXPECT_EQ(r.batch->result(i).iterations, ref.batch->result(i).iterations) << t << " threads, problem " << i;
    }
  }
}

const char* const kConfigs[] = {"cartpole_swingup", "pendulum_swingup", "double_integrator_rest_to_rest",
                                "iiwa14_reach"};

// Status and cost to 1e-9, problem by problem. Iteration counts are not compared: the GPU's Riccati
// step (riccati_warp.cuh) sums in another order than the CPU's and pivots by rsqrt, and a solve that
// ends on a counter can move by an iteration with that rounding (iiwa14_reach, problem 7: 76
// iterations on an H200 against 75 on the CPU, the same status and cost).
TEST(GpuBatchSqp, AgreesWithTheCpuDevicePathInDouble) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  for (const char* name : kConfigs) {
    SCOPED_TRACE(name);
    const problems::Problem p = load(name);
    expect_gpu_matches_cpu(p, device_fit(p), 8);
  }
}

// The Schur LQ step (bdsv, pcg; device/schur.hpp) on the GPU against the CPU device path: status and
// cost to 1e-9. Iteration counts are not compared: the GPU contracts into fused multiply-adds, and
// an LQ step that stops on a tolerance can turn that rounding into another path (as between Solver
// and the CPU device path, test_device_sqp.cpp). Block sizes 32 and 128 give bitwise one solve.
TEST(GpuBatchSqp, SchurBackendsAgreeWithTheCpuDevicePath) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  for (const solver::Linsys linsys : {solver::Linsys::Bdsv, solver::Linsys::Pcg}) {
    for (const char* name : {"cartpole_swingup", "pendulum_swingup", "iiwa14_reach"}) {
      SCOPED_TRACE(std::string(name) + " " + solver::to_string(linsys));
      const problems::Problem p = load(name);
      solver::SolverOptions o = device_fit(p);
      o.lq.linsys = linsys;
      const auto x0 = starts(p, 4);
      const GpuRun g = run_gpu(p, o, x0, 32, false);
      ASSERT_EQ(g.error, "");
      const GpuRun wide = run_gpu(p, o, x0, 128, false);
      ASSERT_EQ(wide.error, "");
      solver::device::DeviceSqp cpu(p, o);
      for (int i = 0; i < 4; ++i) {
        solve_from(cpu, p, x0[std::size_t(i)]);
        const solver::device::DeviceResult& r = g.batch->result(i);
        EXPECT_EQ(r.linsys, linsys == solver::Linsys::Bdsv ? 1 : 2);
        EXPECT_EQ(r.status, cpu.result().status) << "problem " << i;
        EXPECT_NEAR(r.cost, cpu.result().cost, 1e-9 * std::max(1.0, std::abs(cpu.result().cost))) << "problem " << i;
        const std::size_t n = g.batch->iterate_size();
        EXPECT_EQ(std::vector<double>(g.batch->iterate(i), g.batch->iterate(i) + n),
                  std::vector<double>(wide.batch->iterate(i), wide.batch->iterate(i) + n))
            << "32 against 128 threads, problem " << i;
      }
    }
  }
}

TEST(GpuBatchSqp, FloatAgreesToItsPrecision) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  const problems::Problem p = load("cartpole_swingup");
  solver::SolverOptions o = device_fit(p);
  // float's floor: on these four starts the float solve's stationarity stops falling between 3e-5
  // and 1.5e-4 (H200, both LQ steps; the cost is about 2.2e3, its gradient terms larger still), so
  // a tolerance of 1e-4 sits on the floor and passes or not by rounding. 1e-3 is above it.
  o.tol_stationarity = o.tol_feasibility = o.tol_complementarity = 1e-3;
  o.tol_duality_gap = 1e-4;
  const auto x0 = starts(p, 4);
  const GpuRun d = run_gpu(p, o, x0, 0, false);
  ASSERT_EQ(d.error, "");
  for (const bool warp : {true, false}) {
    SCOPED_TRACE(warp ? "warp Riccati" : "block Riccati");
    const GpuRun g = run_gpu(p, o, x0, 0, true, warp);
    ASSERT_EQ(g.error, "");
    for (int i = 0; i < 4; ++i) {
      const solver::device::DeviceResult& r = g.batch->result(i);
      EXPECT_TRUE(solver::is_solved(r.status)) << i << ": " << to_string(r.status);
      EXPECT_NEAR(r.cost, d.batch->result(i).cost, 1e-4 * std::abs(d.batch->result(i).cost)) << i;
    }
  }
}

TEST(GpuBatchSqp, EveryBlockSizeGivesBitwiseTheSameSolve) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  const problems::Problem p = load("pendulum_swingup");
  expect_block_sizes_bitwise(p, device_fit(p), 4, {33, 64, 128, 256});
}

// Below a warp the launcher refuses, naming the range (checked before any GPU call: runs everywhere).
TEST(GpuBatchSqp, RefusesABlockSmallerThanAWarp) {
  const problems::Problem p = load("pendulum_swingup");
  const GpuRun r = run_gpu(p, device_fit(p), starts(p, 2), 16, false);
  EXPECT_NE(r.error.find("32..256"), std::string::npos) << r.error;
}

// The exact Hessian (device/hessian.hpp, batch_sqp_exact.cu) on the GPU against the CPU device
// path, under hessian exact and auto: status and cost to 1e-9, problem by problem. The problems
// cover every piece of the GPU's curvature: the arm's step by dual sweeps, its end-effector cost
// (iiwa14_reach, iiwa14_gravity_limits with its joint limits) and rows (the floor and box of
// test_sqp_common.hpp), and an expression constraint's curvature (two joints' squared speeds, active).
TEST(GpuBatchSqp, ExactHessianAgreesWithTheCpuDevicePath) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  struct Case {
    const char* name;
    std::vector<std::string> overrides;
  };
  const Case cases[] = {
      {"iiwa14_reach", {}},
      {"iiwa14_gravity_limits", {}},
      {"iiwa14_reach",
       {"constraints=[{name: floor, type: end_effector_height, min: 0.23, offset: [0.01, 0, 0]}, {name: workspace, "
        "type: end_effector_box, lower: [-0.8, -.inf, 0.1], upper: [0.58, 0.9, .inf]}]"}},
      {"iiwa14_reach",
       {"constraints=[{name: speed, type: expression, expression: \"qd_iiwa_joint_2^2 + qd_iiwa_joint_4^2\", "
        "upper: [0.5]}]"}}};
  for (const Case& c : cases) {
    const problems::Problem p =
        problems::load_problem(fs::path(knot::source_tree::configs_dir()) / (std::string(c.name) + ".yaml"), c.overrides);
    for (const solver::Hessian h : {solver::Hessian::Exact, solver::Hessian::Auto}) {
      SCOPED_TRACE(std::string(c.name) + (c.overrides.empty() ? "" : " + " + c.overrides[0].substr(0, 40)) +
                   " hessian " + solver::to_string(h));
      solver::SolverOptions o = device_fit(p);
      o.hessian = h;
      const GpuRun g = expect_gpu_matches_cpu(p, o, 4);
      if (!g.error.empty() || h != solver::Hessian::Exact) continue;
      for (int i = 0; i < 4; ++i) {  // the exact kernel ran: Gauss-Newton's rows say exact = false
        const solver::device::DeviceResult& r = g.batch->result(i);
        EXPECT_TRUE(r.rows > 0 && g.batch->rows(i)[0].exact_hessian) << "problem " << i;
      }
    }
  }
}

// The exact kernel's solve is bitwise the same on every block size (its Hessian is per knot, one
// member each; the members beyond the knots carry no Hessian scratch).
TEST(GpuBatchSqp, ExactHessianEveryBlockSizeGivesBitwiseTheSameSolve) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  for (const char* name : {"iiwa14_reach", "iiwa14_gravity_limits"}) {
    SCOPED_TRACE(name);
    const problems::Problem p = load(name);
    solver::SolverOptions o = device_fit(p);
    o.hessian = solver::Hessian::Exact;
    expect_block_sizes_bitwise(p, o, 2, {64, 128, 256});
  }
}

// The exact Hessian runs in double, on the manipulator: in float, or on another model, CudaBatch says
// so before it looks for a device (so this runs everywhere).
TEST(GpuBatchSqp, RefusesTheExactHessianInFloatAndOffTheArm) {
  const problems::Problem arm = load("iiwa14_reach"), pendulum = load("pendulum_swingup");
  for (const solver::Hessian h : {solver::Hessian::Exact, solver::Hessian::Auto}) {
    solver::SolverOptions o = device_fit(arm);
    o.hessian = h;
    const GpuRun f = run_gpu(arm, o, starts(arm, 2), 0, true);
    EXPECT_NE(f.error.find("runs in double"), std::string::npos) << f.error;
    solver::SolverOptions q = device_fit(pendulum);
    q.hessian = h;
    const GpuRun p = run_gpu(pendulum, q, starts(pendulum, 2), 0, false);
    EXPECT_NE(p.error.find("takes the manipulator"), std::string::npos) << p.error;
  }
}

TEST(GpuBatchSqp, NanInOneProblemLeavesTheOthersUnchanged) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  const problems::Problem p = load("cartpole_swingup");
  const solver::SolverOptions o = device_fit(p);
  auto x0 = starts(p, 4);
  const GpuRun clean = run_gpu(p, o, x0, 0, false);
  ASSERT_EQ(clean.error, "");
  x0[2][1] = std::nan("");
  const GpuRun dirty = run_gpu(p, o, x0, 0, false);
  ASSERT_EQ(dirty.error, "");
  EXPECT_EQ(dirty.batch->result(2).status, Status::NumericalError);
  for (int i : {0, 1, 3}) {
    const std::size_t n = clean.batch->iterate_size();
    EXPECT_EQ(std::vector<double>(dirty.batch->iterate(i), dirty.batch->iterate(i) + n),
              std::vector<double>(clean.batch->iterate(i), clean.batch->iterate(i) + n));
  }
}

// B problems of p on the cpu device path and on the cuda backend.
struct CpuAndGpu {
  solver::BatchSolver cpu, gpu;
};
CpuAndGpu cpu_and_gpu(const problems::Problem& p, int B) {
  solver::BatchOptions o;
  o.solver = device_fit(p);
  o.path = solver::BatchPath::Device;
  solver::BatchSolver cpu(p, B, o);
  o.backend = solver::BatchBackend::Cuda;
  o.cuda_engine = solver::cuda::make_cuda_engine;
  return {std::move(cpu), solver::BatchSolver(p, B, o)};
}

TEST(GpuBatchSqp, BatchSolverCudaBackendMatchesItsCpuDevicePath) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  const problems::Problem p = load("cartpole_swingup");
  auto [cpu, gpu_batch] = cpu_and_gpu(p, 4);
  const auto x0 = starts(p, 4);
  for (int i = 0; i < 4; ++i) {
    cpu.set_initial_state(i, x0[std::size_t(i)]);
    gpu_batch.set_initial_state(i, x0[std::size_t(i)]);
  }
  EXPECT_EQ(cpu.solve(), gpu_batch.solve());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(cpu.status(i), gpu_batch.status(i));
    EXPECT_NEAR(cpu.solution(i).cost, gpu_batch.solution(i).cost, 1e-9 * std::abs(cpu.solution(i).cost));
  }
  // The GPU memory is reported (knot solve --batch prints it); the cpu backend has none.
  EXPECT_GT(gpu_batch.device_bytes(), std::size_t(4) * sizeof(solver::device::DeviceResult));
  EXPECT_EQ(cpu.device_bytes(), 0u);
}

// Per-problem models on the GPU: problem 1 with a heavier cart, problem 2 of the expression
// cart-pole with a heavier pole, each as its cpu device path gives (and problem 1 as the file with
// that value set); the others keep the file's model.
TEST(GpuBatchSqp, PerProblemModelsMatchTheCpuDevicePath) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  const fs::path expr = fs::path(knot::source_tree::test_data_dir()) / "expression" / "cartpole_swingup.yaml";
  const problems::Problem built_in = load("cartpole_swingup");
  const problems::Problem expression = problems::load_problem(expr);
  for (const problems::Problem* p : {&built_in, &expression}) {
    const std::string change = p == &built_in ? "cart_mass" : "pole_mass";
    auto [cpu, gpu_batch] = cpu_and_gpu(*p, 3);
    for (solver::BatchSolver* b : {&cpu, &gpu_batch}) b->set_model_parameters(1, {{change, {0.3}}});
    EXPECT_EQ(cpu.solve(), gpu_batch.solve());
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(cpu.status(i), gpu_batch.status(i)) << change << ", problem " << i;
      EXPECT_NEAR(cpu.solution(i).cost, gpu_batch.solution(i).cost, 1e-9 * std::abs(cpu.solution(i).cost))
          << change << ", problem " << i;
    }
    EXPECT_GT(std::abs(gpu_batch.solution(1).cost - gpu_batch.solution(0).cost), 1e-6) << change;  // another problem
    EXPECT_EQ(gpu_batch.solution(0).cost, gpu_batch.solution(2).cost) << change;
  }
}

// Per-problem bounds that add or remove rows on the GPU: problem 1 loses its control box's upper
// bound, problem 2 its lower, then both get them back; each solve as the cpu device path gives
// (status, cost to 1e-9, the same rows in z).
TEST(GpuBatchSqp, BoundsThatAddOrRemoveRowsMatchTheCpuDevicePath) {
  if (!gpu().usable) GTEST_SKIP() << "no usable GPU: " << gpu().reason;
  const problems::Problem p = load("cartpole_swingup");
  auto [cpu, gpu_batch] = cpu_and_gpu(p, 3);
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> lo = {-80.0}, hi = {80.0}, open_lo = {-inf}, open_hi = {inf};
  for (int round = 0; round < 2; ++round) {
    for (solver::BatchSolver* b : {&cpu, &gpu_batch}) {
      b->set_bounds(1, "force_limit", lo, round == 0 ? open_hi : hi);
      b->set_bounds(2, "force_limit", round == 0 ? open_lo : lo, hi);
    }
    EXPECT_EQ(cpu.solve(), gpu_batch.solve());
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(cpu.status(i), gpu_batch.status(i)) << "round " << round << ", problem " << i;
      EXPECT_NEAR(cpu.solution(i).cost, gpu_batch.solution(i).cost, 1e-9 * std::abs(cpu.solution(i).cost))
          << "round " << round << ", problem " << i;
      EXPECT_EQ(cpu.solution(i).z.size(), gpu_batch.solution(i).z.size()) << "round " << round << ", problem " << i;
    }
    if (round == 0) {
      EXPECT_LT(gpu_batch.solution(1).z.size(), gpu_batch.solution(0).z.size());
    }
  }
}

// Runs everywhere: bad arguments are refused before any device call.
TEST(GpuBatchSqp, CreateRefusesBadArguments) {
  const problems::Problem p = load("cartpole_swingup");
  const solver::device::BatchProblemData data = solver::device::compile_batch_problem(p);
  std::unique_ptr<solver::cuda::CudaBatch> b;
  const auto o = solver::device::device_options(device_fit(p));
  EXPECT_FALSE(solver::cuda::CudaBatch::create(data, o, 0, 0, false, &b).ok());
  EXPECT_FALSE(solver::cuda::CudaBatch::create(data, o, 4, 1000, false, &b).ok());
  EXPECT_EQ(b, nullptr);
}

}  // namespace
}  // namespace knot::test
