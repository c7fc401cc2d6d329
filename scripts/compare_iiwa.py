#!/usr/bin/env python3
"""iiwa14_reach (configs/iiwa14_reach.yaml, MPCGPU's tracking task) solved by Knot, Crocoddyl's FDDP and
mim-solvers' SQP, side by side: status, iterations, cost and time of each, on one core.

    PYTHONPATH=build/release/python python3 scripts/compare_iiwa.py [--N 32,64,128] [--rounds 5] [--threads 1]
        [--hessians auto,gauss_newton]

The same NLP on every side: the file's arm (configs/robots/iiwa14_iiwa_grid.urdf, gravity 0, the
URDF's joint damping ignored by both dynamics), semi-implicit Euler over dt = 1/64 s (Crocoddyl's
IntegratedActionModelEuler; Knot's `semi_implicit_euler`), the cost
    sum_{k=0..N} 1/2 |p_k - r_k|^2 + 1/2 0.001 |v_k|^2  +  sum_{k=0..N-1} 1/2 1e-4 |tau_k|^2
(p_k the origin of frame iiwa_link_7, r_k row k of tests/data/mpcgpu_0_0_eepos.traj), no
constraints, from x_k = x0, u_k = 0. Crocoddyl multiplies a running cost by dt, so its running
weights are the file's over dt. Before timing, the script checks that the formulations agree: the
Crocoddyl problem's cost of Knot's optimum is Knot's cost, and Crocoddyl's rollout of Knot's
controls is Knot's states.

Each side runs with its defaults (Knot: the file's solver section, hessian auto; FDDP: th_stop 1e-9;
mim-solvers' SQP: its KKT tolerance 1e-4, both at most 500 iterations), Knot also with
gauss_newton (--hessians names Knot's rows; `exact` is the one that converges at N >= 192). Every solver is pinned to
CPU 0 (os.sched_setaffinity; Crocoddyl's problem on one thread), the sides interleaved in each
round, medians over the rounds. With --threads T, CPUs 0..T-1 and T threads on every side: Knot's
`threads` option (its knots on a pool) and Crocoddyl's ShootingProblem.nthreads (OpenMP over the
knots' calc and calcDiff, which mim-solvers' SQP uses too). Optional packages (pip `pin==4.0.0 crocoddyl==3.2.1 mim-solvers`:
a newer pin gives this Crocoddyl wrong dynamics silently) are skipped with one line when absent.
"""

import argparse
import os
import pathlib
import statistics
import time

import numpy as np

import knot

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "iiwa14_reach.yaml"
URDF = ROOT / "configs" / "robots" / "iiwa14_iiwa_grid.urdf"
FRAME = "iiwa_link_7"
W_V, W_U = 1e-3, 1e-4


def knot_problem(N):
    return knot.load(CONFIG, set={"horizon.N": N, "horizon.integrator": "semi_implicit_euler"})


def crocoddyl_problem(p, crocoddyl, pinocchio, threads=1):
    model = pinocchio.buildModelFromUrdf(str(URDF))
    model.gravity.setZero()
    state = crocoddyl.StateMultibody(model)
    actuation = crocoddyl.ActuationModelFull(state)
    nx, nu, N, dt = p.nx, p.nu, p.N, p.dt
    ref = np.loadtxt(ROOT / "tests" / "data" / "mpcgpu_0_0_eepos.traj", delimiter=",")[:, :3]
    frame = model.getFrameId(FRAME)

    def knot_model(k, terminal):
        scale = 1.0 if terminal else 1.0 / dt  # Crocoddyl's running cost is dt times the differential one
        costs = crocoddyl.CostModelSum(state, nu)
        track = crocoddyl.ResidualModelFrameTranslation(state, frame, ref[min(k, len(ref) - 1)], nu)
        costs.addCost("track", crocoddyl.CostModelResidual(state, crocoddyl.ActivationModelWeightedQuad(
            scale * np.ones(3)), track), 1.0)
        damping = crocoddyl.ResidualModelState(state, np.zeros(nx), nu)
        costs.addCost("damping", crocoddyl.CostModelResidual(state, crocoddyl.ActivationModelWeightedQuad(
            scale * np.r_[np.zeros(nx // 2), W_V * np.ones(nx // 2)]), damping), 1.0)
        if not terminal:
            effort = crocoddyl.ResidualModelControl(state, nu)
            costs.addCost("effort", crocoddyl.CostModelResidual(state, crocoddyl.ActivationModelWeightedQuad(
                scale * W_U * np.ones(nu)), effort), 1.0)
        dynamics = crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, costs)
        return crocoddyl.IntegratedActionModelEuler(dynamics, 0.0 if terminal else dt)

    problem = crocoddyl.ShootingProblem(np.array(p.x0), [knot_model(k, False) for k in range(N)],
                                        knot_model(N, True))
    problem.nthreads = threads
    return problem


def check_same_nlp(p, problem):
    """Knot's optimum under Crocoddyl's cost and dynamics: the formulations must agree (the cost at
    any point; the step where Knot converged, its defects being within its tolerance then)."""
    s = knot.Solver(p)
    s.solve()
    xs, us = [np.array(x) for x in s.solution.x], [np.array(u) for u in s.solution.u]
    cost = problem.calc(xs, us)
    # Crocoddyl's step from each of Knot's knots against Knot's next knot: Knot's dynamics defects
    # (within its feasibility tolerance) if the integrators agree, some dt^2 |qdd| if they do not.
    gap = max(np.abs(d.xnext - xs[k + 1]).max() for k, d in enumerate(problem.runningDatas))
    rel = abs(cost - s.solution.cost) / s.solution.cost
    solved = s.solution.status.solved
    print(f"N = {p.N}: Crocoddyl's cost of Knot's {'optimum' if solved else 'last iterate'} {cost:.12g} against "
          f"Knot's {s.solution.cost:.12g} (relative {rel:.1e}); its step from each of Knot's knots within {gap:.1e} "
          f"of the next{'' if solved else ' (Knot did not converge: its defects are its own)'}")
    if rel > 1e-9 or (solved and gap > 1e-8):
        raise SystemExit("the two formulations differ: no comparison")


def sides(p, packages, threads, hessians):
    nx, nu, N = p.nx, p.nu, p.N
    x0 = np.array(p.x0)
    runs = {}
    for hessian in hessians:
        s = knot.Solver(p, hessian=hessian, threads=threads)
        guess_x, guess_u = np.tile(x0, (N + 1, 1)), np.zeros((N, nu))

        def run(s=s, guess_x=guess_x, guess_u=guess_u):
            s.set_initial_guess(guess_x, guess_u)
            t = time.perf_counter()
            s.solve()
            seconds = time.perf_counter() - t
            return s.solution.status.label, s.solution.iterations, s.solution.cost, seconds

        runs[f"knot sqp, hessian {hessian}"] = run
    if "crocoddyl" in packages:
        crocoddyl, pinocchio = packages["crocoddyl"]
        solvers = {"crocoddyl fddp": crocoddyl.SolverFDDP}
        if "mim_solvers" in packages:
            solvers["mim-solvers sqp"] = packages["mim_solvers"].SolverSQP
        for name, make in solvers.items():
            solver = make(crocoddyl_problem(p, crocoddyl, pinocchio, threads))

            def run(solver=solver):
                xs, us = [x0.copy() for _ in range(N + 1)], [np.zeros(nu) for _ in range(N)]
                t = time.perf_counter()
                converged = solver.solve(xs, us, 500, False)
                seconds = time.perf_counter() - t
                return "converged" if converged else "not converged", solver.iter, solver.cost, seconds

            runs[name] = run
    return runs


def import_anchors():
    """The anchors that import: {"crocoddyl": (crocoddyl, pinocchio), "mim_solvers": mim_solvers}, one
    line for each that does not."""
    packages = {}
    try:
        import pinocchio  # noqa: F401  (before crocoddyl and mim_solvers: it loads their libraries)
        import crocoddyl

        packages["crocoddyl"] = (crocoddyl, pinocchio)
        print(f"crocoddyl {crocoddyl.__version__}, pinocchio {pinocchio.__version__}")
        try:
            import mim_solvers

            packages["mim_solvers"] = mim_solvers
        except ImportError as e:
            print(f"mim-solvers: skipped ({e}; pip install mim-solvers)")
    except ImportError as e:
        print(f"crocoddyl and mim-solvers: skipped ({e}; pip install pin==4.0.0 crocoddyl==3.2.1 mim-solvers)")
    return packages


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--N", default="32,64,128")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="threads (and CPUs 0..T-1) on every side")
    parser.add_argument("--hessians", default="auto,gauss_newton", help="Knot's rows: auto, gauss_newton, exact")
    args = parser.parse_args()
    try:
        os.sched_setaffinity(0, set(range(args.threads)))
    except (AttributeError, OSError) as e:
        print(f"not pinned to CPUs 0..{args.threads - 1}: {e}")
    packages = import_anchors()
    for N in [int(n) for n in args.N.split(",")]:
        p = knot_problem(N)
        if "crocoddyl" in packages:
            check_same_nlp(p, crocoddyl_problem(p, *packages["crocoddyl"]))
        runs = sides(p, packages, args.threads, args.hessians.split(","))
        times = {name: [] for name in runs}
        last = {}
        for _ in range(args.rounds):
            for name, run in runs.items():
                last[name] = run()
                times[name].append(last[name][3])
        best = min(r[2] for r in last.values())
        print(f"| N | solver | status | iterations | cost | cost - best | ms (median of {args.rounds}) |")
        print("| ---: | --- | --- | ---: | ---: | ---: | ---: |")
        for name, (status, iterations, cost, _) in last.items():
            ms = 1e3 * statistics.median(times[name])
            print(f"| {N} | {name} | {status} | {iterations} | {cost:.10g} | {cost - best:.1e} | {ms:.2f} |")


if __name__ == "__main__":
    main()
