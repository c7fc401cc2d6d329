#!/usr/bin/env python3
"""The Python binding's overhead per call: a warm-started solve() from Python against the same calls
timed inside C++ (knot._knot._time_solve, a loop of Solver::solve() with no Python in it).

    PYTHONPATH=build/release/python python3 scripts/bench_python.py [config ...]

A warm-started solve() of a converged problem takes no step (one linearization and the convergence
test), so the binding's share is as large as it gets. Medians of REPEATS batches of CALLS calls; the
overhead is Python's median minus C++'s (goal: under 2 us, issue 17). Not a test: numbers vary with
the machine's load; the minimum over batches is the least disturbed by other work and is printed
beside the median."""

import pathlib
import statistics
import sys
import time

import knot
from knot import _knot

ROOT = pathlib.Path(__file__).resolve().parents[1]
CALLS, REPEATS = 2000, 15


def python_loop(solver, calls):
    solve = solver.solve
    t0 = time.perf_counter()
    for _ in range(calls):
        solve()
    return (time.perf_counter() - t0) / calls


# (config, overrides): the smallest problem makes the solve itself cheapest beside the overhead.
CASES = [("double_integrator_lqr", {"horizon.N": 2}), ("double_integrator_lqr", {}), ("cartpole_swingup", {})]


def main(cases):
    print(f"{'config':<32} {'C++ solve()':>12} {'Python solve()':>15} {'overhead':>9} {'(min)':>9}"
          f"   median of {REPEATS} x {CALLS}; min over the batches")
    for name, overrides in cases:
        path = pathlib.Path(name)
        if not path.exists():
            path = ROOT / "configs" / f"{name}.yaml"
        solver = knot.Solver(knot.load(path, set=overrides))
        solver.solve()
        assert solver.solve() == knot.Status.Solved and solver.solution.iterations == 0, "not warm: no step expected"
        cpp, py = [], []
        for _ in range(REPEATS):  # interleaved, so drifting load affects both alike
            cpp.append(_knot._time_solve(solver, CALLS))
            py.append(python_loop(solver, CALLS))
        c, p = statistics.median(cpp), statistics.median(py)
        label = path.stem + "".join(f" {k}={v}" for k, v in overrides.items())
        print(f"{label:<32} {1e6 * c:>10.2f} us {1e6 * p:>12.2f} us {1e6 * (p - c):>6.2f} us"
              f" {1e6 * (min(py) - min(cpp)):>6.2f} us")


if __name__ == "__main__":
    main([(a, {}) for a in sys.argv[1:]] or CASES)
