// CudaBatch (knot/solver/cuda/batch_cuda.hpp): the batched SQP kernel, its memory and its graph.
#include <cuda_runtime.h>

#include <cstring>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

#include "batch_sqp_launch.hpp"
#include "knot/problems/robot/dynamics.hpp"
#include "knot/solver/device/hessian.hpp"
#include "knot/solver/cuda/batch_cuda.hpp"

namespace knot::solver::cuda {
namespace {

Status cuda_error(cudaError_t e, const char* what) {
  return Status{linalg::cuda::StatusCode::CudaError, static_cast<int>(e), what};
}
Status invalid(const char* what) { return Status{linalg::cuda::StatusCode::InvalidArgument, 0, what}; }

#define KNOT_BATCH_TRY(call, what)                         \
  do {                                                     \
    const cudaError_t knot_e_ = (call);                    \
    if (knot_e_ != cudaSuccess) return cuda_error(knot_e_, what); \
  } while (0)

// Doubles of one problem's iterate: x, u, lambda, z, s, y (the front of SqpArrays' carve order).
std::size_t iterate_doubles(const device::BatchProblem& P) {
  return static_cast<std::size_t>(P.N + 1) * P.nx * 2 + static_cast<std::size_t>(P.N) * P.nu +
         2 * static_cast<std::size_t>(P.n_ineq) + static_cast<std::size_t>(P.n_eq);
}

}  // namespace

struct CudaBatch::Impl {
  device::BatchProblemData data;
  device::DeviceOptions options;
  int batch = 0, threads = 0;
  bool single = false;
  std::size_t slice_stride = 0, iterate_stride = 0, array_stride = 0;
  std::size_t arena_stride = 0;  // bytes: problem p's arena (its model) at d_arena + p arena_stride
  // Device
  unsigned char* d_arena = nullptr;
  double* d_slices = nullptr;
  double* d_iterates = nullptr;
  void* d_arrays = nullptr;
  device::DeviceResult* d_results = nullptr;
  IterationStats* d_rows = nullptr;
  // Pinned host staging
  double* h_slices = nullptr;
  double* h_iterates = nullptr;
  device::DeviceResult* h_results = nullptr;
  IterationStats* h_rows = nullptr;
  cudaStream_t stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::size_t bytes = 0;

  ~Impl() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (stream) cudaStreamDestroy(stream);
    cudaFree(d_arena);
    cudaFree(d_slices);
    cudaFree(d_iterates);
    cudaFree(d_arrays);
    cudaFree(d_results);
    cudaFree(d_rows);
    cudaFreeHost(h_slices);
    cudaFreeHost(h_iterates);
    cudaFreeHost(h_results);
    cudaFreeHost(h_rows);
  }

  template <class T>
  Status allocate_and_capture() {
    const device::BatchProblem& P = data.problem;
    array_stride = device::SqpArrays<T>::size(P, options, threads, options.trials);
    const std::size_t B = static_cast<std::size_t>(batch), rows_per = static_cast<std::size_t>(options.max_iter) + 1;
    const auto dmalloc = [&](auto** ptr, std::size_t n, const char* what) -> Status {
      KNOT_BATCH_TRY(cudaMalloc(reinterpret_cast<void**>(ptr), n), what);
      bytes += n;
      return {};
    };
    Status st;
    arena_stride = data.arena.empty() ? 256 : (data.arena.size() + 255) / 256 * 256;
    if (!(st = dmalloc(&d_arena, B * arena_stride, "cudaMalloc(arenas)")).ok()) return st;
    if (!(st = dmalloc(&d_slices, B * slice_stride * sizeof(double) + 8, "cudaMalloc(slices)")).ok()) return st;
    if (!(st = dmalloc(&d_iterates, B * iterate_stride * sizeof(double) + 8, "cudaMalloc(iterates)")).ok()) return st;
    if (!(st = dmalloc(reinterpret_cast<T**>(&d_arrays), B * array_stride * sizeof(T), "cudaMalloc(arrays)")).ok())
      return st;
    if (!(st = dmalloc(&d_results, B * sizeof(device::DeviceResult), "cudaMalloc(results)")).ok()) return st;
    if (!(st = dmalloc(&d_rows, B * rows_per * sizeof(IterationStats), "cudaMalloc(rows)")).ok()) return st;
    KNOT_BATCH_TRY(cudaMallocHost(reinterpret_cast<void**>(&h_slices), B * slice_stride * sizeof(double) + 8),
                   "cudaMallocHost(slices)");
    KNOT_BATCH_TRY(cudaMallocHost(reinterpret_cast<void**>(&h_iterates), B * iterate_stride * sizeof(double) + 8),
                   "cudaMallocHost(iterates)");
    KNOT_BATCH_TRY(cudaMallocHost(reinterpret_cast<void**>(&h_results), B * sizeof(device::DeviceResult)),
                   "cudaMallocHost(results)");
    KNOT_BATCH_TRY(cudaMallocHost(reinterpret_cast<void**>(&h_rows), B * rows_per * sizeof(IterationStats)),
                   "cudaMallocHost(rows)");
    // One copy per problem, so set_arena can give one problem another model: the first uploaded,
    // then doubled on the device (log2 B copies).
    if (!data.arena.empty())
      KNOT_BATCH_TRY(cudaMemcpy(d_arena, data.arena.data(), data.arena.size(), cudaMemcpyHostToDevice),
                     "cudaMemcpy(arena)");
    for (std::size_t have = 1; have < B; have *= 2) {
      const std::size_t n = have < B - have ? have : B - have;
      KNOT_BATCH_TRY(cudaMemcpy(d_arena + have * arena_stride, d_arena, n * arena_stride, cudaMemcpyDeviceToDevice),
                     "cudaMemcpy(arenas)");
    }
    // Default starting points: the file's slice and x0 at every knot, u = 0, multipliers zero.
    for (std::size_t p = 0; p < B; ++p) {
      std::memcpy(h_slices + p * slice_stride, data.slice.data(), slice_stride * sizeof(double));
      double* it = h_iterates + p * iterate_stride;
      std::memset(it, 0, iterate_stride * sizeof(double));
      const double* x0 = data.slice.data() + P.x0;
      for (int k = 0; k <= P.N; ++k)
        for (int i = 0; i < P.nx; ++i) it[static_cast<std::size_t>(k) * P.nx + i] = x0[i];
    }
    // The solve's per-thread stack: the driver's scalar state, the evaluations' locals and the robot
    // workspace they keep there (device/problem.hpp). The limit is the device's, shared with other
    // batches: raised, never lowered.
    // The kernel's own figure (its deepest call chain's frames) bounds it from below.
    const bool exact = options.hessian != 0;
    cudaFuncAttributes attr{};
    if constexpr (std::is_same_v<T, double>)
      KNOT_BATCH_TRY(exact ? detail::batch_sqp_exact_attributes(&attr)
                           : detail::batch_sqp_attributes(static_cast<const T*>(nullptr), &attr),
                     "cudaFuncGetAttributes(batch_sqp_kernel)");
    else
      KNOT_BATCH_TRY(detail::batch_sqp_attributes(static_cast<const T*>(nullptr), &attr),
                     "cudaFuncGetAttributes(batch_sqp_kernel)");
    std::size_t stack = 16 * 1024 + sizeof(problems::robot::Workspace<T>);
    if (attr.localSizeBytes + 4096 > stack) stack = attr.localSizeBytes + 4096;
    std::size_t have = 0;
    KNOT_BATCH_TRY(cudaDeviceGetLimit(&have, cudaLimitStackSize), "cudaDeviceGetLimit(stack)");
    if (have < stack) KNOT_BATCH_TRY(cudaDeviceSetLimit(cudaLimitStackSize, stack), "cudaDeviceSetLimit(stack)");
    KNOT_BATCH_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    KNOT_BATCH_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    cudaMemcpyAsync(d_slices, h_slices, B * slice_stride * sizeof(double), cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(d_iterates, h_iterates, B * iterate_stride * sizeof(double), cudaMemcpyHostToDevice, stream);
    if constexpr (std::is_same_v<T, double>) {
      if (exact)
        detail::launch_batch_sqp_exact(batch, threads, stream, P, d_arena, arena_stride, d_slices, slice_stride,
                                       options, static_cast<T*>(d_arrays), array_stride, d_iterates, iterate_stride,
                                       d_results, d_rows);
    }
    if (!exact)
      detail::launch_batch_sqp(batch, threads, stream, P, d_arena, arena_stride, d_slices, slice_stride, options,
                               static_cast<T*>(d_arrays), array_stride, d_iterates, iterate_stride, d_results,
                               d_rows);
    const cudaError_t launch = cudaGetLastError();
    cudaMemcpyAsync(h_iterates, d_iterates, B * iterate_stride * sizeof(double), cudaMemcpyDeviceToHost, stream);
    cudaMemcpyAsync(h_results, d_results, B * sizeof(device::DeviceResult), cudaMemcpyDeviceToHost, stream);
    cudaMemcpyAsync(h_rows, d_rows, B * rows_per * sizeof(IterationStats), cudaMemcpyDeviceToHost, stream);
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    if (launch != cudaSuccess) return cuda_error(launch, "batch_sqp_kernel launch (capture)");
    if (end != cudaSuccess) return cuda_error(end, "cudaStreamEndCapture");
    KNOT_BATCH_TRY(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    return {};
  }
};

CudaBatch::CudaBatch() : impl_(new Impl) {}
CudaBatch::~CudaBatch() = default;

Status CudaBatch::create(const device::BatchProblemData& data, const device::DeviceOptions& options, int batch,
                         int threads, bool single, std::unique_ptr<CudaBatch>* out) {
  if (out == nullptr) return invalid("CudaBatch::create: out is null");
  if (batch < 1) return invalid("CudaBatch::create: batch must be >= 1");
  if (threads == 0) threads = default_batch_threads(batch);
  if (threads < kMinBatchThreads || threads > kMaxBatchThreads)
    return invalid("CudaBatch::create: threads (the block size) must be 0 or in 32..256");
  if (options.hessian != 0 && single)
    return invalid("CudaBatch::create: the exact Hessian (hessian exact or auto) runs in double on the CUDA backend; "
                   "set hessian gauss_newton for single precision");
  if (options.hessian != 0)
    if (const char* why = device::gpu_exact_hessian_refusal(data.problem, data.arena.data())) return invalid(why);
  int count = 0;
  KNOT_BATCH_TRY(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (count < 1) return invalid("CudaBatch::create: no CUDA device");
  std::unique_ptr<CudaBatch> b(new (std::nothrow) CudaBatch);
  if (!b) return invalid("CudaBatch::create: out of host memory");
  Impl& m = *b->impl_;
  m.data = data;
  m.options = options;
  // The block's members beyond one per knot evaluate line-search backtracks (the same solve).
  m.options.trials = device::resolve_trials(options.trials, threads, data.problem.N);
  m.batch = batch;
  m.threads = threads;
  m.single = single;
  m.slice_stride = data.slice.size();
  m.iterate_stride = iterate_doubles(data.problem);
  const Status st = single ? m.allocate_and_capture<float>() : m.allocate_and_capture<double>();
  if (!st.ok()) return st;
  *out = std::move(b);
  return {};
}

int CudaBatch::size() const { return impl_->batch; }
int CudaBatch::threads() const { return impl_->threads; }
bool CudaBatch::single() const { return impl_->single; }
double* CudaBatch::slice(int i) { return impl_->h_slices + static_cast<std::size_t>(i) * impl_->slice_stride; }
double* CudaBatch::iterate(int i) { return impl_->h_iterates + static_cast<std::size_t>(i) * impl_->iterate_stride; }
std::size_t CudaBatch::iterate_size() const { return impl_->iterate_stride; }
const device::DeviceResult& CudaBatch::result(int i) const { return impl_->h_results[i]; }
const IterationStats* CudaBatch::rows(int i) const {
  return impl_->h_rows + static_cast<std::size_t>(i) * (static_cast<std::size_t>(impl_->options.max_iter) + 1);
}
std::size_t CudaBatch::device_bytes() const { return impl_->bytes; }

Status CudaBatch::set_arena(int i, const unsigned char* arena, std::size_t bytes) {
  if (i < 0 || i >= impl_->batch) return invalid("CudaBatch::set_arena: problem index out of range");
  if (bytes != impl_->data.arena.size()) return invalid("CudaBatch::set_arena: another arena size than the batch's");
  if (bytes == 0) return {};
  KNOT_BATCH_TRY(cudaMemcpy(impl_->d_arena + static_cast<std::size_t>(i) * impl_->arena_stride, arena, bytes,
                            cudaMemcpyHostToDevice),
                 "cudaMemcpy(set_arena)");
  return {};
}

Status CudaBatch::solve() {
  KNOT_BATCH_TRY(cudaGraphLaunch(impl_->exec, impl_->stream), "cudaGraphLaunch");
  KNOT_BATCH_TRY(cudaStreamSynchronize(impl_->stream), "cudaStreamSynchronize (batch_sqp_kernel)");
  return {};
}

namespace {

class CudaEngine final : public BatchEngine {
 public:
  explicit CudaEngine(std::unique_ptr<CudaBatch> b) : b_(std::move(b)) {}
  double* slice(int i) override { return b_->slice(i); }
  double* iterate(int i) override { return b_->iterate(i); }
  std::string solve() override {
    const Status st = b_->solve();
    return st.ok() ? std::string() : linalg::cuda::to_string(st);
  }
  const device::DeviceResult& result(int i) const override { return b_->result(i); }
  const IterationStats* rows(int i) const override { return b_->rows(i); }
  int threads() const override { return b_->threads(); }
  std::size_t device_bytes() const override { return b_->device_bytes(); }
  std::string set_arena(int i, std::span<const unsigned char> arena) override {
    const Status st = b_->set_arena(i, arena.data(), arena.size());
    return st.ok() ? std::string() : linalg::cuda::to_string(st);
  }

 private:
  std::unique_ptr<CudaBatch> b_;
};

}  // namespace

std::unique_ptr<BatchEngine> make_cuda_engine(const device::BatchProblemData& data, const device::DeviceOptions& options,
                                              int batch, int threads, bool single, std::string* error) {
  std::unique_ptr<CudaBatch> b;
  const Status st = CudaBatch::create(data, options, batch, threads, single, &b);
  if (!st.ok()) {
    if (error) *error = linalg::cuda::to_string(st);
    return nullptr;
  }
  return std::make_unique<CudaEngine>(std::move(b));
}

}  // namespace knot::solver::cuda
