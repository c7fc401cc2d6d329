// What GPU this process could run on, for `knot info` and for tests that skip without one.
//
// Plain C++ (no CUDA header needed). Safe on a machine with no GPU and no driver at all: the CUDA
// runtime then reports an error code, which comes back as `reason`.
#pragma once

#include <cstddef>
#include <string>

namespace knot::linalg::cuda {

struct DeviceInfo {
  bool usable = false;     // a device is present and this build's kernels have an image that runs on it
  std::string reason;      // why not usable (empty when usable), e.g. "no CUDA-capable device is detected"
  int device_count = 0;    // devices the runtime sees
  int device = -1;         // the device described below
  std::string name;        // e.g. "NVIDIA H200"
  int cc_major = 0;        // compute capability
  int cc_minor = 0;
  int multiprocessors = 0;
  std::size_t total_memory = 0;                 // bytes of global memory
  std::size_t shared_memory_per_block_optin = 0;  // bytes one thread block may opt in to
  int runtime_version = 0;  // CUDA runtime, as 1000*major + 10*minor
  int driver_version = 0;   // newest CUDA the driver supports (0: no driver)
  std::string built_for;    // the architectures this library was compiled for, e.g. "80,90"
};

// Describes device `device` (default: 0). Never throws for a missing GPU or driver.
DeviceInfo query_device(int device = 0);

// Multi-line human-readable summary of `info` (what `knot info` prints).
std::string describe(const DeviceInfo& info);

}  // namespace knot::linalg::cuda
