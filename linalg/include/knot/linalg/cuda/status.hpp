// Status of a host-side CUDA call of linalg/cuda (a launcher, a size query, the device query).
//
// Every CUDA API call and every kernel launch is checked, in release builds too; a failure comes
// back to the caller as a Status, never as an abort or an exception. Plain C++: includable by a host
// compiler that has never seen a CUDA header.
#pragma once

#include <string>

namespace knot::linalg::cuda {

enum class StatusCode : int {
  Ok = 0,
  InvalidArgument,  // a size, pointer or thread count the launcher cannot take (see `what`)
  NeedsWorkspace,   // scratch does not fit in shared memory and no global workspace was given
  CudaError,        // a CUDA call or launch failed; `cuda_error` holds its cudaError_t
};

struct Status {
  StatusCode code = StatusCode::Ok;
  int cuda_error = 0;      // the cudaError_t value when code == CudaError, else 0
  const char* what = "";   // static text: the failed call, or the argument that was rejected

  constexpr bool ok() const { return code == StatusCode::Ok; }
};

// "ok", "invalid argument", "needs workspace", "CUDA error".
const char* to_string(StatusCode code);

// One line for a log: code, `what`, and for a CUDA error its name and description, e.g.
// "CUDA error in cudaGetDeviceCount: cudaErrorNoDevice (no CUDA-capable device is detected)".
std::string to_string(const Status& status);

}  // namespace knot::linalg::cuda
