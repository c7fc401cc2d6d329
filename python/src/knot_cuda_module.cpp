// knot._cuda: the GPU's side of knot.BatchSolver(backend="cuda") (docs/python.md). A module of its
// own so that `import knot` never needs the CUDA runtime: knot._knot imports this one only when a
// BatchSolver asks for backend "cuda", and a build without nvcc has none.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "engine_capsule.hpp"
#include "knot/linalg/cuda/device.hpp"
#include "knot/solver/cuda/batch_cuda.hpp"

namespace nb = nanobind;
using namespace nb::literals;

NB_MODULE(_cuda, m) {
  m.doc() = "The CUDA batch engine of knot.BatchSolver(backend='cuda'), loaded on demand.";

  static const knot::solver::BatchEngineFactory factory = &knot::solver::cuda::make_cuda_engine;
  m.attr("engine") = nb::capsule(&factory, knot::python::engine_capsule_name());

  m.def(
      "device",
      [](int device) {
        const knot::linalg::cuda::DeviceInfo d = knot::linalg::cuda::query_device(device);
        nb::dict out;
        out["usable"] = d.usable;
        out["reason"] = d.reason;
        out["device_count"] = d.device_count;
        out["device"] = d.device;
        out["name"] = d.name;
        out["compute_capability"] = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
        out["multiprocessors"] = d.multiprocessors;
        out["memory_bytes"] = d.total_memory;
        out["runtime_version"] = d.runtime_version;
        out["driver_version"] = d.driver_version;
        out["built_for"] = d.built_for;
        out["summary"] = knot::linalg::cuda::describe(d);
        return out;
      },
      "device"_a = 0,
      "The GPU `device` as the CUDA runtime sees it (what `knot info` prints): a dict whose 'usable' says "
      "whether backend 'cuda' can run there and 'reason' why not.");
}
