// The batched SQP on a GPU: one problem per thread block, the whole solve in one kernel
// (docs/batch.md, "Executors"). Plain C++: host code built by the C++ compiler includes this and
// links knot::solver_cuda; only the library is compiled by nvcc.
//
// CudaBatch allocates every device and pinned host array at creation and captures one solve (the
// uploads of the per-problem values and starting points, the kernel, the downloads of iterates,
// results and per-iteration rows) into a CUDA Graph; solve() replays it and waits. Every CUDA call
// and the launch are checked in release builds; a failure is a linalg::cuda::Status, never an abort.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "knot/linalg/cuda/status.hpp"
#include "knot/solver/batch.hpp"
#include "knot/solver/device/problem.hpp"
#include "knot/solver/device/sqp.hpp"

namespace knot::solver::cuda {

using linalg::cuda::Status;

// The largest thread-block size create() takes, and the one threads = 0 takes for a batch of B. On an
// H200 (iiwa14, docs/BENCHMARKS.md, GPU): up to B = 128, 128 threads were within 5% of the fastest
// size and 14-30% faster than 64 at N >= 64; at B = 1024, where several blocks share an SM, 64 were
// 14-27% faster than 128.
// A block is at least one warp: the LQ step runs on a whole warp (device/riccati_warp.cuh), and a
// smaller block would leave the rest of its warp idle anyway.
inline constexpr int kMinBatchThreads = 32, kMaxBatchThreads = 256;
constexpr int default_batch_threads(int batch) { return batch <= 256 ? 128 : 64; }

class CudaBatch {
 public:
  // B problems of `data`'s structure, each starting from data.slice and the default guess (x0 at
  // every knot, u = 0). threads: the block size (kMinBatchThreads..kMaxBatchThreads, 0 = default);
  // every size gives bitwise the same results. single: run in float instead of double.
  static Status create(const device::BatchProblemData& data, const device::DeviceOptions& options, int batch,
                       int threads, bool single, std::unique_ptr<CudaBatch>* out);
  ~CudaBatch();
  CudaBatch(const CudaBatch&) = delete;
  CudaBatch& operator=(const CudaBatch&) = delete;

  int size() const;
  int threads() const;
  bool single() const;
  // Host staging of problem i, uploaded by the next solve(): its slice (compile_batch_problem's
  // layout) and its iterate (x, u, lambda, z, s, y back to back: Solution's layouts, in double).
  double* slice(int i);
  double* iterate(int i);
  std::size_t iterate_size() const;  // doubles of one iterate
  // Problem i's model: `bytes` of a compiled arena with the batch's layout (device::same_layout),
  // copied to the device now (every problem has its arena copy, made at creation). Allocates nothing.
  Status set_arena(int i, const unsigned char* arena, std::size_t bytes);
  // Runs every problem from its staged iterate and waits; afterwards iterate(i), result(i), rows(i)
  // hold problem i's answer. Allocates nothing.
  Status solve();
  const device::DeviceResult& result(int i) const;
  const IterationStats* rows(int i) const;  // result(i).rows of them
  std::size_t device_bytes() const;

 private:
  CudaBatch();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// BatchOptions::cuda_engine for BatchSolver's backend cuda: a CudaBatch behind the BatchEngine
// interface (null and the Status's text in *error when create() fails).
std::unique_ptr<BatchEngine> make_cuda_engine(const device::BatchProblemData& data, const device::DeviceOptions& options,
                                              int batch, int threads, bool single, std::string* error);

}  // namespace knot::solver::cuda
