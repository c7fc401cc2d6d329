// knot info: what this binary is and what it can run on.
#include <cstdio>
#include <thread>

#include "commands.hpp"
#include "knot/build_info.hpp"
#include "knot/solver/build.hpp"
#if KNOT_WITH_CUDA
#include "knot/linalg/cuda/device.hpp"
#endif

namespace knot::cli {

int run_info() {
  std::printf("knot %s\n", build::kVersion);
  std::printf("  build type      %s\n", build::kBuildType);
  std::printf("  C++ compiler    %s\n", build::kCxxCompiler);
  std::printf("  sanitizers      %s\n", *build::kSanitize ? build::kSanitize : "none");
  std::printf("  CPU target      %s (KNOT_ARCH; knot_solver compiled with %s)\n", build::kArch,
              solver::build_isa());
  std::printf("  CPU threads     %u\n", std::thread::hardware_concurrency());
#if KNOT_WITH_CUDA
  std::printf("  CUDA            compiled (nvcc %s, sm %s; KNOT_CUDA=%s)\n", build::kCudaCompiler, build::kCudaArchitectures,
              build::kCudaOption);
  const auto dev = knot::linalg::cuda::query_device();
  if (dev.usable) {
    std::printf("  GPU             %s (sm_%d%d, %d SMs, %.1f GiB)\n", dev.name.c_str(), dev.cc_major, dev.cc_minor,
                dev.multiprocessors, dev.total_memory / double(1ull << 30));
  } else {
    std::printf("  GPU             none usable: %s\n", dev.reason.c_str());
  }
#else
  std::printf("  CUDA            not compiled (KNOT_CUDA=%s)\n", build::kCudaOption);
  std::printf("  GPU             not used by this build\n");
#endif
  return 0;
}

}  // namespace knot::cli
