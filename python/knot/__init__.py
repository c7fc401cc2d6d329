"""Knot from Python: load a problem file, solve it, run its closed loop (docs/python.md).

    import knot
    problem = knot.load("configs/cartpole_swingup.yaml", set={"horizon.N": 40, "horizon.dt": 0.025})
    solver = knot.Solver(problem, linsys="riccati", max_iter=50)
    status = solver.solve()                  # knot.Status.Solved
    x, u = solver.solution.x, solver.solution.u   # (N+1, nx), (N, nu): views of the solver's memory
    batch = knot.BatchSolver(problem, 64)    # 64 problems of this structure on every core
"""

from __future__ import annotations

import importlib
import math
import numbers
import os
from typing import Any, Mapping, Sequence, Union

from ._knot import (  # noqa: F401
    BatchSolver,
    ClosedLoop,
    Error,
    Problem,
    Solution,
    Solver,
    Status,
    option_names,
)
from . import _knot

__all__ = ["BatchSolver", "ClosedLoop", "Error", "Problem", "Solution", "Solver", "Status", "cuda_device", "load",
           "load_string", "option_names"]

Overrides = Union[Mapping[str, Any], Sequence[str], None]


def _yaml_value(value: Any) -> str:
    # The loader parses each override's value as YAML; this writes Python values in that syntax.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isnan(v):
            return ".nan"
        if math.isinf(v):
            return ".inf" if v > 0 else "-.inf"
        return repr(v)
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_yaml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"override value {value!r}: expected a bool, number, str, or a list or dict of them")


def _overrides(set: Overrides) -> list[str]:
    if set is None:
        return []
    if isinstance(set, Mapping):
        return [f"{key}={_yaml_value(value)}" for key, value in set.items()]
    if isinstance(set, str):
        raise TypeError("set: expected a dict {'key.path': value} or a list of 'key.path=value' strings, found a str")
    return [str(s) for s in set]


def load(path: Union[str, os.PathLike], set: Overrides = None) -> Problem:
    """Reads a problem file (docs/problem-format.md).

    `set` overrides keys after `extends` is resolved, as the CLI's --set: a dict
    {"horizon.N": 40, "x0": [0, 3.14, 0, 0]} (values written as YAML) or a list of "key=value" strings.
    Raises knot.Error (a ValueError) naming the file, line, column, key, expected and found.
    """
    return _knot._load(os.fspath(path), _overrides(set))


def load_string(yaml: str, name: str = "<string>", base_dir: Union[str, os.PathLike] = ".",
                set: Overrides = None) -> Problem:
    """Reads a problem from YAML text; `name` stands in for the file name in errors, relative paths
    (URDFs, references) resolve against `base_dir`."""
    return _knot._load_string(yaml, name, os.fspath(base_dir), _overrides(set))


def cuda_device(device: int = 0) -> dict:
    """The GPU that BatchSolver(backend="cuda") would run on, as `knot info` describes it: a dict whose
    "usable" says whether it can run there and "reason" why not (also when this knot was built
    without its CUDA engine, knot._cuda). Loads the CUDA runtime; `import knot` alone does not."""
    try:
        cuda = importlib.import_module("knot._cuda")
    except ImportError as e:
        return {"usable": False, "reason": f"this knot has no CUDA engine (import knot._cuda: {e})"}
    return cuda.device(device)
