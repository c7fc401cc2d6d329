// Status texts. Compiled by the host compiler against the CUDA runtime's error strings.
#include "knot/linalg/cuda/status.hpp"

#include <cuda_runtime.h>

namespace knot::linalg::cuda {

const char* to_string(StatusCode code) {
  switch (code) {
    case StatusCode::Ok: return "ok";
    case StatusCode::InvalidArgument: return "invalid argument";
    case StatusCode::NeedsWorkspace: return "needs workspace";
    case StatusCode::CudaError: return "CUDA error";
  }
  return "unknown status";
}

std::string to_string(const Status& status) {
  std::string s = to_string(status.code);
  if (status.ok()) return s;
  const bool has_what = status.what != nullptr && *status.what != '\0';
  if (status.code != StatusCode::CudaError) return has_what ? s + ": " + status.what : s;
  if (has_what) s += std::string(" in ") + status.what;
  const auto e = static_cast<cudaError_t>(status.cuda_error);
  return s + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

}  // namespace knot::linalg::cuda
