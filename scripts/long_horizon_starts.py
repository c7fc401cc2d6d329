#!/usr/bin/env python3
"""hessian auto's restart on perturbed starts of the arm (docs/solver.md, "Long horizons").

    PYTHONPATH=build/release/python python3 scripts/long_horizon_starts.py \
        [--N 128,160,192,256] [--seeds 6] [--scales 0.001,0.05] [--integrator euler] [--verbose]

iiwa14_reach (configs/iiwa14_reach.yaml, its solver section) from x0 + scale * n, n ~ N(0, I) drawn
by numpy's default_rng(1000 + seed), for every N, scale and seed; each start solved by `auto`
without the restart (hessian_restart 0, what auto was before session 33), `auto` as it is, and
`exact`. Prints, per variant, the starts solved (solved or solved_acceptable) and those solved
within 5% of the lowest cost any variant found for that start, then which starts each variant alone
lost. Statuses and costs only: no timing.
"""
import argparse
import collections
import pathlib

import numpy as np

import knot

CONFIG = pathlib.Path(__file__).resolve().parent.parent / "configs" / "iiwa14_reach.yaml"
VARIANTS = [("auto, no restart", {"hessian": "auto", "hessian_restart": 0.0}),
            ("auto", {"hessian": "auto"}),
            ("exact", {"hessian": "exact"})]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--N", default="128,160,192,256")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--scales", default="0.001,0.05")
    parser.add_argument("--integrator", default="euler")
    parser.add_argument("--verbose", action="store_true", help="one line per start")
    args = parser.parse_args()
    x0 = np.array(knot.load(CONFIG).x0)
    solved = collections.Counter()
    good = collections.Counter()
    worse = collections.Counter()  # auto solved within 5% but the restart's variant did not
    starts = 0
    for N in [int(v) for v in args.N.split(",")]:
        for scale in [float(v) for v in args.scales.split(",")]:
            for seed in range(args.seeds):
                start = x0 + scale * np.random.default_rng(1000 + seed).standard_normal(x0.shape)
                problem = knot.load(CONFIG, set={"horizon.N": N, "horizon.integrator": args.integrator,
                                                 "x0": start.tolist()})
                result = {}
                for name, options in VARIANTS:
                    s = knot.Solver(problem, **options)
                    s.solve()
                    status = s.solution.status
                    ok = status in (knot.Status.Solved, knot.Status.SolvedAcceptable)
                    result[name] = (ok, s.solution.cost, s.solution.iterations)
                costs = [c for ok, c, _ in result.values() if ok]
                best = min(costs) if costs else None
                for name, (ok, cost, _) in result.items():
                    solved[name] += ok
                    good[name] += ok and cost <= 1.05 * best
                within = {name: ok and cost <= 1.05 * best for name, (ok, cost, _) in result.items()}
                if within["auto, no restart"] and not within["auto"]:
                    worse["auto"] += 1
                starts += 1
                if args.verbose:
                    print(N, scale, seed, "  ".join(f"{name}: {'solved' if ok else 'failed'} {it} {cost:.4f}"
                                                    for name, (ok, cost, it) in result.items()), flush=True)
    print(f"iiwa14_reach, {args.integrator}, N = {args.N}, scales {args.scales}, {args.seeds} seeds: {starts} starts")
    for name, _ in VARIANTS:
        print(f"  {name:17s} solved {solved[name]:4d}   within 5% of the best {good[name]:4d}")
    print(f"  starts auto without the restart solved within 5% and auto does not: {worse['auto']}")


if __name__ == "__main__":
    main()
