// knot_bench_gpu_factor: batched small LU and Cholesky on the GPU, Knot against cuBLAS / cuSOLVER.
//
// For each n, a batch of dense n x n systems (column-major, back to back; a few distinct random
// problems replicated on the device) is solved by
//   LU        Knot lu_solve_batched (factor + solve, one launch)  vs  cublasDgetrfBatched + cublasDgetrsBatched
//             Knot lu_factor_batched                              vs  cublasDgetrfBatched
//   Cholesky  Knot cholesky_posv_batched (factor + solve)         vs  cusolverDnDpotrfBatched + cusolverDnDpotrsBatched
//             Knot cholesky_factor_batched                        vs  cusolverDnDpotrfBatched
// in double, one right-hand side (cuSOLVER's potrsBatched takes nrhs = 1 only). The reference's
// pointer arrays are built before timing; each timed region (CUDA events on the default stream)
// holds only the launches, the operand resets before it are not timed. The table gives the median
// over --reps runs after one warm-up, and ratio = reference / Knot (above 1: Knot is faster). Every
// result is verified once: the largest normwise backward error ||A x - b|| / (max|a_ij| ||x|| + ||b||)
// over the whole batch, and the number of systems whose status is not 0.
//
//   knot_bench_gpu_factor [--batch 100000] [--n 8,16,32] [--reps 9] [--threads 0]
//                         [--rows 0[,r...]] [--tiles 0[,w...]]
//
// --rows and --tiles also time Knot's LU with other rows_per_thread and Cholesky with other tile
// widths (0: the launcher's default), for tuning.
//
// Each n also times a device-to-device copy of the matrices ("copy A"): the bytes an in-place
// factorization must read and write, the floor no batched factorization goes below.
//
// Exit status 0 on success, 1 on any CUDA, cuBLAS, cuSOLVER or launcher error, or a wrong result
// (printed), 2 on bad arguments.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "knot/linalg/cuda/batched.hpp"
#include "knot/linalg/cuda/device.hpp"

namespace kc = knot::linalg::cuda;
using knot::linalg::Uplo;

namespace {

struct Args {
  int batch = 100000, reps = 9, threads = 0;
  std::vector<int> n = {8, 16, 32};
  std::vector<int> rows = {0};
  std::vector<int> tiles = {0};
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "knot_bench_gpu_factor: %s\n", why);
  std::fprintf(stderr,
               "usage: knot_bench_gpu_factor [--batch N] [--n a,b,c] [--reps N] [--threads N] [--rows a,b]"
               " [--tiles a,b]\n");
  std::exit(2);
}

int to_int(const std::string& s) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < 0 || v > (1 << 30)) usage(("not a count: " + s).c_str());
  return static_cast<int>(v);
}

std::vector<int> to_list(const std::string& list) {
  std::vector<int> out;
  for (std::size_t p = 0; p <= list.size();) {
    const std::size_t q = std::min(list.find(',', p), list.size());
    out.push_back(to_int(list.substr(p, q - p)));
    p = q + 1;
  }
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + k).c_str());
      return argv[++i];
    };
    if (k == "--batch") a.batch = to_int(value());
    else if (k == "--reps") a.reps = to_int(value());
    else if (k == "--threads") a.threads = to_int(value());
    else if (k == "--n") a.n = to_list(value());
    else if (k == "--rows") a.rows = to_list(value());
    else if (k == "--tiles") a.tiles = to_list(value());
    else if (k == "--help" || k == "-h") usage("help");
    else usage(("unknown option " + k).c_str());
  }
  if (a.batch < 1 || a.reps < 1 || a.n.empty()) usage("batch and reps must be >= 1");
  for (int n : a.n)
    if (n < 1) usage("sizes must be >= 1");
  return a;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cublasGetStatusName(e));
}
void check(cusolverStatus_t e, const char* what) {
  if (e != CUSOLVER_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cusolverStatus " + std::to_string(e));
}
void check(const kc::Status& s) {
  if (!s.ok()) throw std::runtime_error(kc::to_string(s));
}

// A device allocation freed on scope exit (never managed memory).
template <class T>
struct Buffer {
  T* ptr = nullptr;
  std::size_t n = 0;
  explicit Buffer(std::size_t count) : n(count) { check(cudaMalloc(&ptr, std::max<std::size_t>(1, n) * sizeof(T)), "cudaMalloc"); }
  ~Buffer() { cudaFree(ptr); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::vector<T> download() const {
    std::vector<T> h(n);
    check(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return h;
  }
  void copy_from(const Buffer& src) {
    check(cudaMemcpy(ptr, src.ptr, n * sizeof(T), cudaMemcpyDeviceToDevice), "cudaMemcpy device to device");
  }
};

// Fills all `batch` slots of `dst` (`per` elements each) from the `distinct` host problems: slot s
// holds problem s % distinct.size().
void replicate(Buffer<double>& dst, const std::vector<std::vector<double>>& distinct, int batch, std::size_t per) {
  const std::size_t d = std::min<std::size_t>(distinct.size(), batch);
  for (std::size_t k = 0; k < d; ++k)
    check(cudaMemcpy(dst.ptr + k * per, distinct[k].data(), per * sizeof(double), cudaMemcpyHostToDevice), "cudaMemcpy");
  for (std::size_t have = d; have < static_cast<std::size_t>(batch);) {
    const std::size_t copy = std::min(have, batch - have);
    check(cudaMemcpy(dst.ptr + have * per, dst.ptr, copy * per * sizeof(double), cudaMemcpyDeviceToDevice), "cudaMemcpy");
    have += copy;
  }
}

// Median milliseconds of `run` (the timed launches) over `reps` runs after one warm-up; `reset`
// restores the operands before each, untimed.
template <class Reset, class Run>
double time_ms(int reps, Reset reset, Run run) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> ms;
  for (int r = -1; r < reps; ++r) {
    reset();
    check(cudaDeviceSynchronize(), "reset");
    check(cudaEventRecord(start), "cudaEventRecord");
    run();
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "kernel execution");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    if (r >= 0) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The distinct problems: general (random + n I, comfortably regular) or SPD (B B' + n I).
std::vector<std::vector<double>> make_matrices(int count, int n, bool spd, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::vector<double>> out;
  for (int k = 0; k < count; ++k) {
    std::vector<double> b(static_cast<std::size_t>(n) * n), a(b.size());
    for (double& v : b) v = u(gen);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        double s = 0;
        if (spd)
          for (int l = 0; l < n; ++l) s += b[i + l * n] * b[j + l * n];
        else
          s = b[i + j * n];
        a[i + j * n] = s + (i == j ? n : 0.0);
      }
    out.push_back(a);
  }
  return out;
}

std::vector<std::vector<double>> make_vectors(int count, int n, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::vector<double>> out(count, std::vector<double>(n));
  for (auto& v : out)
    for (double& x : v) x = u(gen);
  return out;
}

// Largest normwise backward error over the batch (slot s solves problem s % distinct); NaN anywhere
// gives +inf.
double max_backward_error(const std::vector<std::vector<double>>& A, const std::vector<std::vector<double>>& b,
                          const std::vector<double>& x, int batch, int n) {
  double worst = 0;
  const int d = static_cast<int>(A.size());
  for (int s = 0; s < batch; ++s) {
    const std::vector<double>& a = A[s % d];
    const std::vector<double>& rhs = b[s % d];
    const double* xs = x.data() + static_cast<std::size_t>(s) * n;
    double amax = 0, xmax = 0, bmax = 0, rmax = 0;
    for (double v : a) amax = std::max(amax, std::abs(v));
    for (int i = 0; i < n; ++i) {
      double r = -rhs[i];
      for (int j = 0; j < n; ++j) r += a[i + j * n] * xs[j];
      rmax = std::max(rmax, std::abs(r));
      xmax = std::max(xmax, std::abs(xs[i]));
      bmax = std::max(bmax, std::abs(rhs[i]));
      if (!std::isfinite(xs[i])) return INFINITY;
    }
    worst = std::max(worst, rmax / (amax * xmax + bmax));
  }
  return worst;
}

long count_nonzero(const std::vector<int>& v) {
  return std::count_if(v.begin(), v.end(), [](int x) { return x != 0; });
}

bool g_wrong = false;

// One table line. ref_ms <= 0: no reference on this line; an error < 0: not verified on this line.
void row(const std::string& op, int n, int batch, double knot_ms, double ref_ms, double knot_err, double ref_err,
         const std::string& note) {
  // A backward error far above rounding means a wrong answer (NaN included).
  if (knot_err >= 0 && !(knot_err <= 1e-12)) g_wrong = true;
  char ref[32] = "-", ratio[32] = "-", kerr[32] = "-", rerr[32] = "-";
  if (ref_ms > 0) {
    std::snprintf(ref, sizeof ref, "%.3f", ref_ms);
    std::snprintf(ratio, sizeof ratio, "%.2fx", ref_ms / knot_ms);
  }
  if (knot_err >= 0 || std::isnan(knot_err)) std::snprintf(kerr, sizeof kerr, "%.1e", knot_err);
  if (ref_err >= 0 || std::isnan(ref_err)) std::snprintf(rerr, sizeof rerr, "%.1e", ref_err);
  std::printf("%-26s %3d %7d %10.3f %10s %8s %10s %10s  %s\n", op.c_str(), n, batch, knot_ms, ref, ratio, kerr, rerr,
              note.c_str());
  std::fflush(stdout);
}

std::string failures(const std::vector<int>& info, const char* who) {
  const long f = count_nonzero(info);
  return f ? std::string(who) + ": " + std::to_string(f) + " singular " : std::string();
}

void bench_lu(const Args& a, int n, cublasHandle_t blas) {
  const int batch = a.batch, distinct = 64;
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  const auto A = make_matrices(distinct, n, false, 100 + n);
  const auto b = make_vectors(distinct, n, 200 + n);
  Buffer<double> pristine(nn * batch), work(nn * batch), rhs(static_cast<std::size_t>(n) * batch),
      x(static_cast<std::size_t>(n) * batch);
  Buffer<int> piv(static_cast<std::size_t>(n) * batch), info(batch);
  replicate(pristine, A, batch, nn);
  replicate(rhs, b, batch, n);
  kc::Launch launch;
  launch.threads = a.threads;

  // cuBLAS pointer arrays, built once outside the timed regions.
  std::vector<double*> ha(batch), hx(batch);
  for (int s = 0; s < batch; ++s) {
    ha[s] = work.ptr + s * nn;
    hx[s] = x.ptr + static_cast<std::size_t>(s) * n;
  }
  Buffer<double*> da(batch), dx(batch);
  check(cudaMemcpy(da.ptr, ha.data(), batch * sizeof(double*), cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(dx.ptr, hx.data(), batch * sizeof(double*), cudaMemcpyHostToDevice), "cudaMemcpy");
  int getrs_info = 0;
  auto reset = [&] {
    work.copy_from(pristine);
    x.copy_from(rhs);
  };
  auto getrf = [&] { check(cublasDgetrfBatched(blas, n, da.ptr, n, piv.ptr, info.ptr, batch), "cublasDgetrfBatched"); };
  auto getrs = [&] {
    check(cublasDgetrsBatched(blas, CUBLAS_OP_N, n, 1, da.ptr, n, piv.ptr, dx.ptr, n, &getrs_info, batch),
          "cublasDgetrsBatched");
  };

  // Reference: getrf + getrs, verified once.
  const double ref_ms = time_ms(a.reps, reset, [&] { getrf(); getrs(); });
  check(cudaDeviceSynchronize(), "cuBLAS");
  if (getrs_info != 0) throw std::runtime_error("cublasDgetrsBatched: invalid argument " + std::to_string(-getrs_info));
  const double ref_err = max_backward_error(A, b, x.download(), batch, n);
  const std::string ref_note = failures(info.download(), "cuBLAS");
  const double ref_factor_ms = time_ms(a.reps, reset, getrf);

  // The memory floor of an in-place factorization: reading and writing the matrices once.
  const double copy_ms = time_ms(a.reps, [] {}, [&] {
    check(cudaMemcpyAsync(work.ptr, pristine.ptr, nn * batch * sizeof(double), cudaMemcpyDeviceToDevice), "copy");
  });
  char copy_note[96];
  std::snprintf(copy_note, sizeof copy_note, "read + write of A (cudaMemcpyAsync), %.2f TB/s",
                2.0 * static_cast<double>(nn * batch * sizeof(double)) / (copy_ms * 1e9));
  row("copy A (memory floor)", n, batch, copy_ms, 0, -1, -1, copy_note);

  for (int rows : a.rows) {
    const std::string tag = rows ? " r=" + std::to_string(rows) : std::string();
    kc::LaunchSize size;
    check(kc::lu_batched_size<double>(batch, n, rows, launch, &size));
    const double knot_ms = time_ms(a.reps, reset, [&] {
      check(kc::lu_solve_batched<double>(batch, n, work.ptr, piv.ptr, rhs.ptr, x.ptr, info.ptr, rows, launch));
    });
    check(cudaDeviceSynchronize(), "lu_solve_batched");
    const double err = max_backward_error(A, b, x.download(), batch, n);
    const std::string note = failures(info.download(), "Knot") + ref_note + "smem " +
                             std::to_string(size.shared_bytes / 1024) + " KiB/block";
    row("LU factor+solve" + tag, n, batch, knot_ms, rows == a.rows.front() ? ref_ms : 0, err,
        rows == a.rows.front() ? ref_err : -1, note);
    const double factor_ms = time_ms(a.reps, reset, [&] {
      check(kc::lu_factor_batched<double>(batch, n, work.ptr, piv.ptr, info.ptr, rows, launch));
    });
    row("LU factor" + tag, n, batch, factor_ms, rows == a.rows.front() ? ref_factor_ms : 0, -1, -1, "");
  }
}

void bench_cholesky(const Args& a, int n, cusolverDnHandle_t solver) {
  const int batch = a.batch, distinct = 64;
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  const auto A = make_matrices(distinct, n, true, 300 + n);
  const auto b = make_vectors(distinct, n, 400 + n);
  Buffer<double> pristine(nn * batch), work(nn * batch), rhs(static_cast<std::size_t>(n) * batch),
      x(static_cast<std::size_t>(n) * batch);
  Buffer<int> info(batch), potrs_info(1);
  replicate(pristine, A, batch, nn);
  replicate(rhs, b, batch, n);
  kc::Launch launch;
  launch.threads = a.threads;

  std::vector<double*> ha(batch), hx(batch);
  for (int s = 0; s < batch; ++s) {
    ha[s] = work.ptr + s * nn;
    hx[s] = x.ptr + static_cast<std::size_t>(s) * n;
  }
  Buffer<double*> da(batch), dx(batch);
  check(cudaMemcpy(da.ptr, ha.data(), batch * sizeof(double*), cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(dx.ptr, hx.data(), batch * sizeof(double*), cudaMemcpyHostToDevice), "cudaMemcpy");
  auto reset = [&] {
    work.copy_from(pristine);
    x.copy_from(rhs);
  };
  auto potrf = [&] {
    check(cusolverDnDpotrfBatched(solver, CUBLAS_FILL_MODE_LOWER, n, da.ptr, n, info.ptr, batch), "cusolverDnDpotrfBatched");
  };
  auto potrs = [&] {
    check(cusolverDnDpotrsBatched(solver, CUBLAS_FILL_MODE_LOWER, n, 1, da.ptr, n, dx.ptr, n, potrs_info.ptr, batch),
          "cusolverDnDpotrsBatched");
  };

  const double ref_ms = time_ms(a.reps, reset, [&] { potrf(); potrs(); });
  check(cudaDeviceSynchronize(), "cuSOLVER");
  const double ref_err = max_backward_error(A, b, x.download(), batch, n);
  const std::string ref_note = failures(info.download(), "cuSOLVER");
  if (potrs_info.download()[0] != 0) throw std::runtime_error("cusolverDnDpotrsBatched: invalid argument");
  const double ref_factor_ms = time_ms(a.reps, reset, potrf);

  for (int tile : a.tiles) {
    const std::string tag = tile ? " w=" + std::to_string(tile) : std::string();
    kc::LaunchSize size;
    check(kc::cholesky_batched_size<double>(batch, n, tile, launch, &size));
    const double knot_ms = time_ms(a.reps, reset, [&] {
      check(kc::cholesky_posv_batched<double>(batch, n, work.ptr, Uplo::Lower, x.ptr, info.ptr, tile, launch));
    });
    check(cudaDeviceSynchronize(), "cholesky_posv_batched");
    const double err = max_backward_error(A, b, x.download(), batch, n);
    const std::string note = failures(info.download(), "Knot") + ref_note +
                             (size.fits_shared ? "smem " + std::to_string(size.shared_bytes / 1024) + " KiB/block"
                                               : std::string("in place"));
    row("Cholesky factor+solve" + tag, n, batch, knot_ms, tile == a.tiles.front() ? ref_ms : 0, err,
        tile == a.tiles.front() ? ref_err : -1, note);
    const double factor_ms = time_ms(a.reps, reset, [&] {
      check(kc::cholesky_factor_batched<double>(batch, n, work.ptr, Uplo::Lower, info.ptr, tile, launch));
    });
    row("Cholesky factor" + tag, n, batch, factor_ms, tile == a.tiles.front() ? ref_factor_ms : 0, -1, -1, "");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const kc::DeviceInfo info = kc::query_device();
  std::printf("%s", kc::describe(info).c_str());
  if (!info.usable) {
    std::printf("knot_bench_gpu_factor: no usable GPU, nothing to time\n");
    return 1;
  }
  cublasHandle_t blas = nullptr;
  cusolverDnHandle_t solver = nullptr;
  try {
    // Two matrices of the largest size, plus vectors and pointer arrays, must fit on the device.
    const int nmax = *std::max_element(a.n.begin(), a.n.end());
    const double need = 2.0 * a.batch * nmax * nmax * sizeof(double) + 4.0 * a.batch * (nmax * sizeof(double) + 8);
    if (need > 0.9 * static_cast<double>(info.total_memory))
      throw std::runtime_error("the batch needs " + std::to_string(need / 1e9) + " GB, more than this device holds");
    check(cublasCreate(&blas), "cublasCreate");
    check(cusolverDnCreate(&solver), "cusolverDnCreate");
    std::printf("\nbatched double-precision dense solves, one right-hand side, batch=%d, median of %d runs "
                "(CUDA events, launches only); ratio = reference / Knot\n",
                a.batch, a.reps);
    std::printf("%-26s %3s %7s %10s %10s %8s %10s %10s  %s\n", "op", "n", "batch", "Knot ms", "ref ms", "ratio",
                "Knot berr", "ref berr", "note");
    for (int n : a.n) bench_lu(a, n, blas);
    for (int n : a.n) bench_cholesky(a, n, solver);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "knot_bench_gpu_factor: %s\n", e.what());
    if (solver) cusolverDnDestroy(solver);
    if (blas) cublasDestroy(blas);
    return 1;
  }
  cusolverDnDestroy(solver);
  cublasDestroy(blas);
  if (g_wrong) {
    std::fprintf(stderr, "knot_bench_gpu_factor: a Knot backward error exceeds 1e-12 (see the table)\n");
    return 1;
  }
  return 0;
}
