// knot::linalg_cuda: the device query (answers with or without a GPU: linked and callable is the test).
#include <cstdio>

#include "knot/linalg/cuda/device.hpp"

int main() {
  const knot::linalg::cuda::DeviceInfo d = knot::linalg::cuda::query_device();
  std::printf("cuda consumer: %s\n", d.usable ? d.name.c_str() : ("no usable GPU: " + d.reason).c_str());
  return 0;
}
