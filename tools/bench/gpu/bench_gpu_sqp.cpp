// knot_bench_gpu_sqp: the batched SQP on the GPU (CudaBatch), iiwa14 by horizon N and batch size B.
//
//   knot_bench_gpu_sqp [--config NAME] [--N 32,64,128,256] [--B 1,16,128,1024] [--reps 5] [--threads 0,128,...]
//                      [--linsys riccati,bdsv,pcg] [--riccati warp,block] [--hessian gauss_newton,exact,auto]
//
// For each (N, B): one SQP iteration (max_iter = 1: the first linearization, one step, the next
// iterate's linearization and residuals) and one full solve (the file's max_iter), from B initial
// states x0 + 0.01 N(0, 1) (problem 0 the file's). Wall clock of CudaBatch::solve (graph launch to
// the end of the downloads), median of --reps after one warm-up. Prints one table row per (N, B):
// the two medians, iterations of the slowest problem, problems solved and the full solve's time per
// iteration, for each LQ step asked for
// (riccati by default; bdsv and pcg are the Schur path, device/schur.hpp), for each block size
// asked for (0: CudaBatch's default), and for riccati each of --riccati's variants (warp: the stage
// on one warp where it fits, the default; block: riccati_solve over the block), and for each Hessian
// asked for (gauss_newton by default; exact and auto run batch_sqp_exact.cu's kernel). In a build with KNOT_DEVICE_PROFILE each row is followed by
// a PHASES row: how problem 0's full solve split its clock cycles (DevicePhase), with the
// thousands of cycles per iteration. Exit 1 on a CUDA error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "knot/problems/loader.hpp"
#include "knot/solver/cuda/batch_cuda.hpp"
#include "knot/solver/device/device_sqp.hpp"
#include "source_tree.hpp"

namespace {

using namespace knot;

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

// A comma list of names (option `opt`) as their values; false, with a message, on another name.
template <class E>
bool parse_names(const char* opt, const std::string& v, std::initializer_list<std::pair<const char*, E>> names,
                 std::vector<E>& out) {
  out.clear();
  std::stringstream in(v);
  std::string item;
  while (std::getline(in, item, ',')) {
    bool found = false;
    for (const auto& [name, value] : names)
      if (item == name) out.push_back(value), found = true;
    if (!found) {
      std::string expected;
      for (const auto& [name, value] : names) expected += (expected.empty() ? "" : ", ") + std::string(name);
      std::fprintf(stderr, "%s: expected one of %s, found %s\n", opt, expected.c_str(), item.c_str());
      return false;
    }
  }
  return true;
}

struct Timing {
  double median_s = 0;
  int max_iterations = 0;
  int solved = 0;
  int iterations0 = 0;                // problem 0's
  long long phase_cycles[24] = {};    // problem 0's (KNOT_DEVICE_PROFILE builds)
  std::string error;
};

Timing time_solves(const problems::Problem& p, const solver::SolverOptions& o, int B, int reps, int threads,
                   bool warp) {
  Timing t;
  const solver::device::BatchProblemData data = solver::device::compile_batch_problem(p);
  std::unique_ptr<solver::cuda::CudaBatch> batch;
  solver::device::DeviceOptions dopt = solver::device::device_options(o);
  dopt.warp_riccati = warp;
  const auto st = solver::cuda::CudaBatch::create(data, dopt, B, threads, false, &batch);
  if (!st.ok()) {
    t.error = linalg::cuda::to_string(st);
    return t;
  }
  std::mt19937_64 rng(20261202);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<std::vector<double>> guess(static_cast<std::size_t>(B));
  for (int i = 0; i < B; ++i) {
    std::vector<double> x0 = p.x0;
    if (i > 0)
      for (double& v : x0) v += 0.01 * n(rng);
    for (std::size_t j = 0; j < x0.size(); ++j) batch->slice(i)[data.problem.x0 + j] = x0[j];
    guess[static_cast<std::size_t>(i)].assign(batch->iterate(i), batch->iterate(i) + batch->iterate_size());
    for (int k = 0; k <= p.horizon.N; ++k)
      std::copy(x0.begin(), x0.end(), guess[static_cast<std::size_t>(i)].begin() + std::size_t(k) * p.nx());
  }
  std::vector<double> seconds;
  for (int r = 0; r <= reps; ++r) {
    for (int i = 0; i < B; ++i) std::copy(guess[std::size_t(i)].begin(), guess[std::size_t(i)].end(), batch->iterate(i));
    const auto t0 = std::chrono::steady_clock::now();
    const auto s = batch->solve();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok()) {
      t.error = linalg::cuda::to_string(s);
      return t;
    }
    if (r > 0) seconds.push_back(dt);  // the first is the warm-up
  }
  std::sort(seconds.begin(), seconds.end());
  t.median_s = seconds[seconds.size() / 2];
  for (int i = 0; i < B; ++i) {
    t.max_iterations = std::max(t.max_iterations, batch->result(i).iterations);
    t.solved += solver::is_solved(batch->result(i).status) ? 1 : 0;
  }
  t.iterations0 = batch->result(0).iterations;
  for (int i = 0; i < 24; ++i) t.phase_cycles[i] = batch->result(0).phase_cycles[i];
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config = "iiwa14_reach";
  std::vector<int> Ns = {32, 64, 128, 256}, Bs = {1, 16, 128, 1024};
  std::vector<solver::Linsys> linsys = {solver::Linsys::Riccati};
  std::vector<int> threads_list = {0};
  std::vector<bool> warps = {true};
  std::vector<solver::Hessian> hessians = {solver::Hessian::GaussNewton};
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--config") config = v;
    else if (a == "--N") Ns = parse_list(v);
    else if (a == "--B") Bs = parse_list(v);
    else if (a == "--reps") reps = std::max(1, std::atoi(v.c_str()));
    else if (a == "--threads") threads_list = parse_list(v);
    else if (a == "--riccati") {
      if (!parse_names<bool>("--riccati", v, {{"warp", true}, {"block", false}}, warps)) return 2;
    }
    else if (a == "--hessian") {
      if (!parse_names<solver::Hessian>("--hessian", v,
                                        {{"gauss_newton", solver::Hessian::GaussNewton},
                                         {"exact", solver::Hessian::Exact},
                                         {"auto", solver::Hessian::Auto}},
                                        hessians))
        return 2;
    }
    else if (a == "--linsys") {
      if (!parse_names<solver::Linsys>(
              "--linsys", v,
              {{"riccati", solver::Linsys::Riccati}, {"bdsv", solver::Linsys::Bdsv}, {"pcg", solver::Linsys::Pcg}},
              linsys))
        return 2;
    }
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const auto path = std::filesystem::path(knot::source_tree::configs_dir()) / (config + ".yaml");
  std::printf("SQP %s on the GPU (CudaBatch, double), median of %d\n", config.c_str(), reps);
  std::printf("SQP %6s %6s %8s %7s %12s %14s %14s %10s %8s %12s\n", "N", "B", "linsys", "threads", "hessian",
              "1 iter (us)", "solve (ms)", "iters", "solved", "us/iter");
  static const char* const kPhases[] = {"linearize", "residuals", "barrier", "lq_step", "recover", "line_search"};
  int rc = 0;
  for (int N : Ns)
    for (int B : Bs)
      for (const solver::Linsys l : linsys)
        for (const bool warp : warps)
        for (const int threads : threads_list)
        for (const solver::Hessian h : hessians) {
        if (l != solver::Linsys::Riccati && warp != warps.front()) continue;  // the variants are Riccati's
        // riccati: the warp recursion (the default); riccati-b: riccati_solve over the block.
        const std::string name = l == solver::Linsys::Riccati && !warp ? "riccati-b" : solver::to_string(l);
        const problems::Problem p = problems::load_problem(path, {"horizon.N=" + std::to_string(N)});
        solver::SolverOptions o = solver::device::device_path_options(solver::from_settings(p.solver));
        o.lq.linsys = l;
        o.hessian = h;
        const char* hn = solver::to_string(h);
        solver::SolverOptions one = o;
        one.max_iter = 1;
        const Timing a = time_solves(p, one, B, reps, threads, warp);
        const Timing b = a.error.empty() ? time_solves(p, o, B, reps, threads, warp) : a;
        if (!a.error.empty() || !b.error.empty()) {
          std::printf("SQP %6d %6d %8s %7d %12s  error: %s\n", N, B, name.c_str(), threads, hn,
                      (a.error.empty() ? b.error : a.error).c_str());
          rc = 1;
          continue;
        }
        // us/iter: the full solve over the slowest problem's iterations (the batch ends with it), the
        // time of one SQP iteration without the first linearization's and the probe's share.
        std::printf("SQP %6d %6d %8s %7d %12s %14.1f %14.3f %10d %5d/%-5d %12.1f\n", N, B, name.c_str(), threads,
                    hn, 1e6 * a.median_s, 1e3 * b.median_s, b.max_iterations, b.solved, B,
                    1e6 * b.median_s / std::max(1, b.max_iterations));
        long long total = 0;
        for (int i = 0; i < int(solver::device::DevicePhase::Count); ++i) total += b.phase_cycles[i];
        if (total > 0) {
          std::printf("PHASES %3d %6d %8s %7d  kcycles/iter %.1f:", N, B, name.c_str(), threads,
                      1e-3 * double(total) / std::max(1, b.iterations0));
          for (int i = 0; i < int(solver::device::DevicePhase::Count); ++i)
            std::printf(" %s %.1f%%", kPhases[i], 100.0 * double(b.phase_cycles[i]) / double(total));
          std::printf("\n");
          // The Riccati step's parts (riccati.hpp's laps: cycles summed over the whole run of problem 0's
          // block, warm-up and repetitions included), as shares of their sum.
          struct Part {
            int slot;
            const char* name;
          };
          static const Part kBlockParts[] = {{1, "b_PA_PB"}, {2, "b_H"},    {3, "b_potrf"}, {4, "b_trsm"},
                                             {5, "b_syrk"},  {8, "f_gemv"}, {9, "f_trsm"},  {10, "f_Bu"}};
          // The warp recursion's laps (riccati_warp.cuh): P [B A], H, the elimination, the stores,
          // the wait at the knot's block barrier; the rollout's knot and its barrier.
          static const Part kWarpParts[] = {{1, "b_PAB"}, {2, "b_H"},    {3, "b_elim"}, {5, "b_store"},
                                            {4, "b_sync"}, {8, "f_knot"}, {9, "f_sync"}, {10, "-"}};
          const Part* kParts = l == solver::Linsys::Riccati && warp ? kWarpParts : kBlockParts;
          long long parts = 0;
          for (int q = 0; q < 8; ++q) parts += b.phase_cycles[8 + kParts[q].slot];
          if (parts > 0) {
            std::printf("RICCATI %3d %6d %7d  Mcycles %.1f:", N, B, threads, 1e-6 * double(parts));
            for (int q = 0; q < 8; ++q)
              std::printf(" %s %.1f%%", kParts[q].name, 100.0 * double(b.phase_cycles[8 + kParts[q].slot]) / double(parts));
            std::printf("\n");
          }
        }
        std::fflush(stdout);
      }
  return rc;
}
