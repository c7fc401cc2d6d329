"""knot.BatchSolver(backend="cuda"): the engine of knot._cuda, imported only when asked for.

On a machine with a usable GPU the cuda batch is compared with the CPU's device path (the same
algorithm): each problem's status, and its cost to 1e-9 in double and 1e-4 in float. Elsewhere the
refusals are checked: no engine in the build, an engine from another build, no GPU.
"""

import ctypes
import importlib
import subprocess
import sys
import types

import numpy as np
import pytest

import knot
from test_batch import starts


def has_engine():
    try:
        importlib.import_module("knot._cuda")
    except ImportError:
        return False
    return True


def fake_engine(capsule_name):
    """A knot._cuda whose engine capsule has another name (another build's types)."""
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    module = types.ModuleType("knot._cuda")
    module.name = ctypes.create_string_buffer(capsule_name)  # the capsule keeps a pointer to it
    module.engine = new(id(module), module.name, None)
    return module


def gauss_newton(path, **extra):
    # The GPU's exact Hessian takes the manipulator only; the cart-pole runs Gauss-Newton there.
    return knot.load(path), dict(hessian="gauss_newton", **extra)


def test_import_knot_loads_no_cuda():
    code = "import sys, knot; knot.BatchSolver(knot.load(sys.argv[1]), 2); print('knot._cuda' in sys.modules)"
    from conftest import ROOT
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "configs" / "cartpole_swingup.yaml")],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_no_engine_is_a_value_error_naming_it(cartpole_path, monkeypatch):
    problem, options = gauss_newton(cartpole_path)
    monkeypatch.setitem(sys.modules, "knot._cuda", None)  # what a build without nvcc gives
    with pytest.raises(ValueError, match=r"backend 'cuda': this knot has no CUDA engine \(import knot\._cuda"):
        knot.BatchSolver(problem, 2, backend="cuda", **options)
    device = knot.cuda_device()
    assert device["usable"] is False and "no CUDA engine" in device["reason"]
    knot.BatchSolver(problem, 2, **options)  # backend cpu never imports it


def test_an_engine_from_another_build_is_refused(cartpole_path, monkeypatch):
    problem, options = gauss_newton(cartpole_path)
    monkeypatch.setitem(sys.modules, "knot._cuda", fake_engine(b"knot.BatchEngineFactory/another"))
    with pytest.raises(ValueError, match="another build of knot"):
        knot.BatchSolver(problem, 2, backend="cuda", **options)


def test_options_are_checked_before_the_gpu(cartpole_path):
    problem, options = gauss_newton(cartpole_path)
    with pytest.raises(ValueError, match="precision 'float' runs on backend 'cuda' only"):
        knot.BatchSolver(problem, 2, precision="float", **options)
    with pytest.raises(ValueError, match="precision: expected 'double' or 'float', found 'half'"):
        knot.BatchSolver(problem, 2, backend="cuda", precision="half", **options)
    with pytest.raises(ValueError, match="block size on backend cuda"):
        knot.BatchSolver(problem, 2, backend="cuda", threads=16, **options)
    cpu = knot.BatchSolver(problem, 2, **options)
    assert (cpu.backend, cpu.precision, cpu.device_bytes) == ("cpu", "double", 0)


@pytest.mark.skipif(not has_engine(), reason="this knot has no CUDA engine (built without nvcc)")
def test_the_engine_describes_the_gpu_or_says_why_not(cartpole_path):
    device = knot.cuda_device()
    assert set(device) >= {"usable", "reason", "name", "compute_capability", "memory_bytes", "summary"}
    if device["usable"]:
        assert device["name"] and device["reason"] == ""
        return
    assert device["reason"]
    problem, options = gauss_newton(cartpole_path)
    with pytest.raises(RuntimeError, match="BatchSolver: backend cuda: "):  # the engine's reason follows
        knot.BatchSolver(problem, 2, backend="cuda", **options)


gpu = pytest.mark.skipif(not knot.cuda_device()["usable"], reason="no usable GPU: " + knot.cuda_device()["reason"])


@gpu
@pytest.mark.parametrize("precision, rtol", [("double", 1e-9), ("float", 1e-4)])
def test_the_gpu_agrees_with_the_cpu_device_path(cartpole_path, precision, rtol):
    # float's stationarity floor is near 1e-4 on the cart-pole (tests/cuda/test_gpu_batch_sqp.cpp):
    # both run to tolerances above it.
    problem, options = gauss_newton(cartpole_path, tol_stationarity=1e-3, tol_feasibility=1e-3,
                                    tol_complementarity=1e-3, tol_duality_gap=1e-4)
    x0 = starts(problem, 8)
    cpu = knot.BatchSolver(problem, 8, path="device", **options)
    cuda = knot.BatchSolver(problem, 8, backend="cuda", precision=precision, **options)
    assert (cuda.backend, cuda.precision, cuda.path) == ("cuda", precision, "device") and cuda.device_bytes > 0
    for batch in (cpu, cuda):
        batch.set_initial_states(x0)
        batch.solve()
    assert cuda.statuses == cpu.statuses and all(s.solved for s in cuda.statuses)
    assert np.allclose(cuda.costs, cpu.costs, rtol=rtol, atol=0)
    assert not np.allclose(cuda.costs[0], cuda.costs[1], rtol=rtol, atol=0)  # negative control: they differ
    assert cuda.x.shape == (8, problem.N + 1, 4)
