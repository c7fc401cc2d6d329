"""The MPC calls: step (real-time iteration), shift, set_reference, set_initial_guess; the closed loop."""

import numpy as np
import pytest

import knot
from conftest import ROOT


def test_shift_moves_every_knot_one_earlier(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    s.solve()
    x, u = np.array(s.solution.x), np.array(s.solution.u)
    s.shift()
    assert np.array_equal(s.solution.x[:-1], x[1:]) and np.array_equal(s.solution.x[-1], x[-1])
    assert np.array_equal(s.solution.u[:-1], u[1:]) and np.array_equal(s.solution.u[-1], u[-1])


def test_step_takes_real_time_iterations(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    assert s.step() == knot.Status.MaxIterations and s.solution.iterations == 1
    assert s.step(3) == knot.Status.MaxIterations and s.solution.iterations == 3
    s.solve()
    assert s.step() == knot.Status.Solved and s.solution.iterations == 0  # converged: no step


def test_set_reference_moves_the_optimum_and_back(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    s.solve()
    cost, x = s.solution.cost, np.array(s.solution.x)
    s.set_reference("state", [0.5, 0.0, 0.0, 0.0])
    s.solve()
    assert abs(s.solution.x[-1, 0] - 0.5) < abs(x[-1, 0] - 0.5)
    per_knot = np.zeros((s.N + 1, 4))
    s.set_reference("state", per_knot)
    s.set_initial_guess(np.tile(s.problem.x0, (s.N + 1, 1)), np.zeros((s.N, 1)))
    s.solve()
    assert s.solution.cost == cost and np.array_equal(s.solution.x, x)


def test_set_reference_is_the_solvers_own(cartpole_path):
    problem = knot.load(cartpole_path)
    moved, other = knot.Solver(problem), knot.Solver(problem)
    moved.set_reference("state", [0.5, 0.0, 0.0, 0.0])
    other.solve()
    moved.solve()
    fresh = knot.Solver(problem)  # built after the move: the Problem kept the file's reference
    fresh.solve()
    assert other.solution.cost == fresh.solution.cost and np.array_equal(other.solution.x, fresh.solution.x)
    assert moved.solution.cost != other.solution.cost  # negative control: the move did change moved's


def test_set_initial_guess_is_the_start(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    s.solve()
    x, u = np.array(s.solution.x), np.array(s.solution.u)
    fresh = knot.Solver(knot.load(cartpole_path))
    fresh.set_initial_guess(x, u)
    assert np.array_equal(fresh.solution.x, x) and np.array_equal(fresh.solution.u, u)


def test_a_closed_loop_runs_and_reports():
    loop = knot.ClosedLoop(knot.load(ROOT / "configs" / "cartpole_mpc.yaml"))
    assert loop.steps_done == 0 and loop.steps > 0
    assert loop.step() and loop.steps_done == 1
    loop.run()
    r = loop.record
    assert r.steps == loop.steps and r.x.shape == (loop.steps + 1, 4) and r.u.shape == (loop.steps, 1)
    assert len(r.status) == loop.steps and r.time[1] == loop.period
    summary = loop.summary()
    assert sum(summary.statuses.values()) == loop.steps and summary.failed_steps == 0
    assert abs(r.x[-1, 1]) < 0.1  # swung up: theta back near 0
    assert not loop.step()


def test_frame_positions_match_the_closed_loops_end_effector():
    # The closed loop records the plant's end effector in C++; the binding recomputes it from the
    # recorded states (the plant model's kinematics are the problem's: only masses differ).
    problem = knot.load(ROOT / "configs" / "iiwa14_mpc.yaml", set={"mpc.duration": 0.3125})
    loop = knot.ClosedLoop(problem)
    loop.run()
    r = loop.record
    frame = problem.frame_names[loop.ee_frame]
    assert r.ee.shape == (21, 3)
    assert np.array_equal(problem.frame_positions(r.x, frame=frame), r.ee)
    # Negative control: another frame is elsewhere.
    assert not np.allclose(problem.frame_positions(r.x, frame=problem.frame_names[1]), r.ee)


def test_frame_positions_need_kinematics(cartpole_path):
    import pytest

    with pytest.raises(ValueError, match="no kinematics"):
        knot.load(cartpole_path).frame_positions(np.zeros((3, 4)))
    arm = knot.load(ROOT / "configs" / "iiwa14_reach.yaml")
    with pytest.raises(ValueError, match=r"expected shape \(rows, 14\), found 1 dimensions"):
        arm.frame_positions(np.zeros(14))
    with pytest.raises(ValueError, match="no frame named 'hand'"):
        arm.frame_positions(np.zeros((1, 14)), frame="hand")


def test_a_warm_start_with_multipliers_needs_no_iteration(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    assert s.solve() == knot.Status.Solved
    sol = s.solution
    warm = knot.Solver(knot.load(cartpole_path))
    warm.set_warm_start(sol.x, sol.u, sol.lambda_, sol.z, sol.s, sol.y, sol.mu)
    assert warm.solve() == knot.Status.Solved and warm.solution.iterations == 0
    assert warm.solution.cost == sol.cost
    # Negative control: x and u alone are a cold start, which iterates.
    cold = knot.Solver(knot.load(cartpole_path))
    cold.set_warm_start(sol.x, sol.u)
    assert cold.solve() == knot.Status.Solved and cold.solution.iterations > 0


def test_a_warm_start_checks_its_sizes(cartpole_path):
    import pytest

    s = knot.Solver(knot.load(cartpole_path))
    s.solve()
    sol = s.solution
    with pytest.raises(ValueError, match=r"z: expected shape"):
        s.set_warm_start(sol.x, sol.u, sol.lambda_, np.ones(3), sol.s, sol.y, sol.mu)
    with pytest.raises(ValueError):
        s.set_warm_start(sol.x, sol.u, sol.lambda_, -np.ones_like(sol.z), sol.s, sol.y, sol.mu)


def test_set_model_parameters_is_the_file_with_that_value(cartpole_path):
    heavy = knot.Solver(knot.load(cartpole_path, set={"model.params.cart_mass": 1.5}))
    heavy.solve()
    s = knot.Solver(knot.load(cartpole_path))
    s.solve()
    plain = s.solution.cost
    s.set_model_parameters({"cart_mass": 1.5})
    s.set_initial_guess(np.tile(s.problem.x0, (s.N + 1, 1)), np.zeros((s.N, 1)))
    s.solve()
    assert s.solution.cost == heavy.solution.cost and s.solution.cost != plain
    with pytest.raises(knot.Error, match="did you mean 'cart_mass'"):
        s.set_model_parameters({"cart_mas": 2.0})
    with pytest.raises(knot.Error):
        s.set_model_parameters({"cart_mass": -1.0})


def test_set_bounds_removes_and_adds_rows_as_a_fresh_problem(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    rows = len(s.solution.z)
    s.set_bounds("force_limit", [-12.0], [np.inf])  # the upper bound's row gone from every knot
    assert len(s.solution.z) == rows - s.N
    s.solve()
    fresh = knot.Solver(knot.load(cartpole_path, set=["constraints[0].lower=[-12]", "constraints[0].upper=[.inf]"]))
    fresh.solve()
    assert s.solution.cost == fresh.solution.cost and np.array_equal(s.solution.x, fresh.solution.x)
    s.set_bounds("force_limit", -80.0, 80.0)
    assert len(s.solution.z) == rows
    with pytest.raises(ValueError, match="force_limit"):
        s.set_bounds("force_limit", [1.0], [-1.0])
    with pytest.raises(ValueError, match="no constraint named"):
        s.set_bounds("nope", [0.0], [1.0])


def test_set_obstacle_moves_the_obstacle():
    path = ROOT / "configs" / "unicycle_obstacles.yaml"
    s = knot.Solver(knot.load(path))
    s.set_obstacle("rock", (1.6, 0.3), 0.45)
    s.solve()
    fresh = knot.Solver(knot.load(path, set={"constraints[1].center": [1.6, 0.3], "constraints[1].radius": 0.45}))
    fresh.solve()
    assert s.solution.cost == fresh.solution.cost
    with pytest.raises(ValueError, match="radius"):
        s.set_obstacle("rock", (1.0, 0.0), 0.0)
