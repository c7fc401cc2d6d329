// knot info: what this binary is and what it can run on.
#include <fmt/core.h>

#include <cstdio>
#include <string>
#include <thread>

#include "commands.hpp"
#include "knot/build_info.hpp"
#include "knot/problems/registry.hpp"
#include "knot/solver/build.hpp"
#if KNOT_WITH_CUDA
#include "knot/linalg/cuda/device.hpp"
#endif

namespace knot::cli {

int run_info() {
  fmt::print("knot {}\n", build::kVersion);
  fmt::print("  build type      {}\n", build::kBuildType);
  fmt::print("  C++ compiler    {}\n", build::kCxxCompiler);
  fmt::print("  sanitizers      {}\n", *build::kSanitize ? build::kSanitize : "none");
  fmt::print("  CPU target      {} (KNOT_ARCH; knot_solver compiled with {})\n", build::kArch, solver::build_isa());
  fmt::print("  CPU threads     {}\n", std::thread::hardware_concurrency());
#if KNOT_WITH_CUDA
  fmt::print("  CUDA            compiled (nvcc {}, sm {}; KNOT_CUDA={})\n", build::kCudaCompiler,
             build::kCudaArchitectures, build::kCudaOption);
  const auto dev = knot::linalg::cuda::query_device();
  if (dev.usable) {
    fmt::print("  GPU             {} (sm_{}{}, {} SMs, {:.1f} GiB)\n", dev.name.c_str(), dev.cc_major, dev.cc_minor,
               dev.multiprocessors, dev.total_memory / double(1ull << 30));
  } else {
    fmt::print("  GPU             none usable: {}\n", dev.reason.c_str());
  }
#else
  fmt::print("  CUDA            not compiled (KNOT_CUDA={})\n", build::kCudaOption);
  fmt::print("  GPU             not used by this build\n");
#endif
  // The problem file's model.type values: the registry's, and `expression`, which the loader
  // builds from the file's own expressions rather than from the registry.
  std::string models;
  for (const problems::ModelInfo& m : problems::model_types()) models.append(models.empty() ? "" : ", ").append(m.type);
  fmt::print("  models          {}, expression (written in the problem file)\n", models);
  return 0;
}

}  // namespace knot::cli
