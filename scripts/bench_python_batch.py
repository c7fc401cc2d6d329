#!/usr/bin/env python3
"""knot.BatchSolver against a Python loop of Solvers: B perturbed cart-pole swing-ups, each started
cold from its own x0, the same problems and guesses on each side, interleaved rounds.

    PYTHONPATH=build/release/python python3 scripts/bench_python_batch.py [B] [rounds]

Prints the median wall time of a whole batch per side, the time per problem and the ratio to the
loop; on a usable GPU also the cuda backend against the CPU's device path (Gauss-Newton). Not a
test: the figures move with the machine's load."""

import pathlib
import statistics
import sys
import time

import numpy as np

import knot

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main():
    B = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    p = knot.load(ROOT / "configs" / "cartpole_swingup.yaml")
    x0 = p.x0 + 0.05 * np.random.default_rng(1).standard_normal((B, p.nx))
    guesses = [np.tile(x0[i], (p.N + 1, 1)) for i in range(B)]
    u0 = np.zeros((p.N, p.nu))

    solvers = [knot.Solver(p) for _ in range(B)]

    def loop():
        t = time.perf_counter()
        for i, s in enumerate(solvers):
            s.set_initial_state(x0[i])
            s.set_initial_guess(guesses[i], u0)
            s.solve()
        return time.perf_counter() - t

    def batch_of(threads, **options):
        b = knot.BatchSolver(p, B, threads=threads, **options)

        def run():
            t = time.perf_counter()
            b.set_initial_states(x0)
            for i in range(B):
                b.set_initial_guess(i, guesses[i], u0)
            b.solve()
            return time.perf_counter() - t

        return b, run

    b1, one = batch_of(1)
    b0, every = batch_of(0)
    sides = {"loop of Solvers": loop, "BatchSolver threads=1": one, f"BatchSolver threads={b0.threads}": every}
    # On a usable GPU, the cuda backend beside the CPU's device path, both Gauss-Newton (the GPU's
    # exact Hessian takes the manipulator only); their ratio is printed against the device path.
    device = knot.cuda_device()
    if device["usable"]:
        _, sides["device path, every core, GN"] = batch_of(0, path="device", hessian="gauss_newton")
        _, sides["cuda, GN"] = batch_of(0, backend="cuda", hessian="gauss_newton")
    else:
        print(f"cuda: skipped ({device['reason']})")
    times = {name: [] for name in sides}
    for _ in range(rounds):
        for name, run in sides.items():
            times[name].append(run())
    base = statistics.median(times["loop of Solvers"])
    for name, t in times.items():
        m = statistics.median(t)
        print(f"{name:26s} {1e3 * m:8.2f} ms  {1e3 * m / B:.3f} ms a problem  {base / m:.2f}x the loop")
    if device["usable"]:
        ratio = statistics.median(times["device path, every core, GN"]) / statistics.median(times["cuda, GN"])
        print(f"cuda on {device['name']}: {ratio:.2f}x the CPU's device path")
    print(f"solved: {sum(s.solved for s in b0.statuses)} of {B}")


if __name__ == "__main__":
    main()
