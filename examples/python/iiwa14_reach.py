"""The iiwa14 reach (configs/iiwa14_reach.yaml, MPCGPU's task): the end effector's path against the
reference it tracks, computed from the optimal joint trajectory by the problem's kinematics; PNG."""
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import knot

root = pathlib.Path(__file__).resolve().parents[2]
out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "iiwa14_reach.png")
problem = knot.load(root / "configs" / "iiwa14_reach.yaml")
solver = knot.Solver(problem)
status = solver.solve()
print(f"{problem.name}: {status.label} in {solver.solution.iterations} iterations, cost {solver.solution.cost:.6g}, "
      f"{1e3 * solver.stats.time.total:.1f} ms")

path = problem.frame_positions(solver.solution.x)  # (N+1, 3): the ee_frame's origin at each knot
target = problem.reference("track")[: problem.N + 1]  # knot k tracks row k
print(f"end-effector error: mean {np.linalg.norm(path - target, axis=1).mean():.4f} m, "
      f"final {np.linalg.norm(path[-1] - target[-1]):.4f} m")

fig = plt.figure(figsize=(6, 5))
ax = fig.add_subplot(projection="3d")
ax.plot(*target.T, "k--", label="reference")
ax.plot(*path.T, "C0", label="end effector")
ax.scatter(*path[0], color="C0")
ax.set_xlabel("x [m]")
ax.set_ylabel("y [m]")
ax.set_zlabel("z [m]")
ax.legend()
fig.savefig(out, dpi=100)
print(f"wrote {out}")
