"""Cart-pole swing-up and balance in closed loop (configs/cartpole_mpc.yaml): plot and PNG."""
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import knot

root = pathlib.Path(__file__).resolve().parents[2]
out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "cartpole_closed_loop.png")
loop = knot.ClosedLoop(knot.load(root / "configs" / "cartpole_mpc.yaml", set={"mpc.duration": 4.0}))
loop.run()  # real-time iterations against the simulated plant, noise and kicks included
r, s = loop.record, loop.summary()
print(f"{s.steps} steps of {1e3 * s.control_period:.0f} ms, solve p50 {1e6 * s.solve_p50:.0f} us, "
      f"closed-loop cost {s.closed_loop_cost:.2f}, final angle {r.x[-1, 1]:+.4f} rad")
fig, axes = plt.subplots(3, 1, sharex=True, figsize=(7, 6))
for ax, values, label in [(axes[0], r.x[:, 0], "cart p [m]"), (axes[1], r.x[:, 1], "pole theta [rad]"),
                          (axes[2], r.u[:, 0], "force F [N]")]:
    ax.plot(r.time[: len(values)], values)
    ax.set_ylabel(label)
    ax.grid(True)
axes[2].set_xlabel("time [s]")
fig.savefig(out, dpi=100)
print(f"wrote {out}")
