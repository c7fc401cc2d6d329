"""The binding's results against the C++ solver's: `knot solve --out` on every config, bitwise.

The reference is the CLI (the same library reached through C++), read back from its %.17g CSV and
JSON, which round-trip doubles exactly."""

import csv
import json
import subprocess

import numpy as np
import pytest

import knot
from conftest import CONFIGS, ROOT


def cli_solve(cli, config, out_dir, overrides=()):
    args = [cli, "solve", str(config), "--out", str(out_dir)]
    for o in overrides:
        args += ["--set", o]
    subprocess.run(args, cwd=ROOT, check=False, capture_output=True, text=True)
    stats = json.loads((out_dir / "stats.json").read_text())
    with open(out_dir / "trajectory.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return stats, rows


def mismatches(solver, problem, stats, rows):
    """Every difference between the Python solve and the CLI's, as text (empty when bitwise equal)."""
    sol = solver.solution
    out = []
    if sol.status.label != stats["status"]:
        out.append(f"status {sol.status.label} != {stats['status']}")
    if sol.iterations != stats["iterations"]:
        out.append(f"iterations {sol.iterations} != {stats['iterations']}")
    if sol.cost != stats["cost"]:
        out.append(f"cost {sol.cost!r} != {stats['cost']!r}")
    x = np.array([[float(r[n]) for n in problem.state_names] for r in rows])
    u = np.array([[float(r[n]) for n in problem.control_names] for r in rows[:-1]])
    if x.shape != sol.x.shape or not np.array_equal(x, sol.x):
        out.append("x differs")
    if u.shape != sol.u.shape or not np.array_equal(u, sol.u):
        out.append("u differs")
    history = [row["cost"] for row in solver.stats.per_iteration]
    if history != [row["cost"] for row in stats["history"]]:
        out.append("per-iteration costs differ")
    return out


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_every_config_matches_the_cpp_solver_bitwise(config, knot_cli, tmp_path):
    stats, rows = cli_solve(knot_cli, config, tmp_path)
    problem = knot.load(config)
    solver = knot.Solver(problem)
    solver.solve()
    assert mismatches(solver, problem, stats, rows) == []


def test_overrides_and_keywords_match_the_cli(cartpole_path, knot_cli, tmp_path):
    stats, rows = cli_solve(knot_cli, cartpole_path, tmp_path, ["horizon.N=40", "solver.linsys=bdsv"])
    problem = knot.load(cartpole_path, set={"horizon.N": 40})
    solver = knot.Solver(problem, linsys="bdsv")
    solver.solve()
    assert solver.N == 40 and solver.stats.linsys == "bdsv"
    assert mismatches(solver, problem, stats, rows) == []


def test_the_comparison_catches_a_different_solve(cartpole_path, knot_cli, tmp_path):
    # Negative control: one iteration fewer, or another horizon, must show up as a difference.
    stats, rows = cli_solve(knot_cli, cartpole_path, tmp_path)
    problem = knot.load(cartpole_path)
    solver = knot.Solver(problem, max_iter=stats["iterations"] - 1)
    solver.solve()
    assert "x differs" in mismatches(solver, problem, stats, rows)
    other = knot.load(cartpole_path, set={"x0": [0, 3.0, 0, 0]})
    solver = knot.Solver(other)
    solver.solve()
    assert any(m.startswith("cost") for m in mismatches(solver, other, stats, rows))


def read_closed_loop_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("name", ["cartpole_mpc"])
def test_closed_loop_matches_knot_mpc(name, knot_cli, tmp_path):
    config = ROOT / "configs" / f"{name}.yaml"
    subprocess.run([knot_cli, "mpc", str(config), "--out", str(tmp_path)], cwd=ROOT, check=True,
                   capture_output=True)
    rows = read_closed_loop_csv(tmp_path / "closed_loop.csv")
    problem = knot.load(config)
    loop = knot.ClosedLoop(problem)
    loop.run()
    record = loop.record
    x = np.array([[float(r[n]) for n in problem.state_names] for r in rows])
    u = np.array([[float(r[n]) for n in problem.control_names] for r in rows[:-1]])
    assert record.x.shape == x.shape and np.array_equal(record.x, x)
    assert np.array_equal(record.u, u)
    assert [s.label for s in record.status] == [r["status"] for r in rows[:-1]]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert loop.summary().closed_loop_cost == summary["closed_loop_cost"]
