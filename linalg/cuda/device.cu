// Device query for `knot info` and for the GPU tests' skip decision.
//
// Every CUDA call is checked and turned into `reason`; with no driver installed the runtime
// returns cudaErrorInsufficientDriver (or cudaErrorNoDevice) from cudaGetDeviceCount, which is
// reported, never fatal.
#include <cuda_runtime.h>

#include <sstream>
#include <string>

#include "knot/linalg/cuda/device.hpp"

#ifndef KNOT_CUDA_ARCHITECTURES
#define KNOT_CUDA_ARCHITECTURES "unknown"
#endif

namespace knot::linalg::cuda {

namespace {

// Does nothing: cudaFuncGetAttributes on it tells whether this build holds code the device runs.
__global__ void probe_kernel() {}

std::string error_text(const char* call, cudaError_t e) {
  return std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + " from " + call + ")";
}

}  // namespace

DeviceInfo query_device(int device) {
  DeviceInfo info;
  info.built_for = KNOT_CUDA_ARCHITECTURES;
  // These two work without a device; the driver version is 0 when there is no driver.
  if (cudaRuntimeGetVersion(&info.runtime_version) != cudaSuccess) info.runtime_version = 0;
  if (cudaDriverGetVersion(&info.driver_version) != cudaSuccess) info.driver_version = 0;

  cudaError_t e = cudaGetDeviceCount(&info.device_count);
  if (e != cudaSuccess) {
    info.device_count = 0;
    info.reason = error_text("cudaGetDeviceCount", e);
    cudaGetLastError();  // clear the (non-sticky) error so later calls start clean
    return info;
  }
  if (info.device_count == 0) {
    info.reason = "the CUDA runtime reports no devices";
    return info;
  }
  if (device < 0 || device >= info.device_count) {
    info.reason = "device " + std::to_string(device) + " does not exist (" + std::to_string(info.device_count) +
                  " present)";
    return info;
  }
  info.device = device;
  cudaDeviceProp prop{};
  e = cudaGetDeviceProperties(&prop, device);
  if (e != cudaSuccess) {
    info.reason = error_text("cudaGetDeviceProperties", e);
    cudaGetLastError();
    return info;
  }
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.total_memory = prop.totalGlobalMem;
  info.shared_memory_per_block_optin = prop.sharedMemPerBlockOptin;

  // The device exists; can it run this build's kernels? (A missing image is cudaErrorNoKernelImageForDevice.)
  int previous = 0;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess && previous != device;
  e = cudaSetDevice(device);
  if (e == cudaSuccess) {
    cudaFuncAttributes attr{};
    e = cudaFuncGetAttributes(&attr, probe_kernel);
  }
  if (restore) cudaSetDevice(previous);
  if (e != cudaSuccess) {
    info.reason = error_text("cudaFuncGetAttributes", e) + "; built for sm " + info.built_for;
    cudaGetLastError();
    return info;
  }
  info.usable = true;
  return info;
}

std::string describe(const DeviceInfo& info) {
  std::ostringstream os;
  auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  os << "CUDA runtime " << (info.runtime_version ? version(info.runtime_version) : "unknown") << ", driver "
     << (info.driver_version ? version(info.driver_version) : "none") << ", built for sm " << info.built_for << "\n";
  if (info.device >= 0) {
    os << "device " << info.device << " of " << info.device_count << ": " << info.name << ", compute capability "
       << info.cc_major << "." << info.cc_minor << ", " << info.multiprocessors << " SMs, "
       << info.total_memory / (1024 * 1024) << " MiB, " << info.shared_memory_per_block_optin / 1024
       << " KiB shared memory per block\n";
  }
  if (info.usable)
    os << "GPU: usable\n";
  else
    os << "GPU: not usable: " << info.reason << "\n";
  return os.str();
}

}  // namespace knot::linalg::cuda
