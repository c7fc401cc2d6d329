"""Cart-pole swing-ups from 256 perturbed starts at once (knot.BatchSolver on every core): the pole
angle of each plan and the spread of their costs, then each plan improved without the upper force
limit (set_bounds removes its rows; the next solve starts from the plan); PNG."""
import pathlib
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import knot

root = pathlib.Path(__file__).resolve().parents[2]
out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "cartpole_batch.png")
problem = knot.load(root / "configs" / "cartpole_swingup.yaml")
B = 256
starts = problem.x0 + np.array([0.2, 0.3, 0.5, 0.5]) * np.random.default_rng(7).standard_normal((B, problem.nx))
batch = knot.BatchSolver(problem, B)
batch.set_initial_states(starts)
t0 = time.perf_counter()
solved = batch.solve()
seconds = time.perf_counter() - t0
limited = batch.costs
x = batch.x
for i in range(B):  # the upper force limit removed (its rows gone): each solve continues from its plan
    batch.set_bounds(i, "force_limit", -80.0, np.inf)
batch.solve()
free = batch.costs
print(f"{solved} of {B} solved in {1e3 * seconds:.1f} ms on {batch.threads} threads "
      f"({1e3 * seconds / B:.3f} ms a problem); cost median {np.median(limited):.1f} with the force limit, "
      f"{np.median(free):.1f} without it ({sum(s.solved for s in batch.statuses)} solved)")
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
t = problem.dt * np.arange(problem.N + 1)
for i in range(B):
    axes[0].plot(t, x[i, :, 1], color="tab:blue", alpha=0.08)
axes[0].set_xlabel("time [s]")
axes[0].set_ylabel("pole theta [rad]")
axes[0].grid(True)
bins = np.linspace(min(limited.min(), free.min()), max(limited.max(), free.max()), 40)
axes[1].hist(limited, bins=bins, alpha=0.6, label="|F| <= 80 N")
axes[1].hist(free, bins=bins, alpha=0.6, label="F >= -80 N")
axes[1].set_xlabel("optimal cost")
axes[1].legend()
fig.tight_layout()
fig.savefig(out, dpi=100)
print(f"wrote {out}")
