// knot info: what this binary is and what it can run on.
#include <fmt/core.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "commands.hpp"
#include "knot/build_info.hpp"
#include "knot/problems/registry.hpp"
#include "knot/solver/batch.hpp"
#include "knot/solver/build.hpp"
#if KNOT_WITH_CUDA
#include "knot/linalg/cuda/device.hpp"
#endif

namespace knot::cli {
namespace {

#if !KNOT_WITH_CUDA
// A build without CUDA still says whether the machine has an NVIDIA GPU: the driver lists each one
// under /proc/driver/nvidia/gpus/<bus id>/information ("Model: ..."). Empty when none is listed.
std::string nvidia_gpus() {
  std::error_code ec;
  std::string names;
  for (const auto& gpu : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    std::ifstream in(gpu.path() / "information");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("Model:", 0) == 0) {
        const std::size_t at = line.find_first_not_of(" \t", 6);
        names += (names.empty() ? "" : ", ") + (at == std::string::npos ? std::string("unnamed") : line.substr(at));
      }
  }
  return names;
}
#endif

}  // namespace

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
  if (const std::string gpus = nvidia_gpus(); !gpus.empty())
    fmt::print("  GPU             {} (present; not used by this build)\n", gpus.c_str());
  else
    fmt::print("  GPU             none found (no NVIDIA driver lists one); not used by this build\n");
#endif
  // What `knot solve --batch --backend` can run in this build.
#if KNOT_WITH_CUDA
  fmt::print("  batch backends  cpu, cuda (the device path: docs/batch.md)\n");
#else
  fmt::print("  batch backends  cpu (cuda: this build has no nvcc)\n");
#endif
  // The problem file's model.type values: the registry's, and `expression`, which the loader
  // builds from the file's own expressions rather than from the registry.
  std::string models;
  for (const problems::ModelInfo& m : problems::model_types()) models.append(models.empty() ? "" : ", ").append(m.type);
  fmt::print("  models          {}, expression (written in the problem file)\n", models);
  return 0;
}

}  // namespace knot::cli
