// knot_bench_gpu_linalg: batched GPU bdsv and pcg, timed with CUDA events.
//
// For each block size, a batch of SPD block-tridiagonal problems (make_blocktri, the problem of
// `knot bench linalg`) is solved by bdsv_batched (factor + solve) and pcg_batched (preconditioner
// build + pcg) on one GPU. Each launch is timed alone between two events (operand resets are not
// timed); the table gives the median and the minimum over --reps runs, the time per problem, and
// for reference the serial CPU time of one problem on one core.
//
//   knot_bench_gpu_linalg [--batch 1024] [--nb 64] [--bs 8,16,32,64] [--reps 7] [--threads 0]
//                         [--precond stair|jacobi|none] [--no-cpu] [--dynamic]
//
// --dynamic times the run-time block-size kernels (Launch::fixed_block_size = false) instead of the
// kernels compiled for bs = 8, 16, 32, 64.
//
// Exit status 0 on success, 1 on any CUDA or launcher error (printed), 2 on bad arguments.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "blocktri_problem.hpp"
#include "knot/linalg/bdsv.hpp"
#include "knot/linalg/cuda/batched.hpp"
#include "knot/linalg/cuda/device.hpp"
#include "knot/linalg/pcg.hpp"
#include "knot/linalg/precond.hpp"

namespace kl = knot::linalg;
namespace kc = knot::linalg::cuda;

namespace {

struct Args {
  int batch = 1024, nb = 64, reps = 7, threads = 0;
  std::vector<int> bs = {8, 16, 32, 64};
  kc::Precond precond = kc::Precond::Stair;
  bool cpu = true;
  bool dynamic = false;  // run-time block-size kernels instead of the fixed-size ones
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "knot_bench_gpu_linalg: %s\n", why);
  std::fprintf(stderr,
               "usage: knot_bench_gpu_linalg [--batch N] [--nb N] [--bs a,b,c] [--reps N] [--threads N]\n"
               "                             [--precond stair|jacobi|none] [--no-cpu] [--dynamic]\n");
  std::exit(2);
}

int to_int(const char* s) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < 0 || v > (1 << 30)) usage((std::string("not a count: ") + s).c_str());
  return static_cast<int>(v);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(("missing value after " + k).c_str());
      return argv[++i];
    };
    if (k == "--batch") a.batch = to_int(value());
    else if (k == "--nb") a.nb = to_int(value());
    else if (k == "--reps") a.reps = to_int(value());
    else if (k == "--threads") a.threads = to_int(value());
    else if (k == "--no-cpu") a.cpu = false;
    else if (k == "--dynamic") a.dynamic = true;
    else if (k == "--bs") {
      a.bs.clear();
      std::string list = value();
      for (std::size_t p = 0; p <= list.size();) {
        const std::size_t q = std::min(list.find(',', p), list.size());
        a.bs.push_back(to_int(list.substr(p, q - p).c_str()));
        p = q + 1;
      }
    } else if (k == "--precond") {
      const std::string v = value();
      if (v == "stair") a.precond = kc::Precond::Stair;
      else if (v == "jacobi") a.precond = kc::Precond::BlockJacobi;
      else if (v == "none") a.precond = kc::Precond::None;
      else usage(("unknown preconditioner " + v).c_str());
    } else if (k == "--help" || k == "-h") {
      usage("help");
    } else {
      usage(("unknown option " + k).c_str());
    }
  }
  if (a.batch < 1 || a.nb < 1 || a.reps < 1 || a.bs.empty()) usage("batch, nb, reps must be >= 1");
  for (int b : a.bs)
    if (b < 1) usage("block sizes must be >= 1");
  return a;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void check(const kc::Status& s) {
  if (!s.ok()) throw std::runtime_error(kc::to_string(s));
}

// A device allocation freed on scope exit.
template <class T>
struct Buffer {
  T* ptr = nullptr;
  std::size_t n = 0;
  explicit Buffer(std::size_t count) : n(count) { check(cudaMalloc(&ptr, std::max<std::size_t>(1, n) * sizeof(T)), "cudaMalloc"); }
  ~Buffer() { cudaFree(ptr); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

// Fills all `batch` slots of `dst` (each `per` elements) with copies of the `distinct` host problems.
template <class T>
void replicate(Buffer<T>& dst, const std::vector<std::vector<T>>& distinct, int batch, std::size_t per) {
  for (std::size_t k = 0; k < distinct.size() && k < static_cast<std::size_t>(batch); ++k)
    check(cudaMemcpy(dst.ptr + k * per, distinct[k].data(), per * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  // Doubling copies on the device: slots [0, have) -> [have, 2 have).
  for (std::size_t have = std::min<std::size_t>(distinct.size(), batch); have < static_cast<std::size_t>(batch);) {
    const std::size_t copy = std::min(have, batch - have);
    check(cudaMemcpy(dst.ptr + have * per, dst.ptr, copy * per * sizeof(T), cudaMemcpyDeviceToDevice), "cudaMemcpy");
    have += copy;
  }
}

struct Timing {
  double median_ms = 0, min_ms = 0;
};

// Times `launch` (one batched launch) `reps` times after one warm-up, calling `reset` untimed first.
template <class Reset, class Run>
Timing time_launch(int reps, Reset reset, Run launch) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> ms;
  for (int r = -1; r < reps; ++r) {
    reset();
    check(cudaEventRecord(start), "cudaEventRecord");
    launch();
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "kernel execution");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    if (r >= 0) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

// Median wall time in microseconds of the serial CPU call, over 3 runs.
template <class Fn>
double cpu_us(Fn fn) {
  std::vector<double> us;
  for (int r = 0; r < 3; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us[1];
}

const char* precond_name(kc::Precond p) {
  return p == kc::Precond::Stair ? "stair" : p == kc::Precond::BlockJacobi ? "jacobi" : "none";
}

void row(const char* op, int bs, const Args& a, const kc::LaunchSize& size, const Timing& t, double cpu, const std::string& note) {
  std::printf("%-12s %4d %4d %6d %7d %9.1f %10.3f %10.3f %11.2f %12.1f  %s\n", op, a.nb, bs, a.batch, size.threads,
              size.shared_bytes / 1024.0, t.median_ms, t.min_ms, 1e3 * t.median_ms / a.batch, cpu, note.c_str());
  std::fflush(stdout);
}

void bench_block_size(const Args& a, int bs) {
  const int nb = a.nb, batch = a.batch;
  const std::size_t S = kl::strips_size(nb, bs), V = kl::padded_size(nb, bs);
  const int distinct = std::min(batch, 4);
  std::vector<std::vector<double>> strips, rhs;
  for (int k = 0; k < distinct; ++k) {
    const auto p = knot::bench::make_blocktri(nb, bs, 7 + k);
    strips.push_back(p.strips);
    rhs.push_back(p.rhs);
  }
  kc::Launch launch;
  launch.threads = a.threads;
  launch.fixed_block_size = !a.dynamic;

  // bdsv: factor + solve in place, so the strips and right-hand sides are restored before each run.
  {
    Buffer<double> pristine(S * batch), work(S * batch), b(V * batch), v(V * batch);
    Buffer<int> fail(batch);
    replicate(pristine, strips, batch, S);
    replicate(b, rhs, batch, V);
    kc::LaunchSize size;
    check(kc::bdsv_batched_size<double>(batch, nb, bs, launch, &size));
    std::unique_ptr<Buffer<unsigned char>> ws;
    kc::Launch l = launch;
    if (!size.fits_shared) {
      ws = std::make_unique<Buffer<unsigned char>>(size.workspace_bytes);
      l.workspace = ws->ptr;
      l.workspace_bytes = size.workspace_bytes;
    }
    const Timing t = time_launch(
        a.reps,
        [&] {
          check(cudaMemcpy(work.ptr, pristine.ptr, S * batch * sizeof(double), cudaMemcpyDeviceToDevice), "cudaMemcpy");
          check(cudaMemcpy(v.ptr, b.ptr, V * batch * sizeof(double), cudaMemcpyDeviceToDevice), "cudaMemcpy");
        },
        [&] { check(kc::bdsv_batched(batch, nb, bs, work.ptr, v.ptr, fail.ptr, l)); });
    std::vector<int> f(batch);
    check(cudaMemcpy(f.data(), fail.ptr, batch * sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy");
    const long failed = std::count_if(f.begin(), f.end(), [](int x) { return x != 0; });
    double cpu = 0;
    if (a.cpu) {
      std::vector<double> s0, v0, scratch(kl::bdsv_scratch_size(bs));
      kl::SerialGroup g;
      cpu = cpu_us([&] {
        s0 = strips[0];
        v0 = rhs[0];
        kl::bdsv(g, nb, bs, s0.data(), v0.data(), scratch.data());
      });
    }
    row("bdsv", bs, a, size, t, cpu, failed ? std::to_string(failed) + " not SPD" : std::string(l.workspace ? "workspace" : ""));
  }

  // pcg: the preconditioner is built inside the timed launch; x restarts from zero each run.
  {
    Buffer<double> s(S * batch), pinv(S * batch), g(V * batch), x(V * batch);
    Buffer<int> iters(batch), outcome(batch);
    replicate(s, strips, batch, S);
    replicate(g, rhs, batch, V);
    kl::PcgOptions<double> opt;
    opt.rel_tol = 1e-8;
    opt.max_iters = 200;
    kc::LaunchSize size;
    check(kc::pcg_batched_size<double>(batch, nb, bs, a.precond, launch, &size));
    std::unique_ptr<Buffer<unsigned char>> ws;
    kc::Launch l = launch;
    if (!size.fits_shared) {
      ws = std::make_unique<Buffer<unsigned char>>(size.workspace_bytes);
      l.workspace = ws->ptr;
      l.workspace_bytes = size.workspace_bytes;
    }
    const Timing t = time_launch(
        a.reps, [&] { check(cudaMemset(x.ptr, 0, V * batch * sizeof(double)), "cudaMemset"); },
        [&] {
          check(kc::pcg_batched(batch, nb, bs, s.ptr, pinv.ptr, g.ptr, x.ptr, a.precond, opt, iters.ptr, outcome.ptr, l));
        });
    std::vector<int> it(batch), oc(batch);
    check(cudaMemcpy(it.data(), iters.ptr, batch * sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy");
    check(cudaMemcpy(oc.data(), outcome.ptr, batch * sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy");
    const long converged = std::count(oc.begin(), oc.end(), 0);
    const int it_max = *std::max_element(it.begin(), it.end());
    double cpu = 0;
    if (a.cpu) {
      std::vector<double> p0(S), x0(V), ps(kl::precond_scratch_size(bs)), sc(kl::pcg_scratch_size(nb, bs));
      kl::SerialGroup gr;
      cpu = cpu_us([&] {
        std::fill(x0.begin(), x0.end(), 0.0);
        const double* pp = nullptr;
        if (a.precond == kc::Precond::Stair) kl::precond_stair(gr, nb, bs, strips[0].data(), p0.data(), ps.data());
        if (a.precond == kc::Precond::BlockJacobi) kl::precond_block_jacobi(gr, nb, bs, strips[0].data(), p0.data(), ps.data());
        if (a.precond != kc::Precond::None) pp = p0.data();
        kl::pcg(gr, nb, bs, strips[0].data(), pp, rhs[0].data(), x0.data(), sc.data(), opt);
      });
    }
    const std::string op = std::string("pcg/") + precond_name(a.precond);
    row(op.c_str(), bs, a, size, t, cpu,
        "iters<=" + std::to_string(it_max) + ", converged " + std::to_string(converged) + "/" + std::to_string(batch) +
            (l.workspace ? ", workspace" : ""));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const kc::DeviceInfo info = kc::query_device();
  std::printf("%s", kc::describe(info).c_str());
  if (!info.usable) {
    std::printf("knot_bench_gpu_linalg: no usable GPU, nothing to time\n");
    return 1;
  }
  try {
    std::printf("\nbatched double-precision solves, nb=%d, batch=%d, median of %d runs (CUDA events, launch only)%s\n",
                a.nb, a.batch, a.reps, a.dynamic ? ", run-time block-size kernels" : "");
    std::printf("%-12s %4s %4s %6s %7s %9s %10s %10s %11s %12s  %s\n", "op", "nb", "bs", "batch", "threads", "smem KiB",
                "median ms", "min ms", "us/problem", "CPU us/prob", "note");
    for (int bs : a.bs) bench_block_size(a, bs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "knot_bench_gpu_linalg: %s\n", e.what());
    return 1;
  }
  return 0;
}
