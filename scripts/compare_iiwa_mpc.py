#!/usr/bin/env python3
"""iiwa14 tracking in closed loop: Knot, Crocoddyl's FDDP and mim-solvers' SQP as the MPC controller
of one plant, side by side: time per control step, iterations, tracking error and closed-loop cost.

    PYTHONPATH=build/release/python python3 scripts/compare_iiwa_mpc.py [--N 32] [--steps 320]
        [--modes rti,converged] [--rounds 3] [--cpu 0] [--hessians auto,exact,gauss_newton] [--tol 1e-5]

The controller's problem is compare_iiwa.py's NLP (configs/iiwa14_reach.yaml with semi-implicit
Euler, checked there to be the same on every side), re-planned every dt = 1/64 s with the
reference sliding along the MPCGPU path: at step i knot k tracks row i + k (the last row past the
end), as configs/iiwa14_mpc.yaml does. The plant is neither solver's model: the same arm integrated
by RK4 over 10 substeps of Pinocchio's ABA, each step's torque held, and every side measures the
same seeded sensor noise (1e-4 on each joint state). Before the loop each side solves the first
problem to convergence (untimed); at step i it warm-starts from its previous plan shifted by one
knot, takes the measured state as x0 and the window of the path as its reference, and then
  rti        one iteration (Knot: Solver.step(1) after shift(); FDDP and SQP: solve(.., maxiter 1)),
  converged  each solver to its own tolerance (Knot: solve(); the others: solve(.., maxiter 100)).
Only the solve call is timed (the reference and x0 updates are not, on any side); the others' call
includes converting the Python lists of the warm start, as their Python users pay. Closed-loop
cost: sum over the steps of the stage cost l(x_i, u_i) of the file at the plant's state.
Every side pinned to one CPU, the loops interleaved over the rounds (each side first in turn), time
percentiles over every step of every round. Optional packages (pip `pin==4.0.0 crocoddyl==3.2.1 mim-solvers`) are skipped
with one line when absent; Knot's rows need only knot.
"""

import argparse
import os
import statistics
import time

import numpy as np

import knot
from compare_iiwa import (CONFIG, FRAME, ROOT, URDF, W_U, W_V, check_same_nlp, crocoddyl_problem, import_anchors,
                          knot_problem)

NOISE = 1e-4
SUBSTEPS = 10


def path_window(ref, i, N):
    rows = np.minimum(np.arange(i, i + N + 1), len(ref) - 1)
    return ref[rows]


class Plant:
    """The arm by RK4 over SUBSTEPS substeps of Pinocchio's ABA (gravity 0, as the file's)."""

    def __init__(self, pinocchio):
        self.pin = pinocchio
        self.model = pinocchio.buildModelFromUrdf(str(URDF))
        self.model.gravity.setZero()
        self.data = self.model.createData()
        self.frame = self.model.getFrameId(FRAME)
        self.nq = self.model.nq

    def f(self, x, u):
        q, v = x[: self.nq], x[self.nq :]
        return np.concatenate([v, self.pin.aba(self.model, self.data, q, v, u)])

    def step(self, x, u, dt):
        h = dt / SUBSTEPS
        for _ in range(SUBSTEPS):
            k1 = self.f(x, u)
            k2 = self.f(x + 0.5 * h * k1, u)
            k3 = self.f(x + 0.5 * h * k2, u)
            k4 = self.f(x + h * k3, u)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return x

    def ee(self, x):
        self.pin.framesForwardKinematics(self.model, self.data, x[: self.nq])
        return self.data.oMf[self.frame].translation.copy()


def knot_controller(p, mode, hessian, tol):
    s = knot.Solver(p, hessian=hessian, **({"tol_stationarity": tol} if tol else {}))

    def start(x0, window):
        s.set_initial_state(x0)
        s.set_reference("track", window)
        s.set_initial_guess(np.tile(x0, (p.N + 1, 1)), np.zeros((p.N, p.nu)))
        s.solve()

    def control(x, window):
        s.shift()
        s.set_initial_state(x)
        s.set_reference("track", window)
        t = time.perf_counter()
        if mode == "rti":
            s.step(1)
        else:
            s.solve()
        seconds = time.perf_counter() - t
        return np.array(s.solution.u[0]), seconds, s.solution.iterations

    return start, control


def crocoddyl_controller(p, packages, make, mode):
    crocoddyl, pinocchio = packages["crocoddyl"]
    problem = crocoddyl_problem(p, crocoddyl, pinocchio)
    solver = make(problem)
    models = list(problem.runningModels) + [problem.terminalModel]
    tracks = [m.differential.costs.costs["track"].cost.residual for m in models]
    state = {}

    def set_window(window):
        for r, row in zip(tracks, window):
            r.reference = row

    def start(x0, window):
        problem.x0 = x0
        set_window(window)
        solver.solve([x0.copy() for _ in range(p.N + 1)], [np.zeros(p.nu) for _ in range(p.N)], 500, False)
        state["xs"], state["us"] = list(solver.xs), list(solver.us)

    def control(x, window):
        xs = state["xs"][1:] + [state["xs"][-1]]
        us = state["us"][1:] + [state["us"][-1]]
        xs[0] = x
        problem.x0 = x
        set_window(window)
        t = time.perf_counter()
        solver.solve(xs, us, 1 if mode == "rti" else 100, False)
        seconds = time.perf_counter() - t
        state["xs"], state["us"] = list(solver.xs), list(solver.us)
        return np.array(solver.us[0]), seconds, solver.iter

    return start, control


def run_loop(controller, plant, ref, noise, p, steps):
    start, control = controller
    x = np.array(p.x0, dtype=float)
    start(x + noise[0], path_window(ref, 0, p.N))
    times, iterations, errors, cost = [], [], [], 0.0
    nq = p.nx // 2
    for i in range(steps):
        y = x + noise[i]
        u, seconds, its = control(y, path_window(ref, i, p.N))
        if not np.all(np.isfinite(u)):
            return times, iterations, errors, float("nan")
        times.append(seconds)
        iterations.append(its)
        e = plant.ee(x) - ref[min(i, len(ref) - 1)]
        errors.append(float(np.linalg.norm(e)))
        cost += 0.5 * e @ e + 0.5 * W_V * x[nq:] @ x[nq:] + 0.5 * W_U * u @ u
        x = plant.step(x, u, p.dt)
    return times, iterations, errors, cost


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--N", type=int, default=32)
    parser.add_argument("--steps", type=int, default=320, help="control steps (dt = 1/64 s each)")
    parser.add_argument("--modes", default="rti,converged")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=0)
    parser.add_argument("--hessians", default="auto", help="Knot's rows: auto, gauss_newton, exact")
    parser.add_argument("--tol", type=float, default=0.0, help="Knot's tol_stationarity (default: the file's, 1e-8)")
    args = parser.parse_args()
    try:
        os.sched_setaffinity(0, {args.cpu})
    except (AttributeError, OSError) as e:
        print(f"not pinned to CPU {args.cpu}: {e}")
    packages = import_anchors()
    try:
        import pinocchio
    except ImportError as e:
        raise SystemExit(f"compare_iiwa_mpc: skipped ({e}; the plant is Pinocchio's: pip install pin==4.0.0)")

    p = knot_problem(args.N)
    if "crocoddyl" in packages:
        check_same_nlp(p, crocoddyl_problem(p, *packages["crocoddyl"]))
    ref = np.loadtxt(ROOT / "tests" / "data" / "mpcgpu_0_0_eepos.traj", delimiter=",")[:, :3]
    noise = np.random.default_rng(1).normal(0.0, NOISE, (args.steps, p.nx))
    plant = Plant(pinocchio)
    print(f"{CONFIG.name}, semi-implicit Euler, N = {p.N}, {args.steps} steps of {p.dt} s, plant RK4 x {SUBSTEPS}, "
          f"noise {NOISE}, CPU {args.cpu}, {args.rounds} rounds")

    for mode in args.modes.split(","):
        tol = f", tol_stationarity {args.tol:g}" if args.tol else ""
        sides = {f"knot, hessian {h}{tol} ({mode})": lambda h=h: knot_controller(p, mode, h, args.tol)
                 for h in args.hessians.split(",")}
        if "crocoddyl" in packages:
            sides[f"crocoddyl fddp ({mode})"] = lambda: crocoddyl_controller(p, packages, packages["crocoddyl"][0].SolverFDDP, mode)
        if "mim_solvers" in packages:
            sides[f"mim-solvers sqp ({mode})"] = lambda: crocoddyl_controller(p, packages, packages["mim_solvers"].SolverSQP, mode)
        times = {name: [] for name in sides}
        last = {}
        names = list(sides)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:  # each side first in turn
                make = sides[name]
                t, its, err, cost = run_loop(make(), plant, ref, noise, p, args.steps)
                times[name] += t
                last[name] = (its, err, cost)
        print(f"\n| controller | ms per step: p50 | p99 | max | iterations per step (mean, max) | tracking RMS (mm) | "
              f"closed-loop cost |")
        print("| --- | ---: | ---: | ---: | --- | ---: | ---: |")
        for name, (its, err, cost) in last.items():
            if len(its) < args.steps:
                print(f"| {name} | a non-finite control at step {len(its)} | | | | | |")
                continue
            ms = np.array(times[name]) * 1e3
            rms = 1e3 * np.sqrt(np.mean(np.square(err))) if err else float("nan")
            print(f"| {name} | {np.percentile(ms, 50):.3f} | {np.percentile(ms, 99):.3f} | {ms.max():.3f} | "
                  f"{statistics.mean(its):.2f}, {max(its)} | {rms:.3f} | {cost:.8g} |")


if __name__ == "__main__":
    main()
